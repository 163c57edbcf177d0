"""What the real Codex CLI fires, memd stores: once each, trusted as installed, the context
reaching the model, compactions and resumes carried on, one memory with Claude Code."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from conftest import Instance

from e2e.codex import CodexUser, fired, stored
from e2e.fake_api import FakeAnthropic
from e2e.fake_openai import FakeOpenAI
from e2e.harness import ClaudeCode
from e2e.harness import assert_stored_once as same_events

SESSIONS = 30


@pytest.fixture
def user(codex_binary: str, openai: FakeOpenAI, daemon: Instance) -> CodexUser:
    return CodexUser(codex_binary, openai.url, daemon, Path(tempfile.mkdtemp(prefix="cx-", dir=daemon.root)))


def assert_stored_once(user: CodexUser) -> None:
    same_events(lambda: fired(user), lambda: stored(user.memd))


def test_codex_sessions_are_stored_exactly_once(user: CodexUser) -> None:
    """Scripted sessions with tool calls, failing commands and resumes: every event Codex
    fired (memd's hooks ran: installing trusted them) is stored once, by the codex agent."""
    for n in range(SESSIONS):
        steps = "\n".join(f"@bash echo step-{n}-{s}" for s in range(n % 3)) + ("\n@bash false" if n % 5 == 4 else "")
        answer, _seconds = user.run(f"session {n} of the soak\n{steps}\n@say finished {n}", resume=n % 7 == 6)
        assert answer == f"finished {n}"
    want = fired(user)
    assert sum(want.values()) >= SESSIONS * 4  # SessionStart, a prompt, Stop, SessionEnd at least
    assert {key[0] for key in want} >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"}
    assert_stored_once(user)
    assert not user.memd.query("SELECT 1 FROM events WHERE payload LIKE '%sk-openai-e2e-fake-key%'")
    assert "sk-openai-e2e-fake-key" not in user.memd.stderr()


def test_memd_s_context_reaches_codex_s_model(user: CodexUser, openai: FakeOpenAI) -> None:
    user.run("Note for later: the staging database is pgbouncer on port 6432.\n@say Noted.")
    user.run("Which port does the staging database pgbouncer listen on?\n@say 6432.")
    (asked,) = openai.sent("Which port does the staging database pgbouncer listen on?")
    context = [json.dumps(item) for item in asked["input"] if item.get("role") == "developer"]
    assert any("memory-context" in c and "6432" in c for c in context), context


def test_a_codex_compaction_is_carried_on(user: CodexUser, openai: FakeOpenAI) -> None:
    """Codex compacts (its auto limit), fires PreCompact, PostCompact and SessionStart(compact):
    memd gives the session's working state back, and the turn goes on."""
    answer, _ = user.run(
        "Fix the flaky login test in tests/test_login.py\n@bash! echo running the login tests\n@bash echo fixed\n"
        "@say The login test is fixed."
    )
    assert answer == "The login test is fixed."
    events = [p["_recorded_as"] for p in user.fired()]
    assert events.count("PreCompact") == events.count("PostCompact") == 1
    assert any(p.get("source") == "compact" for p in user.fired() if p["_recorded_as"] == "SessionStart")
    assert_stored_once(user)
    after = [r for r in openai.sent("memd-fake summary") if "login" in json.dumps(r["input"])]
    assert any(
        "flaky login test" in json.dumps(r["input"]) and "memory-context" in json.dumps(r["input"]) for r in after
    )


def test_one_memory_under_codex_and_claude_code(
    user: CodexUser, openai: FakeOpenAI, api: FakeAnthropic, claude_binary: str, daemon: Instance
) -> None:
    """In one project: what a Codex session learned is injected in a later Claude Code
    session, and the other way round, under the same citation."""
    claude = ClaudeCode(
        claude_binary, api.url, daemon, Path(tempfile.mkdtemp(prefix="cc-", dir=daemon.root)), "settings"
    )
    claude.project = user.project
    user.run("Decision: the invoice exporter writes CSV with semicolons for the Lyon office.\n@say Noted.")
    claude.run("How does the invoice exporter separate CSV fields for the Lyon office?\n@say Semicolons.")
    asked = [r for r in api.requests if "invoice exporter separate CSV" in json.dumps(r)]
    assert asked and "semicolons for the Lyon office" in json.dumps(asked[-1])
    (cite,) = daemon.query(
        "SELECT c.cite FROM events e JOIN citations c ON c.event_id = e.id WHERE e.agent = 'codex'"
        " AND e.kind = 'prompt' AND e.text LIKE 'Decision: the invoice exporter%'"
    )[0:1]
    assert f"mem:{cite[0]}" in json.dumps(asked[-1])
    claude.run("Remember: release tags are signed with the ops team's key, never a personal one.\n@say Noted.")
    user.run("Who signs the release tags, and with which key?\n@say The ops team's key.")
    (codex_asked,) = openai.sent("Who signs the release tags, and with which key?")
    assert "signed with the ops team" in json.dumps(codex_asked["input"])
    agents = dict(daemon.query("SELECT agent, count(*) FROM events GROUP BY agent"))
    assert agents.keys() >= {"codex", "claude-code"}
