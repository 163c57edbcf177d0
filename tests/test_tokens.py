"""Token estimates and truncation to a token budget (memd/tokens.py): pure unit tests.

The fixed examples pin the estimate to real counts of Claude's published tokenizer; the properties check
what a budget relies on (never more than the budget, growth with the text) on arbitrary text; a regex
reference of the tokenizer's pre-tokenizer checks the bit-parallel piece count.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.tokens import (
    ELLIPSIS,
    LONG_NUMBER,
    LONG_WORD,
    LONG_WORD_LETTER,
    NUMBER_DIGIT,
    SPACE_PIECE,
    WORD_PIECE,
    estimate_tokens,
    truncate_to_tokens,
)

# Real token counts from the tokenizer that anthropic<=0.34 shipped as anthropic/tokenizer.json (the Claude
# 2-era tokenizer; see bench/tokens.py), measured once with ``len(Tokenizer.encode(text).ids)``.
REAL = [
    (
        29,
        "The daemon keeps every event it receives, even when the embedding model is not loaded yet; search "
        "falls back to keywords until the vectors catch up.",
    ),
    (
        47,
        'def first_line(text: str) -> str:\n    """The first non-blank line, stripped."""\n'
        "    for line in text.splitlines():\n        if line.strip():\n            return line.strip()\n"
        '    return ""\n',
    ),
    (
        44,
        "FAILED tests/test_query.py::test_korean_stem - AssertionError: assert 'x' == 'y'\n"
        "=================== 1 failed, 212 passed, 1 skipped in 4.27s ===================\n",
    ),
    (
        53,
        "/home/dev/projects/memd/memd/retrieve/query.py\n/home/dev/projects/memd/tests/test_query.py\n"
        "/home/dev/projects/memd/bench/tokens.py\n",
    ),
    (
        91,
        '{"session_id":"8f1c2a44-5b6e-4d0a-9c3f-1e2d3c4b5a69","hook_event_name":"PostToolUse",'
        '"tool_name":"Bash","tool_input":{"command":"git status --short"},'
        '"tool_response":{"stdout":" M memd/tokens.py\\n","exit_code":0}}',
    ),
    (35, "검색 결과가 비어 있으면 트라이그램 인덱스를 다시 빌드해야 한다."),
    (26, "検索結果が空の場合は、インデックスを再構築してください。"),
]

ENGLISH = "Search falls back to keywords while the embedding model loads."
KOREAN = "임베딩 모델을 불러오는 동안 검색은 키워드로 대신한다."

#: Text of every kind: letters of both cases, digits, punctuation, every kind of whitespace, Hangul, CJK,
#: accented letters, symbols and emoji (hypothesis' default alphabet rarely mixes them this densely).
mixed_text = st.text(
    alphabet=st.one_of(
        st.sampled_from("aZq09_.-/\"'(){}:; \n\t\r→—…é한국어日本🙂"),
        st.characters(codec="utf-8"),
    ),
    max_size=300,
)


@pytest.mark.parametrize(("real", "text"), REAL, ids=[t[:12] for _, t in REAL])
def test_estimate_is_close_to_the_real_count_and_not_below(real: int, text: str) -> None:
    assert real <= estimate_tokens(text) <= real * 1.3


def test_empty_text_is_zero_tokens() -> None:
    assert estimate_tokens("") == 0


def test_any_text_is_at_least_one_token() -> None:
    for text in ("a", " ", "\n", "…", "🙂", "한", "\ud800"):  # a lone surrogate, as JSON may decode
        assert estimate_tokens(text) >= 1


def test_korean_costs_more_per_character_than_english() -> None:
    assert estimate_tokens(KOREAN) / len(KOREAN) > 2 * estimate_tokens(ENGLISH) / len(ENGLISH)


def test_whitespace_runs_are_one_piece_whatever_their_length() -> None:
    assert estimate_tokens("x" + " " * 4 + "y") == estimate_tokens("x" + " " * 400 + "y")
    assert estimate_tokens("=" * 80) == estimate_tokens("===")


def test_long_and_mixed_case_runs_cost_more() -> None:
    assert estimate_tokens("getElementById") > estimate_tokens("getelementbyid")
    assert estimate_tokens("a" * 40) > estimate_tokens("a" * 10)
    assert estimate_tokens("1234567890") > estimate_tokens("123")


@given(mixed_text, mixed_text)
@settings(max_examples=300)
def test_appending_text_never_lowers_the_estimate(head: str, tail: str) -> None:
    assert estimate_tokens(head + tail) >= estimate_tokens(head)


# --- the piece count against a regex reference -----------------------------------------------------------

#: The GPT-2 pre-tokenizer regex (what Claude's tokenizer applies first), written for ``re``; contractions
#: (``'s``) are left out, as the estimate leaves them out.
PIECE = re.compile(r" ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")


def reference_estimate(text: str) -> int:
    """The estimate for lower-case ASCII text, computed the slow way: one regex match per piece."""
    pieces = PIECE.findall(text)
    blanks = sum(piece.isspace() for piece in pieces)
    tenths = WORD_PIECE * (len(pieces) - blanks) + SPACE_PIECE * blanks
    tenths += LONG_WORD_LETTER * sum(max(0, len(run) - LONG_WORD) for run in re.findall(r"[a-z]+", text))
    tenths += NUMBER_DIGIT * sum(max(0, len(run) - LONG_NUMBER) for run in re.findall(r"\d+", text))
    return (tenths + 9) // 10


@given(st.lists(st.sampled_from(["a", "bc", "defghij", "1", "234", "_", ".", "->", " ", "  ", "\n", "\n  ", "\t"])))
@settings(max_examples=500)
def test_pieces_are_counted_as_the_tokenizer_regex_cuts_them(parts: list[str]) -> None:
    text = "".join(parts)
    assert estimate_tokens(text) == reference_estimate(text)


# --- truncation ------------------------------------------------------------------------------------------


@given(mixed_text, st.integers(min_value=-3, max_value=120))
@settings(max_examples=300)
def test_truncation_respects_the_budget(text: str, budget: int) -> None:
    result = truncate_to_tokens(text, budget)
    assert estimate_tokens(result) <= max(budget, 0)
    if estimate_tokens(text) <= budget:
        assert result == text
    elif result:
        assert result.endswith(ELLIPSIS)
        assert text.startswith(result[: -len(ELLIPSIS)])


def test_text_that_fits_comes_back_unchanged() -> None:
    assert truncate_to_tokens(ENGLISH, estimate_tokens(ENGLISH)) == ENGLISH
    assert truncate_to_tokens("", 5) == ""


def test_no_budget_means_no_text() -> None:
    assert truncate_to_tokens(ENGLISH, 0) == ""
    assert truncate_to_tokens(ENGLISH, -5) == ""


def test_a_cut_text_ends_with_the_marker_and_uses_the_budget() -> None:
    text = " ".join(["memory"] * 200)
    result = truncate_to_tokens(text, 50)
    assert result.endswith(ELLIPSIS)
    assert 45 <= estimate_tokens(result) <= 50


def test_a_cut_prefers_a_line_boundary() -> None:
    text = "\n".join(f"line {i} of the session log with some words" for i in range(100))
    result = truncate_to_tokens(text, 100)
    kept = result[: -len(ELLIPSIS)]
    assert text[len(kept)] == "\n", "cut inside a line"
    assert kept.count("\n") >= 5


def test_a_cut_without_lines_falls_back_to_a_word_boundary() -> None:
    text = " ".join(["retrieval"] * 300)
    kept = truncate_to_tokens(text, 40)[: -len(ELLIPSIS)]
    assert kept.endswith("retrieval")
    assert text[len(kept)] == " "


def test_a_single_long_word_is_cut_inside() -> None:
    text = "x" * 5000
    result = truncate_to_tokens(text, 20)
    assert result.startswith("xxx") and result.endswith(ELLIPSIS)
    assert estimate_tokens(result) <= 20
