"""The service files memd's user service is made of, rendered: pure functions of paths.

- **systemd** (``$XDG_CONFIG_HOME/systemd/user/``): ``memd.socket`` listens on memd's
  socket and starts ``memd.service`` on the first connection (socket activation); memd
  exits after ``--idle-exit`` seconds without work and the socket starts it again.
- **launchd** (``~/Library/LaunchAgents/dev.memd.plist``): started at login and kept
  alive (restarted after a crash), logging to memd's state directory.

The daemon is started as ``<absolute python> -P -m memd``: the interpreter running
memctl, as the hook commands use (a virtualenv's python is kept as its path, not
resolved, so it keeps its packages), and ``-P`` keeps the service's working directory
(your home) off the import path.  The data directory, config file and state directory
memctl resolves are written in too, so the service serves the instance memctl sees.

The files in the repository's ``systemd/`` directory are the same renderings for a hand
install (``hand_install_files``, kept identical by a test), because a ``pip install`` of
memd does not carry that directory.
"""

from __future__ import annotations

import os
import plistlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from memd import __version__
from memd_wire.paths import Paths

__all__ = [
    "IDLE_EXIT",
    "LAUNCHD_LABEL",
    "LAUNCHD_LOG",
    "SERVICE_UNIT",
    "SOCKET_UNIT",
    "Manager",
    "daemon_argv",
    "hand_install_files",
    "launchd_files",
    "launchd_plist",
    "listen_address",
    "systemd_files",
    "systemd_service",
    "systemd_socket",
    "systemd_word",
]

IDLE_EXIT: Final = 900
"""Seconds a socket-activated memd waits without work before it exits (systemd starts it again)."""
LAUNCHD_LABEL: Final = "dev.memd"
SOCKET_UNIT: Final = "memd.socket"
SERVICE_UNIT: Final = "memd.service"
LAUNCHD_LOG: Final = "launchd.log"
"""launchd's copy of memd's stdout and stderr, in memd's state directory: startup errors and
crashes (memd's log lines go to memd.log, which rotates; launchd rotates nothing)."""

Manager = Literal["systemd", "launchd"]


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
