"""The query compiler: normalizing, Korean handling, glossary, and expressions SQLite always accepts."""

from __future__ import annotations

import functools
import re
import sqlite3
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.query import (
    GLOSSARY,
    Query,
    compile_query,
    has_cjk,
    like_patterns,
    match_expression,
    stem,
    tokens,
    trigram_expression,
)

ROWS = [
    (1, "Bash: pytest -x", "run the test suite; 3 tests passed"),
    (2, "Edited memd/store/queries.py", "rebuilt the index and the indexes are fresh"),
    (3, "prompt", "검색 결과를 확인했다"),
    (4, "prompt", "인덱스를 다시 빌드"),
    (5, "Edited memd/context.py", "def inject_context(event_id): return fts_query(text)"),
    (6, "note", "Fixed the cache invalidation bug in the daemon"),
]


@functools.cache
def db() -> sqlite3.Connection:
    """An in-memory copy of the two FTS tables memd searches, with a few rows (CJK rows in both)."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, text, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE cjk USING fts5(title, text, tokenize='trigram')")
    for row in ROWS:
        conn.execute("INSERT INTO t(rowid, title, text) VALUES (?, ?, ?)", row)
        if has_cjk(row[2]):
            conn.execute("INSERT INTO cjk(rowid, title, text) VALUES (?, ?, ?)", row)
    return conn


def fts(expression: str) -> set[int]:
    if not expression:
        return set()
    return {r for (r,) in db().execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))}


def trigram(expression: str) -> set[int]:
    if not expression:
        return set()
    return {r for (r,) in db().execute("SELECT rowid FROM cjk WHERE cjk MATCH ?", (expression,))}


def like(patterns: list[str]) -> set[int]:
    found: set[int] = set()
    for pattern in patterns:
        found |= {r for (r,) in db().execute("SELECT rowid FROM cjk WHERE text LIKE ? ESCAPE '\\'", (pattern,))}
    return found


def run_everything(text: str) -> None:
    """Compile ``text`` and run every expression it yields against real FTS5 tables: none may raise."""
    query = compile_query(text)
    assert query.text == text
    assert len(query.groups) <= 12
    for operator in ("AND", "OR"):
        for prefix_last in (True, False):
            fts(match_expression(query.groups, operator=operator, prefix_last=prefix_last))
    trigram(trigram_expression(query.cjk))
    like(like_patterns(query.cjk))


# --- tokenizing and stop-words ----------------------------------------------------------------------------


def test_query_shape() -> None:
    query = compile_query("Fix the flaky tests")
    assert isinstance(query, Query)
    assert query == Query(text="Fix the flaky tests", groups=(("fix",), ("flaky",), ("tests",)), cjk=())


def test_stop_words_dropped_but_kept_when_nothing_else() -> None:
    assert compile_query("what should we do about the cache?").groups == (("cache",),)
    assert compile_query("How did we use it").groups == (("how",), ("did",), ("we",), ("use",), ("it",))
    assert compile_query("그거 좀 해줘").groups == (("그거",), ("좀",), ("해줘",))


def test_normalizing_dedup_digits_and_underscores() -> None:
    # NFKC (full-width letters, ligatures), casefold, "_" splits, single digits go, repeats go.
    assert compile_query("\uff26\uff29\uff38 ﬁle Straße event_id 7 42 fix FIX").groups == (
        ("fix",),
        ("file",),
        ("strasse",),
        ("event",),
        ("id",),
        ("42",),
    )
    assert compile_query("parseJSON").groups == (("parsejson",),)


def test_max_terms_keeps_the_first_groups() -> None:
    text = " ".join(f"word{i}" for i in range(50))
    assert [g[0] for g in compile_query(text).groups] == [f"word{i}" for i in range(12)]
    assert len(compile_query(text, max_terms=3).groups) == 3
    assert compile_query(text, max_terms=0).groups == ()


def test_a_megabyte_query_is_bounded() -> None:
    text = " ".join(f"term{i}" for i in range(120_000))
    assert len(text) > 1_000_000
    query = compile_query(text)
    assert len(query.groups) == 12
    assert query.text == text
    assert compile_query("the " * 300_000).groups == (("the",),)
    assert len(compile_query("검색 " * 400_000 + "가나다라" * 100_000, max_terms=5).groups) == 1


def test_empty_and_punctuation_only() -> None:
    for text in ("", "   ", '"""', "-*^:()", "\x00", "_"):
        query = compile_query(text)
        assert query.groups == () and query.cjk == ()
        assert match_expression(query.groups, operator="AND") == ""


