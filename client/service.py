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

Rendering is pure (``systemd_socket``, ``systemd_service``, ``launchd_plist``); the files
in the repository's ``systemd/`` directory are the same renderings for a hand install
(``hand_install_files``, kept identical by a test), because a ``pip install`` of memd
does not carry that directory.  ``MEMD_SYSTEMCTL`` and ``MEMD_LAUNCHCTL`` name another
``systemctl``/``launchctl`` to run (tests: there is no user service manager there).
"""

from __future__ import annotations

import glob
import math
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from memd import __version__
from memd.protocol import Ok, Ping, Pong, Shutdown

from .autostart import is_locked
from .paths import Paths
from .rpc import Client, DaemonError, DaemonUnavailable

__all__ = [
    "IDLE_EXIT",
    "LAUNCHD_LABEL",
    "Report",
    "ServiceError",
    "daemon_argv",
    "hand_install_files",
    "install",
    "launchd_files",
    "launchd_plist",
    "listen_address",
    "status",
    "systemd_files",
    "systemd_service",
    "systemd_socket",
    "systemd_word",
    "uninstall",
]

IDLE_EXIT: Final = 900
"""Seconds a socket-activated memd waits without work before it exits (systemd starts it again)."""
LAUNCHD_LABEL: Final = "dev.memd"
SOCKET_UNIT: Final = "memd.socket"
SERVICE_UNIT: Final = "memd.service"
LAUNCHD_LOG: Final = "launchd.log"
"""launchd's copy of memd's stdout and stderr, in memd's state directory: startup errors and
crashes (memd's log lines go to memd.log, which rotates; launchd rotates nothing)."""
TOOL_TIMEOUT: Final = 30.0
STOP_TIMEOUT: Final = 30.0

Manager = Literal["systemd", "launchd"]


class ServiceError(Exception):
    """The service cannot be installed, removed or inspected; the message says why and what to do."""


@dataclass
class Report:
    """What a service command did: ``data`` for ``--json``, ``lines`` for people."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)
    exit_code: int = 0

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


# --- rendering (pure) ------------------------------------------------------------------


def _comment(lines: Sequence[str], prefix: str = "# ") -> str:
    return "".join(f"{prefix}{line}".rstrip() + "\n" for line in lines)


def systemd_word(arg: str) -> str:
    """One ``ExecStart=`` argument as systemd reads it back: ``%`` (specifiers) and ``$``
    (variables) doubled, quoted when it holds a space, a quote or a backslash."""
    escaped = arg.replace("%", "%%").replace("$", "$$")
    if escaped and not re.search(r"[\s\"'\\;]", escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _systemd_value(text: str) -> str:
    """A whole setting value, quoted, for settings that expand specifiers (``Environment=``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def systemd_socket(listen: str, header: Sequence[str]) -> str:
    """``memd.socket``: systemd listens on ``listen`` (specifiers allowed: ``%t`` is
    ``$XDG_RUNTIME_DIR``) and starts ``memd.service`` on the first connection."""
    return (
        _comment(header)
        + f"""
[Unit]
Description=memd's socket: starts the memory daemon on the first connection

[Socket]
ListenStream={listen}
SocketMode=0600
DirectoryMode=0700
# Stopping the socket removes its file: hook clients then see no daemon and spool.
RemoveOnStop=yes

[Install]
WantedBy=sockets.target
"""
    )


def systemd_service(exec_start: str, environment: Mapping[str, str], header: Sequence[str]) -> str:
    """``memd.service``: runs ``exec_start`` (systemd syntax) on memd.socket's socket."""
    env_lines = "".join(f"Environment={_systemd_value(f'{k}={v}')}\n" for k, v in environment.items())
    return (
        _comment(header)
        + f"""
[Unit]
Description=memd, the memory daemon for coding agents
Requires={SOCKET_UNIT}
After={SOCKET_UNIT}

[Service]
Type=simple
ExecStart={exec_start}
{env_lines}# memd exits with status 0 after --idle-exit seconds without work, and memd.socket
# starts it again on the next connection; it is restarted only when it fails.
Restart=on-failure
RestartSec=2
# SIGTERM: memd finishes requests in flight, commits and saves its vector index.
TimeoutStopSec=30

[Install]
Also={SOCKET_UNIT}
"""
    )


def launchd_plist(program: Sequence[str], environment: Mapping[str, str], log_file: str, header: Sequence[str]) -> str:
    """The launchd agent: ``program`` (absolute paths: launchd expands nothing) started at
    login and again whenever it exits with a failure; its output appended to ``log_file``."""
    job: dict[str, Any] = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": list(program),
        "RunAtLoad": True,
        # Not a plain `true`: after a clean exit (`memctl daemon stop`) memd stays stopped.
        "KeepAlive": {"SuccessfulExit": False},
        "StandardOutPath": log_file,
        "StandardErrorPath": log_file,
    }
    if environment:
        job["EnvironmentVariables"] = dict(environment)
    text = plistlib.dumps(job, sort_keys=False).decode()
    if any("--" in line for line in header):
        raise ValueError("an XML comment cannot hold '--'")
    doctype_end = text.index("\n", text.index("<!DOCTYPE")) + 1
    return text[:doctype_end] + "<!--\n" + _comment(header, "  ") + "-->\n" + text[doctype_end:]


HAND_SOCKET_HEADER: Final = (
    "memd's socket, for systemd socket activation (a user unit, with memd.service).",
    "",
    "To install by hand (memd installed with pipx, so at ~/.local/bin/memd; for another",
    "install, set memd.service's ExecStart to the absolute path of your `memd`):",
    "",
    "  cp systemd/memd.socket systemd/memd.service ~/.config/systemd/user/",
    "  systemctl --user daemon-reload && systemctl --user enable --now memd.socket",
    "",
    "`memctl service install` does this with your absolute paths (and `memctl service",
    "uninstall` undoes it).  memd's socket is $XDG_RUNTIME_DIR/memd/memd.sock, here %t.",
)
HAND_SERVICE_HEADER: Final = (
    "memd as a systemd user service, started by memd.socket on the first connection.",
    "",
    "To install by hand, see memd.socket.  memd stops cleanly on SIGTERM (finishes",
    "requests in flight, commits, exits 0), and hook clients spool events to disk while",
    "it is down, so stops and restarts lose nothing.",
)
HAND_PLIST_HEADER: Final = (
    "memd as a launchd agent (macOS): started at login, restarted if it fails.",
    "",
    "To install by hand, replace /Users/you with your home directory (launchd expands",
    "no ~) and the program with the absolute path of your memd, then:",
    "",
    "  cp systemd/dev.memd.plist ~/Library/LaunchAgents/",
    "  launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/dev.memd.plist",
    "",
    "`memctl service install` does this with your absolute paths (and `memctl service",
    "uninstall` undoes it).",
)


def hand_install_files() -> dict[str, str]:
    """The files of the repository's ``systemd/`` directory: for a hand install, with the
    default paths of a pipx install."""
    return {
        SOCKET_UNIT: systemd_socket("%t/memd/memd.sock", HAND_SOCKET_HEADER),
        SERVICE_UNIT: systemd_service(f"%h/.local/bin/memd --idle-exit {IDLE_EXIT}", {}, HAND_SERVICE_HEADER),
        f"{LAUNCHD_LABEL}.plist": launchd_plist(
            ["/Users/you/.local/bin/memd"], {}, f"/Users/you/.local/state/memd/{LAUNCHD_LOG}", HAND_PLIST_HEADER
        ),
    }


def _written_header(manager: Manager) -> list[str]:
    undo = "`memctl service uninstall` stops memd and removes "
    undo += "these units." if manager == "systemd" else "this agent."
    return [f"Written by `memctl service install` (memd {__version__}) with this machine's paths;", undo]


def _python() -> str:
    return os.path.abspath(sys.executable)


def daemon_argv(python: str, paths: Paths, *, socket: bool) -> list[str]:
    """The daemon's command line for a service: ``python -P -m memd`` on the instance of
    ``paths`` (``socket``: with its socket path; systemd passes the socket instead)."""
    argv = [python, "-P", "-m", "memd"]
    if socket:
        argv += ["--socket", paths.socket]
    return [*argv, "--data-dir", paths.data_dir, "--config", paths.config_file]


def _state_environment(paths: Paths) -> dict[str, str]:
    """The state directory (spool, logs) has no flag: it follows ``$XDG_STATE_HOME``."""
    return {"XDG_STATE_HOME": os.path.dirname(paths.state_dir)}


def listen_address(socket_path: str, runtime_dir: str) -> str:
    """``ListenStream=`` for ``socket_path``: under ``$XDG_RUNTIME_DIR`` as ``%t/...`` (the
    user manager's runtime directory, the one hook clients resolve), else absolute."""
    runtime = runtime_dir.rstrip("/")
    if runtime.startswith("/") and socket_path.startswith(runtime + "/"):
        return "%t" + socket_path[len(runtime) :].replace("%", "%%")
    return socket_path.replace("%", "%%")


def systemd_files(unit_dir: str, paths: Paths, python: str, idle_exit: float, runtime_dir: str) -> dict[str, str]:
    """The two units ``install`` writes: absolute path → text."""
    argv = [*daemon_argv(python, paths, socket=False), "--idle-exit", f"{idle_exit:g}"]
    header = _written_header("systemd")
    return {
        os.path.join(unit_dir, SOCKET_UNIT): systemd_socket(listen_address(paths.socket, runtime_dir), header),
        os.path.join(unit_dir, SERVICE_UNIT): systemd_service(
            " ".join(systemd_word(a) for a in argv), _state_environment(paths), header
        ),
    }


def launchd_files(agent_dir: str, paths: Paths, python: str) -> dict[str, str]:
    """The agent ``install`` writes: absolute path → text."""
    plist = launchd_plist(
        [*daemon_argv(python, paths, socket=True), "--no-stderr-log"],
        _state_environment(paths),
        os.path.join(paths.state_dir, LAUNCHD_LOG),
        _written_header("launchd"),
    )
    return {os.path.join(agent_dir, f"{LAUNCHD_LABEL}.plist"): plist}


# --- the service manager ----------------------------------------------------------------


@dataclass
class _Target:
    """Where the files go on this machine and which tool drives the manager."""

    manager: Manager
    files: dict[str, str]
    tool: str
    """The command that drives the manager: ``systemctl``/``launchctl``, or what ``MEMD_*CTL`` names."""
    found: bool
    env: Mapping[str, str]

    def command(self, *args: str) -> list[str]:
        return [self.tool, *(["--user"] if self.manager == "systemd" else []), *args]


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _tool(name: str, override: str, env: Mapping[str, str]) -> tuple[str, bool]:
    """The command to run for ``name`` and whether it exists."""
    if env.get(override):
        return env[override], True
    return name, shutil.which(name, path=env.get("PATH")) is not None


def _target(paths: Paths, env: Mapping[str, str], platform: str, idle_exit: float = IDLE_EXIT) -> _Target:
    python = _python()
    if platform == "darwin":
        agent_dir = os.path.join(_home(env), "Library", "LaunchAgents")
        return _Target(
            "launchd", launchd_files(agent_dir, paths, python), *_tool("launchctl", "MEMD_LAUNCHCTL", env), env
        )
    if not platform.startswith("linux"):
        raise ServiceError(
            f"memctl service knows systemd (Linux) and launchd (macOS), not {platform}; "
            "run `memd` from your system's service manager by hand"
        )
    config_home = env.get("XDG_CONFIG_HOME", "")
    if not config_home.startswith("/"):
        config_home = os.path.join(_home(env), ".config")
    unit_dir = os.path.join(config_home, "systemd", "user")
    files = systemd_files(unit_dir, paths, python, idle_exit, env.get("XDG_RUNTIME_DIR", ""))
    return _Target("systemd", files, *_tool("systemctl", "MEMD_SYSTEMCTL", env), env)


def _run(argv: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT, env=dict(env), stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", str(exc))


def _why_unusable(target: _Target) -> str:
    """Why the service manager cannot be driven from here; "" when it can."""
    if not target.found:
        return f"{target.tool} was not found"
    if target.manager == "systemd":
        probe, kind = target.command("show-environment"), "no user systemd manager answers"
    else:
        probe, kind = target.command("print", f"gui/{os.getuid()}"), "no launchd GUI session for you"
    done = _run(probe, target.env)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return f"{kind} (`{shlex.join(probe)}`: {said[-1] if said else f'exit {done.returncode}'})"
    return ""


def _check(target: _Target, argv: list[str], what: str) -> None:
    done = _run(argv, target.env)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()
        raise ServiceError(f"`{shlex.join(argv)}` failed (exit {done.returncode}): {said or 'no message'}; {what}")


def _launchd_job(target: _Target) -> tuple[bool, int]:
    """Whether launchd has memd's agent loaded, and the pid it runs (0: none)."""
    done = _run(target.command("print", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"), target.env)
    found = re.search(r"^\s*pid = (\d+)", done.stdout, re.MULTILINE)
    return done.returncode == 0, int(found.group(1)) if done.returncode == 0 and found else 0


def _service_pid(target: _Target) -> int:
    """The pid of the daemon the service manager runs; 0 when it runs none."""
    if target.manager == "launchd":
        return _launchd_job(target)[1]
    done = _run(target.command("show", "--property=MainPID", "--value", SERVICE_UNIT), target.env)
    text = done.stdout.strip()
    return int(text) if done.returncode == 0 and text.isdigit() else 0


def _ping(socket_path: str) -> int:
    """The pid of the daemon answering on ``socket_path``; 0 when none does."""
    try:
        with Client(socket_path, timeout=5.0) as client:
            return client.call(Ping(), Pong).pid
    except (DaemonUnavailable, DaemonError):
        return 0


def _stop_daemon(paths: Paths) -> None:
    """Ask the daemon on ``paths`` to shut down; return once it has released its lock."""
    try:
        with Client(paths.socket) as client:
            client.call(Shutdown(), Ok)
    except (DaemonUnavailable, DaemonError):
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


def _manager_steps(target: _Target, action: Literal["install", "uninstall"]) -> list[list[str]]:
    """The service manager commands of ``action``, in order."""
    if target.manager == "systemd":
        if action == "install":
            return [
                target.command("daemon-reload"),
                # A running memd.service keeps its old definition until it is stopped.
                target.command("stop", SERVICE_UNIT),
                target.command("enable", "--now", SOCKET_UNIT),
            ]
        return [target.command("disable", "--now", SOCKET_UNIT, SERVICE_UNIT), target.command("daemon-reload")]
    plist = next(iter(target.files))
    booted = target.command("bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}")
    return [booted, target.command("bootstrap", f"gui/{os.getuid()}", plist)] if action == "install" else [booted]


def _enablement_links(target: _Target) -> list[str]:
    """systemd's links to memd's units in ``*.wants`` directories (made by ``enable``)."""
    if target.manager != "systemd":
        return []
    unit_dir = os.path.dirname(next(iter(target.files)))
    names = (SOCKET_UNIT, SERVICE_UNIT)
    return sorted(
        link for name in names for link in glob.glob(os.path.join(unit_dir, "*.wants", name)) if os.path.islink(link)
    )


def _tolerated(target: _Target, argv: list[str]) -> bool:
    """Steps whose failure means "nothing to do": booting out a job that is not loaded."""
    return target.manager == "launchd" and "bootout" in argv


# --- the commands -----------------------------------------------------------------------


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
    target = _target(paths, env, platform, idle_exit)
    steps = _manager_steps(target, "install")
    reason = _why_unusable(target)
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
    if running and running != _service_pid(target):
        _stop_daemon(paths)
        data["stopped_pid"] = running
        report.lines.append(f"stopped the memd started by hand (pid {running}): the service takes over")
    for step in steps:
        if _tolerated(target, step):
            _run(step, target.env)
        else:
            _check(target, step, "the files are in place; fix the cause and run `memctl service install` again")
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
    target = _target(paths, env, platform)
    present = [path for path in target.files if os.path.lexists(path)]
    reason = _why_unusable(target) if present else ""
    steps = _manager_steps(target, "uninstall") if present else []
    if reason:
        present += _enablement_links(target)
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
    if _tolerated(target, disable):
        _run(disable, target.env)
    else:
        _check(target, disable, "nothing was removed; fix the cause and run `memctl service uninstall` again")
    report.lines.append(f"ran {shlex.join(disable)}")
    for path in present:
        os.unlink(path)
        report.lines.append(f"removed {path}")
    for step in rest:
        _check(target, step, "the files are removed already")
        report.lines.append(f"ran {shlex.join(step)}")
    data["ran"] = True
    report.lines.append("memd no longer runs as a service; `memctl daemon start` runs it by hand")
    return report


def status(paths: Paths, *, env: Mapping[str, str] | None = None, platform: str = sys.platform) -> Report:
    """What is installed where, what the manager says about it, and whether memd answers
    (asking starts a socket-activated memd, as any client would).  Exit code 0 when the
    service files are installed, 1 when not."""
    env = os.environ if env is None else env
    target = _target(paths, env, platform)
    files = {path: os.path.exists(path) for path in target.files}
    installed = all(files.values())
    reason = _why_unusable(target)
    states: dict[str, str] = {}
    if not reason:  # asked before the ping below, which may start the service
        if target.manager == "systemd":
            done = _run(target.command("is-active", SOCKET_UNIT, SERVICE_UNIT), target.env)
            states = dict(zip((SOCKET_UNIT, SERVICE_UNIT), done.stdout.split(), strict=False))
        else:
            loaded, job_pid = _launchd_job(target)
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
