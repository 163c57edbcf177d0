"""The ``<memory-context>`` blocks that carry work on from session to session, each
rendered within its budget (``memd.context.memory_block``) and logged as injected
(``memd.services.uses``):

    continuation   where the work stands: a session's working state (``capture/snapshot.py``)
    previously     one line on where the project's last session left off (a topic shift)

Which block a session or a prompt gets is decided by ``memd.services.session_start`` (which
also renders the standard block, when there is nothing to carry on) and
``memd.services.prompt_context``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..capture.prepare import NewEvent
from ..capture.snapshot import Snapshot
from ..config import Config
from ..context import CONTINUATION_SECTIONS, MAX_CONTEXT_CHARS, Line, continuation_lines, day, memory_block
from ..continuity.carry_on import left_off
from ..retrieve.digest import summary
from ..store import Store, state
from .repeats import Repeats
from .uses import record_uses

__all__ = ["Blocks", "project_name"]


def project_name(root: str) -> str:
    """A project's name in a block: the last part of its root."""
    return root.rstrip("/").rsplit("/", 1)[-1] or root


class Blocks:
    """Renders the blocks that carry work on, and logs what each injected."""

    def __init__(self, store: Store, config: Config, hint: str, repeats: Repeats) -> None:
        self.store = store
        self.config = config
        self.hint = hint
        """The line that tells an agent how to expand what a block cites."""
        self.repeats = repeats

    async def continuation(
        self, session: str | None, root: str, snapshot: Snapshot, why: str, *, since: Sequence[state.Recent] = (),
        max_chars: int = MAX_CONTEXT_CHARS, extra: Sequence[int] = (), asked: NewEvent | None = None,
        injected: bool = True,
    ) -> str:  # fmt: skip
        """Where the work in ``root`` stands (``snapshot``), with what other sessions did
        ``since``; ``extra``: ids logged as injected with it (the snapshot's own); ``asked``: the
        hook's event, whose session's Claude Code memory the block does not repeat; not
        ``injected``: a person reads it (``memctl endless snapshot``, the viewer), no use is logged."""
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

        def render(lines: list[Line]) -> tuple[str, list[Line]]:
            return memory_block(
                {"project": name, "root": root, "mode": "continuation", "reason": why},
                f"Where the work in {name} stands, from memd. Each item cites its source: check it before relying"
                " on it.",
                CONTINUATION_SECTIONS,
                lines,
                root=root,
                hint=self.hint,
                budget=self.config.context.session_start_budget,
                max_chars=max_chars,
            )

        lines = continuation_lines(snapshot, later)
        left = await self.repeats.left_out(await self.repeats.context_of(asked), lines) if asked else set()
        block, kept = render([line for line in lines if line.event_id not in left])
        if left and asked:
            await self.repeats.count(session, asked.event, render(lines)[1], left)
        if block and injected:
            await record_uses(self.store, [line.event_id for line in kept] + list(extra), session, "injected")
        return block

    async def previously(
        self, asked: NewEvent, root: str, stored: state.Stored, why: str, max_chars: int
    ) -> str:  # fmt: skip
        """A topic shift: one line on where the last session left off, so the agent can ask for
        more (the snapshot's id expands it) without being handed all of it; none when Claude
        Code's memory gave the session that already."""
        session, snapshot = asked.session_id, stored.snapshot
        where = left_off(snapshot)
        if not where or self.repeats.said(await self.repeats.context_of(asked))(where):
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
