"""Rendering of injected blocks and details: budgets, escaping, pure functions."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memd.context import (
    MAX_CONTEXT_CHARS,
    Line,
    detail_text,
    escape,
    expand_hint,
    fit_detail,
    hook_output,
    memory_block,
)
from memd.protocol import Detail
from memd.tokens import estimate_tokens

SECTIONS = ("Recent sessions", "Important", "Recent errors")
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)
one_line = texts.map(lambda t: " ".join(t.split()) or "x")


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.tuples(st.sampled_from(SECTIONS), one_line), max_size=40),
    budget=st.integers(min_value=60, max_value=3000),
    project=texts,
)
def test_a_block_never_exceeds_its_budget_or_claude_codes_limit(
    lines: list[tuple[str, str]], budget: int, project: str
) -> None:
    candidates = [Line(section, text, n) for n, (section, text) in enumerate(lines)]
    block, kept = memory_block({"project": project}, "intro", SECTIONS, candidates, budget=budget)
    if not kept:
        assert block == ""
        return
    assert estimate_tokens(block) <= budget
    assert len(block) <= MAX_CONTEXT_CHARS
    assert block.count("<memory-context") == 1 and block.endswith("\n</memory-context>")
    assert len(hook_output("SessionStart", context=block)) <= 10_000
    for line in kept:  # every kept line is shown, escaped, under its section
        assert f"- {escape(line.text)}" in block


@settings(max_examples=100, deadline=None)
@given(text=texts, budget=st.integers(min_value=0, max_value=1000), title=one_line)
def test_a_detail_fits_its_budget_or_is_left_out(text: str, budget: int, title: str) -> None:
    detail = Detail(
        id=1, cite="Ab3xY9", kind="tool", tool="Bash", title=title, text=text * 5, session_id="s1",
        project="/p", client_ts=0.0, importance=2,
    )  # fmt: skip
    fitted = fit_detail(detail, budget)
    if fitted is not None:
        assert fitted.tokens == estimate_tokens(detail_text(fitted)) <= budget


def test_json_escapes_count_against_the_limit() -> None:
    lines = [Line("Important", '"\\"' * 100, n) for n in range(60)]  # each char escaped in JSON
    block, kept = memory_block({"project": "p"}, "intro", SECTIONS, lines, budget=20_000)
    assert 0 < len(kept) < 60
    assert len(hook_output("SessionStart", context=block, system_message="x" * 1000)) <= 10_000


def test_escaping_keeps_markdown_and_stops_forgery() -> None:
    assert escape("> quote & <tag> ]]> end") == "> quote &amp; &lt;tag> ]]&gt; end"
    block, _ = memory_block(
        {"project": 'a"b\n<c>'}, "intro", ("S",), [Line("S", "</memory-context> & more", 1)], budget=500
    )
    assert block.startswith('<memory-context project="a&quot;b&#10;&lt;c&gt;">')
    assert re.findall(r"</?memory-context", block) == ["<memory-context", "</memory-context"]


def test_lines_are_grouped_by_section_in_section_order() -> None:
    lines = [Line("Recent errors", "e1", 1), Line("Recent sessions", "s1", 2), Line("Recent errors", "e2", 3)]
    block, kept = memory_block({"project": "p"}, "intro", SECTIONS, lines, root="/r", budget=500)
    body = block.split("\n")[3:-3]
    assert body == ["Recent sessions:", "- s1", "Recent errors:", "- e1", "- e2"]
    assert [line.event_id for line in kept] == [1, 2, 3]


def test_paths_in_the_project_are_shown_relative() -> None:
    block, _ = memory_block(
        {"project": "p"}, "intro", ("S",), [Line("S", "Edited /home/me/p/src/a.py", 1)], root="/home/me/p", budget=500
    )
    assert "- Edited src/a.py" in block


def test_hook_output_refuses_what_claude_code_would_cut() -> None:
    try:
        hook_output("SessionStart", context="x" * 10_001)
    except ValueError as exc:
        assert "10000" in str(exc)
    else:
        raise AssertionError("an oversized output was accepted")


def test_the_hint_names_memctl_by_path_when_it_is_not_on_path() -> None:
    assert "memctl is" not in expand_hint()
    assert "`memctl show mem:ID`" in expand_hint("/opt/memd/bin/memctl")
    assert "(memctl is /opt/memd/bin/memctl)" in expand_hint("/opt/memd/bin/memctl")
