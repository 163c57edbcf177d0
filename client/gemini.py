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
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Final

from . import install

__all__ = ["HOOKS", "with_memd", "without_memd"]

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


def with_memd(
    settings: dict[str, Any], command: Callable[[str], str], env: Mapping[str, str], server: dict[str, Any]
) -> dict[str, Any]:
    """``settings`` with memd's current hooks (each with the ``PLACES`` of ``env``) and ``server``."""
    places = {name: env[name] for name in PLACES if env.get(name)}
    merged = install.merged(settings, command, HOOKS)
    for event in HOOKS:
        for group in merged["hooks"][event]:
            for hook in group["hooks"]:
                if install.is_memd(hook):
                    hook["name"] = f"memd-{event}"
                    if places:
                        hook["env"] = places
    entry = {**server, "trust": True, "excludeTools": list(LEFT_OUT)}
    return install.with_server(merged, entry)


def without_memd(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without memd's hooks and server (what only they filled goes with them)."""
    return install.without_server(install.without(copy.deepcopy(settings)))
