"""End to end: no secret of the privacy corpus reaches any file memd writes.

Every corpus text goes in as a prompt, as Bash output and as a tool input through the
real hook client; afterwards the raw bytes of the database (with its WAL), the FTS
index inside it and the log files must not contain any of the corpus's secrets.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Instance

CORPUS = json.loads((Path(__file__).parent / "privacy_corpus.json").read_text())


def distinctive_secrets(cases: list[dict]) -> set[str]:
    """Secrets long enough that finding their bytes in a file means they leaked.

    (``a1`` or ``4111`` turn up in any binary file; and a word that some other case
    keeps on purpose is no proof of a leak.)
    """
    kept = " ".join(c["expected"] for c in CORPUS)
    return {s for c in cases for s in c["secrets"] if len(s.encode()) >= 6 and s not in kept}


def payloads(n: int, text: str) -> list[tuple[str, dict]]:
    common = {"session_id": f"privacy-{n}", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp/privacy-project"}
    return [
        ("UserPromptSubmit", {**common, "hook_event_name": "UserPromptSubmit", "prompt": text}),
        (
            "PostToolUse",
            {
                **common,
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "./run.sh", "description": text[:200]},
                "tool_response": {"stdout": text, "stderr": text[::-1][:0]},
                "tool_use_id": f"toolu_privacy_{n}",
            },
        ),
        (
            "PostToolUse",
            {
                **common,
                "hook_event_name": "PostToolUse",
                "tool_name": "Write",
                "tool_input": {"file_path": "/tmp/privacy-project/notes.md", "content": text},
                "tool_response": {"type": "create", "filePath": "/tmp/privacy-project/notes.md"},
                "tool_use_id": f"toolu_privacy_write_{n}",
            },
        ),
        ("Stop", {**common, "hook_event_name": "Stop", "last_assistant_message": text}),
    ]


def test_no_corpus_secret_reaches_disk_or_logs(instance: Instance) -> None:
    instance.start("--log-level", "debug")  # the chattiest logs are the ones to check
    cases = [c for c in CORPUS if c.get("secrets") and not c.get("config")]
    assert len(cases) >= 40
    for n, case in enumerate(cases):
        for event, payload in payloads(n, case["text"]):
            result = instance.hook(event, json.dumps(payload).encode() + b"\n")
            assert result.returncode == 0, result.stderr
            assert not any(s.encode() in result.stderr for s in case["secrets"])
    assert instance.status().events == 4 * len(cases)
    assert instance.stop() == 0
    files = [instance.paths.database, instance.paths.log_file, instance.stderr_file]
    files += [str(p) for p in Path(instance.paths.data_dir).glob("memd.sqlite3-*")]
    blobs = {path: Path(path).read_bytes() for path in files if Path(path).exists()}
    assert any(b"privacy-project" in blob for blob in blobs.values())  # the events are there
    secrets = distinctive_secrets(cases)
    assert len(secrets) >= 20
    for secret in secrets:
        for path, blob in blobs.items():
            assert secret.encode() not in blob, f"{secret!r} reached {path}"
    totals = dict(instance.query("SELECT name, total FROM redaction_totals"))
    assert totals["secrets"] > 0 and totals["private_spans"] > 0
