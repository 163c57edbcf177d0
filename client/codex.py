"""Codex CLI's configuration with memd in it: the hooks in ``hooks.json``, their trust and
the MCP server in ``config.toml``.  Pure functions of the files' contents; ``memctl install
--agent codex`` reads and writes them (``memctl/agents.py``).

**Hooks** go in ``$CODEX_HOME/hooks.json`` (``~/.codex``), or ``<project>/.codex/hooks.json``
with ``--scope project``, in the format Claude Code's settings use, each running memd's
hook client with ``--agent codex``.  All run synchronously: Codex kills its ``async`` hooks
when ``codex exec`` ends, and the client returns in milliseconds.

**Trust.**  Codex runs no hook that nobody trusted, and in ``codex exec`` says nothing about
it.  Its ``/hooks`` review records trust in the user's ``config.toml``, one table per hook::

    [hooks.state."<realpath of hooks.json>:<event_snake>:<group>:<handler>"]
    trusted_hash = "sha256:<hex>"

the hash being sha256 of the hook's normalized identity as compact, key-sorted JSON
(``trust_hash``; measured against Codex 0.169.0's own hashes).  memd writes the same for its
hooks: installing is trusting what one installs.  A key names a hook's position, so when
memd's hooks come or go, the entries of the user's own hooks that move are moved with them
(``moved``): nothing the user trusted loses its trust.

**MCP**: ``[mcp_servers.memd]``, its tools approved in advance (``codex exec`` refuses a
tool call that needs approval) except ``mem_forget``, which asks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any, Final

from . import install, toml_tables

__all__ = ["HOOKS", "LABELS", "hook_keys", "moved", "trust_hash", "with_memd", "without_memd"]

CONTEXT_TIMEOUT: Final = 10
HOOKS: Final[dict[str, dict[str, int | bool]]] = {
    "SessionStart": {"timeout": CONTEXT_TIMEOUT},
    "UserPromptSubmit": {"timeout": CONTEXT_TIMEOUT},
    "PostToolUse": {"timeout": CONTEXT_TIMEOUT},
    "PreCompact": {"timeout": CONTEXT_TIMEOUT},
    "PostCompact": {"timeout": CONTEXT_TIMEOUT},
    "Stop": {"timeout": CONTEXT_TIMEOUT},
    "SessionEnd": {"timeout": 2},
}
"""The Codex events memd hooks, with the options of each entry."""

LABELS: Final = {
    "PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request", "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact", "PostCompact": "post_compact", "SessionStart": "session_start",
    "SessionEnd": "session_end", "UserPromptSubmit": "user_prompt_submit", "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop", "Stop": "stop", "Interrupt": "interrupt",
}  # fmt: skip
"""Each event by the name Codex gives it in trust keys."""
_NO_MATCHER: Final = frozenset({"UserPromptSubmit", "Stop", "Interrupt"})
"""Events whose matcher Codex drops, from matching and from the hash alike."""
_SHORT: Final = frozenset({"SessionEnd", "Interrupt"})
"""Events whose timeout Codex clamps to 1-3 s (default 1)."""
_CONTEXT_LIMIT_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "SubagentStart"}
)
_DEFAULT_CONTEXT_LIMIT: Final = 2500
_STATE: Final = ("hooks", "state")
SERVER: Final = ("mcp_servers", install.SERVER_NAME)
ASKS: Final = ("mem_forget",)
"""memd's MCP tools Codex asks the user about before each call: the one that deletes."""


def _timeout(event: str, value: Any) -> int:
    given = value if isinstance(value, int) and not isinstance(value, bool) else None
    if event in _SHORT:
        return max(1, min(3, 1 if given is None else given))
    return max(1, 600 if given is None else given)


