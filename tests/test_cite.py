"""Citation ids, quote alignment and citation rendering: the pure functions behind ``mem:`` ids."""

from __future__ import annotations

import random
import string
from collections import Counter

import msgspec
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memd.cite import (
    ALPHABET,
    CITATION_RE,
    FORMATS,
    LEGACY_LENGTH,
    LENGTH,
    MAX_LENGTH,
    Alignment,
    Quoted,
    align,
    attribution,
    key_citation,
    label,
    legacy_citation_id,
    mentions,
    parse,
    render_quotes,
)

# -- ids -----------------------------------------------------------------------------


@given(st.text(max_size=300))
def test_ids_are_the_beginning_of_twelve_alphabet_characters_of_the_key(key: str) -> None:
    full = key_citation(key)
    assert len(full) == MAX_LENGTH == 12 and LENGTH == 8 and set(full) <= set(ALPHABET)
    assert key_citation(key) == full  # on every machine, in every run
    for length in range(LENGTH, MAX_LENGTH + 1):
        assert parse(label(full[:length])) == full[:length] and parse(full[:length]) == full[:length]


def test_ids_are_stable_across_releases() -> None:
    # Ids are stored, synced and quoted back by agents: changing the derivation orphans every citation.
    keys = ("a", "UserPromptSubmit:s1:prompt:p1", "PostToolUse:tool:toolu_1", "session_summary:sess-1")
    assert [key_citation(key) for key in keys] == ["FXwdub76GYln", "aINWhiY8PP8J", "hPEVne5mQjRH", "Ph8ZevT91wJH"]


def test_keys_that_differ_by_a_character_share_nothing() -> None:
    ids = [key_citation(f"UserPromptSubmit:s1:prompt:{n}") for n in range(20_000)]
    assert len({full[:LENGTH] for full in ids}) == len(ids)
    expected = len(ids) / len(ALPHABET)
    for position in (0, LENGTH - 1, MAX_LENGTH - 1):
        counts = Counter(full[position] for full in ids)
        assert set(counts) == set(ALPHABET)  # every character is used in every position
        assert max(counts.values()) < 2 * expected and min(counts.values()) > expected / 2


def test_a_key_out_of_odd_unicode_has_an_id() -> None:
    assert len(key_citation("Stop:s\ud83d:prompt:é")) == MAX_LENGTH  # a lone surrogate from decoded JSON


def test_legacy_ids_are_the_ones_stores_gave_before() -> None:
    # A store made before key-made ids gave these; migration 15 keeps them as aliases.
    assert [legacy_citation_id(n) for n in range(5)] == ["EEYDl2", "WPGgkp", "39G0fc", "EOAn27", "y67we6"]
    assert legacy_citation_id(1, 1) == "DjFyfZ" and legacy_citation_id(1, 0) == legacy_citation_id(1)
    assert len({legacy_citation_id(1, salt) for salt in range(20)}) == 20
    assert all(len(legacy_citation_id(n)) == LEGACY_LENGTH and parse(legacy_citation_id(n)) for n in range(100))


@pytest.mark.parametrize(
    "text",
    [
        "mem:Ab3xY9Kq",
        "[mem:Ab3xY9Kq]",
        "Ab3xY9Kq",
        "  mem:Ab3xY9Kq\n",
        "MEM:Ab3xY9Kq",
        "[Mem:Ab3xY9Kq]",
        "\t[mem:Ab3xY9Kq] ",
    ],
)
def test_parse_accepts_the_three_forms(text: str) -> None:
    assert parse(text) == "Ab3xY9Kq"
    assert parse(text.replace("Kq", "")) == "Ab3xY9"  # a legacy id


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "mem:",
        "Ab3xY",  # 5 characters
        "Ab3xY9z",  # 7 characters
        "Ab3xY9Kq2Zz0w",  # 13 characters
        "mem:Ab3xY9Kq2Zz0w",
        "mem:Ab3xY",
        "mem:Ab3xY9z",
        "Ab3-Y9",
        "Ab3xY!",
        "mem: Ab3xY9",
        "mem;Ab3xY9",
        "[Ab3xY9]",  # brackets go with the prefix
        "[mem:Ab3xY9",  # unbalanced: rejected, a paste cut short
        "mem:Ab3xY9]",
        "Ab3xÝ9",  # not ASCII
        "mem:Ab3xY9 mem:Zz0000",
    ],
)
def test_parse_rejects_everything_else(text: str) -> None:
    assert parse(text) is None


def test_parse_keeps_the_case_of_the_id() -> None:
    assert parse("mem:ab3xy9kq") == "ab3xy9kq"  # another id, not Ab3xY9Kq
    assert label("Ab3xY9") == "mem:Ab3xY9"


def test_mentions_finds_ids_in_prose_in_order_without_duplicates() -> None:
    text = (
        "As noted in [mem:Ab3xY9Kq], the lock was stale (mem:Zz000000). "
        "Again [mem:Ab3xY9Kq]; not xmem:Qqqqqqqq nor mem:toolong7toolong nor mem:seven77 nor Ab3xY9Kq alone. "
        "Also MEM:Ddd22222, mem:Eee333 (legacy) and mem:Fff444444444."
    )
    assert mentions(text) == ["Ab3xY9Kq", "Zz000000", "Ddd22222", "Eee333", "Fff444444444"]
    assert mentions("nothing cited here") == []


