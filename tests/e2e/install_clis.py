"""Install the pinned agent CLIs the end-to-end tests drive: ``python tests/e2e/install_clis.py``.

Each comes from the npm registry (Claude Code and Codex CLI ship a native binary in a
per-platform optional dependency; Gemini CLI is JavaScript) into a cache directory outside
the checkout, once per version.  ``tests/setup_machine.py`` runs this before the tests
(README command (b)); the tests' set-up runs it too, so a developer needs nothing else.
Without npm it fails, saying so: the end-to-end suite is not optional.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import NamedTuple


class Cli(NamedTuple):
    package: str
    version: str
    command: str
    """The binary's name under ``node_modules/.bin``."""
    prints: str
    """What ``--version`` prints first."""


CLIS = {
    "claude": Cli("@anthropic-ai/claude-code", "2.1.328", "claude", "2.1.328"),
    "codex": Cli("@openai/codex", "0.169.0", "codex", "codex-cli 0.169.0"),
    "gemini": Cli("@google/gemini-cli", "0.61.0", "gemini", "0.61.0"),
}
"""Every agent CLI the tests drive, pinned."""
VERSION = CLIS["claude"].version  # what bench/claude_e2e.py reports


class InstallError(RuntimeError):
    pass


def cache_dir(cli: Cli) -> str:
    base = os.environ.get("MEMD_E2E_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "memd-e2e"
    )
    return os.path.join(base, f"{cli.package.rsplit('/', 1)[-1]}-{cli.version}")


def binary(cli: Cli) -> str:
    return os.path.join(cache_dir(cli), "node_modules", ".bin", cli.command)


def _works(cli: Cli, path: str) -> bool:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.startswith(cli.prints)


def install(name: str = "claude") -> str:
    """The path of a working binary of the pinned CLI ``name``, installing it first if needed."""
    cli = CLIS[name]
    path = binary(cli)
    if _works(cli, path):
        return path
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(
            f"npm is not installed: the end-to-end tests need it to install {cli.package}@{cli.version} "
            "(Debian: apt-get install npm)"
        )
    os.makedirs(cache_dir(cli), exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", cache_dir(cli), f"{cli.package}@{cli.version}"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0 or not _works(cli, path):
        failed = f"npm install {cli.package}@{cli.version} failed ({done.returncode})"
        raise InstallError(f"{failed}:\n{done.stderr[-2000:]}")
    return path


if __name__ == "__main__":
    try:
        for name in CLIS:
            print(install(name))
    except InstallError as exc:
        print(f"install_clis: {exc}", file=sys.stderr)
        sys.exit(1)
