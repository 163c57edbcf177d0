"""``memctl scan``: what an older memd stored is checked against today's secret rules and, on
confirmation, redacted in place (rows, keyword indexes, vectors embedded again, summaries
recomputed, the old bytes gone from the files); an export restored is filtered again too.

"Stored by an older memd" is produced for real: a daemon with ``privacy.secrets = false``
stores the secrets, then a daemon with today's default rules opens the same data dir."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Instance

from memd.capture.privacy import Privacy
from memd.capture.rescan import Content, Rescan
from memd.config import PrivacyConfig
from memd.protocol import Ingest, Ingested, Scan, Scanned, Stats, StatsReport

GITHUB = "ghp_" + "R8kq2LmZ7xW4vN9pT3sY6bH1cJ5dF0gA2eK7"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc51Xb"
MYSQL = "S3cretPass9x"
HANGUL = "흙뿅꿺"
WEBHOOK = "https://hooks.slack.com/services/" + "T0A1B2C3D/B0E4F5G6H/q8W2eR4tY6uI8oP0aS2dF4gH"
KEYLESS = "q8XrT2mVb9LkP3nZw7YcA1dF5gHs4Jt6"  # no name, no prefix: the shape layer's
SECRETS = (GITHUB, STRIPE, MYSQL, WEBHOOK.rsplit("/", 1)[1], KEYLESS)


@pytest.fixture
def old_store() -> Iterator[Instance]:
    """A data dir written with the secret rules off, then a daemon with today's rules on it."""
    inst = Instance(tempfile.mkdtemp(prefix="memd-scan-", dir="/tmp"), embedding=True)
    inst.configure("[privacy]\nsecrets = false\n")
    inst.start()
    try:
        cwd = f"{inst.root}/proj"
        os.makedirs(cwd)
        _event(inst, "UserPromptSubmit", cwd, prompt=f"Use the token {GITHUB} for the release, {HANGUL} 확인")
        _event(inst, "PostToolUse", cwd, tool_name="Bash", tool_use_id="t1",
               tool_input={"command": f"mysql -uroot -p{MYSQL} shop < dump.sql"},
               tool_response={"stdout": "ok", "stderr": "", "exit_code": 0})  # fmt: skip
        _event(inst, "PostToolUse", cwd, tool_name="Read", tool_use_id="t2", tool_input={"file_path": f"{cwd}/.env"},
               tool_response={"file": {"content": f"# payments\nSTRIPE_KEY={STRIPE}\nDEBUG=1\n"}})  # fmt: skip
        _event(inst, "UserPromptSubmit", cwd, prompt="Refactor the payment module into services")
        _event(inst, "UserPromptSubmit", cwd, prompt=f"post the release notes to {WEBHOOK} when done")
        _event(inst, "UserPromptSubmit", cwd, prompt=f'the SDK wants Client("{KEYLESS}") in prod')
        _event(inst, "SessionEnd", cwd, reason="exit")
        inst.wait_embedded()
        assert inst.query("SELECT count(*) FROM entities WHERE kind = 'url' AND name = ?", WEBHOOK) == [(1,)]
        assert all(secret.encode() in _files(inst) for secret in SECRETS)
        assert inst.stop() == 0
        inst.configure("")  # today's rules
        inst.start()
        yield inst
    finally:
        if inst.process is not None:
            assert inst.stop() == 0


