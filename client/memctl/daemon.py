"""``memctl daemon``, ``service`` and ``launcher``: how memd runs.  By hand in the background
(``daemon start``/``stop``), as a user service (systemd socket activation or launchd), or
started by the Claude Code plugin's launcher from the installation it recorded."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import TYPE_CHECKING

from .common import CommandError, emit
from .parsing import Command

if TYPE_CHECKING:
    from memd.protocol import Pong

__all__ = ["DAEMON", "LAUNCHER", "SERVICE"]

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


def daemon_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["start", "stop", "restart"])
    p.set_defaults(handler=run_daemon)


def run_daemon(args: argparse.Namespace) -> int:
    return {"start": start, "stop": stop, "restart": restart}[args.action](args)


def _ping(socket_path: str) -> Pong | None:
    from memd.protocol import Ping, Pong

    from ..rpc import Client, ClientError

    try:
        with Client(socket_path, timeout=2.0) as client:
            return client.call(Ping(), Pong)
    except ClientError:
        return None


def start(args: argparse.Namespace) -> int:
    """Start ``python -m memd`` detached, on the instance memctl resolved, and wait until it answers."""
    started, pid = _launch(args)
    if started:
        emit(args, {"started": True, "pid": pid}, f"memd started (pid {pid})")
    else:
        emit(args, {"started": False, "pid": pid}, f"memd is already running (pid {pid})")
    return 0


def stop(args: argparse.Namespace) -> int:
    """Ask the daemon to shut down and wait until its process has exited."""
    if _shut_down(args):
        emit(args, {"stopped": True}, "memd stopped")
    else:
        emit(args, {"stopped": False}, "memd is not running")
    return 0


def restart(args: argparse.Namespace) -> int:
    """Stop the daemon if it runs, then start it: what a changed config.toml needs.  Under a
    user service, the start is the service manager's (socket activation answers the ping)."""
    was_running = _shut_down(args)
    _, pid = _launch(args)
    emit(args, {"restarted": was_running, "pid": pid}, f"memd {'restarted' if was_running else 'started'} (pid {pid})")
    return 0


def _launch(args: argparse.Namespace) -> tuple[bool, int]:
    """Start the daemon unless it answers already: (whether this started it, its pid)."""
    import subprocess

    from memd_wire import launcher

    launcher.record(args.paths)
    running = _ping(args.paths.socket)
    if running:
        return False, running.pid
    flags = [
        *(["--socket", args.paths.socket] if args.socket else []),
        *(["--data-dir", args.paths.data_dir] if args.data_dir else []),
    ]
    command = [sys.executable, "-m", "memd", "--no-stderr-log", *flags]
    os.makedirs(args.paths.state_dir, mode=0o700, exist_ok=True)
    errors_file = os.path.join(args.paths.state_dir, "memd-start.err")
    with open(errors_file, "wb") as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        pong = _ping(args.paths.socket)
        if pong:  # the errors file stays: startup errors and crashes only, the log lines go to the log file
            return True, pong.pid
        if process.poll() is not None:
            with open(errors_file, encoding="utf-8", errors="replace") as f:
                reason = f.read().strip().splitlines()
            raise CommandError(
                f"memd exited with status {process.returncode}: {reason[-1] if reason else 'no message'}"
                f" (log: {args.paths.log_file})"
            )
        time.sleep(0.05)
    raise CommandError(f"memd did not answer within {START_TIMEOUT:.0f} s (log: {args.paths.log_file})")


def _shut_down(args: argparse.Namespace) -> bool:
    """Ask the daemon to shut down and wait until its process has exited: whether it ran."""
    from memd.protocol import Ok, Shutdown
    from memd_wire.autostart import is_locked, lock_holder

    from ..rpc import Client, DaemonUnavailable, ProtocolMismatch, UnexpectedReply

    try:
        with Client(args.paths.socket) as client:
            client.call(Shutdown(), Ok)
    except DaemonUnavailable:
        return False
    except (ProtocolMismatch, UnexpectedReply):  # a daemon of another memd version cannot read Shutdown
        if not (pid := lock_holder(args.paths.lock_file)):
            raise
        os.kill(pid, signal.SIGTERM)  # it shuts down on SIGTERM as on Shutdown
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        if not is_locked(args.paths.lock_file):  # released only when the process has exited
            return True
        time.sleep(0.05)
    raise CommandError(f"memd did not stop within {STOP_TIMEOUT:.0f} s")


def launcher_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", action="store_true", help="record this installation (install and daemon start do)")
    p.set_defaults(handler=run_launcher)


def run_launcher(args: argparse.Namespace) -> int:
    from memd_wire import launcher

    path = launcher.record(args.paths) if args.record else launcher.record_path(args.paths)
    recorded = os.path.exists(path)
    human = f"{'recorded' if args.record else 'record'}: {path}" + ("" if recorded else " (none yet: --record)")
    emit(args, {"record": path, "exists": recorded}, human)
    return 0


def service_arguments(p: argparse.ArgumentParser) -> None:
    from ..service.units import IDLE_EXIT

    p.add_argument("action", choices=["install", "uninstall", "status"])
    p.add_argument("--dry-run", action="store_true", help="show what would be written and run; change nothing")
    p.add_argument(
        "--idle-exit",
        type=float,
        default=IDLE_EXIT,
        metavar="SECONDS",
        help=f"systemd: memd exits after this long without work, restarted on demand (default {IDLE_EXIT})",
    )
    p.set_defaults(handler=run_service)


def run_service(args: argparse.Namespace) -> int:
    """Install, remove or inspect memd as a user service (memd_client/service/)."""
    from .. import service
    from ..service.manager import ServiceError

    try:
        if args.action == "install":
            report = service.install(args.paths, idle_exit=args.idle_exit, dry_run=args.dry_run)
        elif args.action == "uninstall":
            report = service.uninstall(args.paths, dry_run=args.dry_run)
        else:
            report = service.status(args.paths)
    except ServiceError as exc:
        raise CommandError(str(exc)) from None
    emit(args, report.data, report.text)
    return report.exit_code


DAEMON = Command("daemon", "start, stop or restart the daemon in the background", daemon_arguments)
LAUNCHER = Command("launcher", "where the Claude Code plugin's launcher finds this installation", launcher_arguments)
SERVICE = Command("service", "run memd as a user service: systemd socket activation, or launchd", service_arguments)
