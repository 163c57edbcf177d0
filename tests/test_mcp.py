"""The MCP server as Claude Code runs it: a subprocess speaking newline-delimited JSON-RPC
on stdio, in front of a real daemon; fed the exact lines Claude Code 2.1.270 writes."""

from __future__ import annotations

import json
import marshal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, SHARED, Instance

from memd_client.install import MCP_SCRIPT
from memd_client.mcp.protocol import VERSIONS

MCP = SHARED / "fixtures" / "claude-code" / "mcp"
TOOLS = {
    "mem_search",
    "mem_entities",
    "mem_timeline",
    "mem_details",
    "mem_smart_search",
    "mem_cite",
    "mem_remember",
    "mem_forget",
    "mem_stats",
}


class Session:
    """One MCP server subprocess; ``ask`` sends a request line and reads its answer."""

    def __init__(
        self,
        instance: Instance,
        project: str | None = None,
        env: dict[str, str] | None = None,
        argv: tuple[str, ...] = ("-I", "-S", MCP_SCRIPT),  # as Claude Code runs it
    ) -> None:
        extra = {"CLAUDE_CODE_SESSION_ID": "s-mcp", **({"CLAUDE_PROJECT_DIR": project} if project else {})}
        with open(f"{instance.root}/mcp.stderr", "ab") as stderr:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [PYTHON, *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**instance.env, **extra, **(env or {})},
            )
        self.next_id = 100

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.endswith(b"\n"), "no answer (see mcp.stderr in the instance root)"
        return json.loads(line)

    def ask(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})}
        self.send(json.dumps(message).encode())
        answer = self.read()
        assert answer["id"] == self.next_id
        return answer

    def call(self, tool: str, **arguments: Any) -> tuple[str, bool]:
        answer = self.ask("tools/call", {"name": tool, "arguments": arguments})
        result = answer["result"]
        return result["content"][0]["text"], result["isError"]

    def initialize(self) -> Any:
        self.send((MCP / "initialize_request_from_claude_code.json").read_bytes())
        answer = self.read()
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return answer

    def close(self) -> int:
        """End the session as Claude Code does (stdin closed); the server's exit status."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            return self.process.wait(10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.process.stdout.close()


@pytest.fixture
def mcp(daemon: Instance) -> Any:
    sessions: list[Session] = []

    def start(**options: Any) -> Session:
        sessions.append(Session(daemon, **options))
        return sessions[-1]

    yield start
    for session in sessions:
        if not session.process.stdout.closed:  # type: ignore[union-attr]
            session.close()


def test_the_recorded_claude_code_handshake(daemon: Instance, mcp: Any) -> None:
    session = mcp()
    init = session.initialize()
    assert init["id"] == 0
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert init["result"]["serverInfo"]["name"] == "memd"
    assert "mem_search" in init["result"]["instructions"]
    # The recorded tools/list line, then the recorded tools/call line (of a tool memd lacks).
    wire = [json.loads(line) for line in (MCP / "claude_code_stdio_wire_2.1.270.jsonl").read_text().splitlines()]
    inbound = [entry["raw"].encode() for entry in wire if entry["dir"] == "in"]
    tools_list = next(raw for raw in inbound if b'"tools/list"' in raw)
    session.send(tools_list)
    listed = session.read()["result"]["tools"]
    assert {tool["name"] for tool in listed} == TOOLS
    for tool in listed:
        assert tool["inputSchema"]["type"] == "object"
        assert tool["description"] and tool["title"]
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] not in ("mem_remember", "mem_forget"))
    assert next(t for t in listed if t["name"] == "mem_forget")["annotations"]["destructiveHint"] is True
    session.send((MCP / "tools_call_request_from_claude_code.json").read_bytes())
    unknown = session.read()
    assert unknown["id"] == 2 and unknown["error"]["code"] == -32602
    assert "echo_note" in unknown["error"]["message"]
    assert session.close() == 0


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "1999-01-01"])
def test_older_and_unknown_protocol_versions(mcp: Any, version: str) -> None:
    session = mcp()
    answer = session.ask("initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "x"}})
    assert answer["result"]["protocolVersion"] == (version if version in VERSIONS else VERSIONS[0])
    tool = session.ask("tools/list")["result"]["tools"][0]
    assert ("title" in tool) is (version in ("2025-06-18", "1999-01-01"))  # unknown: the latest is offered
    assert ("annotations" in tool) is (version != "2024-11-05")


def test_every_tool_end_to_end(daemon: Instance, mcp: Any, tmp_path: Path) -> None:
    project = str(tmp_path / "proj")
    daemon.remember("The release checklist lives in docs/RELEASE.md; run the smoke tests before tagging", project)
    daemon.remember("We switched the cache from redis to sqlite for the offline mode", project)
    session = mcp(project=project)
    session.initialize()

    text, error = session.call("mem_remember", text="The user prefers tabs. the staging password=Tr0ub4dor&3")
    assert not error and text.startswith("Remembered as [mem:")
    cite = text.split("[", 1)[1].split("]", 1)[0]
    stored = daemon.query("SELECT kind, importance, text FROM events WHERE kind = 'memory'")
    assert stored and stored[0][:2] == ("memory", 3)
    assert "Tr0ub4dor" not in stored[0][2]  # the privacy filter applies to remembered text too
    again, _ = session.call("mem_remember", text="The user prefers tabs. the staging password=Tr0ub4dor&3")
    assert "kept already" in again

    text, error = session.call("mem_search", query="release checklist smoke tests")
    assert not error
    lines = text.splitlines()
    assert "in " + project in lines[0] and lines[1].startswith("[mem:") and "RELEASE" in lines[1]
    hit = lines[1][1:].split("]", 1)[0]
    text, error = session.call("mem_search", query="release checklist", kind="memory")
    assert not error and "No memories match" in text
    text, error = session.call("mem_search", query="release checklist", since="1d")
    assert not error and hit in text

    text, error = session.call("mem_entities", name="RELEASE.md")
    assert not error and text.startswith("file docs/RELEASE.md (also: release.md, release)") and hit in text
    text, error = session.call("mem_entities", kind="file")
    assert not error and "docs/RELEASE.md" in text and "redis" not in text
    text, error = session.call("mem_search", query="smoke tests", entity="docs/RELEASE.md")
    assert not error and hit in text and "redis" not in text
    text, error = session.call("mem_search", query="kubernetes", entity="release.md")
    assert not error and "No memories match" in text

    text, error = session.call("mem_timeline", id=hit)
    assert not error and text.startswith(f"Timeline around [{hit}]") and "→" in text
    text, error = session.call("mem_details", ids=[hit])
    assert not error and "docs/RELEASE.md" in text
    text, error = session.call("mem_smart_search", query="where is the release checklist", budget=1500)
    assert not error and "Rule " in text
    text, error = session.call("mem_cite", id=hit)
    assert not error and "smoke tests" in text
    text, error = session.call("mem_cite", id=hit, quote="run the smoke tests before tagging")
    assert not error and text.startswith(f"Found in [{hit}] (exact match")
    text, error = session.call("mem_cite", id=hit, quote="deploy on fridays")
    assert not error and text.startswith("Not found")
    text, error = session.call("mem_stats")
    assert not error and "events" in text and "Most cited" in text
    assert "By kind: prompt 2, memory 1" in text and f"Biggest projects: {project} (" in text and "On disk:" in text

    text, error = session.call("mem_forget", ids=[cite], dry_run=True)
    assert not error and text.startswith("Would delete 1 memory") and cite in text
    assert daemon.query("SELECT count(*) FROM events WHERE kind = 'memory'") == [(1,)]
    text, error = session.call("mem_forget", ids=[cite, "mem:zzzzzz"])
    assert not error and text.startswith("Deleted 1 memory ") and "'mem:zzzzzz'" in text
    assert daemon.query("SELECT count(*) FROM events WHERE kind = 'memory'") == [(0,)]
    text, error = session.call("mem_details", ids=[cite])
    assert "No memory" in text
    assert session.close() == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("mem_search", {}, "missing required field `query`"),
        ("mem_search", {"query": "x", "limit": 0}, "`int` >= 1"),
        ("mem_search", {"query": "x", "limit": "five"}, "Expected `int`"),
        ("mem_search", {"query": "x", "kind": "nonsense"}, "Invalid enum value 'nonsense'"),
        ("mem_search", {"query": "x", "since": "last tuesday"}, "is not a time"),
        ("mem_search", {"query": "x", "colour": "red"}, "unknown field `colour`"),
        ("mem_details", {"ids": []}, "length >= 1"),
        ("mem_details", {"ids": "mem:abc123"}, "Expected `array`"),
        ("mem_timeline", {"id": "mem:nothere"}, "no memory 'mem:nothere'"),
        ("mem_remember", {"text": ""}, "length >= 1"),
        ("mem_forget", {"ids": ["mem:nothere"]}, "Nothing was deleted"),
    ],
)
def test_bad_arguments_are_error_results(mcp: Any, tool: str, arguments: dict[str, Any], says: str) -> None:
    session = mcp()
    session.initialize()
    text, error = session.call(tool, **arguments)
    assert says in text
    assert error is (tool != "mem_forget")  # a forget of nothing is not an error, just nothing
    assert session.ask("ping")["result"] == {}  # and the server goes on


def test_protocol_errors(mcp: Any) -> None:
    session = mcp()
    session.send(b"{not json")
    assert session.read()["error"]["code"] == -32700
    session.send(b'{"jsonrpc":"2.0","id":1,"method":"resources/list"}')
    assert session.read()["error"]["code"] == -32601
    session.send(b'{"jsonrpc":"2.0","id":2,"method":"server/discover"}')
    assert session.read()["error"]["code"] == -32601
    session.send(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mem_search","arguments":[1]}}')
    assert session.read()["error"]["code"] == -32602
    session.send(b'[1, {"jsonrpc":"2.0","id":4,"method":"ping"}]')
    batch = session.read()
    assert [a.get("id") for a in batch] == [None, 4] and batch[0]["error"]["code"] == -32600
    session.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}')
    assert session.ask("ping")["result"] == {}  # the notification got no answer: the next line is the ping's


def test_daemon_down_is_a_clear_error_in_bounded_time(instance: Instance) -> None:
    session = Session(instance, env={"MEMD_AUTOSTART": "0"})
    try:
        session.initialize()
        started = time.monotonic()
        text, error = session.call("mem_search", query="anything")
        assert time.monotonic() - started < 5
        assert error and "not reachable" in text and "memctl daemon start" in text
    finally:
        session.close()


def test_daemon_down_is_started(instance: Instance) -> None:
    session = Session(instance, env={"MEMD_AUTOSTART": "1"})
    try:
        session.initialize()
        started = time.monotonic()
        text, error = session.call("mem_stats")
        assert time.monotonic() - started < 15
        assert not error, text
        assert "0 events" in text
    finally:
        session.close()
        instance.memctl("daemon", "stop")


def test_the_server_starts_without_the_heavy_imports() -> None:
    """Claude Code starts the server with every session: numpy, usearch, onnxruntime and
    fastembed belong to the daemon (numpy alone cost the server 60 ms once, through a
    module it imports for its types)."""
    probe = "import sys, memd_client.mcp.server; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([PYTHON, "-c", probe], capture_output=True, text=True, timeout=60)
    loaded = set(done.stdout.split())
    assert "memd_client.mcp.server" in loaded, done.stderr
    assert not loaded & {"numpy", "usearch", "onnxruntime", "fastembed", "aiosqlite", "anyio"}


def test_the_first_answers_come_from_the_listing_without_importing_the_server(daemon: Instance) -> None:
    """Claude Code waits for initialize and tools/list before each session's first request:
    the listing the whole server wrote answers them, and the first tool call brings it in."""
    listing = Path(daemon.paths.state_dir) / "mcp-listing.marshal"
    assert not listing.exists()
    first = Session(daemon)
    whole = first.initialize(), first.ask("tools/list")  # answered by the whole server, which writes the listing
    assert first.close() == 0
    assert listing.stat().st_mode & 0o777 == 0o600
    done = subprocess.run(  # the early path, stdin closed at once: what it imports
        [PYTHON, "-I", "-S", "-X", "importtime", MCP_SCRIPT], stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=60, env=daemon.env,
    )  # fmt: skip
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "early" in imported and not imported & {"site", "json", "re", "msgspec", "memd"}, done.stderr

    second = Session(daemon)
    early = second.initialize(), second.ask("tools/list")
    assert early == whole  # the same answers, once parsed
    marked = marshal.loads(listing.read_bytes())
    for version, answer in marked["initialize"].items():
        marked["initialize"][version] = json.dumps({**json.loads(answer), "instructions": "from the listing"}).encode()
    listing.write_bytes(marshal.dumps(marked))
    fourth = Session(daemon)
    discover = fourth.ask("server/discover")  # Claude Code 2.1's first message: refused as the server refuses it
    assert discover["error"] == {"code": -32601, "message": "Method not found: server/discover"}
    assert fourth.initialize()["result"]["instructions"] == "from the listing"  # it answered, not the server
    assert fourth.close() == 0
    text, error = second.call("mem_search", query="anything")  # the whole server, from here on
    assert not error and "anything" in text
    assert second.ask("tools/list") == {**whole[1], "id": second.next_id}
    assert second.close() == 0

    listing.write_bytes(marshal.dumps({**marked, "key": "stale"}))  # memd was upgraded
    third = Session(daemon)
    assert third.initialize() == whole[0] and third.close() == 0
    assert marshal.loads(listing.read_bytes())["key"] != "stale"  # rewritten by the whole server
