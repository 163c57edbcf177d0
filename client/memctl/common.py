"""What memctl's commands share: how they end with an error, print, and reach the daemon.

Every command prints for humans by default and, with ``--json``, one JSON object with
stable keys for scripts (``emit``).  Imports stay inside the functions: this module is
loaded for every command, ``memctl --version`` included.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import msgspec

    from ..rpc import Client

__all__ = ["NOT_RUNNING_FIX", "CommandError", "connect", "emit", "human_bytes", "plain", "when"]

NOT_RUNNING_FIX = "start it with `memctl daemon start` (or run `memd` in a terminal)"


class CommandError(Exception):
    """Ends the command with this message on stderr and ``exit_code``."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def emit(args: argparse.Namespace, data: dict[str, Any], human: str) -> None:
    import json

    print(json.dumps(data, ensure_ascii=False) if args.json else human)


def plain(reply: msgspec.Struct) -> dict[str, Any]:
    """A reply as JSON-ready builtins, without its ``op`` tag."""
    import msgspec  # loaded already: the reply was decoded with it

    data: dict[str, Any] = msgspec.to_builtins(reply)
    data.pop("op", None)
    return data


def when(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def human_bytes(n: int) -> str:
    """A size for people: 812 B, 4.0 KB, 566.2 MB, 1.4 GB (powers of 1000, as `memctl status`)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def connect(args: argparse.Namespace, timeout: float | None = None) -> Client:
    """A connection to the daemon of ``args.paths``, or a ``CommandError`` saying how to start it."""
    from ..rpc import Client, DaemonUnavailable

    try:
        return Client(args.paths.socket) if timeout is None else Client(args.paths.socket, timeout=timeout)
    except DaemonUnavailable as exc:
        raise CommandError(f"{exc}; {NOT_RUNNING_FIX}") from None
