"""What the real Claude Code fires, memd stores: once each, with the context reaching the model."""

from __future__ import annotations

import json
import time
from typing import Any

from e2e.fake_api import FakeAnthropic
from e2e.harness import ClaudeCode, compaction_agent, fired, stored


def test_a_session_is_stored_event_for_event(user: ClaudeCode) -> None:
    target = user.project / "notes.txt"
    run = user.run(
        "Set up the cookie TTL notes\n"
        f"@write {target} the cookie TTL was 60 s\n"
        f"@edit {target}|60 s|3600 s\n"
        f"@read {target}\n"
        "@bash grep -c TTL notes.txt\n"
        "@say The cookie TTL is now 3600 s."
    )
    assert run.result.get("result") == "The cookie TTL is now 3600 s."
    assert_stored_once(user)


def assert_stored_once(user: ClaudeCode, skip=lambda p: False, timeout: float = 10.0) -> None:
    """Every event Claude Code fired is in memd's store exactly once (waiting for async hooks)."""
    deadline = time.monotonic() + timeout
    while (have := stored(user)) != (want := fired(user, skip)) and time.monotonic() < deadline:
        time.sleep(0.05)
    missing, extra = want - have, have - want
    assert not missing and not extra, f"missing (fired, not stored): {missing}\nextra (stored, not fired): {extra}"


def strings(value: Any) -> list[str]:
    """Every string in a request body (its text blocks, system prompt, tool results)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def context_sent(request: dict[str, Any]) -> str:
    """memd's context blocks in one request the fake API received."""
    return "\n".join(s for s in strings(request.get("messages")) if "<memory-context" in s)


def is_compaction(request: dict[str, Any]) -> bool:
    last = "\n".join(strings(request.get("messages", [])[-1:]))
    return "<analysis>" in last and "<summary>" in last


def test_two_compactions_in_one_prompt_are_stored_and_each_continued(
    plugin_user: ClaudeCode, api: FakeAnthropic
) -> None:
    user = plugin_user
    first = len(api.requests)
    run = user.run("Two compactions\n@bash! echo one\n@bash! echo two\n@bash echo three\n@say all three ran")
    assert run.result.get("result") == "all three ran"
    fired = [p["_recorded_as"] for p in user.fired()]
    assert fired.count("PostCompact") == fired.count("PreCompact") == 2
    assert_stored_once(user, skip=compaction_agent)  # both SessionStart(compact), both PreCompact
    sent = api.requests[first:]
    after = [sent[i + 1] for i, request in enumerate(sent[:-1]) if is_compaction(request)]
    assert len(after) == 2
    for request in after:  # the model's first request after each compaction carries the continuation
        assert 'mode="continuation"' in context_sent(request) and "compaction:" in context_sent(request)
    summaries = user.memd.query("SELECT text FROM events WHERE kind = 'compact_summary' ORDER BY id")
    assert len(summaries) == 2 and all(t.startswith("1. Primary Request") for (t,) in summaries)
    assert not any("<analysis>" in t for (t,) in summaries)
    assert "Hook Stop (Stop) cancelled" not in run.debug


def test_compact_resume_fork_of_an_older_session_and_import(plugin_user: ClaudeCode, api: FakeAnthropic) -> None:
    user = plugin_user
    older = user.run("Goal: migrate the billing cron to systemd timers\n@bash echo timers\n@say timers planned")
    user.run("/compact", "--resume", older.session_id)
    resumed = user.run("Continue the billing timers\n@bash echo resumed\n@say resumed", "--resume", older.session_id)
    assert resumed.session_id == older.session_id
    newer = user.run("Goal: rotate the staging TLS certificates\n@bash echo certs\n@say certs rotated")
    time.sleep(1.5)  # the fork's parent is told apart from the newest session by when it last replied
    first = len(api.requests)
    fork = user.run("Forked: what were we doing?\n@say forked", "--resume", older.session_id, "--fork-session")
    assert fork.session_id not in (older.session_id, newer.session_id)
    context = context_sent(api.requests[first])
    assert f"fork: the working state of session {older.session_id[:8]}" in context
    assert "billing" in context and "TLS" not in context
    assert_stored_once(user, skip=compaction_agent)
    # The manual compaction is one memory, its summary's body; /compact itself fired no prompt.
    ((summary,),) = user.memd.query("SELECT text FROM events WHERE kind = 'compact_summary'")
    assert summary.startswith("1. Primary Request") and "<analysis>" not in summary
    assert not user.memd.query("SELECT 1 FROM events WHERE kind = 'prompt' AND text LIKE '/compact%'")

    # Importing the transcripts live capture already stored adds nothing: not the prompts and
    # replies, not the compaction summary, not the fork's copies of its parent's records.
    before = stored(user)
    imported = json.loads(user.memctl("import", "--all", "--json").stdout)
    assert imported["stored"] == 0 and imported["events"] > 0, imported
    assert stored(user) == before
