"""The checks of memd's surroundings: config, daemon, permissions, spool, disk."""

from __future__ import annotations

import os
import shlex
import stat
import time
from collections.abc import Iterable
from typing import Final, NamedTuple

from memd import __version__
from memd.config import Config, ConfigError, load
from memd.protocol import Ping, Pong, Status, StatusReport
from memd_wire.autostart import is_locked, lock_holder
from memd_wire.paths import Paths
from memd_wire.spooled import FAILED_DIR, MAX_ATTEMPTS, failed, pending

from ..rpc import Client, ClientError, DaemonError, DaemonUnavailable
from .findings import RESTART, START, Finding, Level, plural

DISK_ERROR_BYTES: Final = 100_000_000
DISK_WARN_BYTES: Final = 1_000_000_000
DISK_WARN_SHARE: Final = 0.05
SPOOL_STUCK_AFTER: Final = 60.0
"""Seconds a frame may wait while memd runs (it looks every ``spool_drain_interval``, 5 s)."""
PING_TIMEOUT: Final = 3.0
STDERR_FILES: Final = ("memd-start.err", "memd-autostart.err", "launchd.log")
"""Where a detached daemon's stderr goes (``memctl daemon start``, auto-start, launchd): its
startup errors and crashes, the only record of a daemon that died before or outside its log."""


# --- config -----------------------------------------------------------------------------


class ConfigFacts(NamedTuple):
    path: str
    exists: bool
    error: str
    """Why memd cannot use the file; "" when it can."""


def check_config(facts: ConfigFacts) -> list[Finding]:
    if facts.error:
        return [
            Finding(
                "config",
                "error",
                f"memd refuses to start with this config: {facts.error}",
                f"correct or remove what it names in {facts.path}",
            )
        ]
    if not facts.exists:
        return [Finding("config", "ok", f"no {facts.path}: every setting at its default")]
    return [Finding("config", "ok", f"{facts.path} is valid")]


def gather_config(paths: Paths) -> tuple[ConfigFacts, Config]:
    """The facts, and the config the other checks go by (the defaults when it is invalid)."""
    try:
        config, error = load(paths.config_file), ""
    except ConfigError as exc:
        config, error = Config(), str(exc)
    return ConfigFacts(paths.config_file, os.path.exists(paths.config_file), error), config


# --- daemon -----------------------------------------------------------------------------


class DaemonFacts(NamedTuple):
    socket: str
    pong: Pong | None
    ms: float
    error: str
    """Why nothing answered, or what the daemon refused."""
    refused: bool
    """Something answered with an error (another protocol version)."""
    lock_pid: int
    """A live process holding the instance lock; 0 when none does."""
    status: StatusReport | None
    last_words: tuple[str, str] = ("", "")
    """(file, last line) of the newest non-empty ``STDERR_FILES``: why a detached daemon died."""


def check_daemon(facts: DaemonFacts, version: str = __version__) -> list[Finding]:
    if facts.pong is not None:
        pong = facts.pong
        found = f"memd {pong.version} answers on {facts.socket} (pid {pong.pid}, {facts.ms:.1f} ms)"
        if pong.version != version:
            message = f"{found}, but this memctl is {version}: the daemon runs the code of another version"
            return [Finding("daemon", "warn", message, RESTART)]
        return [Finding("daemon", "ok", found)]
    if facts.refused:
        message = f"memd on {facts.socket} refuses this memctl ({facts.error})"
        return [Finding("daemon", "error", message, RESTART)]
    path, line = facts.last_words
    said = f"; its last words, in {path}: {line}" if line else ""
    if facts.lock_pid:
        message = f"memd (pid {facts.lock_pid}) holds the instance lock but does not answer ({facts.error}){said}"
        return [Finding("daemon", "error", message, f"kill {facts.lock_pid} && {START}")]
    message = f"memd is not running ({facts.error}): hooks keep their events in the spool until it starts{said}"
    return [Finding("daemon", "warn", message, START)]


