"""The service manager on this machine, driven from memctl: ``systemctl --user`` on Linux,
``launchctl`` on macOS.

``target_for`` finds where memd's service files go and which tool drives the manager
(``MEMD_SYSTEMCTL`` and ``MEMD_LAUNCHCTL`` name another ``systemctl``/``launchctl``: the
tests' stand-in, as there is no user service manager there).  When the manager is not
there or does not answer (a container, an ssh session without a user manager), the
``Target`` says why (``why_unusable``) and the commands print what to run later.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from memd_wire.paths import Paths

from .units import (
    IDLE_EXIT,
    LAUNCHD_LABEL,
    SERVICE_UNIT,
    SOCKET_UNIT,
    Manager,
    launchd_files,
    systemd_files,
)

__all__ = ["ServiceError", "Target", "target_for"]

TOOL_TIMEOUT: Final = 30.0


class ServiceError(Exception):
    """The service cannot be installed, removed or inspected; the message says why and what to do."""


@dataclass
class Target:
    """Where the files go on this machine and which tool drives the manager."""

    manager: Manager
    files: dict[str, str]
    """Absolute path → text of each service file."""
    tool: str
    """The command that drives the manager: ``systemctl``/``launchctl``, or what ``MEMD_*CTL`` names."""
    found: bool
    env: Mapping[str, str]

    def command(self, *args: str) -> list[str]:
        return [self.tool, *(["--user"] if self.manager == "systemd" else []), *args]

    def run(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        """Run one of the manager's commands; a tool that cannot run is exit 127 with the reason."""
        try:
            return subprocess.run(
                argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT, env=dict(self.env), stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return subprocess.CompletedProcess(argv, 127, "", str(exc))

    def check(self, argv: list[str], what: str) -> None:
        """Run ``argv``; a ``ServiceError`` ending with ``what`` (the state it leaves) when it fails."""
        done = self.run(argv)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip()
            raise ServiceError(f"`{shlex.join(argv)}` failed (exit {done.returncode}): {said or 'no message'}; {what}")

    def why_unusable(self) -> str:
        """Why the service manager cannot be driven from here; "" when it can."""
        if not self.found:
            return f"{self.tool} was not found"
        if self.manager == "systemd":
            probe, kind = self.command("show-environment"), "no user systemd manager answers"
        else:
            probe, kind = self.command("print", f"gui/{os.getuid()}"), "no launchd GUI session for you"
        done = self.run(probe)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            return f"{kind} (`{shlex.join(probe)}`: {said[-1] if said else f'exit {done.returncode}'})"
        return ""

    def launchd_job(self) -> tuple[bool, int]:
        """Whether launchd has memd's agent loaded, and the pid it runs (0: none)."""
        done = self.run(self.command("print", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"))
        found = re.search(r"^\s*pid = (\d+)", done.stdout, re.MULTILINE)
        return done.returncode == 0, int(found.group(1)) if done.returncode == 0 and found else 0

    def service_pid(self) -> int:
        """The pid of the daemon the service manager runs; 0 when it runs none."""
        if self.manager == "launchd":
            return self.launchd_job()[1]
        done = self.run(self.command("show", "--property=MainPID", "--value", SERVICE_UNIT))
        text = done.stdout.strip()
        return int(text) if done.returncode == 0 and text.isdigit() else 0

    def steps(self, action: Literal["install", "uninstall"]) -> list[list[str]]:
        """The service manager commands of ``action``, in order."""
        if self.manager == "systemd":
            if action == "install":
                return [
                    self.command("daemon-reload"),
                    # A running memd.service keeps its old definition until it is stopped.
                    self.command("stop", SERVICE_UNIT),
                    self.command("enable", "--now", SOCKET_UNIT),
                ]
            return [self.command("disable", "--now", SOCKET_UNIT, SERVICE_UNIT), self.command("daemon-reload")]
        plist = next(iter(self.files))
        booted = self.command("bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}")
        return [booted, self.command("bootstrap", f"gui/{os.getuid()}", plist)] if action == "install" else [booted]

    def tolerated(self, argv: list[str]) -> bool:
        """Steps whose failure means "nothing to do": booting out a job that is not loaded."""
        return self.manager == "launchd" and "bootout" in argv

    def enablement_links(self) -> list[str]:
        """systemd's links to memd's units in ``*.wants`` directories (made by ``enable``)."""
        if self.manager != "systemd":
            return []
        unit_dir = os.path.dirname(next(iter(self.files)))
        names = (SOCKET_UNIT, SERVICE_UNIT)
        return sorted(
            link
            for name in names
            for link in glob.glob(os.path.join(unit_dir, "*.wants", name))
            if os.path.islink(link)
        )


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _tool(name: str, override: str, env: Mapping[str, str]) -> tuple[str, bool]:
    """The command to run for ``name`` and whether it exists."""
    if env.get(override):
        return env[override], True
    return name, shutil.which(name, path=env.get("PATH")) is not None


def target_for(paths: Paths, env: Mapping[str, str], platform: str, idle_exit: float = IDLE_EXIT) -> Target:
    """The service files for the instance of ``paths`` on ``platform``, and the manager's tool."""
    python = os.path.abspath(sys.executable)
    if platform == "darwin":
        agent_dir = os.path.join(_home(env), "Library", "LaunchAgents")
        return Target(
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
    return Target("systemd", files, *_tool("systemctl", "MEMD_SYSTEMCTL", env), env)
