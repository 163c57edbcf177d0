"""Project identity: which project an event belongs to, from its ``cwd``.

A project is the realpath of the git top-level that contains ``cwd`` (a ``.git``
directory, or the ``.git`` file of a worktree or submodule), else the realpath of
``cwd`` itself.  Claude Code's ``cwd`` follows ``cd`` into subdirectories, so the
walk up keeps one project per repository.
"""

from __future__ import annotations

import functools
import os

__all__ = ["project_root"]


@functools.lru_cache(maxsize=4096)
def project_root(cwd: str) -> str:
    """The project root for ``cwd``; paths that do not exist here are normalized as given."""
    real = os.path.realpath(os.path.expanduser(cwd))
    directory = real
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return real
        directory = parent
