"""The process's limit on open files: raised at start, reported by ``memctl status``, and the
ceiling the server's connection cap stays under."""

from __future__ import annotations

import contextlib
import resource

__all__ = ["FILE_RESERVE", "connection_cap", "file_limit", "raise_file_limit"]

FILE_RESERVE = 128
"""File descriptors kept for the store, the model, the logs and the spool, below the limit
the connection cap must stay under."""


def file_limit() -> int:
    """The soft limit on this process's open files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_file_limit() -> tuple[int, int]:
    """Raise the soft limit on open files to the hard one (systemd user services and most
    shells start at 1,024, which a flood of connections exhausts); (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):  # a limit a container will not let go
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return soft, file_limit()


def connection_cap(configured: int) -> int:
    """How many connections may be open at once: ``[daemon] max_connections``, and below
    the file limit with room for the store's own files (read after ``raise_file_limit``)."""
    return min(configured, max(8, file_limit() - FILE_RESERVE))