def test_citation_matches_take_brackets_only_in_pairs() -> None:
    text = "[mem:Ab3xY9Kq] [mem:Bb3xY9Kq mem:Cb3xY9] mem:Db3xY9Kq2] [mem:Eb3xY9Kq"
    assert [m.group(0) for m in CITATION_RE.finditer(text)] == [
        "[mem:Ab3xY9Kq]",
        "mem:Bb3xY9Kq",
        "mem:Cb3xY9",
        "mem:Db3xY9Kq2",
        "mem:Eb3xY9Kq",
    ]
    assert [m["id"] for m in CITATION_RE.finditer(text)] == ["Ab3xY9Kq", "Bb3xY9Kq", "Cb3xY9", "Db3xY9Kq2", "Eb3xY9Kq"]
    assert CITATION_RE.sub("X", text) == "X [X X] X] [X"


# -- alignment: exact and normalized ---------------------------------------------------

SOURCES = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.sampled_from(" \t\n\r\u00a0\u2003ßİẞﬁΣς"),
    ),
    max_size=200,
)


@given(SOURCES, st.data())
def test_any_substring_aligns_exactly(source: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(source)))
    end = data.draw(st.integers(start, len(source)))
    quote = source[start:end]
    assume(quote.strip())
    found = align(quote, source)
    assert found.method == "exact" and found.confidence == 1.0 and found.found
    assert source[found.start : found.end] == quote
    assert found.start <= start  # the first occurrence


@given(SOURCES, st.data())
def test_collapsed_and_casefolded_quotes_map_back_into_the_source(source: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(source)))
    end = data.draw(st.integers(start, len(source)))
    quote = " ".join(source[start:end].split()).casefold()
    assume(quote)
    found = align(quote, source)
    assert found.method in ("exact", "normalized") and found.found
    # the span is original text whose own normalized form holds the quote
    assert quote in " ".join(source[found.start : found.end].split()).casefold()


def test_normalized_quote_spans_lines_and_indentation() -> None:
    source = "def release(lock):\n    if lock.stale:\n        lock.break_()\n    return lock\n"
    found = align("IF lock.stale: lock.break_()", source)
    assert found.method == "normalized" and found.confidence == 0.95
    assert (found.start, found.end) == (23, 59)
    assert source[found.start : found.end] == "if lock.stale:\n        lock.break_()"


def test_normalized_quote_survives_casefold_expansion() -> None:
    source = "Die  Straße\n   ist gesperrt, sagt İstanbul."
    found = align("STRASSE IST", source)  # "ß" folds to two characters
    assert found.method == "normalized"
    assert source[found.start : found.end] == "Straße\n   ist"
    after = align("ist gesperrt", source.replace("ist", "IST"))  # offsets after the expansion stay right
    assert (after.start, after.end) == (15, 27)
    dotted = align("sagt i̇stanbul", source)  # "İ" folds to "i" + combining dot
    assert dotted.method == "normalized"
    assert source[dotted.start : dotted.end] == "sagt İstanbul"
    half = align("stras", "die Straße")  # ends inside the expansion of "ß": the whole "ß" is in the span
    assert (half.start, half.end, half.method) == (4, 9, "normalized")


@pytest.mark.parametrize("quote", ["", " ", "\n\t  "])
def test_a_blank_quote_is_never_found(quote: str) -> None:
    found = align(quote, "some text with spaces   and\n\nlines")
    assert not found.found and (found.start, found.end, found.method, found.confidence) == (-1, -1, "none", 0.0)


# -- alignment: fuzzy ------------------------------------------------------------------


VOCABULARY = (
    "the daemon index query vector lock session hook memory socket retry spool sqlite "
    "timeout embed rank fusion commit branch test fixture cache writer reader agent"
)


def transcript() -> str:
    """About 2 KB of plausible session text around one known sentence."""
    rng = random.Random(7)
    words = VOCABULARY.split()
    filler = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 14))) + "." for _ in range(30)]
    filler.insert(15, "We found that the spool writer holds the lock across the fsync call.")
    return "\n".join(filler)


def test_fuzzy_finds_a_quote_with_a_typo() -> None:
    source = transcript()
    assert 1800 < len(source) < 2600
    true = "the spool writer holds the lock across the fsync call"
    true_start = source.index(true)
    found = align("the spool writer hodls the lock across the fsync call", source)
    assert found.method == "fuzzy" and found.found and 0.85 <= found.confidence < 1.0
    assert found.start < true_start + len(true) and true_start < found.end  # overlaps the true location
    assert abs(found.start - true_start) <= 2 and abs(found.end - (true_start + len(true))) <= 2
    assert not source[found.start].isspace() and not source[found.end - 1].isspace()


