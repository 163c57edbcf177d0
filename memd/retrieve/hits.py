"""From the lanes' candidates to the hits a search returns: pure functions, no IO.

    shortlist        the best fused candidates, a pool's worth
    weigh            each candidate's evidence, confidence and score (``rank.py``), best first
    in_context_last  the asking session's own recent events after everything else
    one_per_session  one digest (summary or snapshot) per session
    to_hits          the best ``limit``, each with why it was found

``memd.services.search`` reads what these need (documents, citations, the vector lane's
events) and calls them in that order, in one worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ..capture.text import parse_meta
from ..config import RetrievalConfig
from ..protocol import Hit
from ..query import Query
from ..store.lanes import Doc
from .digest import detail_tokens, files_of, summary
from .rank import Evidence, Matcher, confidence, one_digest_per_session, penalty, score, snippet

__all__ = [
    "MIN_POOL",
    "VECTOR_FLOOR",
    "Scored",
    "close_neighbors",
    "in_context_last",
    "one_per_session",
    "pool_size",
    "shortlist",
    "to_hits",
    "weigh",
]

MIN_POOL: Final = 20
"""Candidates each lane contributes at least; more for larger limits."""
VECTOR_FLOOR: Final = 0.2
"""Below this cosine similarity a neighbour is unrelated text (MiniLM): not a candidate."""


Scored = tuple[float, Doc, Evidence, float, float | None]
"""A candidate worth a line, with what it was ranked by: its score, its document, the
query's evidence in it, its confidence and its similarity (None: the vector lane did not
find it).  A plain tuple: a search scores dozens, and each is on the hot path."""


def pool_size(limit: int) -> int:
    """Candidates each lane contributes, and the shortlist's length, for ``limit`` hits."""
    return max(MIN_POOL, 2 * limit)


def close_neighbors(neighbors: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """The (key, similarity) neighbours close enough to be candidates."""
    return [(key, similarity) for key, similarity in neighbors if similarity >= VECTOR_FLOOR]


def shortlist(fused: Mapping[int, float], limit: int) -> list[int]:
    """The ids of the best fused candidates, best first."""
    return sorted(fused, key=lambda event_id: -fused[event_id])[: pool_size(limit)]


def weigh(
    candidates: Sequence[int],
    docs: Mapping[int, Doc],
    fused: Mapping[int, float],
    similarity: Mapping[int, float],
    hybrid: bool,
    query: Query,
    now: float,
    config: RetrievalConfig,
) -> list[Scored]:
    """The candidates with any evidence, scored (``rank.score``), the best first.

    ``hybrid``: the vector lane ran, so a candidate it did not find has no similarity to
    speak for it (rather than an unknown one)."""
    matcher = Matcher(query)
    scored: list[Scored] = []
    for event_id in candidates:
        doc = docs.get(event_id)
        if doc is None:  # deleted between the lanes and now
            continue
        evidence = matcher.evidence(f"{doc.title}\n{doc.text}")
        sim = similarity.get(event_id)
        sure = confidence(evidence.coverage, sim if hybrid else None, penalty(doc.text or doc.title))
        if not evidence.matched and sure == 0:
            continue  # a weak neighbour with none of the words: not worth a line
        rank = score(
            sure,
            fused[event_id],
            phrase=evidence.phrase,
            age_days=(now - doc.client_ts) / 86400,
            importance=doc.importance,
            half_life_days=config.recency_half_life_days,
            level=doc.level,
        )
        scored.append((rank, doc, evidence, sure, sim))
    scored.sort(key=lambda item: -item[0])
    return scored


def in_context_last(scored: list[Scored], session: str, start: int) -> list[Scored]:
    """``scored`` with ``session``'s events after ``start`` (its context since its last
    compaction: the agent has them already) moved after all others, order kept otherwise."""
    return sorted(scored, key=lambda item: item[1].session_id == session and item[1].id > start)


def one_per_session(scored: list[Scored]) -> list[Scored]:
    """``scored`` with only the better-ranked digest of each session (``rank.one_digest_per_session``)."""
    keep = one_digest_per_session([(doc.kind, doc.session_id) for _, doc, *_ in scored])
    return [item for item, kept in zip(scored, keep, strict=True) if kept]


def to_hits(
    scored: Sequence[Scored], citations: Mapping[int, str], ranked: Mapping[str, Sequence[int]], limit: int
) -> list[Hit]:
    """The first ``limit`` of ``scored`` as hits: each with its citation id, the rank each
    lane gave it, the words it matched, its summary and what its details would cost."""
    positions = {lane: {event_id: rank for rank, event_id in enumerate(ids, 1)} for lane, ids in ranked.items()}
    return [
        Hit(
            id=doc.id,
            cite=citations.get(doc.id, ""),
            kind=doc.kind,
            tool=doc.tool,
            title=doc.title,
            snippet=snippet(doc.text or doc.title, evidence.matched),
            score=round(rank, 4),
            confidence=sure,
            session_id=doc.session_id,
            received_at=doc.received_at,
            client_ts=doc.client_ts,
            project=doc.project,
            lanes={lane: where[doc.id] for lane, where in positions.items() if doc.id in where},
            matched=list(evidence.matched),
            similarity=sim,
            summary=summary(doc.kind, doc.title, doc.text),
            tokens=detail_tokens(doc.kind, doc.title, doc.text, doc.project, files_of(parse_meta(doc.meta))),
        )
        for rank, doc, evidence, sure, sim in scored[:limit]
    ]
