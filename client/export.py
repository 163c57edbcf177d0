"""``memctl export``: a project's memories (or all of them) as JSON lines, read straight
from the database (the daemon may be down).

The first line is a header (``{"format": "memd-export/1", ...}``); each other line is one
stored event (``memd.protocol.ExportedEvent``): its citation id, idempotency key, kind,
session, project, title, text, metadata, importance and times, the hook payload as
stored, and what memd learned of it: its uses by id and its graduation level (which rank
it, and keep it from retention, on the machine it moves to too).  All of it is what memd
stored, so already filtered: private spans and secrets never reached the database.
``memctl import --from-export FILE`` reads it back.
"""

from __future__ import annotations

import json
import time
from typing import BinaryIO

import msgspec

from memd import __version__
from memd.store.export import exported_events, snapshot
from memd.store.projects import find_project

from .importer import EXPORT_FORMAT

__all__ = ["NoSuchProject", "export"]


class NoSuchProject(ValueError):
    pass


def export(database: str, out: BinaryIO, project: str | None = None, since: float | None = None) -> int:
    """Write the header and every event matching the filters to ``out``; how many events."""
    with snapshot(database) as conn:  # one snapshot for the whole file, whatever the daemon commits meanwhile
        project_id: int | None = None
        root: str | None = None
        if project:
            found = find_project(conn, project)
            if found is None:
                raise NoSuchProject(f"no project matches {project!r} (memctl project list lists them)")
            root, project_id = found
        header = {"format": EXPORT_FORMAT, "memd": __version__, "exported_at": time.time(), "project": root}
        out.write(json.dumps(header | {"since": since}).encode() + b"\n")
        encode = msgspec.json.Encoder().encode
        count = 0
        for event in exported_events(conn, project_id, since):
            out.write(encode(event) + b"\n")
            count += 1
        return count
