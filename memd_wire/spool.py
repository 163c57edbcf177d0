"""The hook client's slow path: keep an event the daemon did not take, and start the daemon.

When the daemon cannot be reached, answers too slowly or answers with an error it cannot
act on, or a terminating signal comes first, the hook client writes its frame to the spool
directory (``spool``): atomically (temp file, fsync, rename), 0600 in a 0700 directory.
The daemon ingests the file when it next starts or drains the spool; replays are harmless,
since it deduplicates by idempotency key.  When nothing listens on the socket at all, the
client then starts the daemon in the background (``start_daemon``, ``autostart.py``).

``handoff.py`` imports this module only when it needs it: a hook whose event the daemon
takes never pays for it, nor for ``os`` (~2 ms of imports under ``python -I -S``).
"""

import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; mypy takes the name as true
if TYPE_CHECKING:
    from .paths import Paths


def spool(spool_dir: str, frame: bytes) -> None:
    """Write ``frame`` to the spool as one file, atomically and privately."""
    # The state directory too: makedirs gives the parents it creates the umask's mode.
    os.makedirs(os.path.dirname(spool_dir), mode=0o700, exist_ok=True)
    os.makedirs(spool_dir, mode=0o700, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
    tmp = os.path.join(spool_dir, f".tmp-{name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, frame)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, os.path.join(spool_dir, f"{name}.frame"))


def is_json(payload: bytes) -> bool:
    """Whether ``payload`` is one whole JSON value (the signal path: is stdin all there?)."""
    import json

    try:
        json.loads(payload.decode("utf-8", "replace"))
    except RecursionError:  # deep, not cut: the daemon has its own rule for that
        return True
    except ValueError:
        return False
    return True


def start_daemon(where: "Paths", env: dict[str, str]) -> None:
    """Start the daemon for the events to come (nothing listens on the socket)."""
    if TYPE_CHECKING or __package__:
        from . import autostart
    else:  # the hook client imports its neighbours as top-level modules (python -I -S)
        import autostart
    try:
        autostart.start_daemon(where, sys.executable, env)
    except Exception as exc:  # the event is spooled: only the start failed, and says why
        sys.stderr.write(f"memd hook: event spooled, daemon not started: {type(exc).__name__}: {exc}\n")