def test_fuzzy_span_is_trimmed_and_in_original_offsets() -> None:
    source = "Intro.\n\n    The   Lock is STALE\n    and nobody noticed."
    found = align("the lock is stael", source)
    assert found.method == "fuzzy" and found.confidence >= 0.85
    assert source[found.start : found.end].startswith("The   Lock is ST")
    assert found.end <= source.index("\n    and")


def test_unrelated_quote_is_not_found() -> None:
    found = align("purple elephants dance quietly at dawn", transcript())
    assert not found.found and (found.start, found.end, found.method, found.confidence) == (-1, -1, "none", 0.0)


@pytest.mark.parametrize("quote", ["lokc", "zq", "wrtr", "Lokc"])
def test_short_quotes_are_found_exactly_or_not_at_all(quote: str) -> None:
    source = "the writer holds the lock across fsync"
    # even a lenient threshold, which "lokc" would pass against "lock", leaves them unfound
    found = align(quote, source, threshold=0.5)
    assert found.method == "none" and found.start == -1 and not found.found
    assert align("lock", source).method == "exact" and align("LOCK", source).method == "normalized"


def test_threshold_decides_fuzzy_matches() -> None:
    source = "the spool writer holds the lock"
    assert align("the spool wrtier holds", source).found
    assert not align("the spool wrtier holds", source, threshold=0.99).found


def test_quote_longer_than_source_refers_to_the_source() -> None:
    source = "the lock is stale"
    found = align("The lock is stale.", source)
    assert found.method == "fuzzy" and (found.start, found.end) == (0, len(source))
    assert found.confidence == pytest.approx(0.9714, abs=1e-4)
    # the source is part of the quote, but most of the quote is not in the source
    assert not align("the lock is stale, said the agent, and then it restarted the daemon", source).found
    assert not align("something long enough", "").found


def test_quote_hash_ignores_whitespace_and_case() -> None:
    source = "The lock\n  is STALE"
    a, b, c = align("the lock is stale", source), align("The  LOCK\nis stale", source), align("lock stale", source)
    assert a.quote_hash == b.quote_hash != c.quote_hash
    assert len(a.quote_hash) == 16 and set(a.quote_hash) <= set(string.hexdigits.lower())
    assert align("the lock is stale", "elsewhere").quote_hash == a.quote_hash  # found or not


def test_alignment_is_a_frozen_struct() -> None:
    found = align("lock", "the lock")
    assert found == Alignment(start=4, end=8, confidence=1.0, method="exact", quote_hash=found.quote_hash)
    with pytest.raises(AttributeError):
        found.start = 0  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(found), type=Alignment) == found


# -- rendering -------------------------------------------------------------------------

QUOTES = [
    Quoted("the lock is stale\nbreak it before retrying", "Ab3xY9", "2026-11-21", "8bbcce5f-1c2d"),
    Quoted("  fsync after every batch  ", "Zz0000", "2026-11-22", None),
]


def test_attribution() -> None:
    assert attribution("Ab3xY9", "2026-11-21", "8bbcce5f-1c2d") == "[mem:Ab3xY9] — 2026-11-21, session 8bbcce"
    assert attribution("Ab3xY9", "2026-11-21", None) == "[mem:Ab3xY9] — 2026-11-21"
    assert attribution("Ab3xY9", "2026-11-21", "") == "[mem:Ab3xY9] — 2026-11-21"


def test_render_inline() -> None:
    assert render_quotes(QUOTES, "inline") == (
        "> the lock is stale\n"
        "> break it before retrying\n"
        "> [mem:Ab3xY9] — 2026-11-21, session 8bbcce\n"
        "\n"
        "> fsync after every batch\n"
        "> [mem:Zz0000] — 2026-11-22"
    )
    single = [Quoted("the lock is stale", "Ab3xY9", "2026-11-21", "8bbcce")]
    assert render_quotes(single, "inline") == "> the lock is stale\n> [mem:Ab3xY9] — 2026-11-21, session 8bbcce"
    blank_line = [Quoted("first\n\nsecond", "Ab3xY9", "d", None)]
    assert render_quotes(blank_line, "inline") == "> first\n>\n> second\n> [mem:Ab3xY9] — d"


def test_render_footnote() -> None:
    assert render_quotes(QUOTES, "footnote") == (
        "the lock is stale\nbreak it before retrying[^1]\n"
        "\n"
        "fsync after every batch[^2]\n"
        "\n"
        "[^1]: [mem:Ab3xY9] — 2026-11-21, session 8bbcce\n"
        "[^2]: [mem:Zz0000] — 2026-11-22"
    )


def test_render_reference() -> None:
    assert render_quotes(QUOTES, "reference") == (
        "the lock is stale\nbreak it before retrying [1]\n"
        "\n"
        "fsync after every batch [2]\n"
        "\n"
        "[1] [mem:Ab3xY9] — 2026-11-21, session 8bbcce\n"
        "[2] [mem:Zz0000] — 2026-11-22"
    )


def test_render_rejects_unknown_styles() -> None:
    assert FORMATS == ("inline", "footnote", "reference")
    with pytest.raises(ValueError, match="inline, footnote, reference"):
        render_quotes(QUOTES, "chicago")
    assert all(render_quotes([], style) == "" for style in FORMATS)
