"""Memories handed back: asked for (the layers, smart search, quote checks) and unasked
(the context of SessionStart and UserPromptSubmit).

    asked     Timeline → TimelineResult     Details → DetailsResult     SmartSearch → SmartResults
              Verify → Verification         Stats → StatsReport
    unasked   session_start(event) and prompt(event) → a ``<memory-context>`` block, or ""

Each use of a memory is logged (``store/usage.py``): injected, resolved or expanded.
The SQL is in ``retrieve/layers.py`` and here (``_starting_material``); the rendering
in ``context.py``; this module decides what goes where, within which budget.

**Prompt context.**  The prompt is searched in its project, leaving out the prompt's own
session (its events are in the agent's context already), memd's bookkeeping kinds, and
low-importance tool calls (reads and searches: a peer found them 82% of its store and
0.2% of what agents used).  Then, by the top hit's confidence:

    >= PROMPT_HIGH          the top hit's details, cut to fit (plus index lines of other sure hits)
    >= min_confidence       index lines only (at most PROMPT_SUGGESTIONS)
    below                   nothing

Nothing this session already got is injected again.  Slash commands, Claude Code's
own command echoes and text that is memd's own are not searched; short prompts are
(a Korean follow-up like "그거 고쳐줘" is short and may well have an answer).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import sys
import time
from typing import Final

import structlog

from .capture import NewEvent
from .cite import CITATION_RE, align
from .config import Config
from .context import (
    Line,
    day,
    detail_text,
    expand_hint,
    fit_detail,
    index_line,
    memory_block,
    timeline_text,
)
from .protocol import (
    Details,
    DetailsResult,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    Timeline,
    TimelineResult,
    Verification,
    Verify,
)
from .retrieve import layers
from .retrieve.digest import HEAD_CHARS, summary
from .retrieve.engine import Retriever
from .retrieve.lanes import Filters
from .retrieve.query import compile_query
from .retrieve.smart import choose
from .store import Store, usage
from .tokens import estimate_tokens

__all__ = ["NotFound", "Recall"]

log = structlog.get_logger("memd.recall")

PROMPT_HIGH: Final = 0.85
PROMPT_SUGGESTIONS: Final = 3
PROMPT_KINDS: Final = (
    "prompt",
    "assistant",
    "tool",
    "tool_error",
    "task_state",
    "compact_summary",
    "session_summary",
    "subagent_stop",
)
MAX_DETAILS: Final = 100
"""Most ids one Details request resolves."""
SUMMARIES: Final = 3
IMPORTANT: Final = 10
ERRORS: Final = 5
LINE_CHARS: Final = 300
"""Longest line of a SessionStart block (a session summary can run long)."""
KIND_WEIGHT: Final = {
    "prompt": 1.0,
    "compact_summary": 1.0,
    "assistant": 0.7,
    "task_state": 0.6,
    "subagent_stop": 0.5,
    "tool": 0.3,
}
"""How much a kind of event is worth remembering at a session's start, before recency and use."""
RECENCY_DAYS: Final = 7.0


class NotFound(Exception):
    """An id that names no memory; the message says which and what to try."""

    code = "not_found"


def _not_found(ref: str) -> NotFound:
    return NotFound(f"no memory {ref!r}: use an id from search results (mem:Ab3xY9, or an event number)")


