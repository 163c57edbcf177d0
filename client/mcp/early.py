"""The MCP server's first answers, before memd's modules are imported.

Claude Code starts every MCP server with the session and waits for its ``initialize`` and
``tools/list`` answers before it sends the model anything: the server's start-up is on
every ``claude -p`` run's critical path.  The whole server imports msgspec and half of
memd (~180 ms); this module imports ``json`` and answers those two requests from the
listing the whole server wrote the last time it ran (``LISTING`` in memd's state
directory), while the files that define the listing are unchanged (``fingerprint``).
The first message it cannot answer from the listing (a tool call, anything else, or any
message at all without a current listing) hands everything over to the whole server,
which reads the lines answered so far again to reach the same state, then answers that
message.  One source of truth: the whole server's ``Server`` computes every answer; the
listing is its output, written by it.
"""

from __future__ import annotations

import json
import os
from typing import Any, BinaryIO

__all__ = ["LISTING", "answer_early", "fingerprint", "read_listing", "write_listing"]

LISTING = "mcp-listing.json"
"""The file in memd's state directory: what ``initialize`` and ``tools/list`` answer."""
_MEMD_FILES = ("__init__.py", "protocol.py", os.path.join("capture", "events.py"))
"""memd's files the listing depends on (its version, request types, event kinds)."""


def fingerprint(mcp_dir: str, memd_dir: str) -> str:
    """Of the files the listing is made of: their names, sizes and times of change."""
    files = [os.path.join(mcp_dir, n) for n in sorted(os.listdir(mcp_dir)) if n.endswith(".py")]
    files += [os.path.join(memd_dir, n) for n in _MEMD_FILES]
    parts = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            parts.append(f"{path}:-")
            continue
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def read_listing(path: str, key: str) -> dict[str, Any] | None:
    """The listing at ``path`` if it was written for ``key`` (else None: the whole server answers)."""
    try:
        with open(path, encoding="utf-8") as f:
            listing = json.load(f)
    except (OSError, ValueError):
        return None
    return listing if isinstance(listing, dict) and listing.get("key") == key else None


def write_listing(path: str, listing: dict[str, Any]) -> None:
    """Write ``listing`` atomically (0600, like the rest of memd's state)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        json.dump(listing, f)
    os.replace(temp, path)


def answer_early(listing: dict[str, Any], stdin: BinaryIO, stdout: BinaryIO) -> tuple[list[bytes], bool]:
    """Answer ``initialize``, ``tools/list`` and notifications from ``listing`` until a line
    needs the whole server: (every line read, whether stdin ended), the last line unanswered
    unless it did.  Anything unusual (a batch, bad JSON, an odd id) is the whole server's."""
    read: list[bytes] = []
    version = ""
    while line := stdin.readline():
        read.append(line)
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            return read, False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return read, False
        method, params = message.get("method"), message.get("params", {})
        if "id" not in message and isinstance(method, str):
            continue  # a notification: nothing to answer (the whole server reads it again)
        message_id = message.get("id")
        if not isinstance(message_id, str | int) or isinstance(message_id, bool) or not isinstance(params, dict):
            return read, False
        if method == "initialize":
            requested = params.get("protocolVersion")
            version = requested if requested in listing["tools"] else listing["latest"]
            result = {**listing["initialize"], "protocolVersion": version}
        elif method == "tools/list" and version:
            result = {"tools": listing["tools"][version]}
        else:
            return read, False
        stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode() + b"\n")
        stdout.flush()
    return read, True
