"""Every path a secret can come in by, against every file memd writes.

One fake of every rule (tests/test_secret_rules.py), all of them in every field a payload
has: hook events through the real hook client (prompt, Bash command and output, a file
read, written and edited, an MCP tool's nested JSON input holding JSON text, the reply, a
subagent's reply, a compaction summary), a transcript imported, ``mem_remember``'s request,
with the daemon logging at debug level and embedding everything.  Then every byte of the
data dir, the state dir (the log) and the runtime dir is searched for each secret."""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Instance
from test_import import reply, tool_result, tool_use, user
from test_secret_rules import GENERATORS
from test_secret_shapes import KEYLESS, token

from memd.protocol import Remember, Remembered

FAKES = [GENERATORS[name](random.Random(f"disk-{name}")) for name in sorted(GENERATORS)] + [
    (template.format(t=token(100 + index)), token(100 + index)) for index, template in enumerate(KEYLESS)
]  # and keys no rule names, caught by their shape
TEXT = "\n".join(text for text, _ in FAKES)
SECRETS = [secret for _, secret in FAKES]


@pytest.fixture
def embedded() -> Iterator[Instance]:
    inst = Instance(tempfile.mkdtemp(prefix="memd-disk-", dir="/tmp"), embedding=True)
    inst.start("--log-level", "debug")
    try:
        yield inst
    finally:
        if inst.process is not None:
            assert inst.stop() == 0


def _hook(instance: Instance, event: str, cwd: str, **fields: object) -> None:
    payload = {"session_id": "s-live", "cwd": cwd, "hook_event_name": event, "transcript_path": "/dev/null", **fields}
    done = instance.hook(event, json.dumps(payload).encode())
    assert done.returncode == 0, done.stderr


def _every_file(root: str) -> bytes:
    data = b""
    for path in Path(root).rglob("*"):
        if path.is_file() and not path.is_relative_to(Path(root, "config")):
            data += path.read_bytes()
    return data


def test_no_secret_reaches_any_file(embedded: Instance) -> None:
    cwd = f"{embedded.root}/proj"
    os.makedirs(cwd)
    _hook(embedded, "SessionStart", cwd, source="startup")
    _hook(embedded, "UserPromptSubmit", cwd, prompt=f"Deploy with these:\n{TEXT}", prompt_id="p1")
    bash = {"command": f"export CREDS='{TEXT}' && ./deploy.sh", "description": "deploy"}
    _hook(embedded, "PreToolUse", cwd, tool_name="Bash", tool_use_id="t1", tool_input=bash)
    _hook(embedded, "PostToolUse", cwd, tool_name="Bash", tool_use_id="t1", tool_input=bash,
          tool_response={"stdout": TEXT, "stderr": TEXT, "interrupted": False})  # fmt: skip
    _hook(embedded, "PostToolUse", cwd, tool_name="Read", tool_use_id="t2", tool_input={"file_path": f"{cwd}/.env"},
          tool_response={"type": "text", "file": {"filePath": f"{cwd}/.env", "content": TEXT}})  # fmt: skip
    written = {"file_path": f"{cwd}/settings.py", "content": TEXT}
    _hook(embedded, "PostToolUse", cwd, tool_name="Write", tool_use_id="t3", tool_input=written,
          tool_response={"type": "create"})  # fmt: skip
    _hook(embedded, "PostToolUseFailure", cwd, tool_name="Edit", tool_use_id="t4",
          tool_input={"file_path": f"{cwd}/app.yml", "old_string": TEXT, "new_string": TEXT[::-1]},
          error=f"String to replace not found in file.\nString: {TEXT}")  # fmt: skip
    nested = {"query": json.dumps({"config": {"note": TEXT}}), "headers": {"Authorization": "Bearer x"}}
    _hook(embedded, "PostToolUse", cwd, tool_name="mcp__db__run", tool_use_id="t5", tool_input=nested,
          tool_response=[{"type": "text", "text": json.dumps({"rows": [TEXT]})}])  # fmt: skip
    _hook(embedded, "SubagentStop", cwd, agent_id="a1", agent_type="Explore", last_assistant_message=TEXT)
    _hook(embedded, "Stop", cwd, prompt_id="p1", stop_hook_active=False, last_assistant_message=f"Done: {TEXT}")
    _hook(embedded, "PreCompact", cwd, trigger="manual", custom_instructions=TEXT)
    _hook(embedded, "PostCompact", cwd, trigger="manual", compact_summary=f"<summary>{TEXT}</summary>")
    _hook(embedded, "SessionEnd", cwd, reason="exit")

    remembered = embedded.call(Remember(text=f"Keep these: {TEXT}", cwd=cwd), Remembered)
    assert remembered.cite

    at = "2026-11-20T10:00:0{}Z"
    transcript = Path(embedded.root, "s-old.jsonl")
    transcript.write_text("\n".join([
        user("s-old", cwd, at.format(0), "u1", f"Use {TEXT}"),
        tool_use("s-old", cwd, at.format(1), "u2", "c1", "Bash", {"command": TEXT}),
        tool_result("s-old", cwd, at.format(2), "u3", "c1", TEXT, {"stdout": TEXT, "stderr": ""}),
        reply("s-old", cwd, at.format(3), "u4", TEXT),
    ]) + "\n")  # fmt: skip
    imported = embedded.memctl("import", "--session", str(transcript))
    assert imported.returncode == 0, imported.stderr
    transcript.unlink()  # the user's file, not memd's

    kinds = {"session_summary", "snapshot", "prompt", "tool", "assistant"}
    assert kinds <= {row[0] for row in embedded.query("SELECT DISTINCT kind FROM events")}
    embedded.wait_embedded()
    stored = " ".join(row[0] for row in embedded.query("SELECT title || text || meta || payload FROM events"))
    for name in ("github-token", "stripe-key", "private-key", "cli-password", "slack-webhook"):
        assert f"[REDACTED:{name}]" in stored, name
    assert embedded.stop() == 0  # logs flushed, WAL checkpointed

    files = _every_file(embedded.root)
    assert len(files) > 100_000, "the database, its index and the log are all there"
    leaked = [secret for secret in SECRETS if secret.encode() in files]
    assert not leaked
