"""One daemon per socket and per data directory, with stale leftovers replaced.

A daemon holds an ``flock`` on ``<socket>.lock`` and on ``<data dir>/memd.lock`` for
its whole life.  The kernel drops a lock when its holder dies, even by ``kill -9``,
so a lock that can be taken is stale by definition: the socket file left beside it
is removed and the new daemon binds in its place.  Each lock file records who holds
it (``{"pid", "socket", "data_dir", "version"}``) for the error message a second
daemon prints and for ``memctl status``.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat

from memd_wire.paths import Paths

from . import __version__

__all__ = ["AlreadyRunning", "InstanceLock", "holder", "prepare_private_dir"]


class AlreadyRunning(Exception):
    """Another live daemon holds this socket or data directory."""


def prepare_private_dir(path: str, *, ours: bool = True) -> None:
    """Create ``path`` as a 0700 directory; make an existing one of ours 0700 again.

    A directory that is not ``ours`` (one the user pointed the socket into, say /tmp)
    is created if missing but never re-moded: the 0600 socket and the peer uid check
    still keep other users out.
    """
    os.makedirs(path, mode=0o700, exist_ok=True)
    if not ours:
        return
    info = os.stat(path)
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {info.st_uid}, not to you: refusing to use it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def holder(lock_file: str) -> dict[str, object]:
    """What a lock file says about its holder ({} if unreadable)."""
    try:
        with open(lock_file, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _take(lock_file: str, record: dict[str, object], what: str) -> int:
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        who = holder(lock_file)
        raise AlreadyRunning(
            f"memd is already running for this {what} (pid {who.get('pid', '?')}, socket "
            f"{who.get('socket', '?')}); stop it with `memctl daemon stop` or use another --socket/--data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(record).encode())
    return fd


def _listening(path: str) -> bool:
    """Whether something accepts connections on the Unix socket at ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


class InstanceLock:
    """Held for a daemon's lifetime: ``acquire`` before binding, ``release`` after unbinding."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._fds: list[int] = []

    def acquire(self, *, keep_socket: bool = False) -> None:
        """Take both locks, or raise ``AlreadyRunning``.  ``keep_socket``: the socket file is
        not a dead daemon's leftover but live, handed over by systemd (socket activation)."""
        prepare_private_dir(self.paths.runtime_dir, ours=self.paths.owns_runtime_dir)
        prepare_private_dir(self.paths.data_dir)
        record: dict[str, object] = {
            "pid": os.getpid(),
            "socket": self.paths.socket,
            "data_dir": self.paths.data_dir,
            "version": __version__,
        }
        try:
            self._fds.append(_take(self.paths.lock_file, record, "socket"))
            self._fds.append(_take(os.path.join(self.paths.data_dir, "memd.lock"), record, "data directory"))
        except BaseException:
            self.release()
            raise
        # The lock is ours, so a socket file here was left by a daemon that died; unless
        # something still listens on it without memd's lock: systemd's memd.socket.
        if not keep_socket and os.path.lexists(self.paths.socket):
            if _listening(self.paths.socket):
                self.release()
                raise AlreadyRunning(
                    f"{self.paths.socket} is served by a socket unit (systemd's memd.socket), which starts memd"
                    " itself; use `memctl service status`, or stop memd.socket to run memd by hand"
                )
            os.unlink(self.paths.socket)

    def release(self) -> None:
        for fd in self._fds:
            os.ftruncate(fd, 0)
            os.close(fd)
        self._fds.clear()
