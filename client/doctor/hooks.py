"""The hooks check: Claude Code's settings files, and the record the memd plugin's launcher runs."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from typing import NamedTuple

from memd_wire import launcher
from memd_wire.paths import Paths

from .. import install
from .findings import Finding, Level

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
    guarded: bool = True
    """Run under ``launcher.signal_guard`` where the system has one (``hook_guarded``)."""


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
    if argv[:1] and os.path.basename(argv[0]) == "env":  # the signal guard (launcher.signal_guard)
        argv = argv[1 + next((i for i, arg in enumerate(argv[1:]) if not arg.startswith("-")), len(argv)) :]
    if not argv:
        return "", ""
    script = next((arg for arg in argv[1:] if arg == launcher.HOOK_SCRIPT or install.MARKER in arg), "")
    return argv[0], script


def hook_guarded(command: str) -> bool:
    """Whether ``command`` blocks the terminating signals before the client starts, if it can."""
    guard = launcher.signal_guard()
    return not guard or command.startswith(" ".join(guard) + " ")


def hook_entry(event: str, command: str) -> HookCommand:
    interpreter, script = hook_argv(command)
    return HookCommand(event, interpreter, script, runs(interpreter), is_file(script), hook_guarded(command))


def check_hooks(files: Iterable[SettingsFile], record: LauncherRecord, elsewhere: Iterable[str] = ()) -> list[Finding]:
    """``elsewhere``: the other agents memd is installed for (then Claude Code without it is a choice)."""
    files, elsewhere = list(files), list(elsewhere)
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
    if not plugin and not any(f.hooks for f in files) and elsewhere:
        message = f"Claude Code: memd is not installed for it (it is for {' and '.join(elsewhere)})"
        findings.append(Finding("hooks", "ok", message))
    elif not plugin and not any(f.hooks for f in files):
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


def hook_problem(hook: HookCommand) -> tuple[Level, str] | None:
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
    if not hook.guarded:
        return "warn", (
            "without the signal guard memd now installs: Claude Code's SIGTERM to a hook still"
            " starting as `claude -p` ends loses its event"
        )
    return None


def _settings_hooks(f: SettingsFile) -> list[Finding]:
    findings = []
    by_problem: dict[tuple[Level, str], list[str]] = {}
    for hook in f.hooks:
        if (problem := hook_problem(hook)) is not None:
            by_problem.setdefault(problem, []).append(hook.event)
    for (level, what), events in by_problem.items():
        message = f"{f.path}: memd's hooks for {', '.join(events)} run {what}"
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
                    hooks.append(hook_entry(event, str(entry.get("command", ""))))
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
    return LauncherRecord(path, True, python, hook, runs(python), is_file(hook))


def runs(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def is_file(path: str) -> bool:
    return bool(path) and os.path.isfile(path)
