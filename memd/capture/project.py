"""Project identity: which project an event belongs to, from its ``cwd``, and what makes two
checkouts one project.

A project's **root** is the realpath of the git top-level that contains ``cwd``, else the
realpath of ``cwd`` itself.  Claude Code's ``cwd`` follows ``cd`` into subdirectories and
into git worktrees, so the walk goes up to the nearest ``.git`` and, for a linked worktree
(whose ``.git`` is a file pointing into the main repository's ``.git/worktrees/``), on to
the main repository through its common git dir: every worktree of a repository is one
project.  Submodules keep their own identity.

A project's **key** is what the same repository checked out in other places, on this
machine or another, has in common: its remote (``memd.capture.remote``), read from the git
config, else ``path:<root>``, so that two machines with the same path still meet.  The
store (``memd.store.projects``) finds a project by root and, for a root it has not seen,
by key.

No ``git`` process is spawned; results are cached per ``cwd`` and per root, for the
daemon's life (a remote added later is seen after a restart).
"""

from __future__ import annotations

import functools
import os

from .remote import remote_key, remote_urls

__all__ = ["project_key", "project_root"]


def _git_dirs(git_file: str) -> tuple[str, str | None] | None:
    """The git dir a ``.git`` file points to, and its common dir when it is a linked
    worktree's (a submodule's has none); None for a file that points nowhere."""
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
            return gitdir, os.path.realpath(os.path.join(gitdir, f.readline().strip()))
    except (OSError, UnicodeDecodeError):
        return gitdir, None


def _common_root(git_file: str) -> str | None:
    """The main worktree of a linked worktree's ``.git`` file, or None for other links."""
    dirs = _git_dirs(git_file)
    if dirs is None or dirs[1] is None:
        return None
    common = dirs[1]
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


def _config_file(root: str) -> str | None:
    """Where the git config of the repository at ``root`` is: its ``.git`` directory's, the
    common dir's for a linked worktree, the module's git dir's for a submodule; ``root``'s
    own when it is a git dir (a bare repository with worktrees is its own root).  None when
    ``root`` is no repository."""
    marker = os.path.join(root, ".git")
    if os.path.isfile(marker):
        dirs = _git_dirs(marker)
        return None if dirs is None else os.path.join(dirs[1] or dirs[0], "config")
    if os.path.isdir(marker):
        return os.path.join(marker, "config")
    if os.path.isfile(os.path.join(root, "HEAD")):
        return os.path.join(root, "config")
    return None


@functools.lru_cache(maxsize=4096)
def project_key(root: str) -> str:
    """The key of the project at ``root`` (a ``project_root``): the key of its ``origin``
    remote, else of its first, else ``path:<root>``."""
    urls: dict[str, str] = {}
    config = _config_file(root)
    if config is not None:
        try:
            with open(config, encoding="utf-8", errors="replace") as f:
                urls = remote_urls(f.read())
        except OSError:
            pass  # no config, or not ours to read: no remote
    url = urls.get("origin") or next(iter(urls.values()), None)
    key = remote_key(url, root) if url else None
    return key or f"path:{root}"
