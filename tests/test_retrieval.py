"""Hybrid retrieval end to end: a real daemon with the real model, searched over its socket.

One daemon serves the whole module (loading the model takes a second of CPU); each
test writes into its own project directory, so scoping keeps the tests apart.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SHARED, Instance
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memd.config import RetrievalConfig
from memd.protocol import Hit

GOLDEN = SHARED / "fixtures" / "golden"
GOLDEN_K = 3
"""A ``match`` query passes when an expected memory is among the first GOLDEN_K hits."""
THRESHOLD = RetrievalConfig().min_confidence


@pytest.fixture(scope="module")
def memd() -> Iterator[Instance]:
    root = tempfile.mkdtemp(prefix="memd-t-", dir="/tmp")
    instance = Instance(root, embedding=True)
    instance.start()
    try:
        yield instance
    finally:
        assert instance.stop() == 0
        shutil.rmtree(root, ignore_errors=True)


def project(memd: Instance, name: str) -> str:
    return f"{memd.root}/projects/{name}"


def titles(hits: list[Hit]) -> list[str]:
    return [hit.title.removeprefix("Prompt: ") for hit in hits]


# --- golden sets ----------------------------------------------------------------------


def golden_queries() -> list[tuple[Path, dict]]:
    files = sorted(GOLDEN.glob("*.json"))
    assert files, f"golden fixtures missing: {GOLDEN}"
    return [(path, q) for path in files for q in json.loads(path.read_text())["queries"]]


@pytest.fixture(scope="module")
def golden(memd: Instance) -> dict[str, dict[int, str]]:
    """Each golden file's memories as one project; per file, event id -> memory id."""
    loaded = {}
    for path in sorted(GOLDEN.glob("*.json")):
        memories = json.loads(path.read_text())["memories"]
        cwd = project(memd, path.stem)
        loaded[path.stem] = {memd.remember(m["content"], cwd, session=path.stem): m["id"] for m in memories}
    memd.wait_embedded()
    return loaded


@pytest.mark.parametrize(("path", "q"), golden_queries(), ids=lambda v: v["queryId"] if isinstance(v, dict) else "")
def test_golden_query(memd: Instance, golden: dict[str, dict[int, str]], path: Path, q: dict) -> None:
    ids = golden[path.stem]
    reply = memd.search(q["query"], cwd=project(memd, path.stem), limit=5)
    assert reply.mode == "hybrid", reply.notice
    found = [(ids.get(hit.id, f"#{hit.id}"), hit.confidence, hit.lanes) for hit in reply.results]
    explain = f"{q['queryId']} {q['query']!r} -> " + "; ".join(f"{m} {c:.2f} {lanes}" for m, c, lanes in found)
    if q["expectation"] == "match":
        top = [memory for memory, _, _ in found[:GOLDEN_K]]
        assert set(top) & set(q["expectedIds"]), f"no expected id {q['expectedIds']} in the top {GOLDEN_K}: {explain}"
    else:
        confident = [(memory, c) for memory, c, _ in found if c >= THRESHOLD]
        assert not confident, f"a no_match query has confident hits {confident}: {explain}"


# --- ranking --------------------------------------------------------------------------


def test_exact_phrase_and_rare_term_rank_first(memd: Instance) -> None:
    cwd = project(memd, "ranking")
    exact = memd.remember("deploy the staging server with the ansible playbook", cwd, age_days=30)
    for text in [
        "deploy the frontend bundle to production",
        "the staging database was restored from backup",
        "server logs are rotated nightly by logrotate",
        "ansible inventory lists every host of the cluster",
        "playbook review: staging first, then production",
    ]:
        memd.remember(text, cwd)  # fresher partial matches
    rare = memd.remember("the crash came from XQ7Z_LIMIT being zero in the retry loop", cwd, age_days=60)
    for n in range(20):
        memd.remember(f"retry loop number {n} ran fine", cwd)
    memd.wait_embedded()
    hits = memd.search("staging server with the ansible playbook", cwd=cwd).results
    assert hits[0].id == exact, titles(hits)
    assert hits[0].confidence == max(hit.confidence for hit in hits) and hits[0].confidence >= 0.9
    hits = memd.search("XQ7Z_LIMIT retry", cwd=cwd).results
    assert hits[0].id == rare, titles(hits)
    assert hits[0].lanes["keyword"] == 1 and hits[0].matched == ["xq7z", "limit", "retry"]


