"""Search: ``Retriever.search`` runs the lanes concurrently, weighs their best and explains each hit.

    keyword | entity | trigram | substring    one reader thread (``memd.store.lanes``)
    context                                   the other reader, alongside
    vector                                    the indexer, alongside (``memd.services.indexer``)
    shortlist, weigh, explain                 one more thread hop (``memd.retrieve.hits``)

Scope is the caller's project by default (``cwd``), a named project, or all of them.
While the embedding model loads (or if it cannot), search runs on the keyword lanes
alone and its reply says so (``mode``, ``notice``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Final

import anyio
import numpy as np

from ..capture.project import project_root
from ..config import RetrievalConfig
from ..protocol import Entities, Hit, Search, SearchResults
from ..query import Query, compile_query
from ..retrieve.hits import (
    MIN_POOL,
    NOBODY,
    Named,
    close_neighbors,
    distinct,
    in_context_last,
    one_per_session,
    pool_size,
    shortlist,
    to_hits,
    weigh,
)
from ..retrieve.prompt_gate import PROMPT_POOL
from ..retrieve.rank import fuse
from ..store import Readers, entities, lanes, layers, outbox
from ..store.lanes import Filters
from ..store.projects import find_project, local_project
from .indexer import Indexer

__all__ = ["DEFAULT_LANES", "LANES", "Retriever", "lexical_lanes"]

LANES = ("keyword", "trigram", "substring", "context", "entity", "vector")
DEFAULT_LANES = frozenset(LANES) - {"entity"}
"""What a search runs unless it names its lanes.  The entity lane alone finds little
(``bench/eval_set.py``: recall@5 0.04-0.19), and the fitted model gives its rank no weight
(``memd.retrieve.model``): what the query's entities say reaches the order through ``said_by``
and ``names``, read for every candidate; the lane answers when asked (``lanes=["entity"]``)."""


class Retriever:
    """Search for one daemon: the lanes over its readers and indexer, and the project ids it has seen."""

    def __init__(self, readers: Readers, indexer: Indexer | None, config: RetrievalConfig) -> None:
        self.readers = readers
        self.indexer = indexer
        self.config = config
        self._project_ids: dict[str, int] = {}
        self._links = 0
        """Links made so far (``forget_projects``): a lookup that raced one is not remembered."""
        self._frequencies = lanes.Frequencies()

    async def search(self, request: Search) -> SearchResults:
        query = compile_query(request.query)
        scope, project_id, missing = await self.scope(request)
        reply = SearchResults(query=request.query, results=[], scope=scope, mode="none")
        if missing:
            reply.notice = missing
            return reply
        if unknown := set(request.lanes) - set(LANES):
            reply.notice = f"unknown lane(s) {', '.join(sorted(unknown))}: choose from {', '.join(LANES)}"
            return reply
        if not query.groups and not query.cjk:
            reply.notice = "the query has no words to search for"
            return reply
        filters = Filters(
            project_id=project_id,
            kind=request.kind,
            tool=request.tool,
            session=request.session,
            path=request.path,
            since=request.since,
            until=request.until,
            entity=request.entity,
            agent=request.agent,
        )
        # The caller's own recent events are in its context: they rank last (not when it asked for them).
        in_context = request.caller if request.caller and request.caller != request.session else None
        reply.mode, reply.notice, reply.results = await self.ranked(
            query, filters, request.limit, request.lanes, in_context=in_context
        )
        return reply

    async def anticipate(self, query: Query) -> None:
        """Start the vector lane's part that needs no store: embedding the query."""
        if self.indexer is not None:
            await self.indexer.anticipate(query.text)

    async def ranked(
        self,
        query: Query,
        filters: Filters,
        limit: int,
        lanes_wanted: Sequence[str] = (),
        in_context: str | None = None,
        asked: str = "",
    ) -> tuple[str, str, list[Hit]]:
        """(mode, notice, the best ``limit`` hits) for a compiled query within ``filters``.
        ``in_context``: a session whose events since its last compaction rank after all others.
        ``asked``: the prompt being answered, for a prompt's search: it weighs fewer candidates
        (``PROMPT_POOL``), returns only hits at ``min_confidence`` or more (the rest would be
        dropped unread), each text once, and never a memory that only repeats the prompt."""
        pool = pool_size(limit, PROMPT_POOL if asked else MIN_POOL)
        floor = self.config.min_confidence if asked else 0.0
        wanted = frozenset(lanes_wanted) if lanes_wanted else DEFAULT_LANES
        ranked: dict[str, list[int]] = {}
        named: list[entities.Named] = []
        neighbors: tuple[list[tuple[int, float]], np.ndarray] | None = None

        async def lexical() -> None:
            found, entity_ids = await self.readers.run(lexical_lanes, query, filters, pool, wanted, self._frequencies)
            ranked.update(found)
            named.extend(entity_ids)

        async def contextual() -> None:  # on the other reader: the two lexical halves take as long
            if "context" in wanted:
                ranked["context"] = await self.readers.run(lanes.context, query, filters, pool, self._frequencies)

        async def semantic() -> None:
            nonlocal neighbors
            if self.indexer is not None and "vector" in wanted:
                # Filters drop neighbours after the search: ask for more when there are any.
                neighbors = await self.indexer.neighbors(query.text, pool * (1 if filters == Filters() else 4))

        async with anyio.create_task_group() as tg:
            tg.start_soon(lexical)
            tg.start_soon(contextual)
            tg.start_soon(semantic)
        mode = "hybrid" if neighbors is not None else "keyword"
        notice = self._keyword_only_notice() if neighbors is None and "vector" in wanted else ""
        # One thread hop for the rest: vector keys to events, documents, evidence.
        lane_order = bool(lanes_wanted)  # asked for some lanes: their own order, to see what each does
        hits = await self.readers.run(
            _rank,
            query,
            limit,
            ranked,
            neighbors,
            filters,
            pool,
            self.config,
            in_context,
            named,
            lane_order,
            floor,
            asked,
        )
        return mode, notice, hits

    async def project(self, cwd: str) -> tuple[str, int | None]:
        """The project root of ``cwd`` and its project's id (None: nothing recorded there,
        nor in another checkout of the same repository, yet)."""
        root = project_root(cwd)
        if root in self._project_ids:  # a root's project changes only by a link: remembered
            return root, self._project_ids[root]
        links = self._links
        project_id = await self.readers.run(local_project, root)
        if project_id is not None and links == self._links:  # read before a link committed: not kept
            self._project_ids[root] = project_id
        return root, project_id

    def forget_projects(self) -> None:
        """Forget the projects remembered per root: a link has just changed some (a merge
        removes one project id, a path may belong to another project now)."""
        self._links += 1
        self._project_ids.clear()

    async def scope(self, request: Search | Entities) -> tuple[str | None, int | None, str]:
        """(project root searched or None for all, its id, a notice if it has no events)."""
        if request.all_projects:
            return None, None, ""
        if request.project:
            found = await self.readers.run(find_project, request.project)
            if found is None:
                return request.project, None, f"no project matches {request.project!r} (memctl project list lists them)"
            return (*found, "")
        if not request.cwd:
            return None, None, ""
        root, project_id = await self.project(request.cwd)
        if project_id is None:
            return root, None, f"no events recorded in {root} yet: search everywhere with --all-projects"
        return root, project_id, ""

    def _keyword_only_notice(self) -> str:
        if self.indexer is None:
            return "keyword search only: embeddings are disabled"
        state = self.indexer.state
        if state in ("loading", "indexing"):
            return f"keyword search only: the embedding model is {state} (semantic results follow in a moment)"
        return f"keyword search only: {self.indexer.reason or state}"


