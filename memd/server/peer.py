"""Who is on the other end of a Unix socket: only our own uid may talk to memd."""

from __future__ import annotations

import socket
import struct
import sys

__all__ = ["peer_uid"]

_LOCAL_PEERCRED = 0x001  # macOS <sys/un.h>; SOL_LOCAL is 0
_XUCRED = struct.Struct("=IIh")  # cr_version, cr_uid, cr_ngroups (the groups follow)


def peer_uid(sock: socket.socket) -> int | None:
    """The peer's uid from the kernel (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS).

    None when this platform offers neither; the caller then refuses the peer.
    """
    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if sys.platform == "darwin":
        creds = sock.getsockopt(0, _LOCAL_PEERCRED, _XUCRED.size + 4 * 16 + 2)
        return int(_XUCRED.unpack_from(creds)[1])
    return None
