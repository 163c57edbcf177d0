"""A fake of the Gemini API (``generateContent``, streamed) that the real ``gemini`` CLI talks to.

Scripted by the prompt, as the other fakes are: lines ``@bash CMD`` (a ``run_shell_command``
call each, in order) and ``@say TEXT`` (the final answer, default "Done.").  The step to
answer is the number of tool results in the conversation since its prompt.  The final
answer streams in two chunks, as a real model's does (Gemini CLI fires ``AfterModel`` per
chunk; memd must store the turn's reply once).

Gemini CLI 0.61 sends ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` and
needs a ``finishReason`` on the last chunk; with an explicit model it makes no routing call
first.  Every request body is kept (``requests``): what the model was sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

from e2e.fake_server import FakeServer

__all__ = ["FakeGemini"]

_STEP = re.compile(r"^@(\w+)\s*(.*)$")


def _parts_text(content: dict[str, Any]) -> str:
    return "\n".join(str(p.get("text", "")) for p in content.get("parts", []) if isinstance(p, dict))


def _is_result(content: dict[str, Any]) -> bool:
    return any(isinstance(p, dict) and "functionResponse" in p for p in content.get("parts", []))


def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks (``GenerateContentResponse`` objects) of one streamed answer."""
    contents = [c for c in body.get("contents", []) if isinstance(c, dict)]
    prompt_at = max(
        (i for i, c in enumerate(contents) if c.get("role") == "user" and "@" in _parts_text(c)), default=-1
    )
    prompt = _parts_text(contents[prompt_at]) if prompt_at >= 0 else ""
    steps = [m.groups() for line in prompt.splitlines() if (m := _STEP.match(line.strip()))]
    calls = [text for kind, text in steps if kind == "bash"]
    done = sum(1 for c in contents[prompt_at + 1 :] if _is_result(c))
    if done < len(calls):
        call = {"functionCall": {"name": "run_shell_command", "args": {"command": calls[done]}}}
        return [{"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}]}]
    said = next((text for kind, text in steps if kind == "say"), "Done.")
    half = len(said) // 2
    chunks = [said[:half], said[half:]]
    return [
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": part}]}, **({"finishReason": "STOP"} if last else {})}
            ]
        }
        for part, last in zip(chunks, (False, True), strict=True)
    ]


def _reply(path: str, body: dict[str, Any]) -> bytes | None:
    if ":streamGenerateContent" not in path:
        return None
    return b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in answer(body))


class FakeGemini(FakeServer):
    """``with FakeGemini() as api:`` a server on 127.0.0.1; ``api.url`` is ``GOOGLE_GEMINI_BASE_URL``."""

    def __init__(self) -> None:
        super().__init__(_reply)

    @property
    def url(self) -> str:
        return self.origin

    def sent(self, needle: str) -> list[dict[str, Any]]:
        """The requests whose contents hold ``needle`` somewhere."""
        return [r for r in self.bodies() if needle in json.dumps(r.get("contents", []), ensure_ascii=False)]
