"""Project identity: which project an event belongs to, from its ``cwd``.

A project is the realpath of the git top-level that contains ``cwd``, else the
realpath of ``cwd`` itself.  Claude Code's ``cwd`` follows ``cd`` into
subdirectories and into git worktrees, so the walk goes up to the nearest ``.git``
and, for a linked worktree (whose ``.git`` is a file pointing into the main
repository's ``.git/worktrees/``), on to the main repository through its common
git dir: every worktree of a repository is one project.  Submodules keep their own
identity.  No ``git`` process is spawned; results are cached per ``cwd``.
"""

from __future__ import annotations

import functools
import os

__all__ = ["project_root"]


def _common_root(git_file: str) -> str | None:
    """The main worktree of a linked worktree's ``.git`` file, or None for other links."""
    try:
        with open(git_file, encoding="utf-8") as f:
            line = f.readline().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = os.path.join(os.path.dirname(git_file), line.removeprefix("gitdir:").strip())
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as f:
            common = os.path.realpath(os.path.join(gitdir, f.readline().strip()))
    except (OSError, UnicodeDecodeError):
        return None  # a submodule: its git dir has no commondir
    return os.path.dirname(common) if os.path.basename(common) == ".git" else common


@functools.lru_cache(maxsize=4096)
def project_root(cwd: str) -> str:
    """The project root for ``cwd``; paths that do not exist here are normalized as given."""
    real = os.path.realpath(os.path.expanduser(cwd))
    directory = real
    while True:
        marker = os.path.join(directory, ".git")
        if os.path.isdir(marker):
            return directory
        if os.path.isfile(marker):
            return _common_root(marker) or directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return real
        directory = parent