class Recall:
    def __init__(self, store: Store, retriever: Retriever, config: Config) -> None:
        self.store = store
        self.retriever = retriever
        self.config = config
        self.hint = expand_hint(memctl_command())

    async def _used(self, event_ids: list[int], session: str | None, how: str) -> None:
        if event_ids:
            await self.store.writer.call(usage.record, event_ids, session, how, time.time())

    async def _resolve(self, ref: str) -> int:
        event_id = await self.store.readers.run(layers.resolve, ref)
        if event_id is None:
            raise _not_found(ref)
        return event_id

    # --- asked ------------------------------------------------------------------------

    async def timeline(self, request: Timeline) -> TimelineResult:
        event_id = await self._resolve(request.id)
        result = await self.store.readers.run(layers.timeline, event_id, request.before, request.after)
        if result is None:
            raise _not_found(request.id)
        await self._used([event_id], request.caller, "expanded")
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
        full = await self.store.readers.run(layers.details, list(found))
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
        await self._used([d.id for d in reply.details], request.caller, "resolved")
        return reply

    async def smart(self, request: SmartSearch) -> SmartResults:
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
        await self._used(expanded, request.caller, "expanded")
        return reply

    async def verify(self, request: Verify) -> Verification:
        event_id = await self._resolve(request.id)
        full = await self.store.readers.run(layers.details, [event_id])
        if event_id not in full:
            raise _not_found(request.id)
        detail = full[event_id]
        source = detail.text or detail.title
        span = align(request.quote, source)
        await self._used([event_id], request.caller, "resolved")
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
        cited = await self.store.readers.run(usage.most_cited, max(1, min(1000, request.limit)), request.since)
        totals = await self.store.readers.run(usage.totals, request.since)
        return StatsReport(most_cited=cited, usage=totals)

    # --- unasked: context hooks -------------------------------------------------------

    async def session_start(self, event: NewEvent) -> str:
        """The ``<memory-context>`` block a new session of this project starts with."""
        if not self.config.context.session_start or not event.cwd:
            return ""
        root, project_id = await self.retriever.project(event.cwd)
        if project_id is None:
            return ""
        lines = await self.store.readers.run(_starting_material, project_id, event.session_id, time.time())
        name = root.rstrip("/").rsplit("/", 1)[-1] or root
        block, kept = memory_block(
            {"project": name, "root": root},
            f"What memd remembers of earlier sessions in {name}."
            " Each line cites its source: check it before relying on it.",
            ("Recent sessions", "Important", "Recent errors"),
            lines,
            root=root,
            hint=self.hint,
            budget=self.config.context.session_start_budget,
        )
        if not block:
            return ""
        await self._used([line.event_id for line in kept], event.session_id, "injected")
        return block

    async def prompt(self, event: NewEvent) -> str:
        """Memories relevant to the prompt, when memd is confident enough (see the module doc)."""
        text = event.text.strip()
        if not self.config.context.prompt or not event.cwd or not text or _not_a_question(text):
            return ""
        root, project_id = await self.retriever.project(event.cwd)
        query = compile_query(text)
        if project_id is None or (not query.groups and not query.cjk):
            return ""
        filters = Filters(project_id=project_id, kinds=PROMPT_KINDS, min_importance=2, not_session=event.session_id)
        _mode, _notice, hits = await self.retriever.ranked(query, filters, 8)
        if event.session_id:
            given = await self.store.readers.run(usage.injected, event.session_id)
            hits = [hit for hit in hits if hit.id not in given]
        floor = self.config.retrieval.min_confidence
        hits = [hit for hit in hits if hit.confidence >= floor][:PROMPT_SUGGESTIONS]
        if not hits:
            return ""
        lines: list[Line] = []
        if hits[0].confidence >= PROMPT_HIGH:
            full = await self.store.readers.run(layers.details, [hits[0].id])
            budget = self.config.context.prompt_budget * 2 // 3  # the rest for the other hits' lines
            if detail := full.get(hits[0].id):
                detail.project = None  # the block's own project
            if detail and (fitted := fit_detail(detail, budget, self.config.context.citation_format)):
                text = detail_text(fitted, self.config.context.citation_format)
                lines.append(Line("Most relevant", text, detail.id, bullet=False))
                hits = hits[1:]
        lines += [Line("Maybe relevant", index_line(hit), hit.id) for hit in hits]
        name = root.rstrip("/").rsplit("/", 1)[-1] or root
        block, kept = memory_block(
            {"project": name, "for": "prompt"},
            "Memories from earlier sessions that match this prompt (memd)."
            " Cite them by id; verify before relying on them.",
            ("Most relevant", "Maybe relevant"),
            lines,
            root=root,
            hint=self.hint,
            budget=self.config.context.prompt_budget,
        )
        if not block:
            return ""
        await self._used([line.event_id for line in kept], event.session_id, "injected")
        return block


