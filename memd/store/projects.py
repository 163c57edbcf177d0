"""Projects: one repository wherever it is checked out, on this machine or another.

A project has a ``root`` (what people read: the first path memd saw it at, or another
machine's), a ``key`` (unique: ``memd.capture.project.project_key``, its normalized remote,
else ``path:<root>``) and, in ``project_paths``, each path of this machine where it is
checked out.  A project is looked up by a local root through its paths, then its key:

- ``project_id_of`` (the writer, for each event): a root seen for the first time joins the
  project of its key (another checkout of the same repository) or starts a new one, and
  becomes one of its paths;
- ``local_project``: the same lookup for a reader, which records nothing;
- ``find_project``: a project people name (``--project``): a path, a key, or part of one;
- ``project_by_key`` and ``remote_project``: a project known from another machine (sync).

``link_path`` and ``link_key`` (``memctl project link``) make a path part of another
project by hand.  A path that belongs to a project already takes it along: the two are
merged (``merge``), the older (lower) id stays, and every row of the other moves over.
All of these run inside the caller's transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from typing import Final, NamedTuple

from ..capture.project import project_key
from ..protocol import ProjectInfo
from .schema import APPEND_ONLY
from .tasks import rebuild_projects

__all__ = [
    "MATCHING",
    "Linked",
    "find_project",
    "like",
    "link_key",
    "link_path",
    "local_project",
    "local_projects",
    "merge",
    "path_project",
    "project_by_key",
    "project_id_of",
    "project_info",
    "project_list",
    "project_roots",
    "remote_project",
]

MATCHING: Final = (
    "SELECT id FROM projects WHERE root LIKE ? ESCAPE '\\' OR key LIKE ? ESCAPE '\\'"
    " UNION SELECT project_id FROM project_paths WHERE path LIKE ? ESCAPE '\\'"
)
"""The ids of the projects whose root, key or a path matches a ``like`` pattern (given three
times): what ``--project`` selects in a listing."""

_WITH_PROJECT: Final = (
    "SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c"
    " WHERE m.type = 'table' AND c.name = 'project_id' ORDER BY m.name"
)
"""Every table with a ``project_id``: a merge moves their rows, those of tables added later too."""


class Linked(NamedTuple):
    """What a link did."""

    project_id: int
    """The project the path belongs to now."""
    merged: int | None = None
    """The project merged into it (gone), if any."""
    events: int = 0
    """Events moved over from the merged project."""


def like(name: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern of the texts holding ``name``."""
    return "%" + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def path_project(conn: sqlite3.Connection, path: str) -> int | None:
    """The project ``path`` is recorded as a checkout of."""
    row = conn.execute("SELECT project_id FROM project_paths WHERE path = ?", (path,)).fetchone()
    return None if row is None else int(row[0])


def project_by_key(conn: sqlite3.Connection, key: str) -> int | None:
    """The project of ``key`` (``github.com/acme/api``, ``path:/home/me/notes``)."""
    row = conn.execute("SELECT id FROM projects WHERE key = ?", (key,)).fetchone()
    return None if row is None else int(row[0])


def local_project(conn: sqlite3.Connection, root: str) -> int | None:
    """The project of the local ``root``: the one it is a path of, else the one of its key
    (a checkout memd has no event from yet, of a repository it knows)."""
    found = path_project(conn, root)
    return found if found is not None else project_by_key(conn, project_key(root))


def local_projects(conn: sqlite3.Connection, roots: Iterable[str]) -> dict[str, int | None]:
    """``local_project`` of each of ``roots``."""
    return {root: local_project(conn, root) for root in roots}


def project_id_of(conn: sqlite3.Connection, root: str, now: float) -> int:
    """The project of an event at the local ``root``, recorded as seen ``now``; a root seen
    for the first time becomes a path of the project of its key, or of a new one."""
    project_id = _checkout(conn, root, now)
    conn.execute("UPDATE projects SET last_seen = ? WHERE id = ?", (now, project_id))
    return project_id


def remote_project(conn: sqlite3.Connection, key: str, root: str, now: float) -> int:
    """The project of ``key``, created if this machine has none: for events of a project
    known only from another machine, where it is at ``root``.  No path of this machine is
    recorded for it; a checkout here joins it by its key."""
    if not key or not root:
        raise ValueError("a remote project needs its key and its root")
    found = project_by_key(conn, key)
    return found if found is not None else _create(conn, root, key, now)


