"""One normalizer per Claude Code hook event: a payload in, a ``Normalized`` event out.

Every event gets a semantic ``kind`` (the hook name says when, the kind says what),
a one-line ``title``, searchable ``text``, structured ``meta`` and an ``importance``
(1 reads and searches, 2 edits, commands, prompts and conclusions, 3 failures).
Or it is ``Skipped``, with a reason: memd's own MCP traffic (no feedback loops),
the noise rules of ``[capture]``.  Failures are never skipped.

Only ``session_id``, ``transcript_path``, ``cwd`` and ``hook_event_name`` are on
every payload, and not even those in old shapes: every other field is optional here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..config import CaptureConfig
from .claude_memory import parse as parse_memory
from .compaction import summary_body
from .file_tools import FILE_TOOLS
from .tasks import TASK_TOOLS, task_view
from .text import first_line, join, shorten, string
from .tools import is_trivial_command, view
from .toolview import HIGH, LOW, MEDIUM, Limits

__all__ = ["DERIVED_KINDS", "LOGGED", "Normalized", "Skipped", "normalize"]

DERIVED_KINDS = ("session_summary", "snapshot", "consolidated")
"""Kinds of the events memd derives from the log (a session's summary and snapshot, replaced
in place: the append-only trigger's exceptions; consolidated memories): counts and timelines
leave them out."""
LOGGED = f"kind NOT IN {DERIVED_KINDS!r}"
"""SQL: an event of the log itself, not a derived one (prefix a table alias when needed)."""

SELF_PREFIXES = ("mcp__memd__", "mcp__plugin_memd_memd__")
"""memd's own MCP tools, registered by ``memctl mcp install`` or by the plugin."""


class Normalized(msgspec.Struct, kw_only=True):
    kind: str
    title: str
    text: str = ""
    tool: str | None = None
    meta: dict[str, Any] = {}
    importance: int = MEDIUM


class Skipped(msgspec.Struct, frozen=True):
    reason: str


def _limits(config: CaptureConfig) -> Limits:
    return Limits(config.max_field_chars, config.max_field_lines)


def _with(meta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**meta, **{k: v for k, v in extra.items() if v not in (None, "", [], {})}}


# --- sessions and prompts -------------------------------------------------------------------


def session_start(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    """``seconds_since_last_response`` (2.1, resume and fork) is kept: a fork's SessionStart names
    no parent, but its parent is the session that replied that long ago."""
    source, model = string(p.get("source")) or "startup", string(p.get("model"))
    since = p.get("seconds_since_last_response")
    return Normalized(
        kind="session_start",
        title=f"Session started ({source})" + (f" · {model}" if model else ""),
        text=join(source, model),
        meta=_with(
            {"source": source}, model=model, title=string(p.get("session_title")) or None,
            since_last_response=since if isinstance(since, int | float) and not isinstance(since, bool) else None,
        ),
    )  # fmt: skip


def prompt(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    text = string(p.get("prompt"))
    if text.startswith("<task-notification>"):  # Claude Code reporting a background task, not the user
        return Normalized(
            kind="prompt",
            title="Background task notification",
            text=_limits(config).clip(text),
            meta={"chars": len(text), "notification": True},
            importance=LOW,
        )
    return Normalized(
        kind="prompt",
        title=f"Prompt: {shorten(first_line(text), 90)}",
        text=_limits(config).clip(text),
        meta={"chars": len(text)},
    )


def remember(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    """A memory someone asked memd to keep (``Remember``: MCP ``mem_remember``)."""
    text = string(p.get("text"))
    return Normalized(
        kind="memory",
        title=f"Remember: {shorten(first_line(text), 90)}",
        text=_limits(config).clip(text),
        meta={"chars": len(text)},
        importance=HIGH,
    )


def claude_memory(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    """One of Claude Code's own memory files (``ClaudeMemory``: ``path``, ``content``, ``scope``,
    sent by ``memd.services.native_memory``).  The title says what kind of fact it is and its
    description (what Claude Code's recall decides on); the text holds the name, the
    description and the body, so that a search finds it by any of them."""
    path = string(p.get("path"))
    memory = parse_memory(string(p.get("content")), path.rsplit("/", 1)[-1].removesuffix(".md") or "memory")
    team = string(p.get("scope")) == "team"
    summary = memory.description or first_line(memory.body) or memory.name
    label = (memory.type or "untyped") + (", team" if team else "")
    return Normalized(
        kind="claude-memory",
        title=f"Claude Code memory ({label}): {shorten(summary, 110)}",
        text=_limits(config).clip("\n".join(part for part in (memory.name, memory.description, memory.body) if part)),
        meta=_with(
            {"type": memory.type, "name": memory.name, "path": path, "scope": "team" if team else "project"},
            description=memory.description, links=memory.links[:20],
        ),
        importance=HIGH,
    )  # fmt: skip


def instructions_loaded(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    path = string(p.get("file_path"))
    return Normalized(
        kind="instructions",
        title=f"Instructions loaded: {path}",
        text=path,
        meta=_with({"files": [path] if path else []}, reason=string(p.get("load_reason"))),
        importance=LOW,
    )


def session_end(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    reason = string(p.get("reason")) or "unknown"
    return Normalized(kind="session_end", title=f"Session ended ({reason})", text=reason, meta={"reason": reason})


def notification(p: dict[str, Any], config: CaptureConfig) -> Normalized | Skipped:
    if config.notifications == "skip":
        return Skipped("notification")
    message, kind = string(p.get("message")), string(p.get("notification_type"))
    return Normalized(
        kind="notification",
        title=f"Notification: {shorten(message, 90)}",
        text=message,
        meta=_with({}, notification_type=kind),
        importance=LOW,
    )


# --- compaction, stops, subagents -------------------------------------------------------------


def pre_compact(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    trigger, instructions = string(p.get("trigger")) or "auto", string(p.get("custom_instructions"))
    return Normalized(
        kind="pre_compact",
        title=f"Compaction started ({trigger})",
        text=join(trigger, instructions),
        meta=_with({"trigger": trigger}, custom_instructions=instructions),
    )


def post_compact(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    """The summary's body only: the model's ``<analysis>`` is its scratchpad, and Claude Code's
    framing around the transcript's copy is instructions to the model (``compaction``)."""
    trigger, summary = string(p.get("trigger")) or "auto", summary_body(string(p.get("compact_summary")))
    return Normalized(
        kind="compact_summary",
        title=f"Compaction summary ({trigger})",
        text=_limits(config).clip(summary),
        meta={"trigger": trigger, "chars": len(summary)},
    )


def stop(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    message = string(p.get("last_assistant_message"))
    background = p.get("background_tasks")
    running = [t for t in background if isinstance(t, dict)] if isinstance(background, list) else []
    effort = p.get("effort")  # 2.1: {"level": "medium"}, the reasoning effort the turn ran at
    level = string(effort.get("level")) if isinstance(effort, dict) else ""
    meta = _with(
        {"stop_hook_active": p.get("stop_hook_active") is True},
        background_tasks=len(running) or None, effort=level or None,
    )  # fmt: skip
    return Normalized(
        kind="assistant",
        title=f"Assistant: {shorten(first_line(message), 90)}" if message else "Assistant stopped",
        text=_limits(config).clip(message),
        meta=meta,
    )


def _agent_name(p: dict[str, Any]) -> str:
    # Claude Code's own internal agents (compaction) have an empty agent_type.
    return string(p.get("agent_type")) or "internal"


def subagent_start(p: dict[str, Any], config: CaptureConfig) -> Normalized:
    name = _agent_name(p)
    return Normalized(
        kind="subagent_start",
        title=f"Subagent started: {name}",
        text=name,
        meta=_with({"agent_type": name}, agent_id=string(p.get("agent_id"))),
        importance=LOW,
    )


def subagent_stop(p: dict[str, Any], config: CaptureConfig) -> Normalized | Skipped:
    name, message = _agent_name(p), string(p.get("last_assistant_message"))
    if name == "internal" and "<summary>" in message:
        return Skipped("the compaction agent: its summary is the PostCompact event's")
    return Normalized(
        kind="subagent_stop",
        title=f"Subagent {name} finished: {shorten(first_line(message), 70)}"
        if message
        else f"Subagent {name} finished",
        text=_limits(config).clip(message),
        meta=_with({"agent_type": name}, agent_id=string(p.get("agent_id"))),
        importance=LOW if name == "internal" else MEDIUM,
    )


# --- tools ------------------------------------------------------------------------------------


def _ignored_path(files: list[str], parts: list[str]) -> bool:
    return any(part in parts for path in files for part in path.replace("\\", "/").split("/"))


def tool_event(event: str, p: dict[str, Any], config: CaptureConfig) -> Normalized | Skipped:
    tool = string(p.get("tool_name")) or "unknown"
    if tool.startswith(SELF_PREFIXES):
        return Skipped("memd's own tool")
    failed = event == "PostToolUseFailure"
    limits = _limits(config)
    if tool in TASK_TOOLS and not failed:
        v = task_view(tool, p.get("tool_input"), p.get("tool_response"), limits)
        return Normalized(
            kind="task_state", tool=tool, title=v.title, text=v.text, meta=v.meta, importance=v.importance
        )
    v = view(tool, p.get("tool_input"), p.get("tool_response"), limits)
    meta = dict(v.meta) | _mcp_server(p.get("mcp_server"))
    if failed:
        error = string(p.get("error"))
        exit_code = error.removeprefix("Exit code ").strip() if error.startswith("Exit code ") else ""
        meta |= _with({"error": limits.clip(error)}, exit_code=int(exit_code) if exit_code.isdigit() else None)
        meta["interrupted"] = p.get("is_interrupt") is True
        title = f"{tool} failed: {v.subject} — {shorten(first_line(error), 60) or 'error'}"
        return Normalized(
            kind="tool_error", tool=tool, title=title, text=join(v.text, error), meta=meta, importance=HIGH
        )
    if tool in config.skip_tools:
        return Skipped(f"tool {tool} skipped by config")
    if tool in FILE_TOOLS and _ignored_path(meta.get("files", []), config.ignored_path_parts):
        return Skipped("ignored path")
    importance = v.importance
    if (
        tool == "Bash"
        and importance < HIGH
        and is_trivial_command(meta.get("command", ""), frozenset(config.trivial_commands))
    ):
        if config.trivial_action == "skip":
            return Skipped("trivial command")
        importance = LOW
    if event == "PreToolUse":
        return Normalized(
            kind="tool_use",
            tool=tool,
            title=f"About to run {tool}: {v.subject}",
            text=v.text,
            meta=meta,
            importance=LOW,
        )
    return Normalized(kind="tool", tool=tool, title=v.title, text=v.text, meta=meta, importance=importance)


def _mcp_server(value: Any) -> dict[str, str]:
    """Claude Code 2.1 names an MCP tool's server (``{"name": "plugin:memd:memd", "source":
    "plugin"}``): its real name, which the tool name only mangles, and where it is configured."""
    if not isinstance(value, dict) or not string(value.get("name")):
        return {}
    return _with({"mcp_server": string(value.get("name"))}, mcp_source=string(value.get("source")) or None)


def _tool(event: str) -> Callable[[dict[str, Any], CaptureConfig], Normalized | Skipped]:
    return lambda p, config: tool_event(event, p, config)


EVENTS: dict[str, Callable[[dict[str, Any], CaptureConfig], Normalized | Skipped]] = {
    "SessionStart": session_start,
    "UserPromptSubmit": prompt,
    "PreToolUse": _tool("PreToolUse"),
    "PostToolUse": _tool("PostToolUse"),
    "PostToolUseFailure": _tool("PostToolUseFailure"),
    "PreCompact": pre_compact,
    "PostCompact": post_compact,
    "Stop": stop,
    "SubagentStart": subagent_start,
    "SubagentStop": subagent_stop,
    "SessionEnd": session_end,
    "Notification": notification,
    "InstructionsLoaded": instructions_loaded,
    "Remember": remember,
    "ClaudeMemory": claude_memory,
}


def _unknown(event: str, p: dict[str, Any], config: CaptureConfig) -> Normalized:
    strings = [v for k, v in p.items() if isinstance(v, str) and k not in ("session_id", "transcript_path", "cwd")]
    return Normalized(kind="event", title=event, text=_limits(config).clip("\n".join(strings[:20])), meta={})


TITLE_MAX = 160


def normalize(event: str, payload: dict[str, Any], config: CaptureConfig) -> Normalized | Skipped:
    """The normalized form of one hook event, whatever its shape; never raises on odd input."""
    normalizer = EVENTS.get(event)
    result = normalizer(payload, config) if normalizer else _unknown(event, payload, config)
    if isinstance(result, Normalized) and len(result.title) > TITLE_MAX:
        result.title = shorten(result.title, TITLE_MAX)
    return result
