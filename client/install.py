"""Claude Code's ``settings.json`` with memd's hooks merged in or taken out, and Claude
Code's or Desktop's config with memd's MCP server registered or not.  ``merged``,
``without``, ``with_server`` and ``without_server`` are pure; ``write`` is the only IO
(a timestamped backup, then an atomic replace).

memd's entries are recognized by their command running memd's hook client: this
installation's (``HOOK_SCRIPT``) or any installed one (``memd_client/hook.py``, e.g. from
a virtualenv since moved).  Installing removes them first and adds the current ones
(twice is once, and a stale path is repaired); uninstalling removes exactly them and the
containers left empty by it.  Every other hook and key is kept as it was.

Which events, and how (see Claude Code's hook reference): the two whose output becomes
context run synchronously with a short timeout.  The tool hooks fire in the middle of a
turn and run ``async``, so no tool call waits for them.  Stop, SubagentStop, PreCompact
and PostCompact run synchronously with a short timeout: ``claude -p`` SIGTERMs the async
hooks still running when it ends, and a client killed before it could install its signal
handler loses its event (the client itself never waits more than ``MEMD_HOOK_TIMEOUT``,
2 s, for the daemon).  SessionEnd runs synchronously (its hooks share a 1.5 s budget and
memd only enqueues).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import time
from collections.abc import Callable
from typing import Any, Final

from memd_wire.launcher import HOOK_SCRIPT

__all__ = [
    "HOOKS",
    "MARKER",
    "PLUGIN_LAUNCHER",
    "SERVER_NAME",
    "SettingsError",
    "desktop_config",
    "diff",
    "is_memd",
    "merged",
    "plugin_hooks",
    "read",
    "render",
    "server_entry",
    "with_server",
    "without",
    "without_server",
    "write",
]

MARKER: Final = "memd_client/hook.py"
"""What the command of any pip-installed memd's hook contains."""
CONTEXT_TIMEOUT: Final = 10
CAPTURE_TIMEOUT: Final = 10
HOOKS: Final[dict[str, dict[str, int | bool]]] = {
    "SessionStart": {"timeout": CONTEXT_TIMEOUT},
    "UserPromptSubmit": {"timeout": CONTEXT_TIMEOUT},
    "PostToolUse": {"async": True},
    "PostToolUseFailure": {"async": True},
    "PreCompact": {"timeout": CAPTURE_TIMEOUT},
    "PostCompact": {"timeout": CAPTURE_TIMEOUT},
    "Stop": {"timeout": CAPTURE_TIMEOUT},
    "SubagentStop": {"timeout": CAPTURE_TIMEOUT},
    "SessionEnd": {"timeout": 2},
}
"""The events memd hooks, with the options of each entry."""


PLUGIN_LAUNCHER: Final = '"${CLAUDE_PLUGIN_ROOT}/hooks/memd-launch"'
"""The plugin's launcher, quoted: the plugin cache path may hold spaces."""


def plugin_hooks() -> dict[str, Any]:
    """The plugin's ``hooks/hooks.json``: the same events and options as ``memctl install``,
    run through the launcher (see ``hooks/memd-launch``)."""
    return {
        "description": "memd: every Claude Code event to the local memory daemon; context back at session start"
        " and on prompts",
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": f"sh {PLUGIN_LAUNCHER} hook {event}", **options}]}]
            for event, options in HOOKS.items()
        },
    }


class SettingsError(Exception):
    """The settings file cannot be used; it was not touched.  The message says why."""


def is_memd(hook: object) -> bool:
    """Whether a hook entry runs memd's hook client."""
    command = str(hook.get("command", "")) if isinstance(hook, dict) else ""
    return HOOK_SCRIPT in command or MARKER in command