def gather_daemon(paths: Paths) -> DaemonFacts:
    pong, status, ms, error, refused = None, None, 0.0, "", False
    started = time.perf_counter()
    try:
        with Client(paths.socket, timeout=PING_TIMEOUT) as client:
            pong = client.call(Ping(), Pong)
            ms = (time.perf_counter() - started) * 1000
            status = client.call(Status(), StatusReport)
    except DaemonUnavailable as exc:
        error = str(exc)
    except DaemonError as exc:
        error, refused = f"{exc.code}: {exc}", True
    except ClientError as exc:  # a daemon of another version: it answers, and is told to restart
        error, refused = f"{exc}; {exc.advice}", True
    pid = lock_holder(paths.lock_file) if is_locked(paths.lock_file) else 0
    last_words = _last_words(paths.state_dir, paths.log_file) if pong is None else ("", "")
    return DaemonFacts(paths.socket, pong, ms, error, refused, pid, status, last_words)


def _last_words(state_dir: str, log_file: str) -> tuple[str, str]:
    """Only output newer than the log's last line counts: a daemon that stopped cleanly
    logged that after anything an earlier start printed."""
    try:
        logged = os.stat(log_file).st_mtime
    except OSError:
        logged = 0.0
    newest: tuple[float, str, str] = (0.0, "", "")
    for name in STDERR_FILES:
        path = os.path.join(state_dir, name)
        try:
            with open(path, "rb") as f:
                modified = os.fstat(f.fileno()).st_mtime
                f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            continue
        if lines and modified >= logged and modified > newest[0]:
            newest = (modified, path, lines[-1].strip()[:300])
    return newest[1], newest[2]


# --- permissions ------------------------------------------------------------------------


class PathFacts(NamedTuple):
    role: str
    """runtime dir, socket, data dir, database, state dir, spool dir or spool file."""
    path: str
    mode: int
    uid: int


PRIVATE: Final[dict[str, tuple[int, Level, str]]] = {
    "runtime dir": (0o700, "warn", "other users can reach the socket in it (memd still refuses them by uid)"),
    "socket": (0o600, "warn", "other users can connect to it (memd still refuses them by uid)"),
    "data dir": (0o700, "error", "what memd stores is open to other users"),
    "database": (0o600, "error", "your memories are open to other users"),
    "state dir": (0o700, "error", "the spool and the log are open to other users"),
    "spool dir": (0o700, "error", "events waiting for memd are open to other users"),
    "spool file": (0o600, "error", "events waiting for memd are open to other users"),
}
"""Role: (its mode, the level when it differs, why that matters).  The socket is guarded
by the daemon's peer check too; the rest is the user's memory itself."""


def check_permissions(items: Iterable[PathFacts], uid: int, user: str) -> list[Finding]:
    findings = []
    spool_files: list[PathFacts] = []
    for item in items:
        expected, level, why = PRIVATE[item.role]
        if item.uid != uid:
            message = f"{item.role} {item.path} belongs to uid {item.uid}, not to you ({user}): memd refuses it"
            findings.append(Finding("permissions", "error", message, f"sudo chown {user} {shlex.quote(item.path)}"))
        elif item.mode != expected and item.role == "spool file":
            spool_files.append(item)
        elif item.mode != expected:
            if item.mode & expected != expected:
                level, why = "error", "memd cannot use it"
            message = f"{item.role} {item.path} is {item.mode:04o}, not {expected:04o}: {why}"
            findings.append(Finding("permissions", level, message, f"chmod {expected:o} {shlex.quote(item.path)}"))
    by_directory: dict[str, list[PathFacts]] = {}
    for item in spool_files:  # the spool and its failed/
        by_directory.setdefault(os.path.dirname(item.path), []).append(item)
    for directory, files in by_directory.items():
        first, are = files[0], "is" if len(files) == 1 else "are"
        message = (
            f"{plural(len(files), 'spool file')} in {directory} {are} not 0600"
            f" (e.g. {os.path.basename(first.path)}, {first.mode:04o}): {PRIVATE['spool file'][2]}"
        )
        findings.append(Finding("permissions", "error", message, f"chmod 600 {shlex.quote(directory)}/*.frame"))
    if not findings:
        findings.append(Finding("permissions", "ok", "private to you: directories 0700, socket and files 0600"))
    return findings


def gather_permissions(paths: Paths) -> list[PathFacts]:
    """What exists of memd's files; the runtime dir only when memd chose it (a socket put
    elsewhere may live in a shared directory, which memd leaves alone)."""
    roles = [("runtime dir", paths.runtime_dir)] if paths.owns_runtime_dir else []
    roles += [
        ("socket", paths.socket),
        ("data dir", paths.data_dir),
        ("database", paths.database),
        ("state dir", paths.state_dir),
        ("spool dir", paths.spool_dir),
        ("spool dir", os.path.join(paths.spool_dir, FAILED_DIR)),
    ]
    roles += [("spool file", path) for path in pending(paths.spool_dir) + failed(paths.spool_dir)]
    items = []
    for role, path in roles:
        try:
            info = os.stat(path)
        except OSError:
            continue  # not created yet, or gone meanwhile
        items.append(PathFacts(role, path, stat.S_IMODE(info.st_mode), info.st_uid))
    return items


