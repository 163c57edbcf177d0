"""Claude Code transcripts as the hook events live capture would have seen.

A transcript (``~/.claude/projects/<slug>/<session>.jsonl``) holds one JSON record per
line and one record per content block: an assistant message is spread over several
records sharing ``message.id``, a tool call is a ``tool_use`` block in one record and its
``tool_result`` in a later user record.  ``hook_events`` walks the records once, in file
order, and yields what Claude Code's hooks would have sent for them, so that import goes
through the daemon's one capture path (privacy filter, normalizer, store) like live
events:

- a typed prompt → ``UserPromptSubmit`` with its ``prompt_id`` (a slash command as
  ``/name args``; harness records, ``isMeta``, local-command output and interruption
  notes are not prompts, and neither is a command Claude Code ran itself, such as
  ``/compact`` or ``/model``: its output record follows it, and no hook fired for it);
- a tool call with its result → ``PostToolUse`` (``tool_response`` is the record's
  ``toolUseResult``, the same object the hook gets), or ``PostToolUseFailure`` with the
  error text; a call the user refused fires neither, as live;
- the last assistant text of a turn → ``Stop`` (``last_assistant_message``, the turn's
  ``prompt_id``), or ``SubagentStop`` in a subagent's transcript;
- a compaction (``compact_boundary`` and the ``isCompactSummary`` record) → ``PostCompact``.

Each event carries the record's own time, session and ``cwd`` (the directory slug is
lossy), and ``import_uuid``, the uuid of the record it came from.  The daemon keys an
event by the ids Claude Code gives it (``tool_use_id``, ``prompt_id``, ``agent_id``, the
compaction summary's body), the same live and imported, so an event captured live, or
imported before, is not stored again.  A fork's transcript starts with copies of its
parent's records (``fork_copies`` finds them): they are the parent's events, not the
fork's, and ``hook_events`` leaves them out.

Claude Code 2.1's other records are not events: ``microcompact_boundary`` (old tool
results cleared from the model's context, no summary), ``memory_saved`` (its own memory
files written), ``relevant_memories`` attachments (those files read back into context),
titles, modes, costs and queue operations describe its context management, and no hook
fires for them live; an idle compaction is a compaction like any other.

Memory stays bounded whatever the file's size: one line at a time, the current turn's
last text, and the tool calls still waiting for their result (a few at a time; capped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from ..surrogates import repair_lone_surrogates

__all__ = ["HookEvent", "Reader", "fork_copies", "hook_events", "uuid_of"]

MAX_PENDING_TOOLS = 1000
"""Tool calls kept waiting for their result; an older one whose result never came is dropped."""
LONE_SURROGATES = "memd_lone_surrogates"
"""Set on a record (and the events made of it): how many lone surrogates were replaced.
Capture reads the same field (``memd.capture.prepare.LONE_SURROGATES``)."""
REFUSED = "The user doesn't want to proceed with this tool use"
_LOCAL_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>")
_NOT_PROMPTS = (*_LOCAL_OUTPUT, "<local-command-caveat>", "[Request interrupted")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


@dataclass
class HookEvent:
    """One event as a hook would have sent it: its name, payload and time (ns)."""

    event: str
    payload: dict[str, Any]
    at_ns: int


@dataclass
class Reader:
    """Decodes a transcript's lines; counts what it could not read, and what it repaired.

    A line with lone UTF-16 surrogate escapes (a tool output that cut an emoji in half) is
    no valid JSON text for msgspec: it is read with them replaced by U+FFFD, as the daemon
    does for a live payload, and its record says how many (``LONE_SURROGATES``), which the
    events made of it carry to the daemon.
    """

    corrupt: int = 0
    records: int = 0
    repaired: int = 0
    """Lines read once their lone surrogates were replaced."""

    def records_of(self, lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
        for line in lines:
            if not line.strip():
                continue
            replaced = 0
            try:
                try:
                    record = msgspec.json.decode(line)
                except msgspec.DecodeError:
                    line, replaced = repair_lone_surrogates(line)
                    if not replaced:
                        raise
                    record = msgspec.json.decode(line)
            except (msgspec.DecodeError, UnicodeDecodeError):
                self.corrupt += 1  # a torn last line after a crash, a bad byte: skip it, go on
                continue
            if isinstance(record, dict):
                if replaced:
                    self.repaired += 1
                    record[LONE_SURROGATES] = replaced
                self.records += 1
                yield record
            else:
                self.corrupt += 1


def _time_ns(record: dict[str, Any]) -> int | None:
    stamp = record.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


def _text(content: object) -> str:
    """The text of a message's content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def prompt_of(content: object) -> str | None:
    """The prompt a user record's content stands for, or None when it is no prompt."""
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    text = _text(content).strip()
    if not text or text.startswith(_NOT_PROMPTS):
        return None
    if command := _COMMAND.search(text):
        args = _ARGS.search(text)
        return " ".join(part for part in (command.group(1).strip(), args.group(1).strip() if args else "") if part)
    return text


