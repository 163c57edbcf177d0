"""Socket activation: serving on a listening socket systemd passed, instead of binding one.

systemd can own the listening socket (``systemd/memd.socket``) and start memd on the first
connection, passing the socket as fd 3 with ``LISTEN_PID`` and ``LISTEN_FDS`` set
(sd_listen_fds(3)).  memd then serves on that socket and leaves its file alone at exit: it
is systemd's, and connections that arrive while no daemon runs wait in it until systemd
has started the next one.  Only such a daemon honours ``[daemon] idle_exit`` (``memd.daemon``
decides).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

import structlog

__all__ = ["LISTEN_VARIABLES", "SD_LISTEN_FDS_START", "adopt_socket", "inherited_socket", "listen_fds"]

log = structlog.get_logger("memd.server")

SD_LISTEN_FDS_START = 3
"""The first file descriptor systemd passes to a socket-activated service."""
LISTEN_VARIABLES = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def listen_fds(env: Mapping[str, str], pid: int) -> int:
    """How many listening sockets systemd passed to process ``pid`` (sd_listen_fds(3)).

    ``LISTEN_FDS`` counts them from fd 3 on, but only when ``LISTEN_PID`` names this very
    process: otherwise they were meant for a parent that exec'd us and left the variables
    behind.  Anything malformed means none.
    """
    if env.get("LISTEN_PID", "").strip() != str(pid):
        return 0
    try:
        return max(0, int(env.get("LISTEN_FDS", "")))
    except ValueError:
        return 0


def adopt_socket(fd: int) -> socket.socket | str:
    """The listening Unix stream socket on ``fd`` bound to a file, or why it cannot be used.
    What is refused is left open as it was: it is not ours to close."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        return f"fd {fd} is not a socket ({exc.strerror})"
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        reason = f"fd {fd} is an {sock.family.name} {sock.type.name} socket, not a Unix stream socket"
    elif not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        reason = f"fd {fd} is a Unix socket that is not listening"
    elif not isinstance(path := sock.getsockname(), str) or not path.startswith("/"):
        reason = f"fd {fd} is a Unix socket without a file path (abstract or unnamed)"
    else:
        os.set_inheritable(fd, False)  # systemd's sd_listen_fds sets FD_CLOEXEC as well
        return sock
    sock.detach()
    return reason


def inherited_socket() -> socket.socket | None:
    """The socket systemd passed to this process, if any; a socket that cannot be served
    is logged and ignored (the daemon then binds its own).  The ``LISTEN_*`` variables
    are removed from the environment either way, so that no child takes them for its own."""
    count = listen_fds(os.environ, os.getpid())
    for name in LISTEN_VARIABLES:
        os.environ.pop(name, None)
    if not count:
        return None
    adopted = adopt_socket(SD_LISTEN_FDS_START)
    if isinstance(adopted, str):
        log.warning("inherited_socket_refused", fds=count, reason=adopted)
        return None
    log.info("socket_activated", fd=SD_LISTEN_FDS_START, fds=count, socket=adopted.getsockname())
    return adopted
