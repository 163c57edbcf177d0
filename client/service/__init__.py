"""memd as a user service: systemd units on Linux, a launchd agent on macOS.

``memctl service install`` writes the service files with this installation's absolute
paths, then has the service manager start memd:

- **systemd** (``$XDG_CONFIG_HOME/systemd/user/``): ``memd.socket`` listens on memd's
  socket and starts ``memd.service`` on the first connection (socket activation); memd
  exits after ``--idle-exit`` seconds without work (default 900) and the socket starts
  it again when a hook next connects.  Then ``systemctl --user daemon-reload`` and
  ``systemctl --user enable --now memd.socket``.
- **launchd** (``~/Library/LaunchAgents/dev.memd.plist``): started at login and kept
  alive (restarted after a crash), logging to memd's state directory; launchd cannot
  simply listen on a Unix socket path for it, so there is no idle exit.  Then
  ``launchctl bootstrap gui/<uid> <plist>``.

When the service manager is not there or does not answer (a container, an ssh session
without a user manager), the files are still written and the commands to run later are
printed.  A memd started by hand is stopped first (it would hold the instance lock and
make the service's daemon fail).  ``uninstall`` stops the service, removes the files and
tells the manager; ``status`` says what is installed where, whether the manager runs it
and whether the daemon answers.

The daemon is started as ``<absolute python> -P -m memd``: the interpreter running
memctl, as the hook commands use (a virtualenv's python is kept as its path, not
resolved, so it keeps its packages), and ``-P`` keeps the service's working directory
(your home) off the import path.  The data directory, config file and state directory
memctl resolves are written in too, so the service serves the instance memctl sees.

Here the three commands; ``units`` renders the files (pure: the repository's ``systemd/``
directory holds the same renderings for a hand install), ``manager`` drives the service
manager (``MEMD_SYSTEMCTL`` and ``MEMD_LAUNCHCTL`` name another ``systemctl``/``launchctl``
to run: tests have no user service manager).
"""

from __future__ import annotations

import math
import os
import shlex
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memd.protocol import Ok, Ping, Pong, Shutdown
from memd_wire.autostart import is_locked
from memd_wire.paths import Paths

from ..rpc import Client, ClientError
from .manager import ServiceError, target_for
from .units import IDLE_EXIT, LAUNCHD_LABEL, LAUNCHD_LOG, SERVICE_UNIT, SOCKET_UNIT

__all__ = ["Report", "install", "status", "uninstall"]

STOP_TIMEOUT: Final = 30.0


@dataclass
class Report:
    """What a service command did: ``data`` for ``--json``, ``lines`` for people."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)
    exit_code: int = 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _ping(socket_path: str) -> int:
    """The pid of the daemon answering on ``socket_path``; 0 when none does."""
    try:
        with Client(socket_path, timeout=5.0) as client:
            return client.call(Ping(), Pong).pid
    except ClientError:
        return 0


def _stop_daemon(paths: Paths) -> None:
    """Ask the daemon on ``paths`` to shut down; return once it has released its lock."""
    try:
        with Client(paths.socket) as client:
            client.call(Shutdown(), Ok)
    except ClientError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT
    while is_locked(paths.lock_file):
        if time.monotonic() > deadline:
            raise ServiceError(f"the memd running on {paths.socket} did not stop; stop it, then install again")
        time.sleep(0.05)


def _write(path: str, text: str) -> None:
    """Replace ``path`` atomically (a reader never sees half a unit)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = f"{path}.memd-{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(temp, 0o644)
    os.replace(temp, path)


def install(
    paths: Paths,
    *,
    idle_exit: float = IDLE_EXIT,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    platform: str = sys.platform,
) -> Report:
    """Write the service files for the instance of ``paths`` and have the manager run it."""
    if not (math.isfinite(idle_exit) and idle_exit >= 0):
        raise ServiceError(f"--idle-exit must be 0 (never) or more seconds, not {idle_exit:g}")
    env = os.environ if env is None else env
    target = target_for(paths, env, platform, idle_exit)
    steps = target.steps("install")
    reason = target.why_unusable()
    data: dict[str, Any] = {
        "manager": target.manager,
        "files": list(target.files),
        "commands": [shlex.join(step) for step in steps],
        "ran": False,
        "reason": reason,
        "stopped_pid": None,
        "dry_run": dry_run,
    }
    report = Report(data)
    if dry_run:
        data["contents"] = target.files
        for path, text in target.files.items():
            report.lines += [f"would write {path}:", text]
        report.lines.append(f"{reason}; you would then run:" if reason else "would run:")
        report.lines += [f"  {command}" for command in data["commands"]]
        report.lines.append("(dry run: nothing was written, run or stopped)")
        return report
    if target.manager == "launchd":
        os.makedirs(paths.state_dir, mode=0o700, exist_ok=True)  # launchd opens the log before memd runs
    for path, text in target.files.items():
        _write(path, text)
        report.lines.append(f"wrote {path}")
    if reason:
        report.lines.append(f"{reason}; to start memd as a service, run:")
        report.lines += [f"  {command}" for command in data["commands"]]
        if _ping(paths.socket):
            report.lines.append("  (after `memctl daemon stop`: the memd running now would hold the socket)")
        return report
    running = _ping(paths.socket)  # before asking the manager: a ping may start the service
    if running and running != target.service_pid():
        _stop_daemon(paths)
        data["stopped_pid"] = running
        report.lines.append(f"stopped the memd started by hand (pid {running}): the service takes over")
    for step in steps:
        if target.tolerated(step):
            target.run(step)
        else:
            target.check(step, "the files are in place; fix the cause and run `memctl service install` again")
        report.lines.append(f"ran {shlex.join(step)}")
    data["ran"] = True
    if target.manager == "systemd":
        idle = f"exits after {idle_exit:g} s without work" if idle_exit else "keeps running"
        report.lines.append(f"memd starts on the first connection to {paths.socket} and {idle}")
    else:
        report.lines.append(f"memd runs now and at every login; its output goes to {paths.state_dir}/{LAUNCHD_LOG}")
    return report


