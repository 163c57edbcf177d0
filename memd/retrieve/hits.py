"""From the lanes' candidates to the hits a search returns: pure functions, no IO.

    shortlist        each lane's best candidates, a pool's worth
    weigh            each candidate's evidence, confidence and score (``rank.py``), best first
    in_context_last  the asking session's own recent events after everything else
    one_per_session  one digest (summary or snapshot) per session
    distinct         for a prompt: each text once, and not the prompt being answered
    to_hits          the best ``limit``, each with why it was found

``memd.services.search`` reads what these need (documents, citations, the vector lane's
events) and calls them in that order, in one worker thread.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

from ..capture.entities import speaker
from ..capture.text import parse_meta
from ..config import RetrievalConfig
from ..protocol import Hit
from ..query import STOP_EN, Query, tokens
from ..store.lanes import Doc
from .digest import detail_tokens, files_of, summary
from .model import CALIBRATION, SUBSTANCE_WORDS, lane_score, probability, score, substance, unread
from .rank import Evidence, Matcher, boosted, one_digest_per_session, penalty, snippet

__all__ = [
    "MIN_POOL",
    "NOBODY",
    "SEMANTIC_FLOOR",
    "VECTOR_FLOOR",
    "Named",
    "Scored",
    "close_neighbors",
    "content_words",
    "distinct",
    "in_context_last",
    "one_per_session",
    "own_words",
    "pool_size",
    "shortlist",
    "to_hits",
    "weigh",
]

MIN_POOL: Final = 40
"""Candidates each lane contributes at least, and the shortlist's length (more for larger
limits), for a search someone asked for.  The answer to a question put in other words than its
memory's is often the vector lane's sixth to fifteenth, behind the lexical lanes' firsts: at 20,
0.545 of the coding-memory set's paraphrased questions (untouched part) find it among the first
5, at 40, 0.583 (``bench/eval_set.py``); a search costs ~2-3 ms more.  The prompt hook weighs
fewer (``prompt_gate.PROMPT_POOL``)."""
VECTOR_FLOOR: Final = 0.2
"""Below this cosine similarity a neighbour is unrelated text (MiniLM): not a candidate."""
SEMANTIC_FLOOR: Final = 0.25
"""A candidate with none of the query's words (alone or with its neighbours) and no entity in
common is a hit only this close in meaning or closer: below it, MiniLM's unrelated text."""


class Scored(NamedTuple):
    """A candidate worth a line, with what it was ranked by."""

    rank: float
    doc: Doc
    evidence: Evidence
    confidence: float
    similarity: float | None
    """None: the vector lane did not find it."""
    features: dict[str, float]
    entities: tuple[str, ...]
    """The query's entities it names or that said it, as ``Hit.entities`` shows them."""


class Named(NamedTuple):
    """What the store knows of a candidate and the entities the query names."""

    said_by: Mapping[int, Sequence[str]]
    """Event id → the query's people who said it."""
    names: Mapping[int, Sequence[str]]
    """Event id → the query's other entities it names."""


NOBODY: Final = Named({}, {})


def pool_size(limit: int, least: int = MIN_POOL) -> int:
    """Candidates each lane contributes, and the shortlist's length, for ``limit`` hits."""
    return max(least, 2 * limit)


