"""The context a session starts with, and endless mode (``memctl endless``).

**Session start** (endless mode on, the default): ``compact``, ``resume`` and ``fork`` get
the continuation block of the session's working state (``capture/snapshot.py``), taken
from its events at that moment; ``startup`` and ``clear`` are scored against the project's
latest snapshot (``continuity/score.py``) and get the standard block unless seamless, and
their first real prompt is scored again (``memd.services.prompt_context``).  The blocks
that carry work on are ``memd.services.blocks``; the standard one is chosen by
``memd.continuity.session_start`` from what ``memd.store.session_start`` reads, less what
Claude Code's own memory gives the session already (``memd.services.repeats``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from ..capture.prepare import NewEvent
from ..config import Config
from ..context import Line, memory_block
from ..continuity import session_start
from ..continuity.carry_on import CARRIED, replied_at, snapshot_aspects
from ..continuity.score import continuity
from ..protocol import Continuation, ContinuationResult, Endless, EndlessStatus
from ..retrieve.digest import HEAD_CHARS
from ..store import Store, settings, state, working_set
from ..store.listings import session_project
from ..store.session_start import candidates, heads, latest_errors, latest_summaries
from ..store.tasks import open_tasks
from .agent_process import Forks, agent_process
from .blocks import Blocks, project_name
from .errors import NotFound
from .repeats import Repeats
from .search import Retriever
from .uses import record_uses

__all__ = ["SessionStart", "starting_material"]


class SessionStart:
    """The SessionStart block, the endless switch and ``memctl endless snapshot``."""

    def __init__(self, store: Store, retriever: Retriever, config: Config, blocks: Blocks, repeats: Repeats) -> None:
        self.store = store
        self.retriever = retriever
        self.config = config
        self.blocks = blocks
        self.repeats = repeats
        self.forks = Forks()
        self._endless: bool | None = None

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

    async def block(self, event: NewEvent) -> str:
        """The block a session starts with: in endless mode, by how it started (see the module
        doc); else, or when there is nothing to carry on, the project's standard block."""
        source = event.session.get("source", "startup")
        named = None  # the session a fork was made of, as the process that forked tells
        if event.session_id and (process := agent_process(event.agent_pid) if event.agent_pid else None):
            named = self.forks.parent(process, event.session_id) if source == "fork" else None
            self.forks.started(process, event.session_id)
        if not self.config.context.session_start or not event.cwd:
            return ""
        root, project_id = await self.retriever.project(event.cwd)
        if project_id is None:
            return ""
        reason = f"{source}: endless mode is off" if not await self.endless() else f"{source}: nothing to carry on"
        if await self.endless() and event.session_id:
            block, reason = await self._carry_on(event, root, project_id, (named, replied_at(event)))
            if block:
                return block
        return await self._standard(event, root, project_id, reason)

    async def _carry_on(
        self, event: NewEvent, root: str, project_id: int, parent: tuple[str | None, float | None]
    ) -> tuple[str, str]:
        """(the continuation block, or ``""`` and why the standard block is given instead).
        ``parent``: of a fork, the session its process names (``agent_process``), and when the
        session it was made of last replied, as Claude Code says; either may be None."""
        session, source = event.session_id or "", event.session.get("source", "startup")
        now = time.time()
        run = self.store.readers.run
        if source in ("compact", "resume", "fork"):
            of: str | None = session
            if source == "fork":
                named, replied = parent
                if named and ((await run(session_project, named)) or (None, None))[1] != project_id:
                    named = None  # not a session of this project memd knows (an id mistyped, a title)
                if not named and replied:
                    named = await run(state.forked_from, project_id, session, replied)
                of = named or await run(state.latest_session, project_id, session)
            if of is None:
                return "", f"{source}: no earlier session to carry on"
            snapshot = await run(state.fresh, of, project_id, now)
            since = await run(state.since, project_id, of, snapshot.last_event_id) if source == "resume" else []
            why = CARRIED[source].format(of=of[:8])
            return await self.blocks.continuation(session, root, snapshot, why, since=since, asked=event), ""
        stored = await run(state.latest, project_id, session)
        if stored is None:
            return "", f"{source}: no snapshot of an earlier session yet"
        measured = continuity({}, snapshot_aspects(stored.snapshot), (now - stored.snapshot.last_ts) / 3600)
        if measured.mode != "seamless":
            return "", f"{source}: {measured.reason}, {measured.mode.replace('_', ' ')}; the first prompt decides again"
        why = f"{source}: {measured.reason}, seamless"
        return await self.blocks.continuation(session, root, stored.snapshot, why, asked=event), ""

    async def _standard(self, event: NewEvent, root: str, project_id: int, reason: str) -> str:
        """What memd remembers of the project's earlier sessions (``memd.continuity.session_start``),
        without what Claude Code's own memory (``MEMORY.md``) gives the session already."""
        session, native = event.session_id, await self.repeats.context_of(event)
        said = self.repeats.said(native)
        lines = await self.store.readers.run(starting_material, project_id, session, time.time(), said)
        left = await self.repeats.left_out(native, lines)
        block, kept = self._block(root, reason, [line for line in lines if line.event_id not in left])
        if left:
            _all, would_keep = self._block(root, reason, lines)
            await self.repeats.count(session, event.event, would_keep, left)
        if block:
            await record_uses(self.store, [line.event_id for line in kept], session, "injected")
        return block

    def _block(self, root: str, reason: str, lines: list[Line]) -> tuple[str, list[Line]]:
        name = project_name(root)
        return memory_block(
            {"project": name, "root": root, "mode": "standard", "reason": reason},
            f"What memd remembers of earlier sessions in {name}."
            " Each line cites its source: check it before relying on it.",
            session_start.SECTIONS,
            lines,
            root=root,
            hint=self.blocks.hint,
            budget=self.config.context.session_start_budget,
        )

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
        found = await self.store.readers.run(session_project, session)
        if found is None:
            raise NotFound(f"no session {session!r} (memctl history lists them)")
        root, project_id = found
        snapshot = await self.store.readers.run(state.fresh, session, project_id, time.time())
        why = f"session {session[:8]} as it stands now"
        block = await self.blocks.continuation(None, root or "", snapshot, why, injected=False)
        return ContinuationResult(session_id=session, block=block)


def starting_material(
    conn: sqlite3.Connection, project_id: int, session: str | None, now: float,
    said: Callable[[str], bool] = lambda _text: False,
) -> list[Line]:  # fmt: skip
    """A standard block's candidate lines, in priority order (``memd.continuity.session_start``),
    read on one connection: session summaries (without a goal the agent was ``said``),
    open tasks, errors, important memories."""
    summaries = latest_summaries(conn, project_id, session, session_start.SUMMARIES, HEAD_CHARS)
    errors = latest_errors(conn, project_id, session_start.ERROR_ROWS, HEAD_CHARS)
    weighed = candidates(
        conn, project_id, session_start.KIND_WEIGHT, session_start.MIN_IMPORTANCE, session_start.CANDIDATES
    )
    best = session_start.most_worth(weighed, now)
    important = session_start.distinct_important(best, heads(conn, best, HEAD_CHARS))
    tasks = open_tasks(conn, project_id, now, session_start.OPEN_TASKS)
    return session_start.standard_lines(summaries, tasks, session_start.distinct_errors(errors), important, said)
