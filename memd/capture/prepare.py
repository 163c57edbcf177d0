"""From a hook client's ``Ingest`` envelope to a ``NewEvent`` row, without IO.

The steps, in order, each a plain function:

1. parse the payload (``parse_payload``): Claude Code's stdin is one JSON object; a
   payload the hook client truncated at its size cap, or one nested too deep, keeps
   every field that can be read from its head, as it was, the field the cut falls into
   up to the cut, and its tail's ids (``memd.capture.salvage``);
2. derive the idempotency key (``idempotency_key``): the event's own id where Claude
   Code gives one, the same whether the event comes live, from the spool, from
   ``memctl import`` or copied into a fork's transcript; else the sha256 of the payload
   and where the transcript stood (``Ingest.position``), so a hook that fires twice
   stores one row while two compactions in one prompt stay two;
3. filter private content and secrets out of the whole payload (``memd.capture.privacy``):
   nothing after this step sees the unfiltered text;
4. normalize (``events.normalize``): kind, tool, title, text, meta, importance, or
   skip the event;
5. clip every string of the payload that is stored beside the normalized fields.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from memd_wire.frame import TAIL_KEEP

from ..config import CaptureConfig
from ..protocol import CLAUDE_CODE, SECRET_KIND, Ingest
from ..surrogates import repair_lone_surrogates
from .agents import agent_name, translate
from .compaction import summary_body
from .events import Normalized, Skipped, normalize
from .privacy import Privacy, Redactions
from .rescan import Rescan
from .salvage import salvage
from .text import clip_strings

__all__ = [
    "LONE_SURROGATES",
    "REPAIR_COUNTER",
    "Capture",
    "InvalidPayload",
    "NewEvent",
    "idempotency_key",
    "parse_payload",
    "redaction_counts",
]

MAX_DEPTH = 64
"""Deepest JSON nesting kept; real hook payloads stay under 20 levels."""
INVALID_UTF8 = "memd_invalid_utf8"
"""Payload flag: bytes that were no UTF-8 were replaced by U+FFFD."""
LONE_SURROGATES = "memd_lone_surrogates"
"""Payload field: how many lone UTF-16 surrogate escapes were replaced by U+FFFD (by the
decoder, or by ``memctl import`` before it sent the event)."""
REPAIR_COUNTER = "lone_surrogates"
"""The ``redaction_totals`` row that counts the events whose lone surrogates were replaced
(``memd.store.queries.lone_surrogate_events``; not a redaction, so not among them)."""
_IDENTIFYING = ("session_id", "hook_event_name", "tool_name", "tool_use_id")
"""A salvaged payload without any of these is nothing memd can store."""


class InvalidPayload(ValueError):
    """The hook payload is not a JSON object and nothing can be salvaged from it."""


class NewEvent(msgspec.Struct, kw_only=True):
    """One event ready for the store: everything but the ids the store assigns."""

    idem_key: str
    event: str
    kind: str
    session_id: str | None
    cwd: str | None
    tool: str | None
    title: str
    text: str
    meta: str
    payload: str
    importance: int
    client_ts: float
    received_at: float
    size: int
    truncated: bool
    session: dict[str, str] = {}
    """Columns of the session row this event sets (source, model, end_reason)."""
    redactions: dict[str, int] = {}
    """What privacy filtering removed: counts and lengths, never content; and ``lone_surrogates``
    (``REPAIR_COUNTER``): 1 when lone surrogates were replaced.  The store sums them all in
    ``redaction_totals``."""
    claude_memory: str = ""
    """``Ingest.claude_memory``: what Claude Code's own memory does in the session (not stored)."""
    agent_pid: int = 0
    """``Ingest.agent_pid``: the process that ran the hook (not stored)."""
    agent: str = CLAUDE_CODE
    """The agent whose hook sent it (``memd.capture.agents``)."""
    per_compaction: bool = False
    """One of a compaction's own events with no id of its own (PreCompact, SessionStart with
    source ``compact``): the store adds to ``idem_key`` how many compactions (PostCompact) the
    session has had, since two compactions in one prompt fire byte-identical payloads and the
    transcript may not show the first yet when the second fires (Claude Code writes it
    lazily), so ``position`` alone may not tell them apart."""


_json_decode = msgspec.json.Decoder(dict[str, Any]).decode
_json_encode = msgspec.json.Encoder().encode


