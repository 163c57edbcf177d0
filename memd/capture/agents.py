"""The agents memd serves, and each one's hook events read in Claude Code's terms.

memd's capture was written for Claude Code's hooks (``events.py``).  Codex CLI and
Gemini CLI fire hooks of their own, close to Claude Code's but not the same: this module
turns each of their events into the event and payload Claude Code would have sent for the
same thing, so that one normalizer, one idempotency rule and one privacy filter serve all
three.  What an agent says that Claude Code has no word for stays in the payload.

- **Codex CLI** names its events as Claude Code does.  Its shell calls are ``Bash`` with
  the output as one string (Claude Code gives ``stdout``/``stderr``); its turns have a
  ``turn_id``, which keys a prompt and its Stop as Claude Code's ``prompt_id`` does.
- **Gemini CLI** has its own names: ``BeforeAgent`` (a prompt), ``AfterAgent`` (the reply),
  ``BeforeTool``/``AfterTool``, its own tool names (``run_shell_command``, ``read_file``,
  ``replace``...), and results as ``{"llmContent", "returnDisplay", "error"}``.  Its
  ``BeforeAgent`` prompt starts with the context SessionStart's hooks gave, in
  ``<hook_context>`` tags: the prompt stored is what the user typed.  ``PreCompress`` fires
  before every model call, compaction or not, and the model events once per streamed chunk:
  none of them is an event of the session's (``IGNORED``).
"""

from __future__ import annotations

import json
from typing import Any, Final, NamedTuple

from ..protocol import CLAUDE_CODE

__all__ = ["DEFERS_START", "IGNORED", "Translated", "agent_name", "gemini_reply", "own_event", "translate"]

IGNORED: Final = {
    "gemini": frozenset({"PreCompress", "BeforeModel", "AfterModel", "BeforeToolSelection"}),
}
"""Events an agent fires that are no event of its session (see the module's docstring)."""

_GEMINI_EVENTS: Final = {
    "BeforeAgent": "UserPromptSubmit",
    "AfterAgent": "Stop",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
}
_GEMINI_TOOLS: Final = {
    "run_shell_command": "Bash",
    "read_file": "Read",
    "read_many_files": "Read",
    "write_file": "Write",
    "replace": "Edit",
    "glob": "Glob",
    "search_file_content": "Grep",
    "grep_search": "Grep",
    "list_directory": "LS",
    "web_fetch": "WebFetch",
    "google_web_search": "WebSearch",
}
"""Gemini CLI's built-in tools by the Claude Code tool that does the same (its inputs already
carry Claude Code's field names: ``command``, ``file_path``, ``old_string``...)."""
_HOOK_CONTEXT_OPEN, _HOOK_CONTEXT_CLOSE = "<hook_context>", "</hook_context>"
DEFERS_START: Final = frozenset({"gemini"})
"""Agents whose session-start context memd gives with the session's first prompt instead:
``gemini -p`` puts SessionStart's context in front of the first prompt's text, and on
``--resume`` drops every stored prompt that starts with it, the user's words with it."""


class Translated(NamedTuple):
    event: str
    """The Claude Code event it is ("" for one that is no event of the session's)."""
    payload: dict[str, Any]


def agent_name(named: str) -> str:
    """The agent an ``Ingest`` names ("" is Claude Code, whose hook commands name none); an
    unknown name is kept as given, its events read as Claude Code's."""
    return named or CLAUDE_CODE


def own_event(agent: str, event: str) -> str:
    """What ``agent`` calls the Claude Code event ``event`` (its hook output names it)."""
    if agent == "gemini":
        return next((own for own, claude in _GEMINI_EVENTS.items() if claude == event), event)
    return event


def translate(agent: str, event: str, payload: dict[str, Any]) -> Translated:
    """``event`` and ``payload`` of ``agent`` as Claude Code would have sent them."""
    if event in IGNORED.get(agent, ()):
        return Translated("", payload)
    if agent == "codex":
        return Translated(event, _codex(event, payload))
    if agent == "gemini":
        return _gemini(event, payload)
    return Translated(event, payload)


def _codex(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    turn = payload.get("turn_id")
    if isinstance(turn, str) and turn and event in ("UserPromptSubmit", "Stop"):
        out.setdefault("prompt_id", turn)
    response = payload.get("tool_response")
    if isinstance(response, str):
        out["tool_response"] = {"stdout": response}
    return out


def _gemini(event: str, payload: dict[str, Any]) -> Translated:
    out = dict(payload)
    named = _GEMINI_EVENTS.get(event, event)
    if named == "UserPromptSubmit":
        out["prompt"] = _without_hook_context(payload.get("prompt"))
    elif named == "Stop":
        reply = payload.get("prompt_response")
        out["last_assistant_message"] = reply if isinstance(reply, str) else ""
    elif named in ("PreToolUse", "PostToolUse"):
        tool = payload.get("tool_name")
        if isinstance(tool, str) and tool in _GEMINI_TOOLS:
            out["tool_name"] = _GEMINI_TOOLS[tool]
            out["agent_tool"] = tool
        response = payload.get("tool_response")
        if isinstance(response, dict):
            error = response.get("error")
            if isinstance(error, dict):
                error = error.get("message")
            if error:
                named = "PostToolUseFailure"
                out["error"] = error if isinstance(error, str) else "the tool failed"
            shown = response.get("returnDisplay")
            text = shown if isinstance(shown, str) else response.get("llmContent")
            out["tool_response"] = {"stdout": text if isinstance(text, str) else ""}
    return Translated(named, out)


def gemini_reply(tail: bytes) -> str:
    """The last reply of the model in the end of a Gemini CLI transcript (JSON lines), "" if
    none is there.  ``AfterAgent`` sends the reply rebuilt from its streamed chunks, and
    garbled when there were several ("finished 0" came as "finished 0 hed 0"); the
    transcript has it whole."""
    for line in reversed(tail.split(b"\n")):
        if b'"type":"gemini"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the first line of a tail read from the middle of the file
        content = record.get("content") if isinstance(record, dict) else None
        if isinstance(content, list):
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        if isinstance(content, str) and content.strip():
            return content
    return ""


def _without_hook_context(prompt: Any) -> str:
    """The prompt as typed: Gemini CLI puts what SessionStart's hooks gave before the first
    prompt of a session, in ``<hook_context>`` tags and a blank line."""
    if not isinstance(prompt, str):
        return ""
    if not prompt.startswith(_HOOK_CONTEXT_OPEN) or (end := prompt.find(_HOOK_CONTEXT_CLOSE)) < 0:
        return prompt
    return prompt[end + len(_HOOK_CONTEXT_CLOSE) :].lstrip("\n")