# --- Korean -----------------------------------------------------------------------------------------------


def test_korean_particles_are_stripped() -> None:
    assert compile_query("검색을").groups[0][0] == "검색"
    assert compile_query("인덱스를").cjk == ("인덱스",)
    assert compile_query("서버에서는").groups[0] == ("서버", "server")
    assert compile_query("pytest를").groups == (("pytest",),)  # a Latin word keeps no Korean particle
    # A single syllable would remain: these are words, not word + particle.
    assert compile_query("속도").groups[0][0] == "속도"
    assert compile_query("추가").groups[0][0] == "추가"


def test_korean_stop_words() -> None:
    query = compile_query("응 그거 이제 다음 단계 진행해줘")
    assert [g[0] for g in query.groups] == ["다음", "단계", "진행해줘"]
    assert query.cjk == ("다음", "단계", "진행해줘", "진행")  # the glossary stem too: it finds 진행했다


def test_glossary_follow_ups() -> None:
    query = compile_query("그거 고쳐줘")
    assert query.groups == (("고쳐줘", "고쳐", "fix", "repair"),)
    assert query.cjk == ("고쳐줘", "고쳐")

    groups = compile_query("응 다음 단계 진행").groups
    assert [g[0] for g in groups] == ["다음", "단계", "진행"]
    assert "next" in groups[0] and "step" in groups[1] and "continue" in groups[2]

    assert "fix" in compile_query("수정해주세요").groups[0]
    assert compile_query("테스트를 실행해줘").groups == (("테스트", "test"), ("실행해줘", "실행", "run", "execute"))


def test_glossary_longest_key_wins() -> None:
    assert compile_query("로그인").groups == (("로그인", "login"),)
    assert compile_query("로그를").groups == (("로그", "log"),)
    assert compile_query("데이터베이스").groups[0][1:] == ("database", "sqlite")


def test_glossary_data() -> None:
    assert len(GLOSSARY) >= 80
    for key, words in GLOSSARY.items():
        assert len(key) >= 1 and has_cjk(key)
        assert words and all(re.fullmatch("[a-z]+", w) for w in words), key


def test_mixed_and_other_cjk() -> None:
    query = compile_query("SQLite 인덱스 검색 検索結果 テスト")
    assert [g[0] for g in query.groups] == ["sqlite", "인덱스", "검색", "検索結果", "テスト"]
    assert query.cjk == ("인덱스", "검색", "検索結果", "テスト")


# --- expressions ------------------------------------------------------------------------------------------


def test_match_expression_shape() -> None:
    groups = (("fix",), ("고쳐줘", "fix", "repair"), ("tests",))
    assert match_expression(groups, operator="AND") == '"fix" AND ("고쳐줘" OR "fix" OR "repair") AND "tests"*'
    assert match_expression(groups, operator="OR", prefix_last=False) == (
        '"fix" OR ("고쳐줘" OR "fix" OR "repair") OR "tests"'
    )


def test_prefix_star_rules() -> None:
    assert match_expression([("abc",)], operator="AND") == '"abc"*'
    assert match_expression([("ab",)], operator="AND") == '"ab"'  # too short
    assert match_expression([("인덱스",)], operator="AND") == '"인덱스"'  # CJK
    assert match_expression([("fix",), ("고쳐", "fix")], operator="AND") == '"fix" AND ("고쳐" OR "fix")'
    assert match_expression([("index", "idx")], operator="AND") == '("index"* OR "idx")'  # first term only
    assert match_expression([("index",), ("ab",)], operator="AND") == '"index" AND "ab"'  # last group only