def without(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with every memd hook removed, and the groups, events and ``hooks`` object
    that only memd filled removed with them."""
    result = copy.deepcopy(settings)
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                mine = [h for h in group["hooks"] if is_memd(h)]
                if mine:
                    group = {**group, "hooks": [h for h in group["hooks"] if not is_memd(h)]}
                    if not group["hooks"]:
                        continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        elif groups:  # memd's entries were all there was
            del hooks[event]
    if not hooks and "hooks" in settings and settings["hooks"] != {}:
        del result["hooks"]
    return result


def merged(
    settings: dict[str, Any], command: Callable[[str], str], events: dict[str, dict[str, int | bool]] = HOOKS
) -> dict[str, Any]:
    """``settings`` with memd's current hooks for ``events`` (Claude Code's by default; Codex
    CLI's file has the same shape), ``command(event)`` running the hook client."""
    result = without(settings)
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f'"hooks" is a {type(hooks).__name__}, not an object: fix or remove it first')
    for event, options in events.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f'"hooks.{event}" is a {type(groups).__name__}, not a list: fix or remove it first')
        groups.append({"hooks": [{"type": "command", "command": command(event), **options}]})
    return result


SERVER_NAME: Final = "memd"
"""The name memd's MCP server is registered under: its tools reach the model as ``mcp__memd__*``."""


MCP_SCRIPT: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp", "serve.py")
"""The MCP server's script: run with ``-I -S``, it answers Claude Code's first requests
before ``site`` is imported (``memd_client/mcp/serve.py``)."""


def server_entry(python: str, socket: str | None = None) -> dict[str, Any]:
    """How Claude Code or Claude Desktop starts memd's MCP server: absolute paths only,
    since Desktop starts it with a minimal environment and no PATH of the user's."""
    entry: dict[str, Any] = {"command": python, "args": ["-I", "-S", MCP_SCRIPT]}
    if socket:
        entry["env"] = {"MEMD_SOCKET": socket}
    return entry


def without_server(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` (a Claude Code or Desktop config) without memd's MCP server; an
    ``mcpServers`` object left empty by that goes too."""
    result = copy.deepcopy(config)
    servers = result.get("mcpServers")
    if isinstance(servers, dict) and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del result["mcpServers"]
    return result


def with_server(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """``config`` with memd's MCP server registered as ``entry`` (replacing an older one)."""
    result = copy.deepcopy(config)
    servers = result.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingsError(f'"mcpServers" is a {type(servers).__name__}, not an object: fix or remove it first')
    servers[SERVER_NAME] = entry
    return result


def desktop_config(platform: str, home: str, env: dict[str, str]) -> str:
    """Where Claude Desktop keeps its MCP servers on ``platform`` (``sys.platform``).  Linux
    has no official Desktop build; community builds use the XDG config directory."""
    if platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
    if platform.startswith("win"):
        return os.path.join(
            env.get("APPDATA", os.path.join(home, "AppData", "Roaming")), "Claude", "claude_desktop_config.json"
        )
    config_home = env.get("XDG_CONFIG_HOME", "")
    base = config_home if config_home.startswith("/") else os.path.join(home, ".config")
    return os.path.join(base, "Claude", "claude_desktop_config.json")


def read(path: str) -> tuple[dict[str, Any], str]:
    """(the settings, the file's text); a missing file is an empty object."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}, ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return {}, text
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix it, then run this again"
        ) from None
    if not isinstance(settings, dict):
        raise SettingsError(f"{path} holds a JSON {type(settings).__name__}, not an object; fix it first")
    return settings, text


def render(settings: dict[str, Any]) -> str:
    """The file's new text: two-space JSON, non-ASCII kept, a final newline."""
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), path, f"{path} (new)"))


def write(path: str, old: str, new: str, *, keep: bool = True) -> str | None:
    """Replace the file's text atomically, after a timestamped backup of the old one (its
    path, None when there was no file, or ``keep`` is false: a file memd wrote whole)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    backup = None
    mode = 0o644
    if os.path.exists(path):
        mode = os.stat(path).st_mode & 0o777
    if os.path.exists(path) and keep:
        backup = f"{path}.memd-backup-{time.strftime('%Y%m%d-%H%M%S')}"
        with open(backup, "w", encoding="utf-8") as f:
            f.write(old)
        os.chmod(backup, mode)
    temporary = f"{path}.memd-tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(new)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(temporary, mode)
    os.replace(temporary, path)
    return backup
