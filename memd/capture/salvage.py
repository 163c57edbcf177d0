"""What can be read of a payload that is no whole JSON object any more.

The hook client keeps at most ``PAYLOAD_CAP`` bytes of a huge payload: its head and its
last 64 KB, the middle dropped (``memd_wire.handoff``).  Claude Code writes the fields
that identify and explain an event first (``session_id``, ``tool_name``, ``tool_input``
with the command, the file path, the description) and the bulk after them
(``tool_response``), then ``tool_use_id`` at the very end.  So:

- the head is read as the beginning of a JSON document (``read_prefix``): every field up
  to the cut, at any depth, is kept as it was; the string the cut falls into is kept up to
  the cut and marked (``CUT``), and every container left open is closed;
- the tail's top-level identifying fields (``tool_use_id`` and the others of
  ``TAIL_FIELDS``) are read by a plain search, since where the tail starts is unknown.

A payload nested deeper than ``max_depth`` goes the same way: containers below that depth
become ``DEEP``.  Pure functions; linear in the bytes read (the head is read up to
``HEAD_WINDOW``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["CUT", "DEEP", "HEAD_WINDOW", "TAIL_FIELDS", "read_prefix", "salvage"]

HEAD_WINDOW: Final = 256 * 1024
"""Bytes of the head read: past the fields that explain an event, the rest is bulk."""
TAIL_WINDOW: Final = 64 * 1024
TAIL_FIELDS: Final = ("session_id", "cwd", "hook_event_name", "prompt_id", "tool_name", "tool_use_id", "agent_id")
CUT: Final = " [… memd: cut here, the payload was too big to keep whole]"
DEEP: Final = "[memd: nested too deep to keep]"

_TOKEN: Final = re.compile(
    r"""[ \t\r\n]*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<open>"(?:[^"\\]|\\.)*\\?\Z)
      | (?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
      | (?P<literal>true|false|null)
      | (?P<punct>[{}\[\]:,])
    )""",
    re.VERBOSE,
)
_LITERALS: Final = {"true": True, "false": False, "null": None}


def _string(token: str) -> str:
    try:
        value = json.loads(token)
    except ValueError:  # a lone surrogate escape, say: keep the characters as they are
        return token[1:-1]
    return value if isinstance(value, str) else token[1:-1]


_HEX_TAIL: Final = re.compile(r"u[0-9a-fA-F]{0,3}\Z")


def _open_string(token: str) -> str:
    """A string the text ends in: what it holds up to the end, an escape the cut left
    unfinished (``\\u12``, a lone ``\\``) dropped.  Whether a backslash starts an escape
    depends on how many come before it: an odd run ends in one that does."""
    body = token[1:]
    unicode = _HEX_TAIL.search(body, max(0, len(body) - 4))
    end = unicode.start() if unicode else len(body)
    run = end - len(body[:end].rstrip("\\"))
    if run % 2:
        body = body[: end - 1]
    return _string(f'"{body}"') + CUT


def read_prefix(text: str, max_depth: int = 64) -> dict[str, Any] | None:
    """The JSON object ``text`` begins, as far as it goes (module docstring); None if it does
    not begin one."""
    root: dict[str, Any] | None = None
    stack: list[Any] = []  # the open containers, innermost last
    key: str | None = None  # the key read in the innermost object, waiting for its value
    skip = 0  # depth inside a container too deep to keep
    position = 0

    def attach(value: Any) -> None:
        nonlocal key
        parent = stack[-1]
        if isinstance(parent, list):
            parent.append(value)
        elif key is not None:
            parent[key] = value
            key = None

    while match := _TOKEN.match(text, position):
        position = match.end()
        kind = match.lastgroup
        token = match.group(kind or 0)  # every alternative of _TOKEN is a named group
        if skip:
            skip += {"{": 1, "[": 1, "}": -1, "]": -1}.get(token, 0) if kind == "punct" else 0
            continue
        if kind == "punct":
            if token in "{[":
                container: Any = {} if token == "{" else []
                if root is None:
                    if token != "{":
                        return None
                    root = container
                elif len(stack) >= max_depth:
                    attach(DEEP)
                    skip = 1
                    continue
                else:
                    attach(container)
                stack.append(container)
            elif token in "}]":
                if stack:
                    stack.pop()
                if not stack:
                    break
            continue
        if not stack:
            return None
        if kind == "open":
            attach(_open_string(token))
            break
        if kind == "string":
            if isinstance(stack[-1], dict) and key is None:
                key = _string(token)
            else:
                attach(_string(token))
        elif kind == "number":
            attach(json.loads(token))
        else:
            attach(_LITERALS[token])
    return root


def _tail_fields(tail: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in TAIL_FIELDS:
        # The last one: the tail ends the document, whose top-level fields come last.
        matches = re.findall(rf'"{name}"\s*:\s*("(?:[^"\\]|\\.)*")', tail)
        if matches:
            found[name] = _string(matches[-1])
    return found


def salvage(kept: bytes, max_depth: int = 64, tail: int = 0) -> dict[str, Any]:
    """What can be read of ``kept``: the head's fields as they were, the tail's top-level ids.
    Lone surrogate escapes must be repaired first (``memd.surrogates``): a string here is
    whatever JSON text says.

    ``tail``: how many bytes at the end the client appended after dropping the middle (the
    head is read up to them, so no field is stitched across the gap); 0 for bytes that are
    whole, only too deep.
    """
    head = kept[: len(kept) - tail][:HEAD_WINDOW].decode("utf-8", "replace")
    payload = read_prefix(head, max_depth) or {}
    if tail or len(kept) > HEAD_WINDOW:
        end = kept[-(tail or TAIL_WINDOW) :].decode("utf-8", "replace")
        for name, value in _tail_fields(end).items():
            payload.setdefault(name, value)
    return payload
