"""``memctl``: look into and drive memd from the shell.

Every command prints for humans by default and, with ``--json``, one JSON object
with stable keys for scripts.  When the daemon is needed but not running, the
command says so in one line with the fix and exits 1.

Each command lives in the module of its family (``status``, ``search``, ``forget``, ...)
as a ``Command``: its name and help, and the function that declares its arguments and
binds its handler.  A run declares the arguments of its own command only, and each
handler imports what it needs when it runs, so that ``memctl --version`` costs argparse
and these small modules, not msgspec and half of memd.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Final

from memd import __version__
from memd_wire import paths

from . import (
    claude,
    continuity,
    daemon,
    entities,
    forget,
    history,
    projects,
    promote,
    repair,
    search,
    status,
    sync,
    transfer,
    ui,
)  # fmt: skip
from .common import NOT_RUNNING_FIX, CommandError
from .parsing import Command, CommandParser, common_options, lazy_commands

__all__ = ["COMMANDS", "main", "parser"]

COMMANDS: Final[tuple[Command, ...]] = (
    status.STATUS,
    status.PING,
    history.HISTORY,
    search.SEARCH,
    search.TIMELINE,
    search.SHOW,
    search.CITE,
    entities.ENTITIES,
    continuity.TASKS,
    continuity.ENDLESS,
    status.STATS,
    sync.SYNC,
    sync.SHARE,
    promote.PROMOTE,
    ui.UI,
    repair.DOCTOR,
    repair.REBUILD,
    daemon.DAEMON,
    claude.INSTALL,
    claude.UNINSTALL,
    claude.MCP,
    forget.FORGET,
    forget.SCAN,
    forget.GC,
    transfer.IMPORT,
    transfer.EXPORT,
    history.SESSIONS,
    projects.PROJECT,
    daemon.LAUNCHER,
    daemon.SERVICE,
    repair.SPOOL,
    claude.HOOK_COMMAND,
)
"""Every command, in the order ``memctl --help`` lists them."""


def parser() -> argparse.ArgumentParser:
    """memctl's parser: the common options, ``--version``, and every command by name."""
    top = argparse.ArgumentParser(prog="memctl", description="Inspect and drive memd.", parents=[common_options(True)])
    top.add_argument("--version", action="version", version=f"memctl {__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = common_options(False)

    def make(command: Command) -> CommandParser:
        return CommandParser(prog=f"{top.prog} {command.name}", parents=[common], description=command.help,
                             arguments=command.arguments)  # fmt: skip

    lazy_commands(commands, COMMANDS, make)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.paths = paths.resolve(socket=args.socket, data_dir=args.data_dir)
    from ..rpc import ClientError, DaemonError, DaemonUnavailable  # after parsing: --version and --help need no msgspec

    try:
        code: int = args.handler(args)
        return code
    except BrokenPipeError:  # `memctl ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 0
    except CommandError as exc:
        print(f"memctl: {exc}", file=sys.stderr)
        return exc.exit_code
    except DaemonUnavailable as exc:
        print(f"memctl: {exc}; {NOT_RUNNING_FIX}", file=sys.stderr)
        return 1
    except DaemonError as exc:
        print(f"memctl: the daemon refused the request ({exc.code}): {exc}", file=sys.stderr)
        return 1
    except ClientError as exc:  # a daemon of another version (ProtocolMismatch, UnexpectedReply)
        print(f"memctl: {exc}; {exc.advice}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a file that is missing or not ours: the reason, not a traceback
        print(f"memctl: {exc}", file=sys.stderr)
        return 1