def memctl_command() -> str:
    """How an agent's shell can run this installation's memctl: by name when that is the one
    on PATH, else by absolute path (a virtualenv's bin directory is rarely on PATH)."""
    beside = os.path.join(os.path.dirname(sys.executable), "memctl")
    if not os.access(beside, os.X_OK) or shutil.which("memctl") == beside:
        return "memctl"
    return shlex.quote(beside)


_NOT_QUESTIONS: Final = ("/", "<command-", "<local-command", "<memory-context", "memd:", "Caveat: The messages below")


def _not_a_question(text: str) -> bool:
    """A slash command, Claude Code's own echo of one, or memd's own output pasted back."""
    if text.startswith(_NOT_QUESTIONS) or "<memory-context" in text:
        return True
    return not CITATION_RE.sub("", text).strip(" \n\t,;.")  # nothing but citation ids


Row = tuple[int, str, str, str | None, str, str, float]
"""id, cite, kind, tool, title, the head of the text, client_ts."""
_ROWS = (
    f"SELECT e.id, c.cite, e.kind, e.tool, e.title, substr(e.text, 1, {HEAD_CHARS}), e.client_ts"
    " FROM events e JOIN citations c ON c.event_id = e.id WHERE "
)  # only a text's head: a line shows its first sentence, and texts run to 10 KB


def worth(kind: str, importance: int, age_days: float, uses: int) -> float:
    """How much an event is worth showing when a session starts: its kind and importance,
    its recency (halving every RECENCY_DAYS) and how often agents and people used it."""
    return KIND_WEIGHT[kind] + 0.5 * (importance - 2) + 2 ** (-age_days / RECENCY_DAYS) + 0.3 * min(uses, 5) / 5


def _starting_material(conn: sqlite3.Connection, project_id: int, session: str | None, now: float) -> list[Line]:
    """A SessionStart block's candidate lines, in priority order: session summaries, errors,
    then important memories."""
    summaries: list[Row] = conn.execute(
        _ROWS + "e.id IN (SELECT id FROM events WHERE project_id = ? AND kind = 'session_summary'"
        " AND session_id IS NOT ? ORDER BY client_ts DESC LIMIT ?) ORDER BY e.client_ts DESC",
        (project_id, session, SUMMARIES),
    ).fetchall()
    errors: dict[str, Row] = {}  # by title: the same failure twice is one line
    for row in conn.execute(
        _ROWS + "e.project_id = ? AND e.kind = 'tool_error' ORDER BY e.id DESC LIMIT 50", (project_id,)
    ):
        errors.setdefault(row[4], row)
    kinds = ",".join("?" * len(KIND_WEIGHT))
    candidates = conn.execute(
        "SELECT id, kind, importance, client_ts, (SELECT count(*) FROM citation_usage u WHERE u.event_id = e.id)"
        f" FROM events e WHERE project_id = ? AND kind IN ({kinds}) AND importance >= 2 ORDER BY id DESC LIMIT 300",
        (project_id, *KIND_WEIGHT),
    ).fetchall()
    ranked = sorted(candidates, key=lambda c: -worth(c[1], c[2], max(0.0, now - c[3]) / 86400, c[4]))
    best = [c[0] for c in ranked[: 3 * IMPORTANT]]  # enough to leave out repeats
    rows = {row[0]: row for row in conn.execute(_ROWS + f"e.id IN ({','.join('?' * len(best))})", best)}
    important: dict[str, Row] = {}  # by summary: the same prompt twice is one line
    for event_id in best:
        if len(important) < IMPORTANT and event_id in rows:
            row = rows[event_id]
            important.setdefault(summary(row[2], row[4], row[5]), row)

    def line(section: str, row: Row, text: str) -> Line:
        flat = " ".join(text.split())
        flat = flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1] + "…"
        return Line(section, flat, row[0])

    return [
        *(line("Recent sessions", r, f"[mem:{r[1]}] {day(r[6])}: {r[5] or r[4]}") for r in summaries),
        *(line("Recent errors", r, f"[mem:{r[1]}] {day(r[6])}: {summary(r[2], r[4], r[5])}")
          for r in list(errors.values())[:ERRORS]),
        *(line("Important", r, f"[mem:{r[1]}] {day(r[6])} {r[2]}: {text}") for text, r in important.items()),
    ]  # fmt: skip
