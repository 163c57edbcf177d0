"""The MCP server's IO: stdin lines in, stdout lines out, the daemon over its socket.

A light process (``memctl mcp``, or ``memd-mcp``): the embedding model and the index
stay warm in the daemon, and this proxy only validates, forwards and renders.  It
keeps one connection to the daemon and opens a new one when it broke.  When no daemon
answers, it starts one (``autostart``, unless ``MEMD_AUTOSTART=0``) and waits for it
at most ``START_WAIT`` seconds; every call is bounded by ``CALL_TIMEOUT``.  Whatever
happens, the model gets a tool result that says what is wrong and what to do: the
server never hangs and never dies on a bad call.

stdout carries protocol messages only; diagnostics go to stderr (Claude Code keeps it
in its MCP log), without content.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import BinaryIO, Final, TypeVar

import msgspec

import memd
from memd import __version__
from memd.protocol import Ping, Pong, Reply, Request
from memd_wire import autostart
from memd_wire.paths import Paths

from ..rpc import Client, ClientError, DaemonError, DaemonUnavailable, ProtocolMismatch, UnexpectedReply
from .early import fingerprint, write_listing
from .protocol import VERSIONS, Server, ToolError
from .tools import INSTRUCTIONS, Context, tools

__all__ = ["Daemon", "main", "serve"]

R = TypeVar("R", bound=Reply)

CALL_TIMEOUT = 15.0
"""Seconds one daemon request may take (a search takes milliseconds, a cold start seconds)."""
START_WAIT = 10.0
"""Seconds to wait for a daemon this server started to answer."""
RESTART_AFTER = 60.0
"""Seconds before a daemon that went away is started again by this server."""
MAX_LINE = 16 * 1024 * 1024


class Daemon:
    """The daemon as the tools see it: ``call(request, expect)``, or a ``ToolError``."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._client: Client | None = None
        self._started_at: float | None = None
        self._start_failed = False

    def call(self, request: Request, expect: type[R]) -> R:
        for attempt in range(3):
            try:
                client = self._connect()
                return client.call(request, expect)
            except DaemonError as exc:
                raise ToolError(str(exc)) from None
            except (ProtocolMismatch, UnexpectedReply) as exc:
                raise ToolError(f"{exc}; {exc.advice}") from None
            except DaemonUnavailable as exc:
                self.close()
                if attempt == 0:
                    continue  # the daemon closed the idle connection (a timeout, room for others): a new one
                if attempt == 2 or not self._start():
                    raise ToolError(self._unavailable(str(exc))) from None
        raise AssertionError("unreachable")

    def _connect(self) -> Client:
        if self._client is None:
            self._client = Client(self.paths.socket, timeout=CALL_TIMEOUT)
        return self._client

    def _start(self) -> bool:
        """Start a daemon (at most once per ``RESTART_AFTER``; another client may have
        launched it already) and wait for it; whether one answers now."""
        now = time.monotonic()
        env = dict(os.environ)
        if not autostart.enabled(env) or autostart.managed(env):
            return False  # off, or a service manager's to start: the error says what to run
        if self._started_at is not None and now - self._started_at < RESTART_AFTER:
            return False  # it was started a moment ago and did not come up: say so, do not wait again
        self._started_at = now
        try:
            autostart.start_daemon(self.paths, sys.executable, env)
        except OSError as exc:
            print(f"memd-mcp: could not start the daemon: {exc}", file=sys.stderr)
            return False
        deadline = time.monotonic() + START_WAIT
        self._start_failed = False
        while time.monotonic() < deadline:
            try:
                with Client(self.paths.socket, timeout=1.0) as client:
                    client.call(Ping(), Pong)
                return True
            except ClientError:
                time.sleep(0.1)
        self._start_failed = True
        return False

    def _unavailable(self, why: str) -> str:
        tried = " memd tried to start it and it did not answer in time." if self._start_failed else ""
        return (
            f"memd's daemon is not reachable ({why}).{tried} Ask the user to run `memctl daemon start`"
            f" (or `memctl service install`) and `memctl status`; the log is {self.paths.log_file}."
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _environ_context(daemon: Daemon) -> Context:
    project = os.environ.get("CLAUDE_PROJECT_DIR") or None
    return Context(call=daemon.call, project_dir=project, session=os.environ.get("CLAUDE_CODE_SESSION_ID") or None)


LISTED_FILES: Final = ("__init__.py", "protocol.py", os.path.join("capture", "events.py"))
"""memd's files the listing is made of (its version, request types, event kinds), beside
every module of this package."""


PROBED: Final = ("server/discover",)
"""Methods clients send before ``initialize`` that this server does not offer: Claude Code 2.1
opens with ``server/discover`` (the stateless protocol), then falls back to ``initialize``."""


def _write_listing(path: str) -> None:
    """The answers to ``initialize`` and ``tools/list`` for every protocol version, JSON-encoded,
    computed by a ``Server`` of their own (answering changes a server's state), for ``early``."""
    probe = Server("memd", __version__, tools(Context(call=_no_call, project_dir=None, session=None)), INSTRUCTIONS)
    initialize, listed = {}, {}
    for version in VERSIONS:
        init = probe.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version}})
        tools_list = probe.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert init is not None and tools_list is not None
        initialize[version] = msgspec.json.encode(init["result"])
        listed[version] = msgspec.json.encode(tools_list["result"])
    refused = {}
    for method in PROBED:
        error = probe.handle({"jsonrpc": "2.0", "id": 2, "method": method})
        assert error is not None and "error" in error
        refused[method] = msgspec.json.encode(error["error"])
    here, memd_dir = os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(memd.__file__))
    files = [os.path.join(here, n) for n in sorted(os.listdir(here)) if n.endswith(".py")]
    files += [os.path.join(memd_dir, n) for n in LISTED_FILES]
    listing = {"files": files, "key": fingerprint(files), "latest": VERSIONS[0], "initialize": initialize}
    try:
        write_listing(path, {**listing, "tools": listed, "refused": refused})
    except OSError as exc:  # a read-only state dir: every start imports the whole server, that is all
        sys.stderr.write(f"memd mcp: listing not written ({exc.strerror}): {path}\n")


def _no_call(request: Request, expect: type[R]) -> R:
    raise ToolError("the listing's server calls no tool")


def serve(server: Server, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer each line of ``stdin`` on ``stdout`` until EOF."""
    while line := stdin.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE:
            while line and not line.endswith(b"\n"):  # drop the rest of it, a piece at a time
                line = stdin.readline(MAX_LINE)
            answer: bytes | None = server.refuse(f"message over {MAX_LINE} bytes")
        elif line.strip():
            answer = server.receive(line)
        else:
            continue
        if answer is not None:
            stdout.write(answer)
            stdout.flush()


def main(paths: Paths, early: Sequence[bytes] = (), listing: str | None = None) -> int:
    """``memctl mcp``: serve MCP on stdin/stdout.  ``early``: the lines ``early.answer_early``
    read (all answered but the last, which is answered here); ``listing``: where to write the
    listing it answers from (it was missing or stale)."""
    daemon = Daemon(paths)
    server = Server("memd", __version__, tools(_environ_context(daemon)), INSTRUCTIONS)
    if listing is not None:
        _write_listing(listing)
    try:
        for line in early[:-1]:
            server.receive(line)  # answered early: read again for the same state, not answered twice
        if early and (answer := server.receive(early[-1])) is not None:
            sys.stdout.buffer.write(answer)
            sys.stdout.buffer.flush()
        serve(server, sys.stdin.buffer, sys.stdout.buffer)
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        daemon.close()
    return 0
