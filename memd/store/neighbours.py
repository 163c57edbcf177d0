"""Each event's neighbourhood in its session, kept in ``event_links`` (schema 14).

A short turn ("yes, do that", "Cool! What did it look like?") means what its neighbours say;
a tool call means what the prompt that led to it asked.  So every event is also indexed with
its surroundings (``events_ctx``: its own words, then its neighbours'), and the context lane
(``lanes.context``) searches that.  What a search shows of an event stays the event itself.

    a turn (prompt, reply)          the turn before and the turn after, in its session
    what a turn set off (a tool     the prompt that led to it
    call, its error, a task)
    what someone wrote apart (a     no neighbours: its own words alone, so that it competes in
    memory file, a compaction's     the context lane on its own words, as the others do
    summary, an agent's report)
    memd's digests and its          not in the context lane: a session's summary and snapshot retell
    bookkeeping                     its turns (each would win its own session's neighbourhood), and
                                    a session's start or end says nothing

The links are written as events arrive (``link``, from ``events.insert_event``): a new turn
also becomes its previous turn's ``after``.  Events stored before schema 14 are linked later, in
the background (``memd.store.backfill``).  Triggers keep ``events_ctx`` equal to what the
links and the events say, through forgets and redactions.
"""

from __future__ import annotations

import sqlite3
from typing import Final

__all__ = ["ALONE", "SET_OFF", "TURNS", "link"]

TURNS: Final = ("prompt", "assistant")
SET_OFF: Final = frozenset({"tool", "tool_error", "tool_use", "task_state", "memory"})
"""Kinds read with the prompt that led to them."""
ALONE: Final = frozenset({"claude-memory", "instructions", "compact_summary", "subagent_stop"})
"""Kinds read by their own words alone."""

_LAST_TURNS = (
    "SELECT id, kind FROM events WHERE session_id = ? AND kind IN ('prompt', 'assistant') AND id < ?"
    " ORDER BY id DESC LIMIT 4"
)  # served by the partial index events_turns; the newest prompt is among the last few turns


_NEXT_TURN = (
    "SELECT id FROM events WHERE session_id = ? AND kind IN ('prompt', 'assistant') AND id > ? ORDER BY id LIMIT 1"
)


def link(conn: sqlite3.Connection, event_id: int, session_id: str | None, kind: str, *, late: bool = False) -> None:
    """Link an event to its neighbours (inside the writer's transaction): a just-stored one, or
    (``late``) one stored before the links existed, whose next turn may be stored already."""
    if kind in ALONE or (not session_id and (kind in TURNS or kind in SET_OFF)):
        conn.execute("INSERT OR IGNORE INTO event_links (event_id) VALUES (?)", (event_id,))
        return
    if not session_id or (kind not in TURNS and kind not in SET_OFF):
        return
    turns = conn.execute(_LAST_TURNS, (session_id, event_id)).fetchall()
    if kind in TURNS:
        before = turns[0][0] if turns else None
        after = conn.execute(_NEXT_TURN, (session_id, event_id)).fetchone() if late else None
        conn.execute(
            "INSERT OR IGNORE INTO event_links (event_id, before_id, after_id) VALUES (?, ?, ?)",
            (event_id, before, after[0] if after else None),
        )
        if before is not None:
            conn.execute("UPDATE event_links SET after_id = ? WHERE event_id = ?", (event_id, before))
        return
    prompt = next((turn_id for turn_id, turn_kind in turns if turn_kind == "prompt"), None)
    conn.execute("INSERT OR IGNORE INTO event_links (event_id, before_id) VALUES (?, ?)", (event_id, prompt))
