"""Where one daemon keeps its files, as far as its services need to know.

The daemon resolves every location (``memd_wire.paths``, shared with the hook client)
and hands the services these four: they read and report them, never decide them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Places"]


@dataclass(frozen=True)
class Places:
    socket: str
    """The Unix socket served (``memctl status`` reports it)."""
    data_dir: str
    database: str
    spool_dir: str
    """Where the hook client writes the frames it could not hand over."""