def _rank(
    conn: sqlite3.Connection,
    query: Query,
    limit: int,
    ranked: dict[str, list[int]],
    neighbors: tuple[list[tuple[int, float]], np.ndarray] | None,
    filters: Filters,
    pool: int,
    config: RetrievalConfig,
    in_context: str | None = None,
    named: Sequence[entities.Named] = (),
    lane_order: bool = False,
    floor: float = 0.0,
    asked: str = "",
) -> list[Hit]:
    """Shortlist each lane's best, weigh their evidence, return the best ``limit`` hits
    (``memd.retrieve.hits``; the reads they need, on one connection)."""
    similarity: dict[int, float] = {}
    if neighbors is not None:
        by_event = lanes.vector_events(conn, close_neighbors(neighbors[0]), filters, pool)
        ranked = {**ranked, "vector": [event_id for event_id, _ in by_event]}
        similarity = dict(by_event)
    found = {lane: ids for lane, ids in ranked.items() if ids}
    candidates = shortlist(found, pool)
    if neighbors is not None:  # how close the others are too: a lexical match has a meaning as well
        unmeasured = [event_id for event_id in candidates if event_id not in similarity]
        similarity |= outbox.similarities(conn, unmeasured, neighbors[1])
    docs = lanes.docs(conn, candidates)
    citations = layers.cites(conn, candidates)
    who = _who(conn, candidates, named)
    around = lanes.surroundings(conn, candidates)
    # The embedding model reads English: for a query in Korean, Chinese or Japanese its similarities
    # say little, and the lexical model (fitted without them) weighs the candidates.
    hybrid = neighbors is not None and not query.cjk
    scored = weigh(candidates, docs, ranked, similarity, query, time.time(), config, who, around, hybrid=hybrid)
    if lane_order:  # the lanes asked for, in their own (fused) order
        fused = fuse(found, config.rrf_k)
        scored.sort(key=lambda item: -fused[item.doc.id])
    if in_context is not None:
        scored = in_context_last(scored, in_context, lanes.context_start(conn, in_context))
    scored = one_per_session(scored)
    if asked:  # a prompt's context: each text once, and never the prompt itself again
        scored = distinct(scored, asked)
    kept = [item for item in scored if item.confidence >= floor]
    return to_hits(kept, citations, ranked, limit)


