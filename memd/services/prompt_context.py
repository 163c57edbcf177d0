"""The context a prompt gets (UserPromptSubmit): memories relevant to it, when memd is
confident enough (``memd.retrieve.prompt_gate`` decides what), and, at the first prompt of
a session that started fresh, the carry-on from the project's last session.

The prompt is searched in its project, leaving out the prompt's own session (its events
are in the agent's context already), and what Claude Code's own memory gave the session
already is left out of the block (``memd.services.repeats``).
"""

from __future__ import annotations

import time

from ..capture.prepare import NewEvent
from ..config import Config
from ..context import MAX_CONTEXT_CHARS, Line, detail_text, fit_detail, index_line, memory_block
from ..continuity.carry_on import prompt_aspects, snapshot_aspects
from ..continuity.score import continuity
from ..protocol import Hit
from ..query import compile_query
from ..retrieve import layers
from ..retrieve.prompt_gate import (
    CONTINUATION_CHARS,
    PROMPT_HIGH,
    PROMPT_KINDS,
    PROMPT_MIN_IMPORTANCE,
    PROMPT_SEARCHED,
    not_a_question,
    question_of,
    suggestions,
)
from ..store import Store, state, usage
from ..store.lanes import Filters
from .blocks import Blocks, project_name
from .repeats import Repeats
from .search import Retriever
from .session_start import SessionStart
from .uses import record_uses

__all__ = ["PromptContext"]


class PromptContext:
    """The UserPromptSubmit block (see the module doc)."""

    def __init__(
        self,
        store: Store,
        retriever: Retriever,
        config: Config,
        blocks: Blocks,
        session_start: SessionStart,
        repeats: Repeats,
    ) -> None:
        self.store = store
        self.retriever = retriever
        self.config = config
        self.blocks = blocks
        self.session_start = session_start
        """Whose endless switch the first prompt follows."""
        self.repeats = repeats

    def _searched(self, event: NewEvent) -> str:
        """The text a prompt searches for, "" when it is not searched at all."""
        text = event.text.strip()
        if not self.config.context.prompt or not event.cwd or not text or not_a_question(text):
            return ""
        return question_of(text)

    async def anticipate(self, event: NewEvent) -> None:
        """Embed the prompt's query while its event is being committed: the search that
        ``block`` runs next would otherwise start with it (3-5 ms of the hook's time)."""
        if text := self._searched(event):
            await self.retriever.anticipate(compile_query(text))

    async def block(self, event: NewEvent) -> str:
        """Memories relevant to the prompt, when memd is confident enough (see the module doc)."""
        if not (text := self._searched(event)) or not event.cwd:
            return ""
        root, project_id = await self.retriever.project(event.cwd)
        if project_id is None:
            return ""
        opening = await self._first_prompt(event, root, project_id)  # first: its items are then "given"
        query = compile_query(text)
        if not query.groups and not query.cjk:
            return opening
        filters = Filters(
            project_id=project_id, kinds=PROMPT_KINDS, min_importance=PROMPT_MIN_IMPORTANCE,
            not_session=event.session_id,
        )  # fmt: skip
        _mode, _notice, hits = await self.retriever.ranked(query, filters, PROMPT_SEARCHED, asked=event.text)
        given = await self.store.readers.run(usage.injected, event.session_id) if event.session_id else frozenset()
        hits = shown = suggestions(hits, given, self.config.retrieval.min_confidence)
        if not hits:
            return opening
        lines = await self._lines(hits)
        native = await self.repeats.context_of(event)
        left = await self.repeats.left_out(native, lines)
        room = MAX_CONTEXT_CHARS - len(opening) - 2
        block, kept = self._block(root, [line for line in lines if line.event_id not in left], room)
        if left:
            _all, would_keep = self._block(root, lines, room)
            await self.repeats.count(event.session_id, event.event, would_keep, left)
        if block:
            found = {hit.id: hit.confidence for hit in shown}
            await record_uses(self.store, [line.event_id for line in kept], event.session_id, "injected", found)
        return "\n\n".join(part for part in (opening, block) if part)

    async def _lines(self, hits: list[Hit]) -> list[Line]:
        """The block's candidate lines: the best hit in full when memd is confident of it,
        then one line per hit."""
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
        return lines + [Line("Maybe relevant", index_line(hit), hit.id, quote=hit.summary or hit.title) for hit in hits]

    def _block(self, root: str, lines: list[Line], room: int) -> tuple[str, list[Line]]:
        if room <= 500 or not lines:
            return "", []
        return memory_block(
            {"project": project_name(root), "for": "prompt"},
            "Memories from earlier sessions that match this prompt (memd)."
            " Cite them by id; verify before relying on them.",
            ("Most relevant", "Maybe relevant"),
            lines,
            root=root,
            hint=self.blocks.hint,
            budget=self.config.context.prompt_budget,
            max_chars=room,
        )

    async def _first_prompt(self, event: NewEvent, root: str, project_id: int) -> str:
        """At the first prompt of a session that started fresh (startup, clear), the prompt is
        the best evidence of intent: if it carries on the project's last session (seamless),
        that session's working state; on a topic shift, one line on where it left off; unless
        this session already had it."""
        if not event.session_id or not await self.session_start.endless():
            return ""
        info = await self.store.readers.run(state.session_info, event.session_id)
        if info.prompts != 1 or info.source not in (None, "startup", "clear"):
            return ""
        stored = await self.store.readers.run(state.latest, project_id, event.session_id)
        if stored is None or stored.event_id in await self.store.readers.run(usage.injected, event.session_id):
            return ""
        now = time.time()
        new = prompt_aspects(event.text)
        measured = continuity(new, snapshot_aspects(stored.snapshot), (now - stored.snapshot.last_ts) / 3600)
        if measured.mode == "topic_shift":
            why = f"first prompt: {measured.reason}, topic shift"
            return await self.blocks.previously(event, root, stored, why, CONTINUATION_CHARS)
        if measured.mode != "seamless":
            return ""
        why = f"first prompt: {measured.reason}, seamless"
        return await self.blocks.continuation(
            event.session_id, root, stored.snapshot, why, max_chars=CONTINUATION_CHARS, extra=[stored.event_id],
            asked=event,
        )  # fmt: skip
