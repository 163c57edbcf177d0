"""From fused candidates to hits (``memd/retrieve/hits.py``), alone: no store, no daemon.
``test_retrieval.py`` checks the same path end to end, with the golden sets."""

from __future__ import annotations

from memd.config import RetrievalConfig
from memd.query import compile_query
from memd.retrieve.hits import (
    MIN_POOL,
    VECTOR_FLOOR,
    Named,
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
    assert pool_size(5) == MIN_POOL and pool_size(50) == 100 and pool_size(8, 20) == 20
    fused = {event_id: 1 / event_id for event_id in range(1, 200)}
    assert shortlist({"keyword": list(fused)}, pool_size(5)) == list(range(1, MIN_POOL + 1))
    both = shortlist({"keyword": [1, 2, 3, *range(100, 200)], "context": [9, 2, 8]}, pool_size(5))
    assert both[:5] == [1, 9, 2, 3, 8] and len(both) == MIN_POOL  # each lane's first, then each one's second
    assert close_neighbors([(1, 0.9), (2, VECTOR_FLOOR), (3, VECTOR_FLOOR - 0.01)]) == [(1, 0.9), (2, VECTOR_FLOOR)]


def test_weigh_keeps_evidence_and_orders_by_score() -> None:
    docs = {1: doc(1, "parser crash", "the parser crashed on tabs"), 2: doc(2, "lunch", "sandwiches")}
    docs[3] = doc(3, "parser", "a parser note")
    ranked = {"keyword": [2, 3, 1]}
    query = compile_query("parser crash")
    scored = weigh([2, 3, 1, 4], docs, ranked, {}, query, NOW, RetrievalConfig(), hybrid=False)  # 4: deleted since
    assert [item.doc.id for item in scored] == [1, 3]  # 2 has none of the words and no similarity
    assert scored[0].confidence > scored[1].confidence and scored[0].similarity is None
    assert scored[0].features["coverage"] == 1.0 and scored[1].features["coverage"] == 0.5
    unembedded = weigh([1], docs, ranked, {}, query, NOW, RetrievalConfig())  # hybrid, but no vector of it yet
    assert unembedded[0].confidence == scored[0].confidence  # weighed by the lexical model, not as dissimilar
    near = weigh([2], docs, {"vector": [2]}, {2: 0.9}, query, NOW, RetrievalConfig())
    assert [item.doc.id for item in near] == [2] and near[0].similarity == 0.9  # the vector lane speaks for it
    assert near[0].features["vector"] == 1.0 and near[0].features["similarity"] == 0.9


def test_a_speaker_is_who_said_it_not_what_it_says() -> None:
    docs = {
        1: doc(1, "Prompt: Caroline: Cool! What did it look like?", "Caroline: Cool! What did it look like?"),
        2: doc(2, "Prompt: Caroline: I researched adoption agencies", "Caroline: I researched adoption agencies"),
    }
    query = compile_query("what did Caroline research")
    named = Named(said_by={1: ["Caroline"], 2: ["Caroline"]}, names={})
    ranked = {"keyword": [1, 2], "context": [1, 2]}
    scored = weigh([1, 2], docs, ranked, {}, query, NOW, RetrievalConfig(), named, hybrid=False)
    assert [item.doc.id for item in scored] == [2, 1]
    thin, answer = scored[1], scored[0]
    assert thin.features["coverage"] == 0.0 and answer.features["coverage"] == 0.5  # the name is not what it says
    assert thin.entities == ("said by Caroline",) and thin.features["said_by"] == 1.0
    assert thin.features["substance"] < answer.features["substance"]
    assert thin.confidence < answer.confidence and thin.confidence < 0.45


def test_the_asking_sessions_recent_events_rank_last() -> None:
    docs = {i: doc(i, "parser", "parser", session="me" if i in (2, 3) else "other") for i in (1, 2, 3, 4)}
    scored = weigh([1, 2, 3, 4], docs, {"keyword": [1, 2, 3, 4]}, {}, compile_query("parser"), NOW, RetrievalConfig())
    order = [item.doc.id for item in in_context_last(scored, "me", start=2)]
    assert order[-1] == 3 and sorted(order[:-1]) == [1, 2, 4]  # 2 is before the compaction: in place


def test_one_digest_per_session_and_hits_explained() -> None:
    docs = {
        1: doc(1, "Session summary: parser", "parser work", kind="session_summary"),
        2: doc(2, "Snapshot: parser", "parser work", kind="snapshot"),
        3: doc(3, "parser", "parser notes", session="t"),
    }
    ranked = {"keyword": [3, 1], "trigram": [1]}
    scored = weigh([1, 2, 3], docs, ranked, {}, compile_query("parser"), NOW, RetrievalConfig())
    kept = one_per_session(scored)
    assert {item.doc.id for item in kept} in ({1, 3}, {2, 3})
    hits = to_hits(kept, {1: "Ab3xY9"}, ranked, limit=1)
    assert len(hits) == 1
    top = hits[0]
    assert top.lanes == {lane: ids.index(top.id) + 1 for lane, ids in ranked.items() if top.id in ids}
    assert top.matched == ["parser"] and top.cite == {1: "Ab3xY9"}.get(top.id, "") and top.summary