def trust_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """The ``trusted_hash`` Codex records for ``handler`` of ``group`` under ``event``."""
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command", ""),
        "timeout": _timeout(event, handler.get("timeout")),
        "async": handler.get("async") is True,
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    limit = handler.get("additionalContextLimit")
    if event in _CONTEXT_LIMIT_EVENTS and isinstance(limit, int) and limit != _DEFAULT_CONTEXT_LIMIT:
        normalized["additionalContextLimit"] = limit
    identity: dict[str, Any] = {"event_name": LABELS[event], "hooks": [normalized]}
    if event not in _NO_MATCHER and isinstance(group.get("matcher"), str):
        identity["matcher"] = group["matcher"]
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _handlers(hooks_file: dict[str, Any]) -> Iterator[tuple[str, int, int, dict[str, Any], dict[str, Any]]]:
    """Every command hook: its event, group and handler indexes, group and handler."""
    events = hooks_file.get("hooks")
    for event, groups in events.items() if isinstance(events, dict) else ():
        if event not in LABELS or not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                if isinstance(handler, dict) and handler.get("type") == "command":
                    yield event, g, h, group, handler


def hook_keys(source: str, hooks_file: dict[str, Any], memd: bool) -> dict[str, str]:
    """The trust keys of memd's hooks (``memd``) or of everyone else's, with their hashes;
    ``source`` is the real path of the hooks file."""
    return {
        f"{source}:{LABELS[event]}:{g}:{h}": trust_hash(event, group, handler)
        for event, g, h, group, handler in _handlers(hooks_file)
        if install.is_memd(handler) == memd
    }


def moved(source: str, before: dict[str, Any], after: dict[str, Any]) -> dict[str, str]:
    """Old key → new key of each of the user's hooks whose position memd's edit changed (the
    same hook, by its event and hash, in the same order)."""

    def positions(hooks_file: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
        found: dict[tuple[str, str], list[str]] = {}
        for key, digest in hook_keys(source, hooks_file, memd=False).items():
            found.setdefault((key.rsplit(":", 3)[1], digest), []).append(key)
        return found

    old, new = positions(before), positions(after)
    return {a: b for identity, keys in old.items() for a, b in zip(keys, new.get(identity, []), strict=False) if a != b}


def _trust_tables(trusted: dict[str, str]) -> str:
    return "".join(
        f"{toml_tables.header((*_STATE, key))}\ntrusted_hash = {json.dumps(digest)}\n\n"
        for key, digest in trusted.items()
    )


def _server_tables(python: str, script: str, socket: str | None) -> str:
    args = json.dumps(["-I", "-S", script])
    text = f"{toml_tables.header(SERVER)}\ncommand = {json.dumps(python)}\nargs = {args}\n"
    text += 'default_tools_approval_mode = "approve"\n\n'
    if socket:
        text += f"{toml_tables.header((*SERVER, 'env'))}\nMEMD_SOCKET = {json.dumps(socket)}\n\n"
    for tool in ASKS:
        text += f'{toml_tables.header((*SERVER, "tools", tool))}\napproval_mode = "prompt"\n\n'
    return text


def _config_change(drop: set[str], rename: dict[str, str], server: bool) -> Callable[[toml_tables.Path], Any]:
    def change(path: toml_tables.Path) -> toml_tables.Path | None:
        if len(path) == 3 and path[:2] == _STATE:
            if path[2] in rename:  # first: a user's hook may move to where memd's was
                return (*_STATE, rename[path[2]])
            if path[2] in drop:
                return None
        if server and path[:2] == SERVER:
            return None
        return path

    return change


def with_memd(
    source: str, hooks_file: dict[str, Any], config: str, command: Callable[[str], str], server: tuple[str, str] | None,
    socket: str | None = None,
) -> tuple[dict[str, Any], str]:  # fmt: skip
    """``hooks_file`` with memd's current hooks, and the user config's text with their trust
    (and, given ``server`` = (python, script), memd's MCP server) in it."""
    hooks = install.merged(hooks_file, command, HOOKS)
    mine = hook_keys(source, hooks, memd=True)
    stale = set(hook_keys(source, hooks_file, memd=True)) | set(mine)
    change = _config_change(stale, moved(source, hooks_file, hooks), server is not None)
    added = _trust_tables(mine) + (_server_tables(*server, socket) if server else "")
    return hooks, toml_tables.edit(config, change, added)


def without_memd(source: str, hooks_file: dict[str, Any], config: str) -> tuple[dict[str, Any], str]:
    """``hooks_file`` without memd's hooks, the config without their trust and memd's server."""
    hooks = install.without(hooks_file)
    change = _config_change(set(hook_keys(source, hooks_file, memd=True)), moved(source, hooks_file, hooks), True)
    return hooks, toml_tables.edit(config, change)
