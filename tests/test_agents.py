"""Codex CLI's and Gemini CLI's hook events, as each CLI sent them, read in memd's terms.

The payloads are ``../shared/fixtures/agents/*.jsonl``: one per event as the pinned CLI
sent it to a recorder hook (``codex exec`` and ``gemini -p`` against fakes of their APIs).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from conftest import SHARED

from memd.capture.agents import gemini_reply
from memd.capture.events import Skipped
from memd.capture.prepare import Capture, NewEvent
from memd.capture.privacy import Privacy
from memd.config import Config
from memd.context import hook_output
from memd.protocol import Ingest

CAPTURE = Capture(Config().capture, Privacy(Config().privacy))
AGENTS = SHARED / "fixtures" / "agents"


def recorded(name: str) -> list[dict[str, Any]]:
    path = AGENTS / name
    assert path.exists(), f"shared fixtures missing: {path}"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def prepared(agent: str, record: dict[str, Any]) -> NewEvent | Skipped:
    payload = json.dumps(record["payload"]).encode()
    return CAPTURE.prepare(Ingest(event=record["event"], sent_at_ns=time.time_ns(), payload=payload, agent=agent), 1.0)


def test_codex_events_are_read_as_claude_code_s() -> None:
    events = [prepared("codex", r) for r in recorded("codex-0.169.0.jsonl")]
    assert all(isinstance(e, NewEvent) and e.agent == "codex" for e in events)
    kinds = [e.kind for e in events if isinstance(e, NewEvent)]
    assert kinds[:6] == ["session_start", "prompt", "tool_use", "tool", "assistant", "session_end"]
    prompt, _pre, tool, stop = events[1:5]
    assert isinstance(prompt, NewEvent) and prompt.text == "AGENTS-E2E tool id=proof2 run a command"
    assert isinstance(tool, NewEvent) and tool.tool == "Bash" and "agents-e2e-tool-proof2" in tool.text
    assert isinstance(stop, NewEvent) and stop.text == "tool said: agents-e2e-tool-proof2"
    # The turn keys its prompt and its Stop, as Claude Code's prompt_id does: a replay is one event.
    assert prompt.idem_key.endswith(":prompt:01a21f85-b3de-7d22-a735-daf017a836ca")
    assert {e.kind for e in events if isinstance(e, NewEvent)} >= {"pre_compact", "compact_summary"}


def test_gemini_events_are_read_as_claude_code_s() -> None:
    records = recorded("gemini-0.61.0.jsonl")
    events = {r["event"]: prepared("gemini", r) for r in records}
    for noise in ("PreCompress", "BeforeModel", "AfterModel", "BeforeToolSelection"):
        assert isinstance(events[noise], Skipped), noise  # fired around every model call: no event of the session
    prompt, reply, tool = events["BeforeAgent"], events["AfterAgent"], events["AfterTool"]
    assert isinstance(prompt, NewEvent) and prompt.kind == "prompt" and prompt.agent == "gemini"
    assert prompt.text == "AGENTS-E2E tool id=proof2 run a command"  # the SessionStart context it carried is gone
    assert "hook_context" not in prompt.payload
    assert isinstance(reply, NewEvent) and reply.kind == "assistant" and reply.text.startswith("tool said:")
    assert isinstance(tool, NewEvent) and tool.kind == "tool" and tool.tool == "Bash"
    assert "echo agents-e2e-tool-proof2" in tool.text and "run_shell_command" in tool.payload
    assert isinstance(events["BeforeTool"], NewEvent) and events["BeforeTool"].kind == "tool_use"
    assert isinstance(events["SessionEnd"], NewEvent) and events["SessionEnd"].kind == "session_end"


def test_a_failed_gemini_tool_is_a_tool_error() -> None:
    payload = {
        "session_id": "g-1", "cwd": "/tmp/p", "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
        "tool_input": {"command": "pytest -x"},
        "tool_response": {"llmContent": "", "returnDisplay": "1 failed", "error": {"message": "Exit code 1"}},
    }  # fmt: skip
    event = prepared("gemini", {"event": "AfterTool", "payload": payload})
    assert isinstance(event, NewEvent) and event.kind == "tool_error" and "Exit code 1" in event.text


@pytest.mark.parametrize("agent", ["", "claude-code"])
def test_claude_code_s_events_are_unchanged(agent: str) -> None:
    payload = {"session_id": "c-1", "hook_event_name": "UserPromptSubmit", "prompt": "<hook_context>x</hook_context> y"}
    event = prepared(agent, {"event": "UserPromptSubmit", "payload": payload})
    assert isinstance(event, NewEvent) and event.agent == "claude-code"
    assert event.text == "<hook_context>x</hook_context> y"  # only Gemini CLI puts its hooks' context there


def test_gemini_s_reply_is_read_whole_from_its_transcript() -> None:
    tail = (
        b'ing":"cut"}\n'
        b'{"id":"1","type":"user","content":[{"text":"run it"}]}\n'
        b'{"id":"2","type":"gemini","content":"","toolCalls":[{"name":"run_shell_command"}]}\n'
        b'{"id":"3","type":"gemini","content":[{"text":"finished "},{"text":"0"}]}\n'
        b'{"$set":{"lastUpdated":"2026-11-28T12:52:24.001Z"}}\n'
    )
    assert gemini_reply(tail) == "finished 0"
    assert gemini_reply(b'{"type":"user","content":"x"}\n') == ""


def test_gemini_gets_its_context_without_angle_brackets_and_uncapped() -> None:
    block = "<memory-context>\n" + "x" * 12_000 + "\n</memory-context>"
    output = json.loads(hook_output("BeforeAgent", context=block, agent="gemini"))
    context = output["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("\u2039memory-context\u203a") and "<" not in context and ">" not in context
    with pytest.raises(ValueError):  # Claude Code would cut it: memd's blocks stay under its cap
        hook_output("UserPromptSubmit", context=block)