def test_quoting_makes_syntax_plain() -> None:
    assert match_expression([('a"b',)], operator="AND", prefix_last=False) == '"a""b"'
    assert match_expression([("title:foo", "NEAR(a")], operator="OR", prefix_last=False) == (
        '("title:foo" OR "NEAR(a")'
    )
    assert match_expression([("", "\x00"), ("x\x00y",), ("\ud800",)], operator="AND", prefix_last=False) == '"xy"'
    assert match_expression([], operator="OR") == ""
    with pytest.raises(ValueError):
        match_expression([("a",)], operator="NOT")  # type: ignore[arg-type]


def test_trigram_expression_and_like_patterns() -> None:
    assert trigram_expression(("검색", "인덱스", 'a"bc', "検索結果")) == '"인덱스" OR "a""bc" OR "検索結果"'
    assert trigram_expression(("검색", "가")) == ""
    assert like_patterns(("검색", "인덱스", "가", "%_", "a\\")) == ["%검색%", "%가%", "%\\%\\_%", "%a\\\\%"]
    assert like_patterns(()) == []


# --- document side ----------------------------------------------------------------------------------------


def test_tokens() -> None:
    assert tokens("Fix the_event_id in camelCase, ÉCOLE ﬁle 42!") == [
        "fix",
        "the",
        "event",
        "id",
        "in",
        "camelcase",
        "école",
        "file",
        "42",
    ]
    assert tokens("검색 결과를 확인했다") == ["검색", "결과를", "확인했다"]
    assert tokens("") == []


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
@settings(max_examples=300, deadline=None)
def test_tokens_ascii_fast_path_matches_regex(text: str) -> None:
    assert tokens(text) == re.findall(r"[^\W_]+", text.lower())


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_tokens_is_nfkc_casefold_words(text: str) -> None:
    assert tokens(text) == re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text.casefold()))


@pytest.mark.parametrize(
    "family",
    [
        "inject injects injected injecting injection injections",
        "fix fixed fixes fixing",
        "test tests tested testing",
        "rebuild rebuilds rebuilding",
        "run runs running",
        "query queries queried querying",
        "index indexes indexed indexing",
        "cache caches cached caching",
        "commit commits committed committing",
        "update updates updated updating",
        "pass passes passed passing",
        "install installs installed installing",
        "add adds added adding",
        "migrate migrates migrated migration",
        "dependency dependencies",
        "class classes",
    ],
)
def test_stem_families(family: str) -> None:
    assert len({stem(word) for word in family.split()}) == 1, {word: stem(word) for word in family.split()}


def test_stem_keeps_distinct_and_foreign_words() -> None:
    assert stem("string") == "string"  # "str" has no vowel
    assert stem("status") == "status"
    assert stem("need") == "need" and stem("speed") == "speed"
    assert stem("검색") == "검색" and stem("école") == "école"
    assert len({stem("test"), stem("text"), stem("index"), stem("inject")}) == 4


# --- against real FTS5 tables -----------------------------------------------------------------------------

