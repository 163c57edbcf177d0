"""Where memd is installed, recorded for the Claude Code plugin's launcher.

Claude Code copies a plugin into its cache and runs its hook commands with ``sh -c``:
no login shell, no pyenv or asdf shims, and nothing in the plugin knows which Python
has memd.  So memd records it, in ``<state dir>/installation``, ``key=value`` lines
that ``hooks/memd-launch`` reads with the shell's ``read``::

    python=/home/you/.local/pipx/venvs/memd/bin/python
    hook=/home/you/.local/pipx/venvs/memd/lib/python3.12/site-packages/memd_client/hook.py
    guard=/usr/bin/env --block-signal=TERM,HUP,INT

``guard`` (``signal_guard``) is what every memd hook command runs the hook client under,
where the system has it: GNU env, blocking the terminating signals before Python starts.
Claude Code SIGTERMs the async hooks still running when ``claude -p`` ends; one that comes
while the interpreter starts (before ``handoff.py`` has its handler) would kill the client
with its event.  Blocked, it waits for the handler, which keeps the event and exits.

Written by the daemon when it starts and by ``memctl install``, ``memctl mcp install``,
``memctl daemon start`` and ``memctl launcher --record`` (which the launcher runs once
when it finds ``memctl`` on PATH but no record).  The launcher finds the state directory
as ``paths.py`` does: ``$XDG_STATE_HOME/memd``, else ``~/.local/state/memd``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys

from .paths import Paths

__all__ = ["HOOK_SCRIPT", "RECORD", "record", "record_path", "render", "signal_guard"]


def _client_origin() -> str:
    """Where the client package's ``__init__.py`` is, found without importing it (no arrow
    runs up from here): the entry scripts Claude Code runs live in that package, and from
    a source checkout it is ``client/``, not a neighbour of this package named ``memd_client``."""
    spec = importlib.util.find_spec("memd_client")
    assert spec is not None and spec.origin, "memd_client ships with memd_wire in one distribution"
    return spec.origin


HOOK_SCRIPT = os.path.join(os.path.dirname(_client_origin()), "hook.py")
"""This installation's hook client, the script Claude Code's hook commands run."""
RECORD = "installation"
ENV = "/usr/bin/env"
BLOCK = "--block-signal=TERM,HUP,INT"


@functools.cache
def signal_guard() -> tuple[str, ...]:
    """The argv prefix that starts the hook client with the terminating signals blocked:
    GNU env's (coreutils 8.31 and later), else nothing (macOS's and busybox's env lack it)."""
    try:
        probe = subprocess.run([ENV, BLOCK, "true"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return (ENV, BLOCK) if probe.returncode == 0 else ()


def record_path(paths: Paths) -> str:
    return os.path.join(paths.state_dir, RECORD)


def render(python: str, hook: str, guard: tuple[str, ...] = ()) -> str:
    return f"python={python}\nhook={hook}\n" + (f"guard={' '.join(guard)}\n" if guard else "")


def record(paths: Paths) -> str:
    """Record this installation (the running interpreter, its hook client); the record's path.
    An unchanged record is not rewritten."""
    path = record_path(paths)
    text = render(os.path.abspath(sys.executable), HOOK_SCRIPT, signal_guard())
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    os.makedirs(paths.state_dir, mode=0o700, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)
    return path