def _depth(value: Any) -> int:
    """How deeply ``value`` nests, counted without recursion (it may be very deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list) and depth > deepest:
            deepest = depth
            if depth > MAX_DEPTH:
                break
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _salvaged(ingest: Ingest, why: str) -> dict[str, Any]:
    """What can be read of the raw bytes (``memd.capture.salvage``), when they are no whole
    JSON object (cut by the client) or one nested too deep to keep, and why."""
    kept, replaced = repair_lone_surrogates(ingest.payload)  # a tool output cut mid-emoji, as in ``_decode``
    fields = salvage(kept, MAX_DEPTH, tail=TAIL_KEEP if ingest.truncated else 0)
    if not any(isinstance(fields.get(name), str) for name in _IDENTIFYING):
        raise InvalidPayload(f"payload of {ingest.size or len(ingest.payload)} bytes {why}, no readable fields")
    fields["memd_dropped"] = {"reason": why, "kept_bytes": len(ingest.payload), "size": ingest.size}
    if replaced:
        fields[LONE_SURROGATES] = replaced
    return fields


def _decode(data: bytes) -> dict[str, Any]:
    """The JSON object in ``data``, repaired only once decoding failed (the fast path stays
    one decode): invalid UTF-8 bytes and lone UTF-16 surrogate escapes (Claude Code cuts an
    emoji in half) become U+FFFD, and the payload says so (``memd_invalid_utf8``,
    ``memd_lone_surrogates``: how many were replaced)."""
    flags: dict[str, Any] = {}
    while True:
        try:
            payload = _json_decode(data)
        except UnicodeDecodeError:
            if INVALID_UTF8 in flags:
                raise
            data = data.decode("utf-8", "replace").encode()
            flags[INVALID_UTF8] = True
        except msgspec.DecodeError:
            if LONE_SURROGATES in flags:
                raise
            data, replaced = repair_lone_surrogates(data)
            if not replaced:
                raise
            flags[LONE_SURROGATES] = replaced
        else:
            payload.update(flags)
            return payload


def parse_payload(ingest: Ingest) -> dict[str, Any]:
    """The payload as a JSON object, or what can be salvaged of it; ``InvalidPayload`` if nothing."""
    if ingest.truncated:
        return _salvaged(ingest, "was cut by the hook client's size cap")
    try:
        payload = _decode(ingest.payload)
    except RecursionError:
        return _salvaged(ingest, f"nests deeper than {MAX_DEPTH} levels")
    except msgspec.DecodeError as exc:
        raise InvalidPayload(f"payload of {len(ingest.payload)} bytes is not a JSON object: {exc}") from None
    if _depth(payload) > MAX_DEPTH:
        return _salvaged(ingest, f"nests deeper than {MAX_DEPTH} levels")
    return payload


def idempotency_key(event: str, payload: dict[str, Any], raw: bytes, position: str = "") -> str:
    """One event, one key, however it reaches memd.

    - a tool call: ``tool_use_id``, without the session (a fork's transcript copies its
      parent's calls under its own session id);
    - a prompt, and the turn's Stop: the session and ``prompt_id`` (a transcript's
      ``promptId``), whatever else the payload holds (a Stop a Stop hook sent back,
      ``stop_hook_active``, is a turn's second and keeps the hash);
    - a subagent's stop: its ``agent_id`` and the digest of its last message (a resumed
      agent stops again);
    - a compaction's summary: the digest of its body (``compaction.summary_body``);
    - anything else: the sha256 of the payload, and ``position`` when the client read one
      (and, for a compaction's PreCompact and SessionStart, the store adds the session's count
      of compactions: ``NewEvent.per_compaction``).
    """
    session = _text(payload.get("session_id"))
    if tool_use_id := _text(payload.get("tool_use_id")):
        return f"{event}:tool:{tool_use_id}"
    prompt_id = _text(payload.get("prompt_id"))
    if prompt_id and (event == "UserPromptSubmit" or (event == "Stop" and payload.get("stop_hook_active") is not True)):
        return f"{event}:{session}:prompt:{prompt_id}"
    if event == "SubagentStop" and (agent_id := _text(payload.get("agent_id"))):
        return f"{event}:{session}:agent:{agent_id}:{_digest(_text(payload.get('last_assistant_message')))}"
    if event == "PostCompact" and (summary := _text(payload.get("compact_summary"))):
        return f"{event}:{session}:summary:{_digest(summary_body(summary))}"
    key = f"{event}:{session}:{hashlib.sha256(raw).hexdigest()}"
    return f"{key}:at:{position}" if position else key


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _digest(text: str) -> str:
    """Of ``text`` blind to whitespace: a live payload and a transcript may differ there."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:32]


