"""A fake of the Anthropic Messages API that the real ``claude`` CLI talks to.

It is scripted by the prompt itself, so a test reads as what it asks the model to do
and the fake stays stateless: the first user prompt of a conversation holds lines such
as ::

    @bash echo hello
    @read /abs/path/file.txt
    @write /abs/path/out.txt some content, backslash-n for a new line
    @edit /abs/path/out.txt|old|new
    @todo Write the parser:in_progress; Add tests:pending
    @toolsearch select:TodoWrite
    @mcp mcp__memd__mem_search {"query": "cookie ttl"}
    @recall cookie-ttl.md
    @say The cookie TTL is now 3600 s.

Each ``@`` line is one step; the fake answers the step whose index is the number of
tool results already in the conversation (each tool step yields one), and once the
steps are spent it ends the turn with the ``@say`` text (or "Done.").  A step written
``@bash! ...`` reports a nearly full context window, which makes Claude Code compact
on its own; the compaction summary carries the steps still to run, so the turn goes on
after it as a real one would.  ``@recall FILE`` is no step: it is what Claude Code's
memory recall selects when it asks which memory files are relevant (the recall runs when
``CLAUDE_MEMORY_STORES`` is set, and attaches the files once the turn's first tool call is
done).  A prompt without steps gets a plain text answer.  Claude Code's own side requests
(titles, compaction summaries, memory selection, topic checks) are recognised by their
instructions and answered in kind.

Every request body is kept (``requests``), so a test can read what the model was sent:
memd's context must reach it.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeAnthropic"]

_STEP = re.compile(r"^@(\w+)(!?)\s*(.*)$")
FULL_CONTEXT = 990_000
"""Input tokens reported for a step marked ``!`` (``@bash! ...``): the context looks full,
so Claude Code compacts automatically before its next request."""
_ids = itertools.count(1)
_NOT_FOUND = b'{"type":"error","error":{"type":"not_found_error","message":"not faked"}}'


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _tool_results(messages: list[dict[str, Any]]) -> int:
    return sum(
        1
        for m in messages
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )


Step = tuple[str, bool, str]
"""verb, whether it fills the context, argument"""


def _script(messages: list[dict[str, Any]]) -> tuple[list[Step], int]:
    """The steps of the latest scripted prompt, and how many tool results followed it."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "user":
            continue
        steps = [
            (match.group(1), match.group(2) == "!", match.group(3))
            for line in _text_of(m.get("content")).splitlines()
            if (match := _STEP.match(line.strip()))
        ]
        if steps:
            return steps, _tool_results(messages[i + 1 :])
    return [], 0


def _line(step: Step) -> str:
    verb, fills, arg = step
    return f"@{verb}{'!' if fills else ''} {arg}"


def _tool_call(verb: str, arg: str) -> tuple[str, dict[str, Any]] | None:
    if verb == "bash":
        return "Bash", {"command": arg, "description": "Run a command"}
    if verb == "read":
        return "Read", {"file_path": arg}
    if verb == "write":
        path, _, content = arg.partition(" ")
        return "Write", {"file_path": path, "content": content.replace("\\n", "\n") + "\n"}
    if verb == "edit":
        path, old, new = arg.split("|", 2)
        return "Edit", {"file_path": path, "old_string": old, "new_string": new}
    if verb == "todo":
        todos = []
        for item in arg.split(";"):
            content, _, status = item.strip().rpartition(":")
            todos.append({"content": content, "status": status, "activeForm": content})
        return "TodoWrite", {"todos": todos}
    if verb == "toolsearch":
        return "ToolSearch", {"query": arg, "max_results": 5}
    if verb in ("mcp", "tool"):
        name, _, raw = arg.partition(" ")
        return name, json.loads(raw or "{}")
    return None


class Reply:
    """One assistant message: text and tool_use blocks, streamed as SSE."""

    def __init__(self, model: str, input_tokens: int = 100) -> None:
        self.model = model
        self.input_tokens = input_tokens
        self.blocks: list[dict[str, Any]] = []

    def text(self, text: str) -> Reply:
        self.blocks.append({"type": "text", "text": text})
        return self

    def tool(self, name: str, tool_input: dict[str, Any]) -> Reply:
        self.blocks.append({"type": "tool_use", "id": f"toolu_fake{next(_ids):08d}", "name": name, "input": tool_input})
        return self

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"

    def message(self) -> dict[str, Any]:
        return {
            "id": f"msg_fake{next(_ids):08d}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 20},
        }

    def sse(self) -> bytes:
        msg = self.message()
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}})
        ]
        for index, block in enumerate(msg["content"]):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 20},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def answer(body: dict[str, Any]) -> Reply:
    """The scripted reply to one Messages API request."""
    model = body.get("model", "claude-sonnet-4-5")
    messages = body.get("messages") or []
    last = _text_of(messages[-1].get("content")) if messages else ""
    system = json.dumps(body.get("system", ""))
    steps, done = _script(messages)
    calls = [step for step in steps if step[0] not in ("say", "recall")]
    said = [step for step in steps if step[0] == "say"]
    if "<analysis>" in last and "<summary>" in last:  # Claude Code's compaction request
        left = "\n".join(_line(step) for step in [*calls[done:], *said])
        return Reply(model).text(
            "<analysis>The user asked for scripted steps; some ran.</analysis>\n"
            "<summary>1. Primary Request and Intent: run the scripted steps of the e2e test.\n"
            f"2. Pending Tasks: the steps below.\n{left}</summary>"
        )
    if "selecting memories" in system:  # Claude Code's memory recall: the prompt's @recall lines say what
        query = _text_of(messages[-1].get("content")) if messages else ""
        chosen = [m.group(1) for m in re.finditer(r"^@recall\s+(\S+)", query, re.M)]
        return Reply(model).text(json.dumps({"selected_memories": chosen}))
    if "title" in system.lower() and "json" in system.lower():
        return Reply(model).text('{"title": "Scripted e2e session"}')
    if done < len(calls):
        verb, fills, arg = calls[done]
        call = _tool_call(verb, arg)
        if call is not None:
            return Reply(model, FULL_CONTEXT if fills else 100).tool(*call)
    return Reply(model).text(" ".join(arg for _, _, arg in said) or "Done.")


class FakeAnthropic:
    """The fake API on 127.0.0.1, in a thread: ``with FakeAnthropic() as api: api.url``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                with fake._lock:
                    fake.paths.append(f"GET {self.path}")
                self._send(404, _NOT_FOUND, "application/json")

            def do_HEAD(self) -> None:
                self._send(200, b"", "text/plain")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with fake._lock:
                    fake.paths.append(f"POST {self.path}")
                    if self.path.startswith("/v1/messages") and "count_tokens" not in self.path:
                        fake.requests.append(body)
                if "count_tokens" in self.path:
                    self._send(200, b'{"input_tokens": 100}', "application/json")
                    return
                if not self.path.startswith("/v1/messages"):
                    self._send(404, _NOT_FOUND, "application/json")
                    return
                reply = answer(body)
                if body.get("stream"):
                    self._send(200, reply.sse(), "text/event-stream")
                else:
                    self._send(200, json.dumps(reply.message()).encode(), "application/json")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
