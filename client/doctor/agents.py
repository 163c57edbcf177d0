"""The agents check: memd's hooks in Codex CLI's and Gemini CLI's configuration (Gemini CLI's
settings, or memd's extension), where installed.

An agent memd was never installed for gives no finding (Claude Code's own check is
``hooks.py``).  Where memd's hooks are, each must run an interpreter and a hook client that
exist, every event must be hooked, and for Codex CLI each hook must be trusted as written:
Codex skips an untrusted or changed hook without a word in ``codex exec``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from typing import NamedTuple

from .. import codex, gemini, install
from .findings import Finding
from .hooks import HookCommand, hook_entry, hook_problem


class AgentFile(NamedTuple):
    agent: str
    path: str
    install: str
    hooks: tuple[HookCommand, ...]
    untrusted: tuple[str, ...]
    """Events whose memd hook Codex would not run (no trust entry, or one for another hook)."""
    error: str


def gather_agents(home: str, env: Mapping[str, str]) -> list[AgentFile]:
    codex_home = env.get("CODEX_HOME") or os.path.join(home, ".codex")
    found = [_file("codex", os.path.join(codex_home, "hooks.json"), os.path.join(codex_home, "config.toml"))]
    found.append(_file("gemini", os.path.join(home, ".gemini", "settings.json"), ""))
    extension = os.path.join(home, ".gemini", "extensions", gemini.EXTENSION, "hooks", "hooks.json")
    found.append(_file("gemini", extension, "", "memctl install --agent gemini --extension"))
    return [f for f in found if f.hooks or f.error]


def _file(agent: str, path: str, config: str, command: str = "") -> AgentFile:
    command = command or f"memctl install --agent {agent}"
    try:
        settings, _text = install.read(path)
    except install.SettingsError as exc:
        return AgentFile(agent, path, command, (), (), str(exc))
    hooks = []
    events = settings.get("hooks")
    for event, groups in events.items() if isinstance(events, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for entry in group.get("hooks", []) if isinstance(group, dict) else ():
                if install.is_memd(entry):
                    hooks.append(hook_entry(event, str(entry.get("command", ""))))
    untrusted: tuple[str, ...] = ()
    if config and hooks:
        try:
            with open(config, "rb") as f:
                state = tomllib.load(f).get("hooks", {}).get("state", {})
        except (OSError, tomllib.TOMLDecodeError):
            state = {}
        source = os.path.join(os.path.realpath(os.path.dirname(path)), "hooks.json")
        trusted = codex.hook_keys(source, settings, memd=True)
        event_of = {label: event for event, label in codex.LABELS.items()}
        wrong = {event_of[key.rsplit(":", 3)[1]] for key, digest in trusted.items() if _trusted(state, key) != digest}
        untrusted = tuple(sorted(wrong))
    return AgentFile(agent, path, command, tuple(hooks), untrusted, "")


def _trusted(state: object, key: str) -> object:
    entry = state.get(key) if isinstance(state, dict) else None
    return entry.get("trusted_hash") if isinstance(entry, dict) else None


def check_agents(files: list[AgentFile]) -> list[Finding]:
    findings = []
    for f in files:
        name = {"codex": "Codex CLI", "gemini": "Gemini CLI"}[f.agent]
        if f.error:
            findings.append(Finding("agents", "warn", f"{f.error}: {name} cannot read it either", f"fix {f.path}"))
            continue
        before = len(findings)
        for hook in f.hooks:
            if (problem := hook_problem(hook)) is not None:
                level, what = problem
                message = f"{f.path}: memd's hook for {hook.event} runs {what}"
                findings.append(Finding("agents", level, message, f.install))
        expected = codex.HOOKS if f.agent == "codex" else gemini.HOOKS
        if missing := [event for event in expected if event not in {hook.event for hook in f.hooks}]:
            findings.append(Finding("agents", "warn", f"{f.path} has no memd hook for {', '.join(missing)}", f.install))
        if f.untrusted:
            message = (
                f"{name} skips memd's hooks for {', '.join(f.untrusted)} without a word: no trust recorded for them"
                " as they are written (a hook edited or moved since memd trusted it)"
            )
            findings.append(Finding("agents", "error", message, f.install))
        if len(findings) == before:
            message = f"{name}: memd's hooks for all {len(expected)} events run ({f.path})"
            findings.append(Finding("agents", "ok", message))
    return findings
