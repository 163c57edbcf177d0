"""Everything the test suite needs beyond pip, on a Debian machine with only Python and pip:
``python tests/setup_machine.py`` (the README's command (b) runs it, and so does CI).

- Debian's packages the tests run for real, each found by a file it installs: PostgreSQL's
  server (the sync tests start one: ``tests/pg.py``), Chromium and ChromeDriver (the viewer's
  tests drive a headless browser: ``tests/browser.py``), npm (to install the agents' CLIs).
  Whatever is missing is installed after one ``apt-get update``, as root or through sudo.
- The pinned agent CLIs the end-to-end tests drive: Claude Code, Codex CLI, Gemini CLI
  (``tests/e2e/install_clis.py``).

What is there already is left alone, so running it again costs a second.  What cannot be
installed stops it with what to do: the suite never skips a test for a missing tool.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e.install_clis import CLIS, InstallError, install

PACKAGES: dict[str, Callable[[], bool]] = {
    "postgresql": lambda: bool(glob.glob("/usr/lib/postgresql/*/bin/initdb") or shutil.which("initdb")),
    "chromium": lambda: os.access("/usr/bin/chromium", os.X_OK),
    "chromium-driver": lambda: os.access("/usr/bin/chromedriver", os.X_OK),
    "npm": lambda: shutil.which("npm") is not None,
}
"""Each Debian package, and how to tell it is installed."""


def missing() -> list[str]:
    return [name for name, present in PACKAGES.items() if not present()]


def apt_install(names: list[str]) -> None:
    """Install ``names`` with apt-get (through sudo unless root); raises with apt's last words."""
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *names]):
        try:
            done = subprocess.run([*sudo, *argv], env=env, capture_output=True, text=True, timeout=1800)
        except FileNotFoundError as exc:
            raise SystemExit(f"setup_machine: cannot run {exc.filename}: install {', '.join(names)} by hand") from None
        if done.returncode != 0:
            raise SystemExit(
                f"setup_machine: `{' '.join(argv)}` failed ({done.returncode}): the tests need {', '.join(names)}"
                f" (as root, or with sudo without a password)\n{done.stderr[-2000:]}"
            )


def main() -> int:
    if needed := missing():
        print(f"setup_machine: installing Debian's {', '.join(needed)}", file=sys.stderr)
        apt_install(needed)
        if still := missing():
            print(f"setup_machine: still missing after apt-get: {', '.join(still)}", file=sys.stderr)
            return 1
    try:
        for name in CLIS:
            print(f"setup_machine: {name} at {install(name)}", file=sys.stderr)
    except InstallError as exc:
        print(f"setup_machine: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
