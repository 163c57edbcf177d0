"""``memctl ui``: serve the web viewer (``memd_client.ui``) on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import sys

from .common import CommandError
from .parsing import Command

__all__ = ["UI"]


def ui_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="only print the URL")
    p.set_defaults(handler=run_ui)


def run_ui(args: argparse.Namespace) -> int:
    import secrets
    import socket
    import webbrowser

    import uvicorn

    from ..ui.app import viewer

    token = secrets.token_urlsafe(24)
    prefix = secrets.token_urlsafe(9)  # every page under it: the token's cookie goes to no other path
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", args.port))  # loopback only, whatever the port
    except OSError as exc:
        listener.close()
        raise CommandError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}; try another --port") from None
    listener.listen(128)  # a browser that opens the URL at once waits in the backlog for the server
    port = listener.getsockname()[1]
    url = f"http://127.0.0.1:{port}/{prefix}/?t={token}"
    print(f"memd's viewer: {url}\n(only this URL opens it; Ctrl-C stops it)", flush=True)
    if not args.no_browser and _has_display():
        webbrowser.open(url)
    # No access log: request lines hold the token.
    config = uvicorn.Config(viewer(args.paths.socket, token, port, prefix), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[listener])
    return 0


def _has_display() -> bool:
    """Whether a graphical browser can open (a console one would take over the terminal)."""
    return sys.platform == "darwin" or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


UI = Command("ui", "a web viewer of memory on 127.0.0.1: timeline, search, sessions, tasks, statistics", ui_arguments)
