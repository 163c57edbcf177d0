"""Golden capture tests: real Claude Code payloads through the real hook client and daemon.

Each hook fixture and each tool shape of tool_response_examples.json must come out
of the store as exactly the normalized event recorded in tests/golden/capture.json
(kind, tool, title, importance, meta).  After an intended change to normalization,
rewrite the file with ``MEMD_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_capture_golden.py``
and review its diff like code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES, Instance, hook_fixtures

GOLDEN = Path(__file__).parent / "golden" / "capture.json"


def stored(inst: Instance, after_id: int) -> list[dict]:
    rows = inst.query(
        "SELECT event, kind, tool, title, importance, meta FROM events"
        " WHERE id > ? AND kind NOT IN ('session_summary', 'snapshot') ORDER BY id",
        after_id,
    )
    return [
        {"event": e, "kind": k, "tool": t, "title": title, "importance": i, "meta": json.loads(m)}
        for e, k, t, title, i, m in rows
    ]


def last_id(inst: Instance) -> int:
    return inst.query("SELECT coalesce(max(id), 0) FROM events")[0][0]


def tool_examples() -> list[tuple[str, bytes]]:
    examples = json.loads((FIXTURES / "tool_response_examples.json").read_text())["examples"]
    cases = []
    for n, example in enumerate(examples):
        payload = {
            "session_id": "golden-tools",
            "transcript_path": "/tmp/golden.jsonl",
            "cwd": "/tmp/golden-project",
            "hook_event_name": "PostToolUse",
            "tool_name": example["tool_name"],
            "tool_input": example["tool_input"],
            "tool_response": example["tool_response"],
            "tool_use_id": f"toolu_golden_{n:02d}",
        }
        cases.append((f"{n:02d}_{example['tool_name']}", json.dumps(payload).encode() + b"\n"))
    return cases


def capture_all(inst: Instance) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {}
    cases = [(p.stem, p.read_bytes()) for p in hook_fixtures()] + [(f"tool_{n}", b) for n, b in tool_examples()]
    for name, raw in cases:
        before = last_id(inst)
        event = json.loads(raw).get("hook_event_name", "Unknown")
        result = inst.hook(event, raw)
        assert result.returncode == 0, result.stderr
        results[name] = stored(inst, before)
    return results


def test_every_payload_normalizes_to_its_golden_event(daemon: Instance) -> None:
    results = capture_all(daemon)
    if os.environ.get("MEMD_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(results, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        pytest.skip("golden file rewritten: review its diff")
    golden = json.loads(GOLDEN.read_text())
    assert sorted(results) == sorted(golden)
    for name, events in results.items():
        assert events == golden[name], name


def test_the_compaction_stream_in_order(daemon: Instance) -> None:
    lines = (FIXTURES / "hooks" / "stream_compact.jsonl").read_bytes().splitlines()
    for line in lines:
        assert daemon.hook(json.loads(line)["hook_event_name"], line + b"\n").returncode == 0
    assert [(e["event"], e["kind"]) for e in stored(daemon, 0)] == [
        ("InstructionsLoaded", "instructions"),
        ("SessionStart", "session_start"),
        ("PreCompact", "pre_compact"),
        # The reload after compaction is byte-identical to the first: one event by idempotency key.
        # The compaction agent's SubagentStop is skipped: its summary is PostCompact's.
        ("SessionStart", "session_start"),
        ("PostCompact", "compact_summary"),
        ("SessionEnd", "session_end"),
    ]
    (summary,) = daemon.query("SELECT summary FROM sessions")
    assert summary[0].endswith("6 events, <1 min")
