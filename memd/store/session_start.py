"""What a session can start with: the rows a SessionStart's standard block is chosen from
(``memd.continuity.session_start`` chooses; ``memd.services.session_start`` puts them together).

Each answer holds only the head of an event's text: a line shows its first sentence, and
texts run to 10 KB.  Rows are plain tuples, not NamedTuples: a SessionStart reads a few
hundred, and building each would cost the hook time (~0.2 µs a row, 2% of the block).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

__all__ = ["Candidate", "Head", "candidates", "heads", "latest_errors", "latest_summaries"]


Head = tuple[int, str, str, str | None, str, str, float]
"""An event as a SessionStart line shows it: id, cite, kind, tool, title, the head of its
text (its first ``head_chars`` characters), client_ts."""


Candidate = tuple[int, str, int, float, int]
"""An event that may be worth showing, with what its worth is reckoned from: id, kind,
importance, client_ts, and its uses (times it reached an agent or a person)."""


def _heads(where: str) -> str:
    """The head query, ``substr``'s length its first parameter."""
    return (
        "SELECT e.id, c.cite, e.kind, e.tool, e.title, substr(e.text, 1, ?), e.client_ts"
        f" FROM events e JOIN citations c ON c.event_id = e.id WHERE {where}"
    )


def latest_summaries(
    conn: sqlite3.Connection, project_id: int, not_session: str | None, count: int, head_chars: int
) -> list[Head]:
    """The project's ``count`` latest session summaries, other than ``not_session``'s, the
    latest first."""
    query = _heads(
        "e.id IN (SELECT id FROM events WHERE project_id = ? AND kind = 'session_summary'"
        " AND session_id IS NOT ? ORDER BY client_ts DESC LIMIT ?) ORDER BY e.client_ts DESC",
    )
    rows: list[Head] = conn.execute(query, (head_chars, project_id, not_session, count)).fetchall()
    return rows


def latest_errors(conn: sqlite3.Connection, project_id: int, count: int, head_chars: int) -> list[Head]:
    """The project's ``count`` latest tool errors, the latest first."""
    query = _heads("e.project_id = ? AND e.kind = 'tool_error' ORDER BY e.id DESC LIMIT ?")
    rows: list[Head] = conn.execute(query, (head_chars, project_id, count)).fetchall()
    return rows


def candidates(
    conn: sqlite3.Connection, project_id: int, kinds: Iterable[str], min_importance: int, count: int
) -> list[Candidate]:
    """The project's ``count`` latest events of ``kinds`` at ``min_importance`` or above,
    with their uses."""
    wanted = tuple(kinds)
    marks = ",".join("?" * len(wanted))
    rows: list[Candidate] = conn.execute(
        "SELECT id, kind, importance, client_ts, (SELECT count(*) FROM citation_usage u WHERE u.event_id = e.id)"
        f" FROM events e WHERE project_id = ? AND kind IN ({marks}) AND importance >= ? ORDER BY id DESC LIMIT ?",
        (project_id, *wanted, min_importance, count),
    ).fetchall()
    return rows


def heads(conn: sqlite3.Connection, event_ids: Sequence[int], head_chars: int) -> dict[int, Head]:
    """The events ``event_ids`` names, by id (gone ones, or ones without a citation, left out)."""
    query = _heads(f"e.id IN ({','.join('?' * len(event_ids))})")
    return {row[0]: row for row in conn.execute(query, (head_chars, *event_ids))}