def close_neighbors(neighbors: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """The (key, similarity) neighbours close enough to be candidates."""
    return [(key, similarity) for key, similarity in neighbors if similarity >= VECTOR_FLOOR]


def shortlist(ranked: Mapping[str, Sequence[int]], pool: int) -> list[int]:
    """The candidates the model weighs: each lane's first, then each lane's second, and so on,
    until ``pool`` of them.  No lane's best is left out for another lane's many: which lane is
    right for a query is the model's to say (a long chat's answer may be the context lane's
    third and no other lane's), not the shortlist's."""
    chosen: dict[int, None] = {}
    for at in range(max((len(ids) for ids in ranked.values()), default=0)):
        for ids in ranked.values():
            if at < len(ids):
                chosen.setdefault(ids[at])
                if len(chosen) >= pool:
                    return list(chosen)
    return list(chosen)


def weigh(
    candidates: Sequence[int],
    docs: Mapping[int, Doc],
    ranked: Mapping[str, Sequence[int]],
    similarity: Mapping[int, float],
    query: Query,
    now: float,
    config: RetrievalConfig,
    named: Named = NOBODY,
    around: Mapping[int, str] | None = None,
    *,
    hybrid: bool = True,
) -> list[Scored]:
    """The candidates with any evidence, with their features and confidence (``model.py``),
    best first: confidence, then a few percent for recency, importance and graduation.
    ``around``: each candidate's neighbours' words (``memd.store.neighbours``); ``hybrid``: the
    vector lane ran, and ``similarity`` has every candidate that has vectors (the others, and all
    of them when it did not run, are weighed by the lexical model)."""
    around = around or {}
    matcher = Matcher(query)
    positions = {lane: {event_id: rank for rank, event_id in enumerate(ids, 1)} for lane, ids in ranked.items()}
    scored: list[Scored] = []
    for event_id in candidates:
        doc = docs.get(event_id)
        if doc is None:  # deleted between the lanes and now
            continue
        own = own_words(doc)
        evidence = matcher.evidence(own)
        sim = similarity.get(event_id)
        said, names = named.said_by.get(event_id, ()), named.names.get(event_id, ())
        lanes = {lane: where[event_id] for lane, where in positions.items() if event_id in where}
        close = sim is not None and sim >= SEMANTIC_FLOOR
        if not evidence.matched and not close and not said and not names and "context" not in lanes:
            continue  # found by nothing that speaks for it: not worth a line
        features = {
            "keyword": lane_score(lanes.get("keyword")),
            "context": lane_score(lanes.get("context")),
            "vector": lane_score(lanes.get("vector")),
            "cjk": max(lane_score(lanes.get("trigram")), lane_score(lanes.get("substring"))),
            "entity": lane_score(lanes.get("entity")),
            "similarity": round(sim or 0.0, 4),
            "coverage": round(evidence.coverage, 4),
            "around": round(_with_neighbours(matcher, evidence, around.get(event_id)), 4),
            "complete": float(evidence.phrase or evidence.coverage >= 1.0),
            "said_by": float(bool(said)),
            "names": float(bool(names)),
            "substance": round(substance(content_words(own)), 4),
        }
        # An event not embedded yet (just stored) has no similarity to speak for or against it:
        # the lexical model, fitted without one, weighs it.
        measured = hybrid and sim is not None
        factor = penalty(doc.text or doc.title)
        raw = score(features, measured)
        sure = round(probability(raw, measured) * factor, 4)
        if hybrid and not measured:  # on the hybrid model's scale, to be ordered with the others
            raw = unread(CALIBRATION, probability(raw, False))
        order = raw + math.log(factor)
        rank = boosted(order, (now - doc.client_ts) / 86400, doc.importance, config.recency_half_life_days, doc.level)
        entities = (*(f"said by {who}" for who in said), *names)
        scored.append(Scored(rank, doc, evidence, sure, sim, features, entities))
    scored.sort(key=lambda item: -item.rank)
    return scored


def _with_neighbours(matcher: Matcher, own: Evidence, around: str | None) -> float:
    """The share of the query's concepts the event and its neighbours hold together."""
    if not around or own.coverage >= 1.0:
        return own.coverage
    theirs = set(matcher.evidence(around).matched)
    return len(theirs | set(own.matched)) / len(matcher.groups) if matcher.groups else 0.0


def own_words(doc: Doc) -> str:
    """What an event says itself: its text without a speaker's ``Name:`` (who said it is a
    feature of its own); a tool's title too (``Bash: pytest -x``), not a turn's (its first line)."""
    text = doc.text or doc.title
    if (who := speaker(text)) is not None:
        text = text.split(":", 1)[1] if text.lstrip().startswith(who) else text
    return text if doc.kind in ("prompt", "assistant") else f"{doc.title}\n{text}"


def content_words(text: str, enough: int = SUBSTANCE_WORDS) -> int:
    """Words of ``text`` that carry content, up to ``enough`` (all ``substance`` needs): not
    function words, and of five letters or more, or with a digit, or not ASCII (a Korean word).
    Short words are the common ones ("cool", "look", "like", "okay"): how much a turn says shows
    in its longer words.  Read a few hundred characters at a time: most texts have enough early."""
    found = 0
    for start in range(0, min(len(text), 2000), 400):
        for word in tokens(text[start : start + 400]):
            if word not in STOP_EN and (len(word) >= 5 or not word.isalpha() or not word.isascii()):
                found += 1
                if found >= enough:
                    return found
    return found


def in_context_last(scored: list[Scored], session: str, start: int) -> list[Scored]:
    """``scored`` with ``session``'s events after ``start`` (its context since its last
    compaction: the agent has them already) moved after all others, order kept otherwise."""
    return sorted(scored, key=lambda item: item.doc.session_id == session and item.doc.id > start)


def one_per_session(scored: list[Scored]) -> list[Scored]:
    """``scored`` with only the better-ranked digest of each session (``rank.one_digest_per_session``)."""
    keep = one_digest_per_session([(item.doc.kind, item.doc.session_id) for item in scored])
    return [item for item, kept in zip(scored, keep, strict=True) if kept]


def distinct(scored: list[Scored], asked: str = "") -> list[Scored]:
    """``scored`` with each text once (the better-ranked): a question asked again in several
    sessions is one memory, not several.  ``asked``: the prompt being answered; a memory that
    only repeats it is the question again, not its answer, and goes too."""
    seen = {_plain(asked)} if asked.strip() else set()
    kept = []
    for item in scored:
        text = _plain(item.doc.text or item.doc.title)
        if text not in seen:
            seen.add(text)
            kept.append(item)
    return kept


def _plain(text: str) -> str:
    return " ".join(text.casefold().split())


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
            agent=doc.agent,
            lanes={lane: where[doc.id] for lane, where in positions.items() if doc.id in where},
            matched=list(evidence.matched),
            similarity=sim,
            entities=list(entities),
            features=features,
            summary=summary(doc.kind, doc.title, doc.text),
            tokens=detail_tokens(doc.kind, doc.title, doc.text, doc.project, files_of(parse_meta(doc.meta))),
        )
        for rank, doc, evidence, sure, sim, features, entities in scored[:limit]
    ]