HOSTILE = [
    '"',
    '""',
    '"""',
    '"abc',
    'a"b',
    'abc"',
    "-x",
    "- -",
    "*",
    "a*b",
    "abc*",
    "**",
    "NEAR(a b)",
    "NEAR(a b, 2)",
    "NEAR",
    "title:foo",
    "text:bar baz",
    "{title text}:x",
    "{title}: ",
    "- title:x",
    "col:",
    ":",
    "a AND",
    "AND",
    "OR",
    "NOT",
    "NOT a",
    "a NOT",
    "a OR OR b",
    "AND OR NOT NEAR",
    "(",
    ")",
    "((a)",
    "(a OR b",
    "^a",
    "^",
    "+",
    "a + b",
    "'",
    "''",
    "\\",
    "\\\\",
    "%_",
    "%",
    "_",
    "__init__",
    "\x00",
    "a\x00b",
    "\x00검색\x00",
    "\ud800",
    "a\udfffb",
    "인덱스\udc80",
    "🔥",
    "fix 🐛 now 👍🏽",
    "👨‍👩‍👧",
    "e\u0301\u0301\u0301",
    "\u0301",
    "Z̴̡̪a̷l̸g̶o̵",
    "مرحبا بالعالم",
    "שלום",
    "\u202eevil\u202c",
    "\u200b\u200c\u200d\ufeff",
    "\t\n\r\x0b\x0c",
    "\uff2e\uff25\uff21\uff32\uff08\uff41\uff09",  # full-width NEAR(a)
    "ﬁx",
    "Ⅻ ① ²",
    "ǅ İ ß ﬀ",
    "a" * 10_000,
    "검" * 10_000,
    "가" * 10_000,
    "word " * 2_000,
    'ab"cd*ef:gh(ij)^kl-mn+op' * 400,
    "그거 고쳐줘",
    "검색을 다시 해줘",
    "SELECT * FROM events WHERE 1=1; --",
    "rowid:1",
    "events_fts",
    '"title":"x"*',
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_breaks_match(text: str) -> None:
    run_everything(text)


def test_hostile_groups_never_break_match() -> None:
    # Groups built by hand (not from compile_query) with raw syntax, NUL and lone surrogates.
    groups = [tuple(HOSTILE[i : i + 3]) for i in range(0, len(HOSTILE), 3)]
    for operator in ("AND", "OR"):
        fts(match_expression(groups, operator=operator))  # type: ignore[arg-type]
    trigram(trigram_expression(tuple(HOSTILE)))
    like(like_patterns(tuple(HOSTILE)))


FRAGMENTS = ['"', "*", "-", ":", "^", "+", "(", ")", "{", "}", " AND ", " OR ", " NOT ", "NEAR(", "title:", "검색을"]


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_any_text_never_breaks_match(text: str) -> None:
    run_everything(text)


@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=30).map("".join))
@settings(max_examples=300, deadline=None)
def test_operator_soup_never_breaks_match(text: str) -> None:
    run_everything(text)


ANY_CHARACTER = st.characters(codec=None, exclude_categories=()) | st.sampled_from(["\ud800", "\udfff", "\x00", '"'])


@given(st.lists(st.lists(st.text(ANY_CHARACTER, max_size=8), max_size=4)))
@settings(max_examples=300, deadline=None)
def test_any_groups_never_break_match(groups: list[list[str]]) -> None:
    for operator in ("AND", "OR"):
        fts(match_expression(groups, operator=operator))  # type: ignore[arg-type]
    terms = tuple(term for group in groups for term in group)
    trigram(trigram_expression(terms))
    like(like_patterns(terms))


def test_relevance_english() -> None:
    assert fts(match_expression(compile_query("running tests").groups, operator="AND")) == {1}
    assert fts(match_expression(compile_query("indexes").groups, operator="AND")) == {2}
    assert fts(match_expression(compile_query("index rebuil").groups, operator="AND")) == {2}  # prefix
    assert fts(match_expression(compile_query("inject_context").groups, operator="AND")) == {5}
    assert fts(match_expression(compile_query("fixing the daemon's caches").groups, operator="AND")) == {6}
    # Nothing has both words, so AND is empty and OR falls back to either.
    assert fts(match_expression(compile_query("cache suite").groups, operator="AND")) == set()
    assert fts(match_expression(compile_query("cache suite").groups, operator="OR")) == {1, 6}


def test_relevance_korean_finds_english_through_glossary() -> None:
    assert fts(match_expression(compile_query("테스트 실행해줘").groups, operator="AND")) == {1}
    assert fts(match_expression(compile_query("그 버그 고쳤어?").groups, operator="AND")) == {6}


def test_relevance_korean_lanes() -> None:
    # One- and two-syllable words: LIKE on the trigram table's text.
    assert like(like_patterns(compile_query("검색").cjk)) == {3}
    assert like(like_patterns(compile_query("결과").cjk)) == {3}
    assert like(like_patterns(compile_query("빌드를").cjk)) == {4}
    # Three characters or more: trigram MATCH; the particle in the query does not get in the way.
    assert trigram(trigram_expression(compile_query("인덱스").cjk)) == {4}
    assert trigram(trigram_expression(compile_query("인덱스를 다시").cjk)) == {4}
    assert trigram(trigram_expression(compile_query("확인했다").cjk)) == {3}
    # unicode61 indexes a Korean word whole: a bare word without particle matches in events_fts too.
    assert fts(match_expression(compile_query("검색").groups, operator="AND")) == {3}
