"""The ``<memory-context>`` blocks memd injects unasked, each put together, rendered within
its budget (``memd.context.memory_block``) and logged as injected (``memd.services.uses``):

    continuation   where the work stands: a session's working state (``continuity/snapshot.py``)
    standard       recent session summaries, open tasks, important memories, recent errors
    previously     one line on where the project's last session left off (a topic shift)

Which block a session or a prompt gets is decided by ``memd.services.session_start`` and
``memd.services.prompt_context``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from ..config import Config
from ..context import CONTINUATION_SECTIONS, MAX_CONTEXT_CHARS, Line, continuation_lines, day, memory_block
from ..continuity import standard, state
from ..continuity.carry_on import left_off
from ..continuity.snapshot import Snapshot
from ..continuity.tasks import open_tasks
from ..retrieve.digest import HEAD_CHARS, summary
from ..store import Store
from ..store.starting_material import candidates, heads, latest_errors, latest_summaries
from .uses import record_uses

__all__ = ["Blocks", "project_name", "starting_material"]


def project_name(root: str) -> str:
    """A project's name in a block: the last part of its root."""
    return root.rstrip("/").rsplit("/", 1)[-1] or root


class Blocks:
    def __init__(self, store: Store, config: Config, hint: str) -> None:
        self.store = store
        self.config = config
        self.hint = hint
        """The line that tells an agent how to expand what a block cites."""

    async def continuation(
        self, session: str | None, root: str, snapshot: Snapshot, why: str, *, since: Sequence[state.Recent] = (),
        max_chars: int = MAX_CONTEXT_CHARS, extra: Sequence[int] = (),
    ) -> str:  # fmt: skip
        """Where the work in ``root`` stands (``snapshot``), with what other sessions did
        ``since``; ``extra``: ids logged as injected with it (the snapshot's own)."""
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
        name = project_name(root)
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
            await record_uses(self.store, [line.event_id for line in kept] + list(extra), session, "injected")
        return block

    async def standard(self, session: str | None, root: str, project_id: int, reason: str) -> str:
        """What memd remembers of the project's earlier sessions (``memd.continuity.standard``)."""
        lines = await self.store.readers.run(starting_material, project_id, session, time.time())
        name = project_name(root)
        block, kept = memory_block(
            {"project": name, "root": root, "mode": "standard", "reason": reason},
            f"What memd remembers of earlier sessions in {name}."
            " Each line cites its source: check it before relying on it.",
            standard.SECTIONS,
            lines,
            root=root,
            hint=self.hint,
            budget=self.config.context.session_start_budget,
        )
        if block:
            await record_uses(self.store, [line.event_id for line in kept], session, "injected")
        return block

    async def previously(self, session: str, root: str, stored: state.Stored, why: str, max_chars: int) -> str:
        """A topic shift: one line on where the last session left off, so the agent can ask for
        more (the snapshot's id expands it) without being handed all of it."""
        snapshot = stored.snapshot
        where = left_off(snapshot)
        if not where:
            return ""
        line = Line("Previously", f"[mem:{stored.cite}] {day(snapshot.last_ts)}: {where}", stored.event_id)
        block, kept = memory_block(
            {"project": project_name(root), "root": root, "mode": "previously", "reason": why},
            "The last session in this project was about something else; its working state is one id away.",
            ("Previously",),
            [line],
            root=root,
            hint=self.hint,
            budget=self.config.context.prompt_budget,
            max_chars=max_chars,
        )
        if block:
            await record_uses(self.store, [item.event_id for item in kept], session, "injected")
        return block


def starting_material(conn: sqlite3.Connection, project_id: int, session: str | None, now: float) -> list[Line]:
    """A standard block's candidate lines, in priority order (``memd.continuity.standard``),
    read on one connection: session summaries, open tasks, errors, important memories."""
    summaries = latest_summaries(conn, project_id, session, standard.SUMMARIES, HEAD_CHARS)
    errors = latest_errors(conn, project_id, standard.ERROR_ROWS, HEAD_CHARS)
    weighed = candidates(conn, project_id, standard.KIND_WEIGHT, standard.MIN_IMPORTANCE, standard.CANDIDATES)
    best = standard.most_worth(weighed, now)
    important = standard.distinct_important(best, heads(conn, best, HEAD_CHARS))
    tasks = open_tasks(conn, project_id, now, standard.OPEN_TASKS)
    return standard.standard_lines(summaries, tasks, standard.distinct_errors(errors), important)
