"""The spool: frames the hook client could not hand over, waiting on disk.

The hook client writes each frame to its own file, atomically (``.tmp-*`` then a
rename to ``*.frame``: ``spool.py``).  The daemon reads them oldest first and deletes a
file only after its event is committed.  These are the helpers for the reading side:
the daemon's drain, and ``memctl status``, ``memctl spool`` and ``memctl doctor``.

A frame whose replay fails for a reason of its own (not a failed commit, which fails
every frame alike) counts the failure in its name (``<name>.tries2.frame``: the count
survives drains and restarts); after ``MAX_ATTEMPTS`` it is moved aside into
``failed/``, as a frame that can never become an event (unreadable, not an event) is at
once.  Nothing there is retried or deleted by memd: ``memctl spool retry`` puts the
files back, ``memctl spool delete`` deletes them (``memctl doctor`` says so).
"""

from __future__ import annotations

import os
import re
import time

from .frame import HEADER_SIZE, MAX_FRAME

__all__ = [
    "FAILED_DIR",
    "MAX_ATTEMPTS",
    "CorruptSpoolFile",
    "attempts",
    "backlog",
    "count_failure",
    "delete_failed",
    "failed",
    "move_aside",
    "pending",
    "read_frame",
    "retry_failed",
    "sweep_temp_files",
]

TEMP_MAX_AGE = 3600.0
"""A temp file this old was left by a hook client that died mid-write."""
FAILED_DIR = "failed"
"""The spool's subdirectory of frames set aside (0700, files 0600, like the spool)."""
MAX_ATTEMPTS = 3
"""Failed replays of a frame before it is set aside."""
_TRIES = re.compile(r"\.tries(\d+)\.frame$")


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


def failed(spool_dir: str) -> list[str]:
    """Paths of the frames set aside, oldest first."""
    return pending(os.path.join(spool_dir, FAILED_DIR))


def attempts(path: str) -> int:
    """How many replays of the frame at ``path`` failed so far (kept in its name)."""
    match = _TRIES.search(path)
    return int(match.group(1)) if match else 0


def _plain_name(path: str) -> str:
    """The frame's name as the hook client wrote it, without a count of failures."""
    return _TRIES.sub(".frame", os.path.basename(path))


def count_failure(path: str) -> tuple[str, int]:
    """Count one more failed replay of the frame at ``path``: its new path, and the count."""
    count = attempts(path) + 1
    renamed = os.path.join(os.path.dirname(path), _plain_name(path)[: -len(".frame")] + f".tries{count}.frame")
    os.rename(path, renamed)
    return renamed, count


def move_aside(spool_dir: str, path: str) -> str:
    """Move the frame at ``path`` into ``failed/`` (private, as the spool is); its new path."""
    aside = os.path.join(spool_dir, FAILED_DIR)
    os.makedirs(aside, mode=0o700, exist_ok=True)
    os.chmod(path, 0o600)
    target = os.path.join(aside, os.path.basename(path))
    os.rename(path, target)
    return target


def retry_failed(spool_dir: str) -> list[str]:
    """Put the frames set aside back into the spool, their count of failures reset; the
    daemon replays them at its next drain.  Returns their new paths."""
    moved = []
    for path in failed(spool_dir):
        target = os.path.join(spool_dir, _plain_name(path))
        try:
            os.rename(path, target)
        except FileNotFoundError:
            continue  # deleted meanwhile
        moved.append(target)
    return moved


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


def delete_failed(spool_dir: str) -> int:
    """Delete the frames set aside (their events are then lost for good); how many."""
    deleted = 0
    for path in failed(spool_dir):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        deleted += 1
    return deleted


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