@dataclass
class _Session:
    """What the walk remembers between records."""

    pending: dict[str, tuple[str, Any, int]] = field(default_factory=dict)
    """tool_use id → (tool name, input, lone surrogates replaced in its line), until its result comes."""
    last_text: str = ""
    last_text_at: int = 0
    last_uuid: str = ""
    last_repaired: int = 0
    compact_trigger: str = ""
    prompt_id: str = ""
    """The current turn's prompt (its Stop carries it)."""
    command: tuple[HookEvent, dict[str, Any]] | None = None
    """A slash command's prompt (and its record's session fields), held until the next record
    says whether Claude Code ran it itself (its output follows) or sent it to the model."""


def fork_copies(lines: Iterable[bytes], session_id: str) -> tuple[str, set[str]]:
    """(The parent session, the uuids of the records copied from it) of a fork's transcript
    (``--fork-session``), or ("", empty) for any other.

    A fork's transcript opens with its parent's records, uuids kept and ``sessionId``
    rewritten; the copied assistant records keep ``requestSessionId``, the parent's.  The
    copies are every record up to the last of those (the parent's own transcript, when it is
    still there, names any past it: ``hook_events`` is given both).
    """
    parent, uuids, copied = "", [], set()
    for line in lines:
        uuid = uuid_of(line)
        if uuid:
            uuids.append(uuid)
        if b'"requestSessionId"' not in line:
            continue
        try:
            record = msgspec.json.decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError):
            continue
        request = record.get("requestSessionId") if isinstance(record, dict) else None
        if isinstance(request, str) and request and request != session_id:
            parent = request
            copied.update(uuids)
            uuids.clear()
    return parent, copied


def uuid_of(line: bytes) -> str:
    """The record's own uuid, read without decoding the line (only a record's key is unescaped)."""
    at = line.find(b'"uuid":"')
    while at > 0 and line[at - 1] == 0x5C:
        at = line.find(b'"uuid":"', at + 1)
    if at < 0:
        return ""
    end = line.find(b'"', at + 8)
    return line[at + 8 : end].decode("ascii", "replace") if end > at else ""


