"""smart_search's rule selection and the index/timeline short forms."""

from __future__ import annotations

import pytest

from memd.retrieve.digest import PREVIEW_CHARS, SUMMARY_CHARS, preview, summary
from memd.retrieve.smart import choose


@pytest.mark.parametrize(
    ("confidences", "rule", "timelines", "details"),
    [
        ([0.80], "single", 1, 1),
        ([0.80, 0.30, 0.20], "single", 1, 1),
        ([0.80, 0.50], "clear_winner", 1, 1),  # another hit is confident: not alone
        ([0.70, 0.48], "clear_winner", 1, 1),
        ([0.70, 0.62, 0.61], "cluster", 3, 0),  # gap 0.08: no winner, but a cluster
        ([0.90, 0.85, 0.84, 0.81], "cluster", 3, 0),
        ([0.72, 0.60], "index_only", 0, 0),
        ([0.58, 0.50], "index_only", 0, 0),
        ([0.40, 0.30], "low_confidence", 0, 0),
        ([], "low_confidence", 0, 0),
    ],
)
def test_rule_selection(confidences: list[float], rule: str, timelines: int, details: int) -> None:
    chosen = choose(confidences, min_confidence=0.45)
    assert (chosen.rule, chosen.timelines, chosen.details) == (rule, timelines, details)
    assert chosen.reason


def test_summary_is_the_first_sentence_with_code_folded() -> None:
    assert summary("prompt", "Prompt: x", "Fix the login test. Then deploy.") == "Fix the login test."
    assert summary("prompt", "Prompt: x", "```python\nprint(1)\n```\nWhat does this print? Tell me") == (
        "[code] What does this print?"
    )
    assert summary("tool", "Edited src/a.py", "a very long diff") == "Edited src/a.py"
    assert summary("prompt", "", "검색 기능을 고쳐줘. 그리고 테스트도") == "검색 기능을 고쳐줘."
    compaction = "<analysis>\nThe conversation is a single request. More."
    assert summary("compact_summary", "Compaction summary", compaction) == "The conversation is a single request."
    assert summary("prompt", "", "Why does <div> wrap? It should not.") == "Why does <div> wrap?"


def test_summary_cuts_at_words_and_keeps_paths_whole() -> None:
    path = "/home/me/src/memd/memd/retrieve/very/deeply/nested/package/and/more/folders/module_with_a_long_name.py"
    line = summary("tool", f"Edited {path} and then a few more words", "")
    assert len(line) <= SUMMARY_CHARS
    assert line.startswith("Edited …") and line.endswith("module_with_a_long_name.py…")
    fits = summary("tool", "Edited /home/me/src/app/module.py and then " + "more " * 30, "")
    assert fits.startswith("Edited /home/me/src/app/module.py and then more")
    words = summary("prompt", "", "word " * 60)
    assert len(words) <= SUMMARY_CHARS and words.endswith("word…")


def test_preview_flattens_and_labels_code() -> None:
    text = "Exit code 1\n```python\nraise ValueError\n```\nFAILED test_x"
    assert preview("tool_error", "Bash failed: pytest", text) == (
        "Bash failed: pytest — Exit code 1 [python code] FAILED test_x"
    )
    assert len(preview("assistant", "Assistant: x", "long " * 100)) <= PREVIEW_CHARS


@pytest.mark.parametrize(
    ("kind", "title", "text", "files"),
    [
        ("prompt", "Prompt: fix it", "Fix the flaky login test in tests/test_login.py.\nThe cookie expires.", []),
        ("tool", "Edited /p/src/auth.py (-1 +1 lines)", "ttl = 60\n---\nttl = 3600", ["/p/src/auth.py"]),
        ("tool_error", "Bash failed: pytest", "pytest -x\nExit code 1\n" + "FAILED test_x - boom\n" * 30, []),
        ("session_summary", "Session summary: Goal", "Goal: ship it · Edited 3 files", ["/p/a.py", "/p/b.py"]),
    ],
)
def test_the_index_says_what_details_will_cost(kind: str, title: str, text: str, files: list[str]) -> None:
    from memd.context import detail_text
    from memd.protocol import Detail
    from memd.retrieve.digest import detail_tokens
    from memd.tokens import estimate_tokens

    detail = Detail(
        id=7, cite="Ab3xY9", kind=kind, tool="Bash", title=title, text=text, session_id="8bbcceab", project="/p",
        client_ts=0.0, importance=2, files=files, previous="Zz9Zz9", next="Yy8Yy8",
    )  # fmt: skip
    real = estimate_tokens(detail_text(detail))
    assert 0.85 * real <= detail_tokens(kind, title, text, "/p", files) <= 1.15 * real
