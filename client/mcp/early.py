"""The MCP server's first answers, before memd's modules are imported.

Claude Code starts every MCP server with the session and waits for its ``initialize`` and
``tools/list`` answers before it goes on with the prompt: the server's start-up is on
every ``claude -p`` run's critical path.  The whole server imports msgspec and half of
memd (~180 ms); this module imports two built-in modules (``json`` alone would cost
~16 ms: it imports ``re``) and answers those two requests from the listing the whole
server wrote the last time it ran (``LISTING`` in memd's state directory: the answers,
JSON-encoded, per protocol version), while the files the listing was made of are
unchanged (``fingerprint``; the listing names them).  The first message it cannot answer
from the listing (a tool call, anything unusual, or any message at all without a current
listing; the methods the whole server refuses, such as Claude Code 2.1's ``server/discover``
probe, are refused here as there) hands everything over to the whole server, which reads the lines answered so far
again to reach the same state, then answers that message.  One source of truth: the whole
server's ``Server`` computes every answer; the listing is its output, written by it.
"""

from __future__ import annotations

import _json  # the C half of json: its scanner and string encoder, without json's imports
import marshal
import os

TYPE_CHECKING = False  # typing's flag without importing typing (~2 ms): mypy honours the name
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["LISTING", "answer_early", "fingerprint", "read_listing", "start", "write_listing"]

LISTING = "mcp-listing.marshal"
"""The file in memd's state directory (``marshal``: loaded without an import)."""


class _Strict:
    """What ``_json``'s scanner reads of a ``json.JSONDecoder``: standard JSON, nothing else."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int

    def __init__(self) -> None:
        self.memo: dict[str, str] = {}  # the scanner's string cache, cleared after each value

    @staticmethod
    def parse_constant(name: str) -> float:
        raise ValueError(f"{name} is not JSON")


_scan = _json.make_scanner(_Strict())  # type: ignore[arg-type]  # typeshed wants a make_scanner; C reads these attributes


def _decode(line: bytes) -> object:
    """The one JSON value ``line`` holds (``ValueError`` if it holds anything else)."""
    text = line.decode("utf-8").strip()
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    if end != len(text):
        raise ValueError("more than one JSON value")
    return value


def fingerprint(files: list[str]) -> str:
    """Of the files the listing is made of: their names, sizes and times of change."""
    parts = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            parts.append(f"{path}:-")
            continue
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def read_listing(path: str) -> dict[str, object] | None:
    """The listing at ``path`` while the files it names are unchanged (else None: the whole
    server answers, and writes it again)."""
    try:
        with open(path, "rb") as f:
            listing = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):  # missing, or from another Python
        return None
    if not isinstance(listing, dict) or not isinstance(files := listing.get("files"), list):
        return None
    return listing if listing.get("key") == fingerprint([str(f) for f in files]) else None


def write_listing(path: str, listing: dict[str, object]) -> None:
    """Write ``listing`` atomically (0600, like the rest of memd's state)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        marshal.dump(listing, f)
    os.replace(temp, path)


def _id(value: object) -> bytes | None:
    """A JSON-RPC request id, encoded back (None: no valid one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value).encode()
    return None


def answer_early(listing: dict[str, object], stdin: BinaryIO, stdout: BinaryIO) -> tuple[list[bytes], bool]:
    """Answer ``initialize``, ``tools/list`` and notifications from ``listing`` until a line
    needs the whole server: (every line read, whether stdin ended), the last line unanswered
    unless it did.  Anything unusual (a batch, bad JSON, an odd id) is the whole server's."""
    initialize, tools, refused = listing["initialize"], listing["tools"], listing["refused"]
    assert isinstance(initialize, dict) and isinstance(tools, dict) and isinstance(refused, dict)
    read: list[bytes] = []
    version = ""
    while line := stdin.readline():
        read.append(line)
        if not line.strip():
            continue
        try:
            message = _decode(line)
        except ValueError:
            return read, False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return read, False
        method, params = message.get("method"), message.get("params", {})
        if "id" not in message and isinstance(method, str):
            continue  # a notification: nothing to answer (the whole server reads it again)
        ident = _id(message.get("id"))
        if ident is None or not isinstance(params, dict):
            return read, False
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if isinstance(requested, str) and requested in initialize else str(listing["latest"])
            answer = b'"result":' + initialize[version]
        elif method == "tools/list" and version:
            answer = b'"result":' + tools[version]
        elif isinstance(method, str) and method in refused:  # Claude Code 2.1 probes with server/discover
            answer = b'"error":' + refused[method]
        else:
            return read, False
        stdout.write(b'{"jsonrpc":"2.0","id":' + ident + b"," + answer + b"}\n")
        stdout.flush()
    return read, True


def start(state_dir: str, stdin: BinaryIO, stdout: BinaryIO) -> tuple[list[bytes], str | None] | None:
    """The server's start, before the whole server: None when the session ended with every
    line answered early; else (the lines read, for ``server.main``'s ``early``; the listing's
    path when it is missing or stale, for the whole server to write)."""
    path = os.path.join(state_dir, LISTING)
    listing = read_listing(path)
    if listing is None:
        return [], path
    try:
        read, ended = answer_early(listing, stdin, stdout)
    except (KeyboardInterrupt, BrokenPipeError):  # Claude Code ends the session with SIGINT
        return None
    return None if ended else (read, None)
