"""From fused candidates to hits (``memd/retrieve/hits.py``), alone: no store, no daemon.
``test_retrieval.py`` checks the same path end to end, with the golden sets."""

from __future__ import annotations

from memd.config import RetrievalConfig
from memd.query import compile_query
from memd.retrieve.hits import (
    MIN_POOL,
    VECTOR_FLOOR,
    close_neighbors,
    in_context_last,
    one_per_session,
    pool_size,
    shortlist,
    to_hits,
    weigh,
)
from memd.store.lanes import Doc

NOW = 1_800_000_000.0


def doc(event_id: int, title: str, text: str = "", kind: str = "prompt", session: str | None = "s") -> Doc:
    return Doc(
        id=event_id, kind=kind, tool=None, title=title, text=text, importance=2, client_ts=NOW, received_at=NOW,
        session_id=session, project="/p",
    )  # fmt: skip


def test_pool_and_shortlist_sizes() -> None:
    assert pool_size(5) == MIN_POOL and pool_size(50) == 100
    fused = {event_id: 1 / event_id for event_id in range(1, 200)}
    assert shortlist(fused, 5) == list(range(1, MIN_POOL + 1))
    assert close_neighbors([(1, 0.9), (2, VECTOR_FLOOR), (3, VECTOR_FLOOR - 0.01)]) == [(1, 0.9), (2, VECTOR_FLOOR)]


def test_weigh_keeps_evidence_and_orders_by_score() -> None:
    docs = {1: doc(1, "parser crash", "the parser crashed on tabs"), 2: doc(2, "lunch", "sandwiches")}
    docs[3] = doc(3, "parser", "a parser note")
    fused = {1: 0.5, 2: 1.0, 3: 0.9}
    query = compile_query("parser crash")
    scored = weigh([2, 3, 1, 4], docs, fused, {}, False, query, NOW, RetrievalConfig())  # 4: deleted since
    assert [doc.id for _, doc, *_ in scored] == [1, 3]  # 2 has none of the words and no similarity
    assert scored[0][3] > scored[1][3] and scored[0][4] is None  # confidence, similarity
    near = weigh([2], docs, fused, {2: 0.9}, True, query, NOW, RetrievalConfig())
    assert [doc.id for _, doc, *_ in near] == [2] and near[0][4] == 0.9  # the vector lane speaks for it


def test_the_asking_sessions_recent_events_rank_last() -> None:
    docs = {i: doc(i, "parser", "parser", session="me" if i in (2, 3) else "other") for i in (1, 2, 3, 4)}
    scored = weigh(
        [1, 2, 3, 4], docs, dict.fromkeys(docs, 0.5), {}, False, compile_query("parser"), NOW, RetrievalConfig()
    )
    order = [doc.id for _, doc, *_ in in_context_last(scored, "me", start=2)]
    assert order[-1] == 3 and sorted(order[:-1]) == [1, 2, 4]  # 2 is before the compaction: in place


def test_one_digest_per_session_and_hits_explained() -> None:
    docs = {
        1: doc(1, "Session summary: parser", "parser work", kind="session_summary"),
        2: doc(2, "Snapshot: parser", "parser work", kind="snapshot"),
        3: doc(3, "parser", "parser notes", session="t"),
    }
    fused = {1: 0.9, 2: 0.8, 3: 0.7}
    scored = weigh([1, 2, 3], docs, fused, {}, False, compile_query("parser"), NOW, RetrievalConfig())
    kept = one_per_session(scored)
    assert {doc.id for _, doc, *_ in kept} in ({1, 3}, {2, 3})
    ranked = {"keyword": [3, 1], "trigram": [1]}
    hits = to_hits(kept, {1: "Ab3xY9"}, ranked, limit=1)
    assert len(hits) == 1
    top = hits[0]
    assert top.lanes == {lane: ids.index(top.id) + 1 for lane, ids in ranked.items() if top.id in ids}
    assert top.matched == ["parser"] and top.cite == {1: "Ab3xY9"}.get(top.id, "") and top.summary
