"""Memories looked up on request: the layers of progressive retrieval, smart search, quote checks,
the store's statistics and a project's tasks.

    Timeline → TimelineResult     Details → DetailsResult     SmartSearch → SmartResults
    Verify → Verification         Stats → StatsReport          Tasks → TaskList

Each memory handed over is logged as used (``memd.services.uses``): resolved (its details
read, a quote checked) or expanded (a timeline around it, smart search's expansions).
"""

from __future__ import annotations

import time
from typing import Final

from ..cite import align
from ..config import Config
from ..context import fit_detail, index_line, timeline_text
from ..protocol import (
    ClaudeMemoryUse,
    Details,
    DetailsResult,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    TaskList,
    Tasks,
    Timeline,
    TimelineResult,
    UsageDay,
    Verification,
    Verify,
)
from ..retrieve import layers
from ..retrieve.smart import choose
from ..store import Store, claude_memory, queries, usage
from ..store.listings import task_list
from ..store.projects import find_project
from ..tokens import estimate_tokens
from .errors import not_found
from .search import Retriever
from .uses import record_uses

__all__ = ["MAX_DETAILS", "Lookups"]

MAX_DETAILS: Final = 100
"""Most ids one Details request resolves."""


class Lookups:
    """Answers to the requests that look memories up (see the module doc)."""

    def __init__(self, store: Store, retriever: Retriever, config: Config) -> None:
        self.store = store
        self.retriever = retriever
        self.config = config

    async def _resolve(self, ref: str) -> int:
        event_id = await self.store.readers.run(layers.resolve, ref)
        if event_id is None:
            raise not_found(ref)
        return event_id

    async def timeline(self, request: Timeline) -> TimelineResult:
        event_id = await self._resolve(request.id)
        result = await self.store.readers.run(layers.timeline, event_id, request.before, request.after)
        if result is None:
            raise not_found(request.id)
        await record_uses(self.store, [event_id], request.caller, "expanded")
        return result

    async def details(self, request: Details) -> DetailsResult:
        found: dict[int, str] = {}
        missing = []
        refs = request.ids[:MAX_DETAILS]
        for ref, event_id in zip(refs, await self.store.readers.run(layers.resolve_all, refs), strict=True):
            if event_id is None:
                missing.append(ref)
            else:
                found.setdefault(event_id, ref)
        full = await self.store.readers.run(layers.details, list(found), True)
        reply = DetailsResult(details=[], missing=missing)
        budget = request.budget or self.config.context.search_budget
        remaining = budget
        for event_id, ref in found.items():
            detail = full.get(event_id)
            fitted = fit_detail(detail, remaining, self.config.context.citation_format) if detail else None
            if fitted is None:
                reply.omitted.append(ref)
                continue
            reply.details.append(fitted)
            remaining -= fitted.tokens
        reply.tokens = budget - remaining
        if request.counted:
            await record_uses(self.store, [d.id for d in reply.details], request.caller, "resolved")
        return reply

    async def smart(self, request: SmartSearch) -> SmartResults:
        """A search, expanded as far as its confidences say (``memd.retrieve.smart``), within the budget."""
        index = await self.retriever.search(request)
        expansion = choose([hit.confidence for hit in index.results], self.config.retrieval.min_confidence)
        budget = request.budget or self.config.context.search_budget
        reply = SmartResults(index=index, rule=expansion.rule, reason=expansion.reason, budget=budget)
        spent = sum(estimate_tokens(index_line(hit)) for hit in index.results)
        top = index.results
        for hit in top[: expansion.timelines]:
            timeline = await self.store.readers.run(layers.timeline, hit.id, 3, 3)
            if timeline is not None and spent + (cost := estimate_tokens(timeline_text(timeline))) <= budget:
                reply.timelines.append(timeline)
                spent += cost
        wanted = [hit.id for hit in top[: expansion.details]]
        full = await self.store.readers.run(layers.details, wanted)
        for event_id in wanted:
            detail = full.get(event_id)
            fitted = detail and fit_detail(detail, budget - spent, self.config.context.citation_format)
            if fitted:
                reply.details.append(fitted)
                spent += fitted.tokens
        reply.tokens = spent
        expanded = [t.target.id for t in reply.timelines] + [d.id for d in reply.details]
        found = {hit.id: hit.confidence for hit in index.results}
        await record_uses(self.store, expanded, request.caller, "expanded", found)
        return reply

    async def verify(self, request: Verify) -> Verification:
        event_id = await self._resolve(request.id)
        full = await self.store.readers.run(layers.details, [event_id])
        if event_id not in full:
            raise not_found(request.id)
        detail = full[event_id]
        source = detail.text or detail.title
        span = align(request.quote, source)
        await record_uses(self.store, [event_id], request.caller, "resolved")
        return Verification(
            cite=detail.cite,
            event_id=event_id,
            found=span.found,
            start=span.start,
            end=span.end,
            confidence=span.confidence,
            method=span.method,
            quote_hash=span.quote_hash,
            matched=source[span.start : span.end] if span.found else "",
        )

    async def stats(self, request: Stats) -> StatsReport:
        """What the store holds and how it is used.  ``since`` limits the uses (``usage``,
        ``most_cited``); everything else is all time.  The daemon adds what it measures
        itself (embedding state, hook latencies)."""
        limit = max(1, min(1000, request.limit))
        run = self.store.readers.run
        indexer = self.retriever.indexer
        projects, project_count = await run(queries.top_projects, limit)
        since = time.time() - request.days * 86400
        uses, saved = (
            (await run(usage.per_day, since), await run(claude_memory.saved_per_day, since))
            if request.days > 0
            else ({}, {})
        )
        return StatsReport(
            most_cited=await run(usage.most_cited, limit, request.since),
            usage=await run(usage.totals, request.since),
            levels=await run(usage.levels),
            kinds=await run(queries.kinds),
            agents=await run(queries.agents),
            projects=projects,
            project_count=project_count,
            sizes=await run(queries.storage, self.store.path, indexer.index_dir if indexer else None),
            redactions=await queries.redaction_totals(self.store.reader),
            per_day=await run(queries.per_day, since) if request.days > 0 else [],
            usage_per_day=[
                UsageDay(day=day, **uses.get(day, {}), tokens_saved=saved.get(day, 0))
                for day in sorted(uses.keys() | saved.keys())
            ],
            claude_memory=ClaudeMemoryUse(**(await run(claude_memory.savings))._asdict()),
        )

    async def tasks(self, request: Tasks) -> TaskList:
        """A project's tasks (``project``, else the one of ``cwd``)."""
        root, project_id = None, None
        if request.project:
            root, project_id = await self.store.readers.run(find_project, request.project) or (request.project, None)
        elif request.cwd:
            root, project_id = await self.retriever.project(request.cwd)
        if project_id is None:
            return TaskList(project=root, tasks=[])
        return TaskList(project=root, tasks=await self.store.readers.run(task_list, project_id, request.all))
