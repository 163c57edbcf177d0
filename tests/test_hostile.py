"""Hostile payloads through the real hook client and daemon: an event with what could be
kept, or a counted rejection; never a crash, never a hung hook, never a stuck spool."""

from __future__ import annotations

import json

import pytest
from conftest import Instance

DEADLINE = 10.0
BASE = {"session_id": "hostile", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp/hostile"}


def send(inst: Instance, event: str, raw: bytes) -> None:
    result = inst.hook(event, raw, timeout=60)
    assert result.returncode == 0


def stored(inst: Instance) -> list[tuple[str, str, str]]:
    return inst.query(
        "SELECT kind, title, payload FROM events WHERE kind NOT IN ('session_summary', 'snapshot') ORDER BY id"
    )


@pytest.mark.parametrize(
    "payload",
    [
        {"hook_event_name": "PostToolUse"},  # nothing but the name
        {**BASE, "hook_event_name": "PostToolUse", "tool_name": 42, "tool_input": "x", "tool_response": [1, None]},
        {**BASE, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"edits": "nope"}},
        {**BASE, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_response": {"file": {"content": 5}}},
        {**BASE, "hook_event_name": "UserPromptSubmit", "prompt": {"not": "text"}},
        {**BASE, "hook_event_name": "SessionStart", "source": None, "model": ["x"]},
        {**BASE, "hook_event_name": "Stop", "last_assistant_message": 3.5, "background_tasks": "x"},
        {**BASE, "hook_event_name": "TotallyNewEvent", "anything": {"goes": True}},
        {**BASE, "session_id": 7, "cwd": ["/a"], "hook_event_name": "Notification", "message": None},
    ],
)
def test_missing_fields_and_wrong_types_still_make_an_event(daemon: Instance, payload: dict) -> None:
    send(daemon, payload["hook_event_name"], json.dumps(payload).encode())
    (row,) = stored(daemon)
    assert row[1]  # a title, whatever the shape
    assert daemon.status().rejected == 0 and daemon.spooled() == []


def test_five_megabyte_tool_response_is_clipped(daemon: Instance) -> None:
    out = "\n".join(f"{n:07d} " + "log line " * 8 for n in range(65_000))
    assert len(out) > 5_000_000
    payload = {**BASE, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "make"}}
    payload |= {"tool_response": {"stdout": out, "stderr": ""}, "tool_use_id": "toolu_big"}
    send(daemon, "PostToolUse", json.dumps(payload).encode())
    ((kind, title, stored_payload),) = stored(daemon)
    assert (kind, title) == ("tool", "Bash: make")
    assert len(stored_payload) < 30_000 and "lines, " in stored_payload and "chars truncated" in stored_payload
    (text,) = daemon.query("SELECT text FROM events")[0]
    assert "0000000" in text and "0064999" in text and len(text) < 25_000


def test_a_20_mb_tool_output_is_stored_with_its_command(daemon: Instance) -> None:
    """The hook client keeps the head and tail of a payload over its cap: every small field
    of the head (the command, its description, the exit code) is stored as it was, the
    output up to the cut and marked, the tool call's id from the tail."""
    command = "pytest -x tests/test_login.py --count 400"
    payload = {**BASE, "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": command, "description": "Run the login test 400 times"},
               "tool_response": {"exit_code": 1, "stdout": "F" * 20_000_000, "stderr": "", "interrupted": False},
               "tool_use_id": "toolu_20mb"}  # fmt: skip
    raw = json.dumps(payload).encode()
    send(daemon, "PostToolUse", raw)
    ((kind, title, stored_payload),) = stored(daemon)
    assert (kind, title) == ("tool", f"Bash: {command}")
    kept = json.loads(stored_payload)
    assert kept["tool_input"] == payload["tool_input"] and kept["tool_response"]["exit_code"] == 1
    assert kept["memd_dropped"]["size"] == len(raw) and "cut" in kept["memd_dropped"]["reason"]
    assert "memd: cut here" in kept["tool_response"]["stdout"]
    assert daemon.query("SELECT idem_key FROM events WHERE kind = 'tool'") == [("PostToolUse:tool:toolu_20mb",)]
    assert daemon.spooled() == []


def test_deeply_nested_json_keeps_its_identifying_fields(daemon: Instance) -> None:
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    head = '{"session_id":"hostile","cwd":"/tmp/hostile","hook_event_name":"PostToolUse","tool_name":"X"'
    send(daemon, "PostToolUse", f'{head},"tool_input":{deep}}}'.encode())
    ((_, title, stored_payload),) = stored(daemon)
    assert json.loads(stored_payload)["memd_dropped"]["reason"] == "nests deeper than 64 levels"
    assert json.loads(stored_payload)["session_id"] == "hostile" and title.startswith("X")
    assert daemon.spooled() == []


def test_invalid_utf8_is_repaired_and_kept(daemon: Instance) -> None:
    raw = b'{"session_id":"hostile","hook_event_name":"UserPromptSubmit","prompt":"caf\xe9 au lait \xff\xfe"}'
    send(daemon, "UserPromptSubmit", raw)
    ((kind, title, stored_payload),) = stored(daemon)
    assert (kind, title) == ("prompt", "Prompt: caf\ufffd au lait \ufffd\ufffd")
    assert json.loads(stored_payload)["memd_invalid_utf8"] is True
    status = daemon.status()
    assert (status.events, status.rejected, status.spool_backlog) == (1, 0, 0)


CUT_HEAD = (
    b'{"session_id":"hostile","transcript_path":"/tmp/t.jsonl","cwd":"/tmp/hostile",'
    b'"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"tail log"},'
)


@pytest.mark.parametrize(
    ("stdout", "expected", "replaced"),
    [
        (rb"cut \ud83d", "cut \ufffd", 1),  # Claude Code 2.1.328: an output cut in the middle of an emoji
        (rb"\udc00 the other half", "\ufffd the other half", 1),
        (rb"\ud83d\ude00 whole, \ud83d cut", "\U0001f600 whole, \ufffd cut", 1),
        (rb"ok \ud83d\ude00", "ok \U0001f600", 0),  # a valid pair: no repair, nothing counted
    ],
)
def test_lone_surrogates_are_replaced_stored_and_counted(
    daemon: Instance, stdout: bytes, expected: str, replaced: int
) -> None:
    raw = CUT_HEAD + rb'"tool_response":{"stdout":"' + stdout + rb'","stderr":""},"tool_use_id":"toolu_cut"}'
    send(daemon, "PostToolUse", raw)
    ((kind, title, stored_payload),) = stored(daemon)
    assert (kind, title) == ("tool", "Bash: tail log")
    payload = json.loads(stored_payload)
    assert payload["tool_response"]["stdout"] == expected
    ((text, meta),) = daemon.query("SELECT text, meta FROM events WHERE kind = 'tool'")
    assert expected in text
    assert payload.get("memd_lone_surrogates") == (replaced or None)
    assert json.loads(meta).get("lone_surrogates") == (replaced or None)
    status = daemon.status()
    assert (status.events, status.rejected, status.spool_backlog) == (1, 0, 0)
    assert status.lone_surrogates == (1 if replaced else 0)
    assert "lone_surrogates" not in status.redactions
    shown = daemon.memctl("status")
    assert f"repaired:      {status.lone_surrogates} events had lone surrogates" in shown.stdout


def test_not_json_at_all_is_a_counted_rejection(daemon: Instance) -> None:
    send(daemon, "UserPromptSubmit", b"\xff\xfe\x00garbage")
    status = daemon.status()
    assert (status.events, status.rejected, status.spool_backlog) == (0, 1, 0)
