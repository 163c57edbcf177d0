"""Memories handed back: asked for (the layers, smart search, quote checks) and unasked
(the context of SessionStart and UserPromptSubmit).

    asked     Timeline → TimelineResult     Details → DetailsResult     SmartSearch → SmartResults
              Verify → Verification         Stats → StatsReport
    unasked   session_start(event) and prompt(event) → a ``<memory-context>`` block, or ""
    endless   Endless → EndlessStatus        Continuation → ContinuationResult   Tasks → TaskList

**Session start** (endless mode on, the default): ``compact``, ``resume`` and ``fork`` get
the continuation block of the session's working state (``continuity/snapshot.py``), taken
from its events at that moment; ``startup`` and ``clear`` are scored against the project's
latest snapshot (``continuity/score.py``) and get the standard block unless seamless, and
their first real prompt is scored again (seamless: the continuation; topic shift: one
"Previously" line).  The standard block: recent session summaries, open tasks, important
memories, recent errors.

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

import msgspec

from .capture import NewEvent
from .capture.extract import aspects
from .capture.snapshot import Snapshot
from .cite import CITATION_RE, align
from .config import Config
from .context import (
    CONTINUATION_SECTIONS,
    MAX_CONTEXT_CHARS,
    Line,
    continuation_lines,
    day,
    detail_text,
    expand_hint,
    fit_detail,
    index_line,
    memory_block,
    timeline_text,
)
from .continuity.score import continuity
from .protocol import (
    Continuation,
    ContinuationResult,
    Details,
    DetailsResult,
    Endless,
    EndlessStatus,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    TaskInfo,
    TaskList,
    Tasks,
    Timeline,
    TimelineResult,
    Verification,
    Verify,
)
from .query import compile_query
from .retrieve import layers
from .retrieve.digest import HEAD_CHARS, summary
from .retrieve.engine import Retriever
from .retrieve.smart import choose
from .store import Store, queries, settings, state, usage, working_set
from .store.lanes import Filters, find_project
from .store.tasks import open_tasks
from .tokens import estimate_tokens

__all__ = ["NotFound", "Recall"]

PROMPT_HIGH: Final = 0.85
PROMPT_SUGGESTIONS: Final = 3
PROMPT_KINDS: Final = (
    "memory",
    "prompt",
    "assistant",
    "tool",
    "tool_error",
    "task_state",
    "compact_summary",
    "session_summary",
    "subagent_stop",
)
CONTINUATION_CHARS: Final = 5000
"""Characters a continuation given with a prompt may take: the prompt's own block needs room."""
MAX_DETAILS: Final = 100
"""Most ids one Details request resolves."""
SUMMARIES: Final = 3
OPEN_TASKS: Final = 10
IMPORTANT: Final = 10
ERRORS: Final = 5
LINE_CHARS: Final = 300
"""Longest line of a SessionStart block (a session summary can run long)."""
KIND_WEIGHT: Final = {
    "memory": 1.5,
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


def _replied_at(event: NewEvent) -> float | None:
    """When the session this one continues last replied (a fork's or a resume's SessionStart)."""
    try:
        since = msgspec.json.decode(event.meta).get("since_last_response")
    except (msgspec.DecodeError, AttributeError):
        return None
    return event.client_ts - since if isinstance(since, int | float) and not isinstance(since, bool) else None


class Recall:
    def __init__(self, store: Store, retriever: Retriever, config: Config) -> None:
        self.store = store
        self.retriever = retriever
        self.config = config
        self.hint = expand_hint(memctl_command())
        self._endless: bool | None = None

    async def _used(
        self, event_ids: list[int], session: str | None, how: str, confidence: dict[int, float] | None = None
    ) -> None:
        if event_ids:
            await self.store.writer.call(usage.record, event_ids, session, how, time.time(), confidence)

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
        found = {hit.id: hit.confidence for hit in index.results}
        await self._used(expanded, request.caller, "expanded", found)
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
        """What the store holds and how it is used.  ``since`` limits the uses (``usage``,
        ``most_cited``); everything else is all time.  The daemon adds what it measures
        itself (embedding state, hook latencies)."""
        limit = max(1, min(1000, request.limit))
        run = self.store.readers.run
        indexer = self.retriever.indexer
        projects, project_count = await run(queries.top_projects, limit)
        return StatsReport(
            most_cited=await run(usage.most_cited, limit, request.since),
            usage=await run(usage.totals, request.since),
            levels=await run(usage.levels),
            kinds=await run(queries.kinds),
            projects=projects,
            project_count=project_count,
            sizes=await run(queries.storage, self.store.path, indexer.index_dir if indexer else None),
            redactions=await queries.redaction_totals(self.store.reader),
        )

    # --- unasked: context hooks -------------------------------------------------------

    async def endless(self) -> bool:
        """Whether endless mode is on (``memctl endless on|off``; on unless switched off)."""
        if self._endless is None:
            self._endless = await self.store.readers.run(settings.get, "endless", "on") == "on"
        return self._endless

    async def set_endless(self, request: Endless) -> EndlessStatus:
        if request.enabled is not None:
            await self.store.writer.call(settings.put, "endless", "on" if request.enabled else "off")
            self._endless = request.enabled
        reply = EndlessStatus(enabled=await self.endless())
        if request.cwd:
            _root, project_id = await self.retriever.project(request.cwd)
            if project_id is not None:
                reply.working_set = len(await self.store.readers.run(working_set.members, project_id, time.time()))
        return reply

    async def session_start(self, event: NewEvent) -> str:
        """The block a session starts with: in endless mode, by how it started (see the module
        doc); else, or when there is nothing to carry on, the project's standard block."""
        if not self.config.context.session_start or not event.cwd:
            return ""
        root, project_id = await self.retriever.project(event.cwd)
        if project_id is None:
            return ""
        source = event.session.get("source", "startup")
        reason = f"{source}: endless mode is off" if not await self.endless() else f"{source}: nothing to carry on"
        if await self.endless() and event.session_id:
            block, reason = await self._carry_on(event.session_id, root, project_id, source, _replied_at(event))
            if block:
                return block
        return await self._standard(event.session_id, root, project_id, reason)

    async def _carry_on(
        self, session: str, root: str, project_id: int, source: str, replied_at: float | None
    ) -> tuple[str, str]:
        """(the continuation block, or ``""`` and why the standard block is given instead).
        ``replied_at``: when the session a fork was made of last replied, if Claude Code said."""
        now = time.time()
        run = self.store.readers.run
        if source in ("compact", "resume", "fork"):
            of: str | None = session
            if source == "fork":
                parent = await run(state.forked_from, project_id, session, replied_at) if replied_at else None
                of = parent or await run(state.latest_session, project_id, session)
            if of is None:
                return "", f"{source}: no earlier session to carry on"
            snapshot = await run(state.fresh, of, project_id, now)
            since = await run(state.since, project_id, of, snapshot.last_event_id) if source == "resume" else []
            why = {
                "compact": "compaction: this session's working state, taken from its own events",
                "resume": "resume: the session's working state, and what other sessions did since",
                "fork": f"fork: the working state of session {of[:8]}, the one forked",
            }[source]
            return await self._continuation(session, root, snapshot, why, since=since), ""
        stored = await run(state.latest, project_id, session)
        if stored is None:
            return "", f"{source}: no snapshot of an earlier session yet"
        measured = continuity({}, _aspects(stored.snapshot), (now - stored.snapshot.last_ts) / 3600)
        if measured.mode != "seamless":
            return "", f"{source}: {measured.reason}, {measured.mode.replace('_', ' ')}; the first prompt decides again"
        return await self._continuation(session, root, stored.snapshot, f"{source}: {measured.reason}, seamless"), ""

    async def _continuation(
        self, session: str | None, root: str, snapshot: Snapshot, why: str, *, since: list[state.Recent] = (),
        max_chars: int = MAX_CONTEXT_CHARS, extra: list[int] = (),
    ) -> str:  # fmt: skip
        if snapshot.empty:
            return ""
        later = [
            Line(
                CONTINUATION_SECTIONS[-1],
                f"[mem:{r.cite}] {day(r.ts)} {r.kind}: {summary(r.kind, r.title, r.text)}",
                r.id,
            )
            for r in since
        ]
        name = _name(root)
        block, kept = memory_block(
            {"project": name, "root": root, "mode": "continuation", "reason": why},
            f"Where the work in {name} stands, from memd. Each item cites its source: check it before relying on it.",
            CONTINUATION_SECTIONS,
            continuation_lines(snapshot, later),
            root=root,
            hint=self.hint,
            budget=self.config.context.session_start_budget,
            max_chars=max_chars,
        )
        if block:
            await self._used([line.event_id for line in kept] + list(extra), session, "injected")
        return block

    async def _standard(self, session: str | None, root: str, project_id: int, reason: str) -> str:
        lines = await self.store.readers.run(_starting_material, project_id, session, time.time())
        name = _name(root)
        block, kept = memory_block(
            {"project": name, "root": root, "mode": "standard", "reason": reason},
            f"What memd remembers of earlier sessions in {name}."
            " Each line cites its source: check it before relying on it.",
            ("Recent sessions", "Open tasks", "Important", "Recent errors"),
            lines,
            root=root,
            hint=self.hint,
            budget=self.config.context.session_start_budget,
        )
        if block:
            await self._used([line.event_id for line in kept], session, "injected")
        return block

    async def continuation(self, request: Continuation) -> ContinuationResult:
        """``memctl endless snapshot``: the continuation block of a session as it stands now."""
        session = request.session
        project_id = None
        if session is None and request.cwd:
            _root, project_id = await self.retriever.project(request.cwd)
            if project_id is not None:
                session = await self.store.readers.run(state.latest_session, project_id, None)
        if session is None:
            raise NotFound("no session to show: pass --session, or run it in a project memd has seen")
        found = await self.store.readers.run(_session_project, session)
        if found is None:
            raise NotFound(f"no session {session!r} (memctl history lists them)")
        root, project_id = found
        snapshot = await self.store.readers.run(state.fresh, session, project_id, time.time())
        block = await self._continuation(None, root or "", snapshot, f"session {session[:8]} as it stands now")
        return ContinuationResult(session_id=session, block=block)

    async def tasks(self, request: Tasks) -> TaskList:
        root, project_id = None, None
        if request.project:
            root, project_id = await self.store.readers.run(find_project, request.project) or (request.project, None)
        elif request.cwd:
            root, project_id = await self.retriever.project(request.cwd)
        if project_id is None:
            return TaskList(project=root, tasks=[])
        return TaskList(project=root, tasks=await self.store.readers.run(_task_list, project_id, request.all))

    async def prompt(self, event: NewEvent) -> str:
        """Memories relevant to the prompt, when memd is confident enough (see the module doc)."""
        text = event.text.strip()
        if not self.config.context.prompt or not event.cwd or not text or _not_a_question(text):
            return ""
        root, project_id = await self.retriever.project(event.cwd)
        if project_id is None:
            return ""
        opening = await self._first_prompt(event, root, project_id)  # first: its items are then "given"
        query = compile_query(text)
        if not query.groups and not query.cjk:
            return opening
        filters = Filters(project_id=project_id, kinds=PROMPT_KINDS, min_importance=2, not_session=event.session_id)
        _mode, _notice, hits = await self.retriever.ranked(query, filters, 8)
        if event.session_id:
            given = await self.store.readers.run(usage.injected, event.session_id)
            hits = [hit for hit in hits if hit.id not in given]
        floor = self.config.retrieval.min_confidence
        hits = shown = [hit for hit in hits if hit.confidence >= floor][:PROMPT_SUGGESTIONS]
        if not hits:
            return opening
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
        room = MAX_CONTEXT_CHARS - len(opening) - 2
        block, kept = memory_block(
            {"project": _name(root), "for": "prompt"},
            "Memories from earlier sessions that match this prompt (memd)."
            " Cite them by id; verify before relying on them.",
            ("Most relevant", "Maybe relevant"),
            lines,
            root=root,
            hint=self.hint,
            budget=self.config.context.prompt_budget,
            max_chars=room,
        ) if room > 500 else ("", [])  # fmt: skip
        if block:
            found = {hit.id: hit.confidence for hit in shown}
            await self._used([line.event_id for line in kept], event.session_id, "injected", found)
        return "\n\n".join(part for part in (opening, block) if part)

    async def _first_prompt(self, event: NewEvent, root: str, project_id: int) -> str:
        """At the first prompt of a session that started fresh (startup, clear), the prompt is
        the best evidence of intent: if it carries on the project's last session (seamless),
        that session's working state; on a topic shift, one line on where it left off; unless
        this session already had it."""
        if not event.session_id or not await self.endless():
            return ""
        info = await self.store.readers.run(state.session_info, event.session_id)
        if info.prompts != 1 or info.source not in (None, "startup", "clear"):
            return ""
        stored = await self.store.readers.run(state.latest, project_id, event.session_id)
        if stored is None or stored.event_id in await self.store.readers.run(usage.injected, event.session_id):
            return ""
        now = time.time()
        found = aspects([event.text])
        new = {"topics": found.topics, "files": found.files, "entities": found.entities}
        measured = continuity(new, _aspects(stored.snapshot), (now - stored.snapshot.last_ts) / 3600)
        if measured.mode == "topic_shift":
            return await self._previously(
                event.session_id, root, stored, f"first prompt: {measured.reason}, topic shift"
            )
        if measured.mode != "seamless":
            return ""
        why = f"first prompt: {measured.reason}, seamless"
        return await self._continuation(
            event.session_id, root, stored.snapshot, why, max_chars=CONTINUATION_CHARS, extra=[stored.event_id]
        )

    async def _previously(self, session: str, root: str, stored: state.Stored, why: str) -> str:
        """A topic shift: one line on where the last session left off, so the agent can ask for
        more (the snapshot's id expands it) without being handed all of it."""
        snapshot = stored.snapshot
        where = snapshot.goal[0].text if snapshot.goal else (snapshot.tasks[0].text if snapshot.tasks else "")
        if not where:
            return ""
        line = Line("Previously", f"[mem:{stored.cite}] {day(snapshot.last_ts)}: {where}", stored.event_id)
        block, kept = memory_block(
            {"project": _name(root), "root": root, "mode": "previously", "reason": why},
            "The last session in this project was about something else; its working state is one id away.",
            ("Previously",),
            [line],
            root=root,
            hint=self.hint,
            budget=self.config.context.prompt_budget,
            max_chars=CONTINUATION_CHARS,
        )
        if block:
            await self._used([item.event_id for item in kept], session, "injected")
        return block


def _name(root: str) -> str:
    return root.rstrip("/").rsplit("/", 1)[-1] or root


def _aspects(snapshot: Snapshot) -> dict[str, list[str]]:
    return {"topics": snapshot.topics, "files": snapshot.file_names, "entities": snapshot.entities}


def _session_project(conn: sqlite3.Connection, session: str) -> tuple[str | None, int | None] | None:
    row = conn.execute(
        "SELECT p.root, s.project_id FROM sessions s LEFT JOIN projects p ON p.id = s.project_id WHERE s.id = ?",
        (session,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def _task_list(conn: sqlite3.Connection, project_id: int, everything: bool) -> list[TaskInfo]:
    where = "" if everything else " AND t.status IN ('pending', 'in_progress')"
    return [
        TaskInfo(
            id=r[0],
            content=r[1],
            status=r[2],
            active_form=r[3],
            cite=r[4],
            session_id=r[5],
            created_at=r[6],
            updated_at=r[7],
            changes=r[8],
        )
        for r in conn.execute(
            "SELECT t.id, t.content, t.status, t.active_form, coalesce(c.cite, ''), t.session_id, t.created_at,"
            " t.updated_at, (SELECT count(*) FROM task_history h WHERE h.task_id = t.id)"
            f" FROM tasks t LEFT JOIN citations c ON c.event_id = t.event_id WHERE t.project_id = ?{where}"
            " ORDER BY t.status = 'in_progress' DESC, t.status = 'pending' DESC, t.updated_at DESC",
            (project_id,),
        )
    ]


def memctl_command() -> str:
    """How an agent's shell can run this installation's memctl: by name when that is the one
    on PATH, else by absolute path (a virtualenv's bin directory is rarely on PATH)."""
    beside = os.path.join(os.path.dirname(sys.executable), "memctl")
    if not os.access(beside, os.X_OK) or shutil.which("memctl") == beside:
        return "memctl"
    return shlex.quote(beside)


_NOT_QUESTIONS: Final = (
    "/",
    "<command-",
    "<local-command",
    "<task-notification",
    "<memory-context",
    "memd:",
    "Caveat: The messages below",
)


def _not_a_question(text: str) -> bool:
    """A slash command, Claude Code's own echo of one or notice of a background task, or memd's
    own output pasted back."""
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

    tasks = [
        Line("Open tasks", f"[mem:{t.cite}] [{t.status}] {' '.join(t.content.split())[:LINE_CHARS]}", t.event_id)
        for t in open_tasks(conn, project_id, now, OPEN_TASKS)
    ]
    return [
        *(line("Recent sessions", r, f"[mem:{r[1]}] {day(r[6])}: {r[5] or r[4]}") for r in summaries),
        *tasks,
        *(line("Recent errors", r, f"[mem:{r[1]}] {day(r[6])}: {summary(r[2], r[4], r[5])}")
          for r in list(errors.values())[:ERRORS]),
        *(line("Important", r, f"[mem:{r[1]}] {day(r[6])} {r[2]}: {text}") for text, r in important.items()),
    ]  # fmt: skip
