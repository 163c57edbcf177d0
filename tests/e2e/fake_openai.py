"""A fake of the OpenAI Responses API that the real ``codex`` CLI talks to.

Scripted by the prompt, as ``fake_api.py`` is for Claude Code: a prompt holds lines ::

    @bash echo hello         run a shell command (Codex's ``exec_command`` tool)
    @bash! pytest -x         the same, then report a context so full that Codex compacts
    @say The TTL is 3600 s.  the turn's final answer (default "Done.")

Each ``@bash`` is one step; the fake answers the step whose index is the number of tool
results the conversation holds since its prompt, and ends the turn with the ``@say`` text
once the steps are spent.  A compaction request (Codex's "CONTEXT CHECKPOINT COMPACTION"
prompt) is answered with a summary that says how many steps were done, since Codex drops the
tool results from the history it carries on with.

The stream is what Codex 0.169.0 needs of ``POST {base_url}/responses`` (server-sent
events): an ``output_item.done`` per item, then ``response.completed`` with the usage
Codex counts towards its auto-compaction limit.  Every request body is kept
(``requests``): what the model was sent, memd's context included.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from e2e.fake_server import FakeServer

__all__ = ["FULL_CONTEXT", "FakeOpenAI", "texts"]

_STEP = re.compile(r"^@(\w+)(!?)\s*(.*)$")
_DONE = re.compile(r"memd-fake summary: (\d+) steps done")
FULL_CONTEXT = 900_000
"""Tokens reported after a step marked ``!``: over the test config's auto-compaction limit."""
_ids = itertools.count(1)


def texts(item: dict[str, Any]) -> str:
    """The text of one input item (a message's parts joined; a tool output as it is)."""
    content = item.get("content", item.get("output", ""))
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _prompt_at(items: list[dict[str, Any]]) -> int:
    """The index of the turn's prompt: the last user message that holds steps or plain words
    (not Codex's environment context, a compaction summary or its own instructions)."""
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        text = texts(item).strip()
        ours = not text.startswith(("<environment_context>", "Another language model", "You are performing"))
        if item.get("type", "message") == "message" and item.get("role") == "user" and text and ours:
            return i
    return -1


def answer(body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The output items for one request, and the total tokens to report."""
    items = [i for i in body.get("input", []) if isinstance(i, dict)]
    last = texts(items[-1]) if items else ""
    if "CONTEXT CHECKPOINT COMPACTION" in last:
        done = sum(1 for i in items if i.get("type") == "function_call_output") + _done_before(items)
        return [_message(f"memd-fake summary: {done} steps done")], 100
    at = _prompt_at(items)
    prompt = texts(items[at]) if at >= 0 else ""
    steps = [m.groups() for line in prompt.splitlines() if (m := _STEP.match(line.strip()))]
    calls = [s for s in steps if s[0] == "bash"]
    done = _done_before(items) + sum(1 for i in items[at + 1 :] if i.get("type") == "function_call_output")
    if done < len(calls):
        _kind, full, command = calls[done]
        call = {
            "type": "function_call", "id": f"fc_{next(_ids)}", "call_id": f"call_fake{next(_ids):05d}",
            "name": "exec_command", "arguments": json.dumps({"cmd": command}), "status": "completed",
        }  # fmt: skip
        return [call], FULL_CONTEXT if full else 100
    said = next((text for kind, _full, text in steps if kind == "say"), "Done.")
    return [_message(said)], 100


def _done_before(items: list[dict[str, Any]]) -> int:
    """Steps a compaction summary in the history says were done before it."""
    for item in reversed(items):
        if found := _DONE.search(texts(item)):
            return int(found.group(1))
    return 0


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message", "role": "assistant", "id": f"msg_{next(_ids)}", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }  # fmt: skip


def _stream(output: list[dict[str, Any]], tokens: int) -> bytes:
    response = f"resp_{next(_ids)}"
    usage = {
        "input_tokens": tokens - 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens,
    }  # fmt: skip
    events = [{"type": "response.created", "response": {"id": response, "status": "in_progress"}}]
    events += [{"type": "response.output_item.done", "output_index": n, "item": item} for n, item in enumerate(output)]
    done = {"id": response, "status": "completed", "output": output, "usage": usage}
    events.append({"type": "response.completed", "response": done})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


class FakeOpenAI(FakeServer):
    """``with FakeOpenAI() as api:`` a server on 127.0.0.1; ``api.url`` is Codex's ``base_url``."""

    def __init__(self) -> None:
        super().__init__(lambda path, body: _stream(*answer(body)) if path.endswith("/responses") else None)

    @property
    def url(self) -> str:
        return f"{self.origin}/v1"

    def sent(self, needle: str) -> list[dict[str, Any]]:
        """The requests whose input holds ``needle`` somewhere."""
        return [r for r in self.bodies() if any(needle in texts(i) for i in r.get("input", []))]