def _event(instance: Instance, event: str, cwd: str, **fields: object) -> int:
    payload = {"session_id": "s1", "cwd": cwd, "hook_event_name": event, "transcript_path": "/dev/null", **fields}
    ingest = Ingest(event=event, sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
    return instance.call(ingest, Ingested).event_id


def _files(instance: Instance) -> bytes:
    """Every file of the data dir (database, WAL, vector index) and the log, as bytes."""
    data = b""
    for path in [*Path(instance.paths.data_dir).rglob("*"), Path(instance.paths.log_file)]:
        if path.is_file():
            data += path.read_bytes()
    return data


def test_scan_redacts_the_past_in_every_store_and_the_files(old_store: Instance) -> None:
    inst = old_store
    events_before = inst.query("SELECT id, kind FROM events ORDER BY id")
    cites_before = inst.query("SELECT event_id, cite FROM citations ORDER BY event_id")
    assert inst.search(GITHUB, all_projects=True).results, "the old store finds the token"

    preview = inst.call(Scan(), Scanned)
    assert preview.total >= 3 and not preview.applied and preview.checked == len(events_before)
    assert preview.kinds["github-token"] >= 1 and preview.kinds["stripe-key"] >= 1
    assert preview.kinds["cli-password"] >= 1 and preview.kinds["random-token"] >= 1
    listed = json.dumps([event.title for event in preview.events])
    assert not any(secret in listed for secret in SECRETS), "the listing shows no secret"
    assert all(secret.encode() in _files(inst) for secret in SECRETS), "a dry run changes nothing"

    refused = inst.memctl("scan")  # no terminal, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr and "github-token" in refused.stdout
    done = inst.memctl("scan", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("redacted ") and not any(secret in done.stdout for secret in SECRETS)

    # The same events, ids and citations, with markers where the secrets were; the log append-only again.
    assert inst.query("SELECT count(*) FROM sqlite_master WHERE name = 'events_append_only'") == [(1,)]
    assert inst.query("SELECT id, kind FROM events ORDER BY id") == events_before
    assert inst.query("SELECT event_id, cite FROM citations ORDER BY event_id") == cites_before
    texts = " ".join(row[0] for row in inst.query("SELECT title || text || meta || payload FROM events"))
    assert "[REDACTED:github-token]" in texts and "[REDACTED:stripe-key]" in texts
    assert "[REDACTED:random-token]" in texts
    assert "Refactor the payment module" in texts and HANGUL in texts, "the rest stays"
    # Gone from search, the keyword indexes' segments, every file memd writes.
    assert inst.search(GITHUB, all_projects=True).results == []
    assert inst.query("SELECT count(*) FROM events_fts_data WHERE instr(block, ?)", GITHUB[6:].encode()) == [(0,)]
    # The entities were found again in what is left: the webhook's address is no entity any more.
    names = " ".join(
        row[0] for row in inst.query("SELECT name FROM entities UNION ALL SELECT alias FROM entity_aliases")
    )
    assert not [secret for secret in SECRETS if secret in names] and "hooks.slack.com" in names
    inst.wait_embedded()  # the redacted events embedded again
    embedding = inst.status().embedding
    assert embedding is not None and embedding.index_vectors == embedding.stored_vectors
    assert inst.query("SELECT count(*) FROM vector_outbox WHERE state != 'done'") == [(0,)]
    files = _files(inst)
    assert not [secret for secret in SECRETS if secret.encode() in files]
    # Counted by kind, audited without content, and a second scan finds nothing.
    report = inst.call(Stats(), StatsReport)
    assert report.redactions["secret:github-token"] >= 1 and report.redactions["secret:cli-password"] >= 1
    assert inst.query("SELECT selector, events FROM forget_log") == [("scan", preview.total)]
    again = inst.memctl("scan", "--dry-run")
    assert again.returncode == 0 and "no secret" in again.stdout


def test_a_restored_export_is_filtered_by_todays_rules(old_store: Instance) -> None:
    exported = subprocess.run([*old_store.memctl_argv(), "export"], env=old_store.env, capture_output=True, timeout=60)
    assert exported.returncode == 0 and GITHUB.encode() in exported.stdout  # exported as it was stored
    path = Path(old_store.root) / "export.jsonl"
    path.write_bytes(exported.stdout)
    elsewhere = Instance(tempfile.mkdtemp(prefix="memd-scan-", dir="/tmp"))
    elsewhere.start()
    try:
        restored = elsewhere.memctl("import", "--from-export", str(path))
        assert restored.returncode == 0, restored.stderr
        stored = " ".join(row[0] for row in elsewhere.query("SELECT title || text || meta || payload FROM events"))
        assert "[REDACTED:github-token]" in stored and "Refactor the payment module" in stored
        assert not [secret for secret in SECRETS if secret in stored]
        assert elsewhere.call(Stats(), StatsReport).redactions["secret:github-token"] >= 1
    finally:
        assert elsewhere.stop() == 0


def test_a_secret_an_event_repeats_in_its_fields_is_counted_once() -> None:
    """Title, text and meta repeat the payload: one secret, one count, as capture counts it."""
    rescan = Rescan(Privacy(PrivacyConfig()))
    prompt = f"use {GITHUB} and {GITHUB}"
    content = Content(f"Prompt: {prompt}", prompt, json.dumps({"first": prompt}), json.dumps({"prompt": prompt}))
    changed = rescan.content(content)
    assert changed is not None
    redacted, found = changed
    assert found.kinds == {"github-token": 2} and found.secrets == 2
    assert GITHUB not in "".join(redacted) and rescan.content(redacted) is None