def _session_columns(normalized: Normalized) -> dict[str, str]:
    meta = normalized.meta
    if normalized.kind == "session_start":
        return {k: meta[k] for k in ("source", "model") if isinstance(meta.get(k), str)}
    if normalized.kind == "session_end":
        return {"end_reason": str(meta.get("reason", ""))}
    return {}


def redaction_counts(redactions: Redactions) -> dict[str, int]:
    """``redaction_totals``' counters of one filtering: ``secrets``, ``secret:<kind>``..."""
    return {
        "private_spans": redactions.private_spans,
        "secrets": redactions.secrets,
        "unclosed": int(redactions.unclosed),
        "chars_removed": redactions.chars_removed,
        **{SECRET_KIND + kind: n for kind, n in sorted(redactions.kinds.items())},
    }


def _read(ingest: Ingest) -> tuple[str, str, dict[str, Any]]:
    """The agent, the event in Claude Code's terms ("" for none of the session's) and the payload."""
    raw = parse_payload(ingest)
    named = raw.get("hook_event_name")
    agent = agent_name(ingest.agent)
    event, payload = translate(agent, named if isinstance(named, str) and named else ingest.event or "Unknown", raw)
    return agent, event, payload


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class Capture:
    """The capture pipeline with its settings: build once, ``prepare`` every event."""

    def __init__(self, config: CaptureConfig, privacy: Privacy) -> None:
        self.config = config
        self.privacy = privacy
        self.rescan = Rescan(privacy)
        """The same secret rules for content stored already (``memctl scan``, a restore)."""

    def key(self, ingest: Ingest) -> str:
        """The idempotency key ``prepare`` would give the event, for a fraction of its cost
        (no privacy filter): an import asks which events are stored already."""
        _agent, event, raw = _read(ingest)
        return idempotency_key(event or ingest.event, raw, ingest.payload, ingest.position)

    def prepare(self, ingest: Ingest, received_at: float, reply: str = "") -> NewEvent | Skipped:
        """Turn one envelope into a ``NewEvent`` (or ``Skipped``); raise ``InvalidPayload``.
        ``reply``: the turn's reply as the agent's transcript has it, for a Stop whose
        payload holds it garbled (``memd.capture.agents.gemini_reply``)."""
        agent, event, raw = _read(ingest)
        if reply and event == "Stop":
            raw = {**raw, "last_assistant_message": reply}
        if not event:
            return Skipped(f"{ingest.event} is no event of a {agent} session")
        idem_key = idempotency_key(event, raw, ingest.payload, ingest.position)
        payload, redactions = self.privacy.value(raw)
        normalized = normalize(event, payload, self.config)
        if isinstance(normalized, Skipped):
            return normalized
        counts = redaction_counts(redactions)
        if any(counts.values()):
            normalized.meta["privacy"] = dict(counts)
        replaced = raw.get(LONE_SURROGATES)
        if isinstance(replaced, int) and not isinstance(replaced, bool) and replaced > 0:
            normalized.meta["lone_surrogates"] = replaced
            counts[REPAIR_COUNTER] = 1  # summed with the redactions: ``memctl status`` shows the events
        limits = (self.config.max_field_chars, self.config.max_field_lines)
        return NewEvent(
            idem_key=idem_key,
            event=event,
            kind=normalized.kind,
            session_id=_str(payload.get("session_id")),
            cwd=_str(payload.get("cwd")),
            tool=normalized.tool,
            title=normalized.title,
            text=normalized.text,
            meta=_json_encode(normalized.meta).decode(),
            payload=_json_encode(clip_strings(payload, *limits)).decode(),
            importance=normalized.importance,
            client_ts=ingest.sent_at_ns / 1e9 if ingest.sent_at_ns > 0 else received_at,
            received_at=received_at,
            size=ingest.size or len(ingest.payload),
            truncated=ingest.truncated,
            session=_session_columns(normalized),
            redactions=counts,
            per_compaction=event == "PreCompact" or (event == "SessionStart" and payload.get("source") == "compact"),
            claude_memory=ingest.claude_memory,
            agent_pid=ingest.agent_pid,
            agent=agent,
        )
