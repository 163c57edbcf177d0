"""MCP's stdio protocol, the pure core: one JSON-RPC message in, its answer out, no IO.

The Model Context Protocol over stdio is newline-delimited JSON-RPC 2.0.  A client
opens with ``initialize`` (Claude Code 2.1.270 sends ``protocolVersion: "2025-11-25"``),
notifies ``notifications/initialized``, then lists and calls tools.  This module
answers the part of it a tools-only server needs:

- ``initialize``: the client's protocol version when it is one of ``VERSIONS``, else
  the latest (the spec's negotiation: the client then decides whether it can go on);
- ``ping``, ``tools/list``, ``tools/call``; notifications need no answer; any other
  method (``resources/list``, ``server/discover`` of the stateless 2026 protocol, ...)
  gets "method not found", which clients treat as "not offered";
- a batch (a JSON array, allowed by ``2025-03-26``) gets an array of answers.

Arguments are validated here against each tool's schema, because clients do not
(Claude Code sends a call missing a required argument as it is).  A tool's schema and
its validator are one ``msgspec.Struct``: the JSON Schema in ``tools/list`` is
generated from it, and ``msgspec.convert`` checks a call against it.  A bad call, or
a tool that fails, is a tool result with ``isError: true`` and a message saying what
to change, which the model reads and can act on; JSON-RPC errors are kept for calls
the protocol itself rejects (an unknown tool, ``arguments`` that are not an object).

Requests are accepted before ``initialize`` too: refusing them would help nobody.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

__all__ = ["VERSIONS", "Server", "Tool", "ToolError", "negotiate"]

VERSIONS: Final = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Protocol versions spoken, newest first."""

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603


class ToolError(Exception):
    """A tool could not do what was asked; the message (for the model) says why and what to do."""


@dataclass(frozen=True)
class Tool:
    """One tool: its arguments are a ``msgspec.Struct`` type, ``run`` turns valid ones into text."""

    name: str
    title: str
    description: str
    arguments: type[msgspec.Struct]
    run: Callable[[Any], str]
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    schema: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", input_schema(self.arguments))

    def definition(self, version: str) -> dict[str, Any]:
        """The tool as ``tools/list`` lists it, in the fields ``version`` knows."""
        tool: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.schema}
        if version >= "2025-06-18":
            tool["title"] = self.title
        if version >= "2025-03-26":
            tool["annotations"] = {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            }
        return tool


def input_schema(arguments: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of an arguments Struct, inlined (MCP wants an object schema, no $ref)."""
    (ref,), components = msgspec.json.schema_components([arguments], ref_template="{name}")
    schema = dict(components[ref["$ref"]])
    schema.pop("title", None)
    schema.pop("description", None)  # the tool's description says it, better
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema


def negotiate(requested: object) -> str:
    return requested if isinstance(requested, str) and requested in VERSIONS else VERSIONS[0]


def _error(message_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": message}}


def _result(message_id: object, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "result": result}


def text_result(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _validation_message(tool: Tool, exc: msgspec.ValidationError) -> str:
    where = str(exc)
    return (
        f"Invalid arguments for {tool.name}: {where}. "
        f"Expected: {', '.join(_argument_summary(tool.schema))}. Fix the arguments and call again."
    )


def _argument_summary(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", ()))
    return [f"{name}{'' if name in required else '?'}" for name in schema["properties"]]


class Server:
    """The protocol state of one client connection: feed it lines, write what it returns."""

    def __init__(self, name: str, version: str, tools: Sequence[Tool], instructions: str = "") -> None:
        self.info = {"name": name, "version": version}
        self.tools = {tool.name: tool for tool in tools}
        self.instructions = instructions
        self.version = VERSIONS[0]
        self.client: dict[str, Any] = {}
        self.initialized = False

    def receive(self, line: bytes) -> bytes | None:
        """The answer to one line from the client (a JSON-RPC message or batch), or None."""
        try:
            message = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            return self._encode(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
        if isinstance(message, list):
            if not message:
                return self._encode(_error(None, INVALID_REQUEST, "Invalid Request: empty batch"))
            answers = [a for a in map(self.handle, message) if a is not None]
            return self._encode(answers) if answers else None
        answer = self.handle(message)
        return None if answer is None else self._encode(answer)

    def refuse(self, why: str) -> bytes:
        """The answer to a line that cannot be read at all (say, too long to take in)."""
        return self._encode(_error(None, INVALID_REQUEST, f"Invalid Request: {why}"))

    @staticmethod
    def _encode(answer: object) -> bytes:
        return msgspec.json.encode(answer) + b"\n"  # JSON escapes newlines in strings: one line

    def handle(self, message: object) -> dict[str, Any] | None:
        """The answer to one decoded message; None for notifications and client responses."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _error(None, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 object")
        method = message.get("method")
        if "id" not in message:
            if isinstance(method, str):
                self._notified(method)
                return None
            return _error(None, INVALID_REQUEST, "Invalid Request: no method")
        message_id = message["id"]
        if method is None and ("result" in message or "error" in message):
            return None  # an answer to a request of ours: this server sends none
        if not isinstance(method, str) or not isinstance(message_id, str | int) or isinstance(message_id, bool):
            return _error(message_id, INVALID_REQUEST, "Invalid Request: method must be a string, id a string or int")
        params = message.get("params", {})
        if not isinstance(params, dict):
            return _error(message_id, INVALID_PARAMS, "Invalid params: params must be an object")
        match method:
            case "initialize":
                return _result(message_id, self._initialize(params))
            case "ping":
                return _result(message_id, {})
            case "tools/list":
                return _result(message_id, {"tools": [t.definition(self.version) for t in self.tools.values()]})
            case "tools/call":
                return self._call(message_id, params)
            case _:
                return _error(message_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _notified(self, method: str) -> None:
        if method == "notifications/initialized":
            self.initialized = True

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        self.version = negotiate(params.get("protocolVersion"))
        client = params.get("clientInfo")
        self.client = client if isinstance(client, dict) else {}
        result: dict[str, Any] = {
            "protocolVersion": self.version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": self.info,
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def _call(self, message_id: object, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return _error(message_id, INVALID_PARAMS, f"Unknown tool: {name!r}; tools: {', '.join(self.tools)}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return _error(message_id, INVALID_PARAMS, f"Invalid params: arguments of {tool.name} must be an object")
        try:
            parsed = msgspec.convert(arguments, tool.arguments)
        except msgspec.ValidationError as exc:
            return _result(message_id, text_result(_validation_message(tool, exc), error=True))
        try:
            return _result(message_id, text_result(tool.run(parsed)))
        except ToolError as exc:
            return _result(message_id, text_result(str(exc), error=True))
        except Exception as exc:  # a tool's bug must not end the session: report it, keep serving
            return _result(message_id, text_result(f"{tool.name} failed: {type(exc).__name__}: {exc}", error=True))