# --- spool ------------------------------------------------------------------------------


class SpoolFacts(NamedTuple):
    path: str
    frames: int
    oldest_age: float
    """Seconds since the oldest frame was written."""
    failed: tuple[str, ...] = ()
    """Frames set aside in ``failed/``: their replay kept failing, or they can never be events."""


def check_spool(facts: SpoolFacts, daemon_up: bool, log_file: str) -> list[Finding]:
    return _check_waiting(facts, daemon_up, log_file) + _check_failed(facts, log_file)


def _check_waiting(facts: SpoolFacts, daemon_up: bool, log_file: str) -> list[Finding]:
    if not facts.frames:
        return [Finding("spool", "ok", "empty: no event waits for the daemon")]
    wait = "waits" if facts.frames == 1 else "wait"
    waiting = f"{plural(facts.frames, 'event')} {wait} in {facts.path}, the oldest for {_age(facts.oldest_age)}"
    if not daemon_up:
        return [Finding("spool", "warn", f"{waiting}: they are stored when memd starts", START)]
    if facts.oldest_age > SPOOL_STUCK_AFTER:
        message = (
            f"{waiting}, though memd runs: it does not take them (a frame of another protocol version,"
            f" or one whose replay failed: look for spool_ entries in {log_file}); a restart retries them"
        )
        return [Finding("spool", "warn", message, RESTART)]
    return [Finding("spool", "ok", f"{waiting}: memd is taking them")]


def _check_failed(facts: SpoolFacts, log_file: str) -> list[Finding]:
    if not facts.failed:
        return []
    directory, one = os.path.dirname(facts.failed[0]), len(facts.failed) == 1
    were, its, it, they = ("was", "its", "it", "it is") if one else ("were", "their", "them", "they are")
    message = (
        f"{plural(len(facts.failed), 'spooled event')} {were} set aside in {directory} (the newest:"
        f" {os.path.basename(facts.failed[-1])}): {its} replay failed {MAX_ATTEMPTS} times, or {they} no hook"
        f" event at all; memd no longer tries {it} and keeps the raw frames there, unfiltered, until you decide."
        f" Why: the spool_file_set_aside lines in {log_file}, and the quarantine finding"
    )
    fix = "memctl spool retry (puts them back: after an upgrade that fixes the cause), or memctl spool delete"
    return [Finding("spool", "warn", message, fix)]


def gather_spool(paths: Paths, now: float) -> SpoolFacts:
    ages = []
    for path in pending(paths.spool_dir):
        try:
            ages.append(now - os.stat(path).st_mtime)
        except FileNotFoundError:
            continue  # taken meanwhile
    return SpoolFacts(paths.spool_dir, len(ages), max(ages, default=0.0), tuple(failed(paths.spool_dir)))


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


# --- disk -------------------------------------------------------------------------------


class DiskFacts(NamedTuple):
    path: str
    free: int
    """Bytes an unprivileged process may still write."""
    total: int


def check_disk(facts: DiskFacts) -> list[Finding]:
    share = facts.free / facts.total if facts.total else 0.0
    found = f"{facts.free / 1e9:.1f} GB free of {facts.total / 1e9:.1f} GB ({share:.0%}) where {facts.path} is"
    look = f"free some space there (`du -sh {shlex.quote(facts.path)}/*` shows what memd takes)"
    if facts.free < DISK_ERROR_BYTES:
        message = f"only {found}: writes fail soon, and events wait in the spool (lost if its disk is full too)"
        return [Finding("disk", "error", message, look)]
    if facts.free < DISK_WARN_BYTES or share < DISK_WARN_SHARE:
        return [Finding("disk", "warn", f"only {found}", look)]
    return [Finding("disk", "ok", found)]


def gather_disk(data_dir: str) -> DiskFacts:
    path = data_dir
    while not os.path.exists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)  # the data dir is created at first start: measure where it will be
    info = os.statvfs(path)
    return DiskFacts(data_dir, info.f_bavail * info.f_frsize, info.f_blocks * info.f_frsize)
