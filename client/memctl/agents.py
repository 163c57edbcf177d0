"""``memctl install --agent codex|gemini`` and ``uninstall``: memd in another agent's
configuration, as that agent's users would set it up by hand.  Each file changed is shown
as a diff (``--dry-run``) or written with a timestamped backup; running it twice is running
it once.  What goes where is the agent's module's business (``memd_client.codex``,
``memd_client.gemini``); this one finds the files and reports."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from .common import CommandError, emit

__all__ = ["run_agent"]


def run_agent(args: argparse.Namespace, hook: Callable[[str], str]) -> int:
    """Install (or uninstall) memd for ``args.agent``, whose hook command for an event is ``hook``."""
    from memd_wire import launcher

    from .. import install

    if args.command == "install" and not args.dry_run:
        launcher.record(args.paths)
    try:
        changes, notes = _codex(args, hook) if args.agent == "codex" else _gemini(args, hook)
    except (install.SettingsError, ValueError) as exc:
        raise CommandError(f"{exc} (nothing was changed)") from None
    data: dict[str, Any] = {"agent": args.agent, "dry_run": args.dry_run, "files": []}
    lines = []
    for path, old, new in changes:
        entry: dict[str, Any] = {"path": path, "changed": old != new, "backup": None}
        if new is None:  # a file of memd's own extension, taken away with it
            entry["removed"] = True
            lines.append(f"{'would remove' if args.dry_run else 'removed'} {path}")
            if not args.dry_run:
                _remove(path)
        elif old != new and args.dry_run:
            entry["diff"] = install.diff(path, old, new)
            lines.append(entry["diff"])
        elif old != new:
            entry["backup"] = install.write(path, old, new, keep=not _extension_file(path))
            saved = f" (the previous version is in {entry['backup']})" if entry["backup"] else ""
            lines.append(f"wrote {path}{saved}")
        else:
            lines.append(f"{path}: nothing to change")
        data["files"].append(entry)
    lines += notes
    data["notes"] = notes
    if args.dry_run:
        lines.append("(dry run: nothing was written)")
    emit(args, data, "\n".join(lines))
    return 0


def _extension_file(path: str) -> bool:
    """A file of memd's Gemini CLI extension: memd's own, written whole, with no backup."""
    from .. import gemini

    return f"{os.sep}extensions{os.sep}{gemini.EXTENSION}{os.sep}" in path


def _remove(path: str) -> None:
    """Remove a file of memd's extension, and its folders once empty."""
    os.remove(path)
    folder = os.path.dirname(path)
    for _ in range(2):  # hooks/, then the extension's own folder
        try:
            os.rmdir(folder)
        except OSError:  # not empty: something else lives there
            return
        folder = os.path.dirname(folder)


def _project_root() -> str:
    from memd.capture.project import project_root

    return project_root(os.getcwd()) or os.getcwd()


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None


def _codex(args: argparse.Namespace, hook: Callable[[str], str]) -> tuple[list[tuple[str, str, str]], list[str]]:
    from .. import codex, install, toml_tables

    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    base = os.path.join(_project_root(), ".codex") if args.scope == "project" else home
    hooks_path, config_path = os.path.join(base, "hooks.json"), os.path.join(home, "config.toml")
    hooks_file, hooks_old = install.read(hooks_path)
    config_old = _read_text(config_path)
    # Codex keys trust by the hooks file's real path: a symlinked ~/.codex resolves.
    source = os.path.join(os.path.realpath(os.path.dirname(hooks_path)), "hooks.json")
    try:
        toml_tables.parse(config_old)
    except toml_tables.TomlError as exc:
        raise CommandError(
            f"{config_path} is not valid TOML ({exc}); fix it, then run this again (nothing was changed)"
        ) from None
    if args.command == "uninstall":
        hooks, config = codex.without_memd(source, hooks_file, config_old)
        notes = ["memd's hooks, their trust and its MCP server are out of Codex's configuration"]
    else:
        server = (os.path.abspath(sys.executable), install.MCP_SCRIPT)
        socket = args.paths.socket if args.socket else None
        hooks, config = codex.with_memd(source, hooks_file, config_old, hook, server, socket)
        notes = [f"Codex runs memd's {len(codex.HOOKS)} hooks, trusted in {config_path}, from its next session"]
        if args.scope == "project":
            notes.append(
                f"Codex reads a project's hooks only once the project is trusted: answer its trust prompt in"
                f" {_project_root()}, or run `codex exec --trust` there once"
            )
    hooks_new = hooks_old if hooks == hooks_file else install.render(hooks)
    return [(hooks_path, hooks_old, hooks_new), (config_path, config_old, config)], notes


def _gemini(
    args: argparse.Namespace, hook: Callable[[str], str]
) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    from memd import __version__

    from .. import gemini, install

    if args.extension and args.scope == "project":
        raise CommandError("a Gemini CLI extension is the user's: --extension takes no --scope project", exit_code=2)
    base = _project_root() if args.scope == "project" else os.path.expanduser("~")
    path = os.path.join(base, ".gemini", "settings.json")
    folder = os.path.join(os.path.expanduser("~"), ".gemini", "extensions", gemini.EXTENSION)
    own = [os.path.join(folder, "gemini-extension.json"), os.path.join(folder, "hooks", "hooks.json")]
    present = [(p, _read_text(p)) for p in own if os.path.exists(p)]
    settings, old = install.read(path)
    env = {**os.environ, "MEMD_SOCKET": args.paths.socket}
    server = install.server_entry(os.path.abspath(sys.executable), args.paths.socket if args.socket else None)
    extension: list[tuple[str, str, str | None]] = [(p, text, None) for p, text in present]  # gone, unless kept
    if args.command == "uninstall":
        changed = gemini.without_memd(settings)
        gone = " and its extensions" if present else ""
        notes = [f"memd's hooks and MCP server are out of Gemini CLI's settings{gone}"]
    elif args.extension:
        changed = gemini.with_server(settings, server)
        manifest, hooks = gemini.extension(hook, env, __version__)
        extension = [(p, _read_text(p), install.render(new)) for p, new in zip(own, (manifest, hooks), strict=True)]
        notes = [
            f"Gemini CLI runs memd's {len(gemini.HOOKS)} hooks from its next session, as its extension"
            f" `{gemini.EXTENSION}` (`gemini extensions list` shows it; they run in untrusted folders too), and its"
            " MCP server from settings.json"
        ]
    else:
        changed = gemini.with_memd(settings, hook, env, server)
        notes = [
            f"Gemini CLI runs memd's {len(gemini.HOOKS)} hooks from its next session, in folders it trusts"
            " (it skips settings hooks in an untrusted folder: trust the folder when it asks, or install them"
            " as an extension: --extension)"
        ]
    return [(path, old, old if changed == settings else install.render(changed)), *extension], notes