def _who(conn: sqlite3.Connection, candidates: Sequence[int], named: Sequence[entities.Named]) -> Named:
    """Which candidates were said by, or name, the entities the query names."""
    if not named:
        return NOBODY
    by_id = {entity.id: entity for entity in named}
    said: dict[int, list[str]] = {}
    names: dict[int, list[str]] = {}
    for event_id, found in entities.mentions(conn, candidates, list(by_id)).items():
        for entity_id, role in found:
            entity = by_id[entity_id]
            if role in ("speaker", "author"):
                said.setdefault(event_id, []).append(entity.name)
            elif entity.kind not in ("person", "name") or entity.name not in said.get(event_id, ()):
                names.setdefault(event_id, []).append(entity.name)
    return Named(said, names)


ENTITY_LANE_MAX: Final = 200
"""Events an entity may be named in for the entity lane to list them: a rarer entity picks its
events out; a common one (a person in every turn of a chat) only says who, through ``said_by``."""


def lexical_lanes(
    conn: sqlite3.Connection,
    query: Query,
    filters: Filters,
    pool: int,
    wanted: frozenset[str],
    frequencies: lanes.Frequencies,
) -> tuple[dict[str, list[int]], list[entities.Named]]:
    """The lexical lanes ``wanted``, each its ranked event ids (``pool`` at most), and the
    entities the query names."""
    found = {}
    named = entities.named(conn, [group[0] for group in query.groups], query.text)
    if "keyword" in wanted:
        found["keyword"] = lanes.keyword(conn, query, filters, pool, frequencies)
    if "entity" in wanted:
        rare = [
            entity.id for entity in named if entities.mentioned(conn, entity.id, ENTITY_LANE_MAX + 1) <= ENTITY_LANE_MAX
        ]
        found["entity"] = lanes.entity(conn, rare, filters, pool)
    if "trigram" in wanted:
        found["trigram"] = lanes.trigram(conn, query, filters, pool)
    if "substring" in wanted:
        found["substring"] = lanes.substring(conn, query, filters, pool)
    return found, named