def hook_events(
    records: Iterable[dict[str, Any]], agent_type: str = "", copied: frozenset[str] | set[str] = frozenset()
) -> Iterator[HookEvent]:
    """The hook events of a transcript's records, in order.  ``agent_type``: this is a
    subagent's transcript (its turns end in ``SubagentStop``).  ``copied``: uuids of records
    to leave out, a fork's copies of its parent's (``fork_copies``)."""
    state = _Session()
    base: dict[str, Any] = {}
    for record in records:
        kind = record.get("type")
        at = _time_ns(record)
        if kind not in ("user", "assistant", "system") or at is None:
            continue
        if copied and record.get("uuid") in copied:
            continue
        session = record.get("sessionId")
        if not isinstance(session, str) or not session:
            continue
        base = {"session_id": session, "cwd": record.get("cwd") or base.get("cwd") or "", "transcript_path": ""}
        if record.get("isSidechain") and record.get("agentId"):
            base["agent_id"] = record["agentId"]
            base["agent_type"] = agent_type or "subagent"
        uuid, repaired = record.get("uuid"), record.get(LONE_SURROGATES)
        uuid = uuid if isinstance(uuid, str) else ""
        repaired = repaired if type(repaired) is int else 0  # not a bool
        if kind == "system":
            if record.get("subtype") == "compact_boundary":
                metadata = record.get("compactMetadata")
                state.compact_trigger = (metadata or {}).get("trigger", "") if isinstance(metadata, dict) else ""
            continue
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if state.command is not None:
            if kind == "user" and _text(content).lstrip().startswith(_LOCAL_OUTPUT):
                state.command = None  # Claude Code ran it itself (/compact, /model): no prompt, no hook
            else:
                yield from _prompt(state, *state.command, agent_type)
        if kind == "assistant":
            _assistant(state, content, at, uuid, repaired)
            continue
        if record.get("isCompactSummary"):
            summary = _text(content).strip()
            if summary:
                payload = {**base, "trigger": state.compact_trigger or "auto", "compact_summary": summary}
                yield HookEvent("PostCompact", _marked({**payload, "import_uuid": uuid}, repaired), at)
            continue
        yield from _tool_results(state, base, record, content, at, repaired)
        if record.get("isMeta"):
            continue
        prompt = prompt_of(content)
        if prompt is not None:
            payload = {**base, "prompt": prompt, "import_uuid": uuid}
            if isinstance(record.get("promptId"), str) and record["promptId"]:
                payload["prompt_id"] = record["promptId"]
            event = HookEvent("UserPromptSubmit", _marked(payload, repaired), at)
            if _COMMAND.search(_text(content)):
                state.command = event, base  # the next record tells whether it was sent to the model
            else:
                yield from _prompt(state, event, base, agent_type)
    if state.command is not None:
        yield from _prompt(state, *state.command, agent_type)
    yield from _end_turn(state, base, agent_type)


def _prompt(state: _Session, event: HookEvent, base: dict[str, Any], agent_type: str) -> Iterator[HookEvent]:
    """A new turn: the last one's end, then its prompt."""
    state.command = None
    yield from _end_turn(state, base, agent_type)
    state.prompt_id = event.payload.get("prompt_id", "")
    yield event


def _marked(payload: dict[str, Any], repaired: int) -> dict[str, Any]:
    """``payload``, saying how many lone surrogates were replaced in the lines it was made of."""
    if repaired:
        payload[LONE_SURROGATES] = repaired
    return payload


def _assistant(state: _Session, content: object, at: int, uuid: str, repaired: int) -> None:
    """Remember the record's tool calls until their results, and its text as the turn's latest."""
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
            if len(state.pending) >= MAX_PENDING_TOOLS:
                state.pending.pop(next(iter(state.pending)))
            state.pending[block["id"]] = (str(block.get("name") or "unknown"), block.get("input"), repaired)
        elif block.get("type") == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            state.last_text, state.last_text_at, state.last_uuid = block["text"].strip(), at, uuid
            state.last_repaired = repaired


def _tool_results(
    state: _Session, base: dict[str, Any], record: dict[str, Any], content: object, at: int, repaired: int
) -> Iterator[HookEvent]:
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call = state.pending.pop(str(block.get("tool_use_id")), None)
        if call is None:
            continue
        name, tool_input, call_repaired = call
        result = record.get("toolUseResult", _text(block.get("content")))
        payload = {**base, "tool_name": name, "tool_input": tool_input, "tool_use_id": block["tool_use_id"]}
        if state.prompt_id:  # the turn's, as the hook gives it (when the transcript records it)
            payload["prompt_id"] = state.prompt_id
        _marked(payload, call_repaired + repaired)
        if block.get("is_error"):
            error = _text(block.get("content")) or (result if isinstance(result, str) else "")
            if error.startswith(REFUSED) or result == "User rejected tool use":
                continue  # a refused call fires no hook live
            yield HookEvent("PostToolUseFailure", {**payload, "error": error, "is_interrupt": False}, at)
        else:
            yield HookEvent("PostToolUse", {**payload, "tool_response": result}, at)


def _end_turn(state: _Session, base: dict[str, Any], agent_type: str) -> Iterator[HookEvent]:
    if not state.last_text or not base:
        return
    event = "SubagentStop" if agent_type else "Stop"
    payload = _marked(
        {**base, "last_assistant_message": state.last_text, "import_uuid": state.last_uuid}, state.last_repaired
    )
    if not agent_type:
        payload["stop_hook_active"] = False
        if state.prompt_id:
            payload["prompt_id"] = state.prompt_id
    yield HookEvent(event, payload, state.last_text_at)
    state.last_text = ""