def test_recency_breaks_ties_but_never_buries_an_exact_match(memd: Instance) -> None:
    cwd = project(memd, "recency")
    old_twin = memd.remember("rotate the api signing keys every quarter", cwd, age_days=90)
    new_twin = memd.remember("rotate the api signing keys every quarter", cwd, session="s-later")
    assert new_twin != old_twin  # two sessions: two events
    old_exact = memd.remember("the flaky test is test_upload_resumes_after_timeout", cwd, age_days=400)
    memd.remember("upload timeout raised in a test", cwd)  # fresh, partial
    memd.wait_embedded()
    hits = memd.search("api signing keys", cwd=cwd).results
    assert [h.id for h in hits[:2]] == [new_twin, old_twin]
    hits = memd.search("test_upload_resumes_after_timeout", cwd=cwd).results
    assert hits[0].id == old_exact, titles(hits)


def test_search_stays_in_its_project_unless_asked(memd: Instance) -> None:
    alpha, beta = project(memd, "alpha"), project(memd, "beta")
    in_alpha = memd.remember("the tokenizer cache is invalidated on config reload", alpha)
    in_beta = memd.remember("the tokenizer cache lives in redis", beta)
    memd.wait_embedded()
    assert {h.id for h in memd.search("tokenizer cache", cwd=alpha).results} == {in_alpha}
    assert {h.id for h in memd.search("tokenizer cache", cwd=beta).results} == {in_beta}
    assert {h.id for h in memd.search("tokenizer cache", project=beta).results} == {in_beta}
    everywhere = memd.search("tokenizer cache", all_projects=True, cwd=alpha)
    assert {in_alpha, in_beta} <= {h.id for h in everywhere.results} and everywhere.scope is None
    nowhere = memd.search("tokenizer cache", cwd=project(memd, "never-used"))
    assert nowhere.results == [] and "--all-projects" in nowhere.notice


def test_filters(memd: Instance) -> None:
    cwd = project(memd, "filters")
    old = memd.remember("migrate the billing tables", cwd, age_days=10, session="s-old")
    new = memd.remember("migrate the billing tables again", cwd, session="s-new")
    memd.wait_embedded()
    day = 86400
    import time

    assert [h.id for h in memd.search("billing", cwd=cwd, since=time.time() - 2 * day).results] == [new]
    assert [h.id for h in memd.search("billing", cwd=cwd, until=time.time() - 2 * day).results] == [old]
    assert [h.id for h in memd.search("billing", cwd=cwd, session="s-old").results] == [old]
    assert memd.search("billing", cwd=cwd, kind="tool").results == []
    assert {h.id for h in memd.search("billing", cwd=cwd, kind="prompt").results} == {old, new}


def test_hits_explain_why(memd: Instance) -> None:
    cwd = project(memd, "explain")
    event = memd.remember("the websocket reconnect backoff doubles up to thirty seconds", cwd)
    memd.wait_embedded()
    (hit,) = [h for h in memd.search("websocket reconnect", cwd=cwd).results if h.id == event]
    assert hit.lanes.keys() >= {"keyword", "vector"} and hit.matched == ["websocket", "reconnect"]
    assert hit.similarity is not None and 0 < hit.similarity <= 1 and 0 < hit.confidence <= 1
    assert "[websocket] [reconnect]" in hit.snippet
    meaning = memd.search("client retries the socket connection with exponential delay", cwd=cwd, lanes=["vector"])
    assert meaning.results and meaning.results[0].id == event and meaning.results[0].matched == []
    only_keyword = memd.search("websocket", cwd=cwd, lanes=["keyword"])
    assert only_keyword.results[0].lanes == {"keyword": 1} and only_keyword.notice == ""
    assert "unknown lane" in memd.search("websocket", cwd=cwd, lanes=["telepathy"]).notice


