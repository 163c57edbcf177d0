"""Forgetting: delete memories for good, and everything that repeats them.

**Which events.**  A forget names its events by one selector: ``ids`` (citation or event
ids, ``memd.retrieve.layers.resolve``), ``session`` (every event of one session),
``before`` (every event dated before a time) or ``query`` (``by_query``: every event that
holds every word of the query, or the whole query verbatim); retention
(``memd.store.retention``) chooses its own.  ``plan`` says what a set of events takes
with it, for a dry run to show.

**Deleting them** (``forget``, one transaction per batch).  The schema's delete triggers
take an event's keyword and trigram rows, its outbox row and stored vectors, its citation
and usage, its graduation level, its working-set membership and, for a consolidated
memory, its consolidation rows.  What triggers cannot do is done here, in the same
transaction:

- a consolidated memory that sums up a forgotten event is deleted with it: its text is
  its sources' text, so keeping it would keep what was to be forgotten;
- the task lists of a project that lost a task-state event are replayed from the ones
  left (``rebuild_tasks``);
- each session that lost an event gets its summary and snapshot recomputed from what is
  left (or loses them, and its row, when nothing is), and so does every session whose
  snapshot lists a task of a forgotten event (snapshots carry the project's open tasks);
- the usearch keys of the deleted vectors are returned, for the caller to take out of
  the index (a cache of the ``vectors`` table, outside SQLite).

``record`` writes the audit row (when, which selector kind, how many: never what).

**Bytes gone from the file.**  ``PRAGMA secure_delete`` zeroes what a delete frees, but
three places still hold the text afterwards:

- the FTS5 indexes: a delete only appends a tombstone segment, and the terms stay in the
  old segments until those are merged.  ``merge_step`` merges each index into one segment
  in bounded steps (FTS5's ``merge`` command, ``MERGE_PAGES`` pages a step, each its own
  transaction, so hooks are served between steps).  That rewrites the whole index: about
  0.7-1.4 s for the keyword index at 100k events here, in steps of ~0.1 s; ``optimize``
  does the same work in one blocking statement (0.75 s);
- free pages: zeroed by ``secure_delete``; with ``auto_vacuum = INCREMENTAL``
  (``memd.store.retention``) ``vacuum_step`` gives them back to the file system;
- the WAL: it holds the old pages until a checkpoint, and its frames stay in the file
  after one, so ``checkpoint_truncate`` empties it.

These run on the writer's connection (``Writer.call``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final, NamedTuple

from ..capture.events import DERIVED_KINDS, LOGGED
from ..continuity import tasks
from ..query import has_cjk, tokens
from .schema import TOKENIZER
from .writer import refresh_snapshot, refresh_summary

__all__ = [
    "BATCH",
    "KEYWORD_INDEXES",
    "MERGE_PAGES",
    "SELECTORS",
    "VACUUM_PAGES",
    "Deleted",
    "Plan",
    "QueryTerms",
    "batches",
    "by_query",
    "by_session",
    "by_time",
    "checkpoint_truncate",
    "document_matches",
    "forget",
    "immediate",
    "merge_step",
    "plan",
    "query_terms",
    "rebuild_tasks",
    "recompute_session",
    "record",
    "scratch_index",
    "vacuum_step",
    "zeroing",
]

SELECTORS: Final = ("ids", "session", "before", "query", "retention", "scan")
"""How a forget chose its events: what the audit row records (``scan``: ``memd.store.redact``
rewrote their secrets rather than deleting them)."""
BATCH: Final = 200
"""Events deleted per transaction, so that a hook waits little behind one: at most ~0.2 s at
100k events here, mostly recomputing the sessions that lost events (2,000 took up to 1.9 s).
The task-state events all go in one last transaction, which replays the task lists of their
projects: seconds, at 100k events with thousands of tasks a project."""
MERGE_PAGES: Final = 1000
"""Pages one FTS5 merge step writes: ~0.1 s at 100k events here (2,000: 0.15 s, 0.47 s with a
cold cache), for the same total."""
VACUUM_PAGES: Final = 8192
"""Free pages one incremental-vacuum step gives back (32 MB; ~0.25 s here)."""
MAX_MERGE_STEPS: Final = 100_000
"""A merge step that never reports done (it always does) still ends."""
KEYWORD_INDEXES: Final = ("events_fts", "events_cjk")
MAX_QUERY_WORDS: Final = 32
MIN_VERBATIM: Final = 3
"""Shortest query also looked for verbatim in the stored records."""


def _json(ids: Iterable[int]) -> str:
    """Ids as one bound parameter: ``IN (SELECT value FROM json_each(?))`` has no variable limit."""
    return json.dumps(list(ids))


_IN = "IN (SELECT value FROM json_each(?))"


# --- selectors --------------------------------------------------------------------------


def by_session(conn: sqlite3.Connection, session: str) -> list[int]:
    """Every event of ``session`` (its summary and snapshot too)."""
    return [row[0] for row in conn.execute("SELECT id FROM events WHERE session_id = ? ORDER BY id", (session,))]


def by_time(conn: sqlite3.Connection, before: float, project_id: int | None) -> list[int]:
    """Every event dated before ``before`` (its own time, ``client_ts``), in one project or all (None)."""
    where = " AND project_id = ?" if project_id is not None else ""
    args = (before, project_id) if project_id is not None else (before,)
    return [row[0] for row in conn.execute(f"SELECT id FROM events WHERE client_ts < ?{where} ORDER BY id", args)]


class QueryTerms(NamedTuple):
    """What ``--query`` looks for: every word, and the whole text verbatim."""

    words: tuple[str, ...]
    """The words as the indexes see them (NFKC, casefolded), none dropped: a forget never
    widens silently.  Words with CJK characters are matched as substrings (Korean words
    carry particles), the others as words of the keyword index, stemmed as search stems
    them (``token`` also forgets ``tokens``)."""
    phrase: str
    """The query as typed, looked for in each event's stored record (payload and meta),
    whole-word and case-insensitively: a secret in the part of a tool's output the index
    does not hold (Read keeps only a file's head as searchable text) goes too."""


def query_terms(text: str) -> QueryTerms:
    words = tuple(dict.fromkeys(tokens(text)))[:MAX_QUERY_WORDS]
    phrase = text.strip()
    return QueryTerms(words, phrase if len(phrase) >= MIN_VERBATIM else "")


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _word_select(word: str) -> tuple[str, list[object]]:
    """SQL for the events holding ``word``, and its arguments."""
    if not has_cjk(word):
        return "SELECT rowid FROM events_fts WHERE events_fts MATCH ?", [_quote(word)]
    if len(word) >= 3:  # the trigram index finds substrings of three characters or more
        return "SELECT rowid FROM events_cjk WHERE events_cjk MATCH ?", [_quote(word)]
    pattern = f"%{_escape_like(word)}%"
    return "SELECT rowid FROM events_cjk WHERE title LIKE ? ESCAPE '\\' OR text LIKE ? ESCAPE '\\'", [pattern, pattern]


def _verbatim(phrase: str) -> re.Pattern[str]:
    """``phrase`` as it is written inside a JSON string, as a whole word, in any case."""
    escaped = re.escape(json.dumps(phrase, ensure_ascii=False)[1:-1])
    before = r"(?<!\w)" if re.match(r"\w", phrase) else ""
    after = r"(?!\w)" if re.search(r"\w$", phrase) else ""
    return re.compile(before + escaped + after, re.IGNORECASE)


def by_query(conn: sqlite3.Connection, terms: QueryTerms, project_id: int | None) -> list[int]:
    """The events of one project (or all: None) that hold every word of ``terms``, or its
    phrase verbatim in their stored record.  Never a vector neighbour: a forget deletes
    what it can show to hold the words."""
    scope, scope_args = (" AND project_id = ?", [project_id]) if project_id is not None else ("", [])
    found: set[int] = set()
    if terms.words:
        selects = [_word_select(word) for word in terms.words]
        every = " INTERSECT ".join(sql for sql, _ in selects)
        args = [arg for _, word_args in selects for arg in word_args]
        found.update(row[0] for row in conn.execute(f"SELECT id FROM events WHERE id IN ({every}){scope}",
                                                    [*args, *scope_args]))  # fmt: skip
    if terms.phrase:
        pattern = _verbatim(terms.phrase)
        like = f"%{_escape_like(json.dumps(terms.phrase, ensure_ascii=False)[1:-1])}%"
        for event_id, payload, meta in conn.execute(
            "SELECT id, payload, meta FROM events WHERE (payload LIKE ? ESCAPE '\\' OR meta LIKE ? ESCAPE '\\')"
            + scope,
            [like, like, *scope_args],
        ):
            if pattern.search(payload) or pattern.search(meta):
                found.add(event_id)
    return sorted(found)


def document_matches(scratch: sqlite3.Connection, terms: QueryTerms, title: str, text: str, record: str) -> bool:
    """``by_query``'s test for one event outside the database (a spooled frame, as capture
    would store it).  ``scratch`` is an in-memory connection (``scratch_index``): its FTS5
    table tokenizes and stems like the keyword index."""
    if terms.phrase and _verbatim(terms.phrase).search(record):
        return True
    if not terms.words:
        return False
    folded = f"{title}\n{text}".casefold()
    scratch.execute("DELETE FROM doc")
    scratch.execute("INSERT INTO doc (rowid, title, text) VALUES (1, ?, ?)", (title, text))
    for word in terms.words:
        if has_cjk(word):
            if word not in folded:
                return False
        elif not scratch.execute("SELECT 1 FROM doc WHERE doc MATCH ?", (_quote(word),)).fetchone():
            return False
    return True


def scratch_index() -> sqlite3.Connection:
    """An in-memory table tokenized like ``events_fts``, for ``document_matches``."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute(f"CREATE VIRTUAL TABLE doc USING fts5(title, text, tokenize='{TOKENIZER}')")
    return conn


# --- what goes ----------------------------------------------------------------------------


class Plan(NamedTuple):
    """What forgetting ``events`` takes with it."""

    events: list[int]
    """The events named, that exist."""
    derived: list[int]
    """Consolidated memories built from them (not already among ``events``)."""
    sessions: list[str]
    """Sessions that lose an event of their log: their summary and snapshot are recomputed."""
    task_events: list[int]
    """The task-state events among ``events``: the task lists are replayed without them."""


def plan(conn: sqlite3.Connection, event_ids: Iterable[int]) -> Plan:
    """What forgetting ``event_ids`` would delete (reads only: a dry run shows it)."""
    found = [row[0] for row in conn.execute(f"SELECT id FROM events WHERE id {_IN} ORDER BY id", (_json(event_ids),))]
    chosen = _json(found)
    derived = [
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT consolidation_id FROM consolidation_sources WHERE source_id {_IN}"
            f" AND consolidation_id NOT {_IN} ORDER BY consolidation_id",
            (chosen, chosen),
        )
    ]
    sessions = [
        row[0]
        for row in conn.execute(
            f"SELECT DISTINCT session_id FROM events WHERE id {_IN} AND session_id IS NOT NULL AND {LOGGED}"
            " ORDER BY session_id",
            (chosen,),
        )
    ]
    task_events = [
        row[0] for row in conn.execute(f"SELECT id FROM events WHERE id {_IN} AND kind = 'task_state'", (chosen,))
    ]
    return Plan(found, derived, sessions, task_events)


def batches(planned: Plan, size: int = BATCH) -> list[list[int]]:
    """``planned.events`` in transactions of ``size``, the task-state events all in the last
    one: the task lists are then replayed once, after every other event is gone (a snapshot
    recomputed in an earlier batch, from task lists that still had them, is recomputed again
    there)."""
    task_events = set(planned.task_events)
    others = [event_id for event_id in planned.events if event_id not in task_events]
    split = [others[start : start + size] for start in range(0, len(others), size)]
    return [*split, sorted(task_events)] if task_events else split


class Deleted(NamedTuple):
    events: int
    derived: int
    """Consolidated memories deleted because they summed up one of the events."""
    sessions: int
    """Sessions whose summary and snapshot were recomputed (or that went, having nothing left)."""
    keys: list[int]
    """The usearch keys of the vectors deleted."""


@contextmanager
def zeroing(conn: sqlite3.Connection) -> Iterator[None]:
    """``secure_delete`` on (what is freed is overwritten with zeros), then as it was: some
    SQLite builds (Debian's) have it on for every connection, and it must stay so there."""
    (previous,) = conn.execute("PRAGMA secure_delete").fetchone()
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(previous)}")


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """One ``BEGIN IMMEDIATE`` transaction: committed, or rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def forget(conn: sqlite3.Connection, event_ids: Sequence[int], now: float) -> Deleted:
    """Delete ``event_ids`` and everything that repeats them (module docstring), in one transaction."""
    with zeroing(conn), immediate(conn):
        return _delete(conn, plan(conn, event_ids), now)


def _delete(conn: sqlite3.Connection, planned: Plan, now: float) -> Deleted:
    doomed = planned.events + planned.derived
    if not doomed:
        return Deleted(0, 0, 0, [])
    ids = _json(doomed)
    keys = [row[0] for row in conn.execute(f"SELECT id FROM vectors WHERE event_id {_IN}", (ids,))]
    lost = conn.execute(
        f"SELECT session_id, count(*) FROM events WHERE id {_IN} AND session_id IS NOT NULL AND {LOGGED}"
        " GROUP BY session_id",
        (ids,),
    ).fetchall()
    tasks_of = f"SELECT DISTINCT project_id FROM events WHERE id {_IN} AND kind = 'task_state'"
    task_projects = {row[0] for row in conn.execute(tasks_of, (ids,))}
    conn.execute(f"DELETE FROM events WHERE id {_IN}", (ids,))
    conn.executemany("UPDATE sessions SET events = max(0, events - ?) WHERE id = ?", [(n, s) for s, n in lost])
    sessions = set(planned.sessions)
    if task_projects:
        rebuild_tasks(conn, task_projects)
        sessions |= _sessions_listing(conn, set(planned.task_events), task_projects)
    for session in sorted(sessions):
        keys += recompute_session(conn, session, now)
    return Deleted(len(planned.events), len(planned.derived), len(sessions), keys)


def rebuild_tasks(conn: sqlite3.Connection, project_ids: Iterable[int | None]) -> None:
    """Replay the task lists of these projects from their task-state events (inside the
    caller's transaction).  ``tasks.rebuild`` replays every project; a task belongs to one
    project, so replaying only those that lost an event gives the same tables for less."""
    for project_id in project_ids:
        conn.execute("DELETE FROM task_history WHERE task_id IN (SELECT id FROM tasks WHERE project_id IS ?)",
                     (project_id,))  # fmt: skip
        conn.execute("DELETE FROM tasks WHERE project_id IS ?", (project_id,))
        for event_id, session, meta, at in conn.execute(
            "SELECT id, session_id, meta, client_ts FROM events WHERE kind = 'task_state' AND project_id IS ?"
            " ORDER BY id",
            (project_id,),
        ).fetchall():
            try:
                parsed = json.loads(meta)
            except ValueError:
                continue
            if isinstance(parsed, dict):
                tasks.apply(conn, event_id, project_id, session, parsed, at)


def _sessions_listing(conn: sqlite3.Connection, task_events: set[int], project_ids: set[int | None]) -> set[str]:
    """Sessions of these projects whose snapshot lists a task last changed by one of ``task_events``."""
    sessions = set()
    for session, project_id, meta in conn.execute(
        "SELECT session_id, project_id, meta FROM events WHERE kind = 'snapshot' AND session_id IS NOT NULL"
    ):
        if project_id in project_ids and task_events & _task_sources(meta):
            sessions.add(session)
    return sessions


def _task_sources(meta: str) -> set[int]:
    try:
        listed = json.loads(meta).get("tasks", [])
    except (ValueError, AttributeError):
        return set()
    return {item.get("id") for item in listed if isinstance(item, dict)}


def recompute_session(conn: sqlite3.Connection, session: str, now: float) -> list[int]:
    """The session's summary and snapshot, from the events it has left; none if it has none.
    Returns the vector keys of the old ones: they embed what was forgotten too."""
    old = "FROM events WHERE session_id = ? AND kind IN ('session_summary', 'snapshot')"
    vectors = f"SELECT id FROM vectors WHERE event_id IN (SELECT id {old})"
    keys = [row[0] for row in conn.execute(vectors, (session,))]
    conn.execute(f"DELETE {old}", (session,))
    row = conn.execute("SELECT project_id FROM sessions WHERE id = ?", (session,)).fetchone()
    left = f"SELECT 1 FROM events WHERE session_id = ? AND kind NOT IN {DERIVED_KINDS!r} LIMIT 1"
    if not conn.execute(left, (session,)).fetchone():
        conn.execute("DELETE FROM sessions WHERE id = ?", (session,))
        return keys
    project_id = row[0] if row else None
    conn.execute("UPDATE sessions SET summary = NULL WHERE id = ?", (session,))
    refresh_summary(conn, session, project_id, now)
    refresh_snapshot(conn, session, project_id, now)
    return keys


def record(conn: sqlite3.Connection, selector: str, events: int, derived: int, now: float) -> None:
    """The audit row of one forget: when, by which selector kind, how many.  Never what."""
    if selector not in SELECTORS:
        raise ValueError(f"unknown selector {selector!r}")
    conn.execute(
        "INSERT INTO forget_log (at, selector, events, derived) VALUES (?, ?, ?, ?)",
        (now, selector, events, derived),
    )


# --- the bytes ----------------------------------------------------------------------------


def merge_step(conn: sqlite3.Connection, table: str, first: bool) -> bool:
    """One bounded step of merging ``table``'s FTS5 index into a single segment, so that the
    terms of deleted rows leave the file; True once there is nothing left to merge.

    The first step passes a negative page count (FTS5: put every segment on one level and
    merge them whatever their number), the next ones a positive one (carry on with that
    merge even if new segments arrive meanwhile), until a step changes nothing."""
    if table not in KEYWORD_INDEXES:
        raise ValueError(f"not a keyword index: {table!r}")
    pages = -MERGE_PAGES if first else MERGE_PAGES
    before = conn.total_changes
    with zeroing(conn), immediate(conn):  # the old segments' pages are zeroed as they are freed
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)", (pages,))
    return conn.total_changes - before < 2


def vacuum_step(conn: sqlite3.Connection, pages: int = VACUUM_PAGES) -> bool:
    """Give up to ``pages`` free pages back to the file system (``auto_vacuum = INCREMENTAL``
    only; otherwise the file keeps them, zeroed); True once none is left to give."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
        return True
    with zeroing(conn):  # executescript steps the pragma to its end; execute would free a single page
        conn.executescript(f"PRAGMA incremental_vacuum({int(pages)});")
    return conn.execute("PRAGMA freelist_count").fetchone()[0] == 0


def checkpoint_truncate(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the database and truncate it to nothing: its frames hold the old
    pages, and a passive checkpoint leaves them in the file.  False if a reader kept it
    from completing (the next forget or the writer's own checkpoints catch up)."""
    busy, _log, _copied = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return busy == 0