def uninstall(
    paths: Paths,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    platform: str = sys.platform,
) -> Report:
    """Stop the service, remove its files, and tell the manager.

    Without a manager to ask, the files are removed along with systemd's enablement links
    to them (what ``disable`` would remove), and the report says how to stop a memd that a
    manager elsewhere (another session) may still run.
    """
    env = os.environ if env is None else env
    target = target_for(paths, env, platform)
    present = [path for path in target.files if os.path.lexists(path)]
    reason = target.why_unusable() if present else ""
    steps = target.steps("uninstall") if present else []
    if reason:
        present += target.enablement_links()
        steps = [target.command("stop", SOCKET_UNIT, SERVICE_UNIT)] if target.manager == "systemd" else steps
    data: dict[str, Any] = {
        "manager": target.manager,
        "files": present,
        "commands": [shlex.join(step) for step in steps],
        "ran": False,
        "reason": reason,
        "dry_run": dry_run,
    }
    report = Report(data)
    if not present:
        report.lines.append(f"memd's service is not installed ({', '.join(target.files)}); nothing to do")
        return report
    if dry_run:
        report.lines += [f"would remove {path}" for path in present]
        report.lines.append(f"{reason}; where a manager still runs memd, run:" if reason else "would run:")
        report.lines += [f"  {command}" for command in data["commands"]]
        report.lines.append("(dry run: nothing was run or removed)")
        return report
    if reason:
        for path in present:
            os.unlink(path)
            report.lines.append(f"removed {path}")
        report.lines.append(f"{reason}; where a manager still runs memd (another session), run:")
        report.lines += [f"  {command}" for command in data["commands"]]
        return report
    disable, *rest = steps  # first, while the manager still has the units' files
    if target.tolerated(disable):
        target.run(disable)
    else:
        target.check(disable, "nothing was removed; fix the cause and run `memctl service uninstall` again")
    report.lines.append(f"ran {shlex.join(disable)}")
    for path in present:
        os.unlink(path)
        report.lines.append(f"removed {path}")
    for step in rest:
        target.check(step, "the files are removed already")
        report.lines.append(f"ran {shlex.join(step)}")
    data["ran"] = True
    report.lines.append("memd no longer runs as a service; `memctl daemon start` runs it by hand")
    return report


def status(paths: Paths, *, env: Mapping[str, str] | None = None, platform: str = sys.platform) -> Report:
    """What is installed where, what the manager says about it, and whether memd answers
    (asking starts a socket-activated memd, as any client would).  Exit code 0 when the
    service files are installed, 1 when not."""
    env = os.environ if env is None else env
    target = target_for(paths, env, platform)
    files = {path: os.path.exists(path) for path in target.files}
    installed = all(files.values())
    reason = target.why_unusable()
    states: dict[str, str] = {}
    if not reason:  # asked before the ping below, which may start the service
        if target.manager == "systemd":
            done = target.run(target.command("is-active", SOCKET_UNIT, SERVICE_UNIT))
            states = dict(zip((SOCKET_UNIT, SERVICE_UNIT), done.stdout.split(), strict=False))
        else:
            loaded, job_pid = target.launchd_job()
            states = {LAUNCHD_LABEL: f"running (pid {job_pid})" if job_pid else "loaded" if loaded else "not loaded"}
    pid = _ping(paths.socket)
    data: dict[str, Any] = {
        "manager": target.manager,
        "installed": installed,
        "files": files,
        "states": states,
        "reason": reason,
        "running": bool(pid),
        "pid": pid or None,
        "socket": paths.socket,
    }
    lines = [f"{path}: {'installed' if there else 'missing'}" for path, there in files.items()]
    if reason:
        lines.append(f"{target.manager}: {reason}")
    lines += [f"{unit}: {state}" for unit, state in states.items()]
    answered = f"answers on {paths.socket} (pid {pid})" if pid else f"does not answer on {paths.socket}"
    lines.append(f"memd {answered}")
    if not installed:
        lines.append("install the service with `memctl service install`")
    return Report(data, lines, 0 if installed else 1)