# --- Korean ---------------------------------------------------------------------------


def test_korean_substrings_and_short_words(memd: Instance) -> None:
    cwd = project(memd, "korean")
    search_result = memd.remember("검색 결과를 확인했다", cwd)
    rebuild = memd.remember("인덱스를 다시 빌드했습니다", cwd)
    english = memd.remember("fixed the flaky upload test", cwd)
    deploy = memd.remember("의존성을 모두 설치했습니다", cwd)
    memd.wait_embedded()
    for query, expected in [
        ("검색", search_result),  # two syllables: the substring lane
        ("결과", search_result),  # inside 결과를
        ("인덱스", rebuild),  # three: the trigram lane, inside 인덱스를
        ("빌드했", rebuild),
        ("그거 고쳐줘", english),  # a follow-up: the glossary's "fix"
        ("설치해줘", deploy),  # another ending of the same verb: its glossary stem 설치
    ]:
        hits = memd.search(query, cwd=cwd).results
        assert hits and hits[0].id == expected, (query, titles(hits))


# --- hostile queries ------------------------------------------------------------------

HOSTILE = [
    '"',
    '""',
    '"unbalanced',
    "a\"b'c",
    "-",
    "-x",
    "*",
    "a*b",
    "NEAR(a b, 2)",
    "title:foo",
    "{title text}:x",
    "a AND",
    "OR",
    "NOT a",
    "(",
    ")",
    "^a",
    "+",
    ":",
    "col:",
    "\x00",
    "'; DROP TABLE events; --",
    "%_",
    "\\",
    "🦄 emoji",
    "é" * 3000,
    "x" * 20000,
    "a" + "\u0301" * 50,
    "שלום עולם",
    "검",
    "  ",
]


def test_no_query_breaks_search(memd: Instance) -> None:
    cwd = project(memd, "hostile")
    memd.remember("a normal event about a parser: title and text", cwd)
    for query in HOSTILE:
        reply = memd.search(query, cwd=cwd)  # an Error reply would raise DaemonError here
        assert isinstance(reply.results, list)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_any_text_searches(memd: Instance, query: str) -> None:
    reply = memd.search(query, all_projects=True, limit=3)
    assert isinstance(reply.results, list)


def test_path_filter(memd: Instance) -> None:
    cwd = project(memd, "paths")
    server = memd.remember("refactor the dispatch in memd/server.py", cwd)
    memd.remember("refactor the dispatch table in the router", cwd)
    assert [h.id for h in memd.search("refactor dispatch", cwd=cwd, path="server.py").results] == [server]


def test_rebuild_from_the_event_log(memd: Instance) -> None:
    cwd = project(memd, "rebuild")
    event = memd.remember("the nightly backup job compresses with zstd", cwd)
    memd.wait_embedded()
    before = [(h.id, h.confidence) for h in memd.search("backup compression zstd", cwd=cwd).results]
    assert before[0][0] == event
    derived = (
        "SELECT (SELECT count(*) FROM mentions), (SELECT count(*) FROM entities), (SELECT count(*) FROM events_ctx)"
    )
    counts = memd.query(derived)
    done = memd.memctl("rebuild", "--fts", "--json")
    assert done.returncode == 0, done.stderr
    assert memd.query(derived) == counts and counts[0][0] > 0  # the entities and the context index, found again
    assert json.loads(done.stdout)["fts_rows"] == memd.status().events + len(
        memd.query("SELECT id FROM events WHERE kind = 'session_summary'")
    )
    queued = json.loads(memd.memctl("rebuild", "--vectors", "--json").stdout)["vectors_queued"]
    assert queued > 0
    memd.wait_embedded()
    assert [(h.id, h.confidence) for h in memd.search("backup compression zstd", cwd=cwd).results] == before
    shown = memd.memctl("status").stdout
    assert (
        "embedding:     sentence-transformers/all-MiniLM-L6-v2 (384 dimensions, weights 8199be6f699a): ready" in shown
    )
    assert "outbox backlog 0" in shown
