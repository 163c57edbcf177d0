"""``memctl doctor``: what is wrong with this memd installation, and the command that fixes it.

Each check is a pure function from facts (plain data) to findings; the ``gather_*``
functions read those facts from the files, the socket and the installed packages, and
are the only IO.  None of it needs the daemon: with memd down everything is read from
the files (the database through a read-only connection); with memd up, it is asked too.

    config         config.toml parses (memd refuses to start otherwise)
    hooks          Claude Code runs memd's hook client: memd entries in settings.json (user,
                   project, project local) whose interpreter and hook.py exist, or the memd
                   plugin (``enabledPlugins``), whose launcher runs the recorded installation
    daemon         memd answers a Ping on the socket (a warning when down: hooks spool; with
                   what a detached daemon last printed, if it died after its last log line)
    permissions    runtime dir 0700, socket 0600, data, state and spool dirs 0700, the database
                   and spool files 0600, everything owned by you
    database       ``PRAGMA quick_check`` (~0.4 s for 100k events)
    quarantine     events memd's writer could not store whole (their ids, stage and reason)
    vector_index   the usearch file against the ``vectors`` table: count and highest key
    model          the default model's files exist, with the sha256 their packages' RECORD
                   lists and memd expects
    spool          frames waiting for the daemon, and the age of the oldest; frames set aside
                   in ``failed/`` after their replay kept failing
    disk           free space on the data dir's filesystem

A finding has a level (ok, warn, error), a message saying what was found, and a fix:
an exact command where there is one.  Any error makes ``memctl doctor`` exit 1.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

from memd.config import Config
from memd_wire.paths import Paths

from .agents import check_agents, gather_agents
from .findings import RESTART, START, Finding, plural
from .findings import Level as Level
from .hooks import HookCommand, LauncherRecord, SettingsFile, check_hooks, gather_hooks, hook_argv
from .store import (
    DatabaseFacts,
    IndexFacts,
    ModelFacts,
    ModelFileFacts,
    Quarantined,
    QuarantineFacts,
    check_database,
    check_index,
    check_model,
    check_quarantine,
    gather_database,
    gather_index,
    gather_model,
    gather_quarantine,
)
from .sync import check_sync
from .system import PRIVATE as PRIVATE
from .system import (
    ConfigFacts,
    DaemonFacts,
    DiskFacts,
    PathFacts,
    SpoolFacts,
    check_config,
    check_daemon,
    check_disk,
    check_permissions,
    check_spool,
    gather_config,
    gather_daemon,
    gather_disk,
    gather_permissions,
    gather_spool,
)

__all__ = [
    "ConfigFacts",
    "DaemonFacts",
    "DatabaseFacts",
    "DiskFacts",
    "Finding",
    "HookCommand",
    "IndexFacts",
    "LauncherRecord",
    "ModelFacts",
    "ModelFileFacts",
    "PathFacts",
    "QuarantineFacts",
    "Quarantined",
    "SettingsFile",
    "SpoolFacts",
    "check_config",
    "check_daemon",
    "check_database",
    "check_disk",
    "check_hooks",
    "check_index",
    "check_model",
    "check_permissions",
    "check_quarantine",
    "check_spool",
    "examine",
    "failed",
    "gather_config",
    "gather_daemon",
    "gather_database",
    "gather_disk",
    "gather_hooks",
    "gather_index",
    "gather_model",
    "gather_permissions",
    "gather_quarantine",
    "gather_spool",
    "hook_argv",
    "render",
    "report",
]

T = TypeVar("T")


# --- all of it --------------------------------------------------------------------------


def examine(paths: Paths, *, home: str, cwd: str, python: str) -> list[Finding]:
    """Every check, in order.  A check that fails by itself (a bug) is an error finding,
    never a crash: it must not hide what the other checks find."""
    findings: list[Finding] = []

    def attempt(name: str, step: Callable[[], T]) -> T | None:
        try:
            return step()
        except Exception as exc:
            failure = f"the check itself failed ({type(exc).__name__}: {exc}); please report it as a memd bug"
            findings.append(Finding(name, "error", failure))
            return None

    config = Config()
    if (gathered := attempt("config", lambda: gather_config(paths))) is not None:
        facts, config = gathered
        findings += check_config(facts)
    agents = attempt("agents", lambda: gather_agents(home, os.environ)) or []
    installed = [{"codex": "Codex CLI", "gemini": "Gemini CLI"}[a.agent] for a in agents if a.hooks]
    findings += attempt("hooks", lambda: check_hooks(*gather_hooks(paths, home, cwd), installed)) or []
    findings += check_agents(agents)
    daemon = attempt("daemon", lambda: gather_daemon(paths))
    findings += check_daemon(daemon) if daemon is not None else []
    up = daemon is not None and daemon.pong is not None
    live = daemon.status.embedding if daemon is not None and up and daemon.status is not None else None
    sync_report = daemon.status.sync if daemon is not None and up and daemon.status is not None else None
    steps: list[tuple[str, Callable[[], list[Finding]]]] = [
        ("permissions", lambda: check_permissions(gather_permissions(paths), os.getuid(), _user())),
        ("database", lambda: check_database(gather_database(paths.database))),
        ("quarantine", lambda: check_quarantine(gather_quarantine(paths.database), time.time())),
        ("vector_index", lambda: check_index(gather_index(paths, config), live, RESTART if up else START)),
        ("model", lambda: check_model(gather_model(config), python)),
        ("spool", lambda: check_spool(gather_spool(paths, time.time()), up, paths.log_file)),
        ("sync", lambda: check_sync(bool(os.environ.get("MEMD_SYNC_URL") or config.sync.url), up, sync_report)),
        ("disk", lambda: check_disk(gather_disk(paths.data_dir))),
    ]
    for name, step in steps:
        findings += attempt(name, step) or []
    return findings


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def failed(findings: Iterable[Finding]) -> bool:
    return any(f.level == "error" for f in findings)


def report(findings: list[Finding]) -> dict[str, Any]:
    """``memctl doctor --json``."""
    return {"ok": not failed(findings), "checks": [f._asdict() for f in findings]}


MARK: Final = {"ok": "✓", "warn": "!", "error": "✗"}


def render(findings: list[Finding]) -> str:
    """For people: one line per finding, its fix under it, a verdict at the end."""
    lines = []
    for f in findings:
        lines.append(f"{MARK[f.level]} {f.name:<13}{f.message}")
        if f.fix:
            lines.append(f"  {'':<13}fix: {f.fix}")
    errors = sum(f.level == "error" for f in findings)
    warnings = sum(f.level == "warn" for f in findings)
    if errors or warnings:
        lines.append(f"\n{plural(errors, 'error')}, {plural(warnings, 'warning')}")
    else:
        lines.append("\nall good")
    return "\n".join(lines)
