"""``memctl install``, ``uninstall``, ``mcp`` and ``hook-command``: memd in Claude Code's
configuration.  Its hooks in ``settings.json``, its MCP server in Claude Code's or Claude
Desktop's config, or served on stdio; each edit shown as a diff (``--dry-run``) or written
with a backup (``memd_client.install`` does the merging and the writing)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from .common import CommandError, emit
from .parsing import Command

__all__ = ["HOOK_COMMAND", "INSTALL", "MCP", "UNINSTALL", "hook_command"]


def hook_command(event: str, socket_flag: str | None = None, agent: str = "") -> str:
    """The shell command an agent should run for ``event`` (Claude Code when ``agent`` is "")."""
    from memd_wire.launcher import HOOK_SCRIPT, signal_guard

    argv = [*signal_guard(), os.path.abspath(sys.executable), "-I", "-S", HOOK_SCRIPT, event]
    if socket_flag:
        argv += ["--socket", os.path.abspath(socket_flag)]
    if agent:
        argv += ["--agent", agent]
    import shlex  # here: memctl loads every command's module to parse one

    return shlex.join(argv)


def edit_config(
    args: argparse.Namespace, path: str, change: Callable[[dict[str, Any]], dict[str, Any]], what: str, nothing: str
) -> int:
    """Apply ``change`` to the JSON config at ``path``: a diff with --dry-run, else a backup
    and an atomic write; ``what`` says what the file now holds, ``nothing`` why it is left alone."""
    from .. import install

    try:
        settings, old = install.read(path)
        changed = change(settings)
    except install.SettingsError as exc:
        raise CommandError(f"{exc} (nothing was changed)") from None
    new = install.render(changed)
    data: dict[str, Any] = {"settings": path, "changed": changed != settings, "dry_run": args.dry_run, "backup": None}
    if changed == settings:  # then the file is left as it is, formatting included
        emit(args, data, f"{path} {nothing}; nothing to do")
        return 0
    if args.dry_run:
        data["diff"] = install.diff(path, old, new)
        emit(args, data, data["diff"] + f"\n(dry run: {path} was not changed)")
        return 0
    data["backup"] = install.write(path, old, new)
    saved = f"; the previous version is in {data['backup']}" if data["backup"] else ""
    emit(args, data, f"{what} {path}{saved}")
    return 0


def install_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent",
        choices=["claude-code", "codex", "gemini"],
        default="claude-code",
        help="the agent whose configuration to change (default: Claude Code)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--settings", help="Claude Code: this settings file (default: by --scope)")
    where.add_argument(
        "--scope",
        choices=["user", "project"],
        default="user",
        help="user: ~/.claude, ~/.codex, ~/.gemini (default); project: the project's .claude, .codex, .gemini",
    )
    p.add_argument("--dry-run", action="store_true", help="show the change as a diff, write nothing")
    p.add_argument("--extension", action="store_true", help="Gemini CLI: the hooks as a Gemini CLI extension (`memd`)")
    p.set_defaults(handler=run_install)


def _settings_path(args: argparse.Namespace) -> str:
    given: str | None = args.settings
    if given:
        return os.path.abspath(given)
    base = os.path.expanduser("~") if args.scope == "user" else os.getcwd()
    return os.path.join(base, ".claude", "settings.json")


def run_install(args: argparse.Namespace) -> int:
    """Merge memd's hooks into Claude Code's settings (or, for uninstall, take them out); with
    ``--agent``, into another agent's configuration."""
    from memd_wire import launcher

    from .. import install

    if args.extension and args.agent != "gemini":
        raise CommandError("--extension is Gemini CLI's: use it with --agent gemini", exit_code=2)
    if args.agent != "claude-code":
        if args.settings:
            raise CommandError("--settings is Claude Code's: use --scope with --agent", exit_code=2)
        from .agents import run_agent

        return run_agent(args, lambda event: hook_command(event, args.socket, args.agent))

    path = _settings_path(args)
    if args.command == "uninstall":
        return edit_config(args, path, install.without, "memd's hooks are out of", "has no memd hooks")
    if not args.dry_run:
        launcher.record(args.paths)
    return edit_config(
        args,
        path,
        lambda settings: install.merged(settings, lambda event: hook_command(event, args.socket)),
        f"memd's hooks ({len(install.HOOKS)} events; Claude Code reads them when a session starts) are in",
        "has memd's hooks already",
    )


def mcp_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=["serve", "install", "uninstall"], default="serve")
    client = p.add_mutually_exclusive_group()
    client.add_argument("--claude-code", action="store_true", help="Claude Code (default): ~/.claude.json")
    client.add_argument("--claude-desktop", action="store_true", help="Claude Desktop's config file")
    p.add_argument(
        "--scope", choices=["user", "project"], default="user", help="Claude Code: user (default) or ./.mcp.json"
    )
    p.add_argument("--dry-run", action="store_true", help="show the change as a diff, write nothing")
    p.set_defaults(handler=run_mcp)


def _mcp_config(args: argparse.Namespace) -> str:
    from .. import install

    if args.claude_desktop:
        return install.desktop_config(sys.platform, os.path.expanduser("~"), dict(os.environ))
    if args.scope == "project":
        return os.path.join(os.getcwd(), ".mcp.json")
    return os.path.join(os.path.expanduser("~"), ".claude.json")


def run_mcp(args: argparse.Namespace) -> int:
    """Serve MCP on stdin/stdout, or register memd's server with Claude Code or Desktop."""
    if args.action == "serve":
        from ..mcp.server import main as serve

        return serve(args.paths)
    from .. import install

    path = _mcp_config(args)
    client = "Claude Desktop (quit and reopen it)" if args.claude_desktop else "Claude Code (new sessions)"
    if args.action == "uninstall":
        return edit_config(args, path, install.without_server, "memd's MCP server is out of", "has no memd server")
    entry = install.server_entry(os.path.abspath(sys.executable), args.paths.socket if args.socket else None)
    return edit_config(
        args,
        path,
        lambda config: install.with_server(config, entry),
        f"memd's MCP server (tools mem_search, mem_timeline, mem_details, ...) is registered for {client} in",
        "has memd's MCP server already",
    )


def hook_command_arguments(p: argparse.ArgumentParser) -> None:
    from memd.protocol import HOOK_EVENTS

    p.add_argument("event", metavar="EVENT", help=", ".join(HOOK_EVENTS))
    p.set_defaults(handler=run_hook_command)


def run_hook_command(args: argparse.Namespace) -> int:
    from memd.protocol import HOOK_EVENTS

    if args.event not in HOOK_EVENTS:
        raise CommandError(f"unknown hook event {args.event!r}; one of: {', '.join(HOOK_EVENTS)}", exit_code=2)
    command = hook_command(args.event, args.socket)
    emit(args, {"event": args.event, "command": command}, command)
    return 0


INSTALL = Command(
    "install",
    "merge memd's hooks into Claude Code's settings.json, or another agent's (--agent); keeps every other hook",
    install_arguments,
)
UNINSTALL = Command(
    "uninstall", "take exactly memd's hooks out of Claude Code's settings.json, or another agent's", install_arguments
)
MCP = Command("mcp", "memd's MCP server: serve it on stdio, or register it with Claude Code or Desktop", mcp_arguments)
HOOK_COMMAND = Command(
    "hook-command", "print the command line Claude Code should run for a hook event", hook_command_arguments
)