def find_project(conn: sqlite3.Connection, name: str) -> tuple[str, int] | None:
    """(root, id) of the project people name: one of its paths, its root or its key, else
    the latest seen of those where one of them contains ``name``."""
    row = conn.execute(
        "SELECT root, id FROM projects WHERE id IN (" + MATCHING + ") ORDER BY"
        " (root = ? OR key = ? OR id IN (SELECT project_id FROM project_paths WHERE path = ?)) DESC,"
        " last_seen DESC LIMIT 1",
        (*[like(name)] * 3, name, name, name),
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def link_path(conn: sqlite3.Connection, path: str, other: str, now: float) -> Linked:
    """Make the local ``path`` a checkout of the project of the local ``other`` (recorded
    as seen first if it was not)."""
    return _join(conn, path, _checkout(conn, other, now))


def link_key(conn: sqlite3.Connection, path: str, key: str, now: float) -> Linked:
    """Make the local ``path`` a checkout of the project of ``key``.  No project has that
    key yet: ``path``'s project takes it (in place of its own), or a new one with it."""
    target = project_by_key(conn, key)
    if target is not None:
        return _join(conn, path, target)
    source = path_project(conn, path)
    if source is None:
        source = _create(conn, path, key, now)
        conn.execute("INSERT INTO project_paths (path, project_id) VALUES (?, ?)", (path, source))
    else:
        conn.execute("UPDATE projects SET key = ? WHERE id = ?", (key, source))
    return Linked(source)


def merge(conn: sqlite3.Connection, one: int, other: int) -> Linked:
    """Make projects ``one`` and ``other`` one project: the lower id stays, and the rows of
    every table with a ``project_id`` move over to it.  Events are append-only: the guard
    is lifted for this transaction only.  Task lists are replayed from the task-state
    events, as one project's; the project keeps its key (or, having none, takes the other's)."""
    keep, gone = min(one, other), max(one, other)
    events = 0
    for (table,) in conn.execute(_WITH_PROJECT).fetchall():
        if table == "events":
            conn.execute("DROP TRIGGER events_append_only")
            events = conn.execute("UPDATE events SET project_id = ? WHERE project_id = ?", (keep, gone)).rowcount
            conn.execute(APPEND_ONLY)
        else:
            conn.execute(f'UPDATE "{table}" SET project_id = ? WHERE project_id = ?', (keep, gone))
    rebuild_projects(conn, [keep])
    key, first_seen, last_seen = conn.execute(
        "DELETE FROM projects WHERE id = ? RETURNING key, first_seen, last_seen", (gone,)
    ).fetchone()
    conn.execute(
        "UPDATE projects SET key = coalesce(key, ?), first_seen = min(first_seen, ?), last_seen = max(last_seen, ?)"
        " WHERE id = ?",
        (key, first_seen, last_seen, keep),
    )
    return Linked(keep, gone, events)


def project_roots(conn: sqlite3.Connection) -> list[str]:
    """The root of every checkout of every project, as paths of this machine."""
    return [row[0] for row in conn.execute("SELECT path FROM project_paths ORDER BY path")]


def project_info(conn: sqlite3.Connection, project_id: int) -> ProjectInfo | None:
    """One project as ``memctl project list`` shows it."""
    found = _infos(conn, "WHERE p.id = ?", (project_id,))
    return found[0] if found else None


def project_list(conn: sqlite3.Connection) -> list[ProjectInfo]:
    """Every project, the latest seen first."""
    return _infos(conn, "", ())


def _infos(conn: sqlite3.Connection, where: str, args: tuple[object, ...]) -> list[ProjectInfo]:
    rows = conn.execute(
        "SELECT p.id, p.root, p.name, p.key, p.first_seen, p.last_seen,"
        " (SELECT count(*) FROM events WHERE project_id = p.id),"
        " (SELECT json_group_array(path) FROM (SELECT path FROM project_paths WHERE project_id = p.id ORDER BY path)),"
        " (SELECT count(*) FROM sessions WHERE project_id = p.id),"
        " (SELECT json_group_object(agent, n) FROM"
        "   (SELECT agent, count(*) AS n FROM events WHERE project_id = p.id GROUP BY agent ORDER BY n DESC))"
        f" FROM projects p {where} ORDER BY p.last_seen DESC, p.id",
        args,
    ).fetchall()
    fields = ("id", "root", "name", "key", "first_seen", "last_seen", "events")
    return [
        ProjectInfo(
            **dict(zip(fields, row[:7], strict=True)),
            paths=json.loads(row[7]),
            sessions=row[8],
            agents=json.loads(row[9]),
        )
        for row in rows
    ]


def _checkout(conn: sqlite3.Connection, root: str, now: float) -> int:
    """The project of the local ``root``; a root seen for the first time becomes a path of
    the project of its key, or of a new one."""
    project_id = path_project(conn, root)
    if project_id is None:
        key = project_key(root)
        found = project_by_key(conn, key)
        project_id = found if found is not None else _create(conn, root, key, now)
        conn.execute("INSERT INTO project_paths (path, project_id) VALUES (?, ?)", (root, project_id))
    return project_id


def _join(conn: sqlite3.Connection, path: str, target: int) -> Linked:
    """Make the local ``path`` a checkout of ``target``, merging its project into it if it has one."""
    source = path_project(conn, path)
    if source is None:
        conn.execute("INSERT INTO project_paths (path, project_id) VALUES (?, ?)", (path, target))
        return Linked(target)
    return Linked(target) if source == target else merge(conn, source, target)


def _create(conn: sqlite3.Connection, root: str, key: str, now: float) -> int:
    (project_id,) = conn.execute(
        "INSERT INTO projects (root, name, first_seen, last_seen, key) VALUES (?, ?, ?, ?, ?) RETURNING id",
        (root, os.path.basename(root) or root, now, now, key),
    ).fetchone()
    return int(project_id)
