"""Gemini CLI's ``settings.json`` with memd in it: its hooks and its MCP server.  Pure
functions of the file's contents; ``memctl install --agent gemini`` reads and writes it.

**Hooks** (``~/.gemini/settings.json``, or ``<project>/.gemini/settings.json`` with
``--scope project``) run memd's hook client with ``--agent gemini`` on the events that are
the session's: not ``PreCompress`` (fired before every model call), nor the model events
(fired per request and per streamed chunk).  Gemini CLI waits for each hook; timeouts are in
milliseconds.  Each hook carries, in its own ``env``, where memd is (``MEMD_SOCKET`` and the
XDG directories set at install time): with ``GITHUB_SHA`` set Gemini CLI gives hooks an
environment without them, and the client would look for the daemon elsewhere.

**MCP**: ``mcpServers.memd``, trusted (its tools run without a confirmation, as headless
runs need) except ``mem_forget``, left out: forgetting stays a person's act (``memctl
forget``).

**As an extension** (``--extension``): the hooks go into a Gemini CLI extension instead,
``~/.gemini/extensions/memd/`` (``gemini-extension.json`` and ``hooks/hooks.json``), which
Gemini CLI lists, enables, disables and uninstalls like any other (``gemini extensions``),
and whose hooks run in folders it does not trust, where it skips every settings hook.  The
MCP server stays in ``settings.json``: Gemini CLI takes ``trust`` away from an extension's
servers, and then offers their tools to no headless run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from . import install

__all__ = ["EXTENSION", "HOOKS", "extension", "with_memd", "with_server", "without_memd"]

HOOKS: Final[dict[str, dict[str, int | bool]]] = {
    "SessionStart": {"timeout": 10_000},
    "BeforeAgent": {"timeout": 10_000},
    "AfterTool": {"timeout": 10_000},
    "AfterAgent": {"timeout": 10_000},
    "SessionEnd": {"timeout": 2_000},
}
"""The Gemini CLI events memd hooks, with the options of each entry (milliseconds)."""
PLACES: Final = (
    "MEMD_SOCKET", "MEMD_DATA_DIR", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"
)  # fmt: skip
"""The variables that say where memd is: given to each hook in its own ``env``."""
LEFT_OUT: Final = ("mem_forget",)
EXTENSION: Final = "memd"
"""The extension's name, and its folder's under ``~/.gemini/extensions/``."""


def with_memd(
    settings: dict[str, Any], command: Callable[[str], str], env: Mapping[str, str], server: dict[str, Any]
) -> dict[str, Any]:
    """``settings`` with memd's current hooks (each with the ``PLACES`` of ``env``) and ``server``."""
    return install.with_server(_with_hooks(settings, command, env), _trusted(server))


def with_server(settings: dict[str, Any], server: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with memd's MCP server and none of its hooks (they are in the extension)."""
    return install.with_server(install.without(settings), _trusted(server))


def extension(
    command: Callable[[str], str], env: Mapping[str, str], version: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The extension's manifest and hooks file: memd's hooks, as ``with_memd`` writes them."""
    manifest = {
        "name": EXTENSION,
        "version": version,
        "description": "memd: every session to the local memory daemon; context back at session start and on prompts",
    }
    return manifest, {"hooks": _with_hooks({}, command, env)["hooks"]}


def _with_hooks(settings: dict[str, Any], command: Callable[[str], str], env: Mapping[str, str]) -> dict[str, Any]:
    places = {name: env[name] for name in PLACES if env.get(name)}
    merged = install.merged(settings, command, HOOKS)
    for event in HOOKS:
        for group in merged["hooks"][event]:
            for hook in group["hooks"]:
                if install.is_memd(hook):
                    hook["name"] = f"memd-{event}"
                    if places:
                        hook["env"] = places
    return merged


def _trusted(server: dict[str, Any]) -> dict[str, Any]:
    """Its tools run without a confirmation (headless runs need it), ``LEFT_OUT`` left out."""
    return {**server, "trust": True, "excludeTools": list(LEFT_OUT)}


def without_memd(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without memd's hooks and server (what only they filled goes with them)."""
    return install.without_server(install.without(copy.deepcopy(settings)))
