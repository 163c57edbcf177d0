"""Where Claude Code keeps a project's memory, and whether it loads it.

Claude Code's home (``~/.claude``, or ``$CLAUDE_CONFIG_DIR``) is the one a hook's
``transcript_path`` lives in: ``<home>/projects/<slug>/<session>.jsonl``.  The memory
folder of a project is the ``autoMemoryDirectory`` setting when one is set, else
``<home>/projects/<slug of the project root>/memory/``, where the root is the main
worktree of the git repository (``memd.capture.project.project_root``: every worktree and
subdirectory of a repository shares one memory, as in Claude Code).

Settings are read as Claude Code reads ``autoMemoryDirectory``: the managed policy file
first, then the project's ``.claude/settings.local.json``, then the user's
``settings.json``.  A repository's committed ``.claude/settings.json`` is not trusted to
move the folder: a cloned repository could otherwise point memd at any folder of the
user's.  ``autoMemoryEnabled`` (``false`` turns Claude Code's memory off, and with it the
loading of ``MEMORY.md``) is read from the same files and the committed settings.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from .claude_memory import slug

__all__ = ["MANAGED_SETTINGS", "auto_memory_on", "claude_home", "memory_folder"]

MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"


def claude_home(transcript_path: str) -> str | None:
    """Claude Code's home a transcript lives in, or None for a path of another shape."""
    project_dir = os.path.dirname(transcript_path)
    projects = os.path.dirname(project_dir)
    if not transcript_path.endswith(".jsonl") or os.path.basename(projects) != "projects":
        return None
    return os.path.dirname(projects)


def _settings(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            found = msgspec.json.decode(f.read())
    except (OSError, msgspec.DecodeError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def _trusted(home: str, root: str) -> list[str]:
    return [MANAGED_SETTINGS, os.path.join(root, ".claude", "settings.local.json"), os.path.join(home, "settings.json")]


def memory_folder(home: str, root: str) -> str:
    """The memory folder of the project at ``root`` for the Claude Code home ``home``."""
    for path in _trusted(home, root):
        chosen = _settings(path).get("autoMemoryDirectory")
        if isinstance(chosen, str) and chosen.strip():
            folder = os.path.expanduser(chosen.strip()) if chosen.startswith("~/") else chosen.strip()
            if os.path.isabs(folder) and len(folder.rstrip("/")) >= 3:
                return os.path.normpath(folder)
    return os.path.join(home, "projects", slug(root), "memory")


def auto_memory_on(home: str, root: str) -> bool:
    """Whether Claude Code's memory is on for the project (its default: on)."""
    files = _trusted(home, root)
    files.insert(2, os.path.join(root, ".claude", "settings.json"))
    for path in files:
        enabled = _settings(path).get("autoMemoryEnabled")
        if isinstance(enabled, bool):
            return enabled
    return True
