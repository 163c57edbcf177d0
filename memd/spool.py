"""The spool: frames the hook client could not hand over, waiting on disk.

The hook client writes each frame to its own file, atomically (``.tmp-*`` then a
rename to ``*.frame``).  The daemon reads them oldest first and deletes a file only
after its event is committed.  These are the helpers for the daemon side.
"""

from __future__ import annotations

import os
import time

from .protocol import HEADER_SIZE, MAX_FRAME

__all__ = ["CorruptSpoolFile", "backlog", "pending", "read_frame", "sweep_temp_files"]

TEMP_MAX_AGE = 3600.0
"""A temp file this old was left by a hook client that died mid-write."""


class CorruptSpoolFile(ValueError):
    """A spool file that does not hold exactly one frame."""


def pending(spool_dir: str) -> list[str]:
    """Paths of the spooled frames, oldest first (names start with a nanosecond time)."""
    try:
        names = os.listdir(spool_dir)
    except FileNotFoundError:
        return []
    return [os.path.join(spool_dir, n) for n in sorted(names) if n.endswith(".frame")]


def backlog(spool_dir: str) -> int:
    return len(pending(spool_dir))


def read_frame(path: str) -> bytes:
    """The body of the one frame in ``path``."""
    with open(path, "rb") as f:
        data = f.read(MAX_FRAME + HEADER_SIZE + 1)
    if len(data) < HEADER_SIZE:
        raise CorruptSpoolFile(f"{len(data)}-byte file has no frame header")
    length = int.from_bytes(data[:HEADER_SIZE], "big")
    if length != len(data) - HEADER_SIZE:
        raise CorruptSpoolFile(f"header announces {length} bytes, file holds {len(data) - HEADER_SIZE}")
    return data[HEADER_SIZE:]


def sweep_temp_files(spool_dir: str, now: float | None = None) -> int:
    """Delete temp files abandoned by dead hook clients; return how many."""
    now = time.time() if now is None else now
    removed = 0
    try:
        names = os.listdir(spool_dir)
    except FileNotFoundError:
        return 0
    for name in names:
        path = os.path.join(spool_dir, name)
        if name.startswith(".tmp-"):
            try:
                if now - os.stat(path).st_mtime > TEMP_MAX_AGE:
                    os.unlink(path)
                    removed += 1
            except FileNotFoundError:
                continue
    return removed
