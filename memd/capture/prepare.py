"""From a hook client's ``Ingest`` envelope to a ``NewEvent`` row, without IO.

The steps, in order, each a plain function:

1. parse the payload (``parse_payload``): Claude Code's stdin is one JSON object; a
   payload the hook client truncated at its size cap keeps only the fields that can
   be read from its head (``salvage_fields``);
2. derive the idempotency key (``idempotency_key``): event + session + ``tool_use_id``
   where present, else the sha256 of the raw payload, so a hook that fires twice
   stores one row while PreToolUse/PostToolUse of one call stay distinct;
3. summarize (``summarize``): kind, tool, title, searchable text, importance.

Per-event/per-tool normalization and the privacy filter slot in at step 3, before
anything reaches the store.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import msgspec

from ..protocol import Ingest

__all__ = ["InvalidPayload", "NewEvent", "idempotency_key", "parse_payload", "prepare", "summarize"]

TEXT_CAP = 16 * 1024
"""Characters of searchable text kept per event."""

SALVAGE_WINDOW = 64 * 1024

_ID_FIELDS = frozenset(
    {
        "session_id",
        "transcript_path",
        "cwd",
        "hook_event_name",
        "prompt_id",
        "tool_use_id",
        "agent_id",
        "agent_transcript_path",
        "permission_mode",
        "scratchpad_dir",
        "tool_name",
        "effort",
    }
)
"""Payload fields that identify rather than describe: kept in the payload, not in the text
(the tool name goes to the title)."""

_HEAD_FIELDS = ("session_id", "cwd", "hook_event_name", "prompt_id", "tool_name", "tool_use_id", "agent_id")


class InvalidPayload(ValueError):
    """The hook payload is not a JSON object and nothing can be salvaged from it."""


class NewEvent(msgspec.Struct, kw_only=True):
    """One event ready for the store: everything but the ids the store assigns."""

    idem_key: str
    kind: str
    session_id: str | None
    cwd: str | None
    tool: str | None
    title: str
    text: str
    payload: str
    importance: int
    client_ts: float
    received_at: float
    size: int
    truncated: bool


_json_decode = msgspec.json.Decoder(dict[str, Any]).decode
_json_encode = msgspec.json.Encoder().encode


def salvage_fields(kept: bytes) -> dict[str, str]:
    """Read the common string fields from what the hook client kept of a huge payload.

    It keeps the head and the tail: Claude Code writes the identifying fields first
    (session_id, cwd, tool_name, ...) and ``tool_use_id`` after ``tool_response``.
    """
    text = (kept[:SALVAGE_WINDOW] + b"\n" + kept[-SALVAGE_WINDOW:]).decode("utf-8", "replace")
    found: dict[str, str] = {}
    for name in _HEAD_FIELDS:
        match = re.search(rf'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if match:
            try:
                found[name] = msgspec.json.decode(f'"{match.group(1)}"'.encode(), type=str)
            except msgspec.DecodeError:
                continue
    return found


def parse_payload(ingest: Ingest) -> dict[str, Any]:
    if ingest.truncated:
        fields: dict[str, Any] = salvage_fields(ingest.payload)
        if not fields:
            raise InvalidPayload(f"truncated payload of {ingest.size} bytes has no readable fields")
        fields["memd_truncated"] = {"kept_bytes": len(ingest.payload), "size": ingest.size}
        return fields
    try:
        return _json_decode(ingest.payload)
    except msgspec.DecodeError as exc:
        raise InvalidPayload(f"payload of {len(ingest.payload)} bytes is not a JSON object: {exc}") from None


def idempotency_key(event: str, payload: dict[str, Any], raw: bytes) -> str:
    session = payload.get("session_id") or ""
    tool_use_id = payload.get("tool_use_id")
    if isinstance(tool_use_id, str) and tool_use_id:
        discriminator = f"tool:{tool_use_id}"
    else:
        discriminator = hashlib.sha256(raw).hexdigest()
    return f"{event}:{session}:{discriminator}"


def _strings(value: Any, key: str = "") -> list[str]:
    """The string leaves of a JSON value, skipping identifier fields."""
    if key in _ID_FIELDS:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, k)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def summarize(event: str, payload: dict[str, Any]) -> tuple[str | None, str, str, int]:
    """(tool, title, searchable text, importance) for any hook event.

    A generic summary: the next issue replaces it with per-event, per-tool normalizers.
    """
    tool = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else None
    text = "\n".join(_strings(payload))[:TEXT_CAP]
    first_line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    title = " ".join(part for part in (event, tool, first_line[:80]) if part)
    importance = 3 if event == "PostToolUseFailure" or payload.get("is_interrupt") else 2
    return tool, title, text, importance


def prepare(ingest: Ingest, received_at: float) -> NewEvent:
    """Turn one envelope into a ``NewEvent``; raise ``InvalidPayload`` if it holds no event."""
    payload = parse_payload(ingest)
    named = payload.get("hook_event_name")
    event = named if isinstance(named, str) and named else ingest.event or "Unknown"
    tool, title, text, importance = summarize(event, payload)
    session = payload.get("session_id")
    cwd = payload.get("cwd")
    return NewEvent(
        idem_key=idempotency_key(event, payload, ingest.payload),
        kind=event,
        session_id=session if isinstance(session, str) and session else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        tool=tool,
        title=title,
        text=text,
        payload=_json_encode(payload).decode(),
        importance=importance,
        client_ts=ingest.sent_at_ns / 1e9 if ingest.sent_at_ns > 0 else received_at,
        received_at=received_at,
        size=ingest.size or len(ingest.payload),
        truncated=ingest.truncated,
    )
