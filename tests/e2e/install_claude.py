"""Install the pinned Claude Code CLI that the end-to-end tests drive: ``python tests/e2e/install_claude.py``.

It comes from the npm registry (``@anthropic-ai/claude-code`` ships a native binary in a
per-platform optional dependency) into a cache directory outside the checkout, once per
version.  ``tests/setup_machine.py`` runs this before the tests (README command (b)); the
tests' set-up runs it too, so a developer needs nothing else.  Without npm it fails, saying so: the end-to-end suite is
not optional.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

VERSION = "2.1.328"
PACKAGE = "@anthropic-ai/claude-code"


def cache_dir() -> str:
    base = os.environ.get("MEMD_E2E_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "memd-e2e"
    )
    return os.path.join(base, f"claude-code-{VERSION}")


def binary() -> str:
    return os.path.join(cache_dir(), "node_modules", ".bin", "claude")


class InstallError(RuntimeError):
    pass


def _works(path: str) -> bool:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.startswith(VERSION)


def install() -> str:
    """The path of a working ``claude`` of VERSION, installing it first if needed."""
    path = binary()
    if _works(path):
        return path
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(
            f"npm is not installed: the end-to-end tests need it to install {PACKAGE}@{VERSION} "
            "(Debian: apt-get install npm)"
        )
    os.makedirs(cache_dir(), exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", cache_dir(), f"{PACKAGE}@{VERSION}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0 or not _works(path):
        raise InstallError(f"npm install {PACKAGE}@{VERSION} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return path


if __name__ == "__main__":
    try:
        print(install())
    except InstallError as exc:
        print(f"install_claude: {exc}", file=sys.stderr)
        sys.exit(1)
