"""``memd`` (and ``python -m memd``): run the daemon in the foreground (systemd, launchd or
`memctl daemon start` put it in the background).

This module reads the command line and the config and sets up logging; ``memd.daemon.run``
is imported only then, so that the modules it brings bind their loggers to a configured
structlog, and ``memd --version`` or a bad config answer without loading them.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys

import anyio
import msgspec

from memd_wire import launcher
from memd_wire.paths import resolve

from . import __version__
from .config import ConfigError, load
from .instance import AlreadyRunning
from .logs import configure

__all__ = ["main"]


def _seconds(text: str) -> float:
    """A duration flag: seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more, e.g. 900)")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memd", description="memd, the memory daemon for coding agents.")
    parser.add_argument("--socket", help="Unix socket path (default: $MEMD_SOCKET or $XDG_RUNTIME_DIR/memd/)")
    parser.add_argument("--data-dir", help="database directory (default: $MEMD_DATA_DIR or $XDG_DATA_HOME/memd)")
    parser.add_argument("--config", help="config file (default: $XDG_CONFIG_HOME/memd/config.toml)")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="overrides config")
    parser.add_argument(
        "--idle-exit",
        type=_seconds,
        metavar="SECONDS",
        help="when socket-activated, exit after this many idle seconds; 0 = never (overrides [daemon] idle_exit)",
    )
    parser.add_argument(
        "--no-stderr-log",
        dest="stderr_log",
        action="store_false",
        help="log to the log file only; stderr keeps startup errors and crashes (for a detached daemon"
        " whose stderr is a file nobody rotates)",
    )
    parser.add_argument("--version", action="version", version=f"memd {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.umask(0o077)  # everything memd creates is private to the user
    paths = resolve(socket=args.socket, data_dir=args.data_dir)
    try:
        config = load(args.config or paths.config_file)
    except ConfigError as exc:
        print(f"memd: bad config: {exc}", file=sys.stderr)
        return 2
    if args.idle_exit is not None:
        config.daemon = msgspec.structs.replace(config.daemon, idle_exit=args.idle_exit)
    configure(args.log_level or config.daemon.log_level, paths.log_file, stderr=args.stderr_log)
    with contextlib.suppress(OSError):  # for the Claude Code plugin's launcher (memd_client/launcher.py)
        launcher.record(paths)

    from .daemon import run  # after logging is configured: modules bind their loggers

    try:
        anyio.run(run, paths, config, backend="asyncio")
    except AlreadyRunning as exc:
        print(f"memd: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"memd: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
