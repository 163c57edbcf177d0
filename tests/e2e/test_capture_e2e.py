"""What the real Claude Code fires, memd stores: once each, with the context reaching the model."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from conftest import Instance

from e2e.conftest import _user
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


def blocks_sent(request: dict[str, Any]) -> list[str]:
    """Each of memd's context blocks in one request, whole."""
    return re.findall(r"<memory-context.*?</memory-context>", context_sent(request), re.S)


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
    # Another session runs beside the older one's resumption and replies about when it does:
    # the fork's parent is the session its command line names, not the one that replied then.
    with ThreadPoolExecutor(2) as both:
        resuming = both.submit(user.run, "Continue the billing timers\n@say resumed", "--resume", older.session_id)
        newer = both.submit(user.run, "Goal: rotate the staging TLS certificates\n@say certs rotated").result()
        assert resuming.result().session_id == older.session_id
    first = len(api.requests)
    fork = user.run("Forked: what were we doing?\n@say forked", "--resume", older.session_id, "--fork-session")
    assert fork.session_id not in (older.session_id, newer.session_id)
    (carried,) = [b for b in blocks_sent(api.requests[first]) if 'reason="fork:' in b]  # the parent's came copied
    assert f"fork: the working state of session {older.session_id[:8]}" in carried
    assert "billing" in carried and "TLS" not in carried  # (the prompt's own block may name the other)
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


SECRET = "AKIAQ3EGRJ7LPX5VNM2D"
PRIVATE = "the alarm code is 4417-9902"


def memd_tool(payload: dict[str, Any]) -> bool:
    """memd's own MCP tools: Claude Code fires their hooks, memd does not store its own traffic."""
    return str(payload.get("tool_name", "")).startswith(("mcp__memd__", "mcp__plugin_memd_memd__"))


def test_tasks_via_tool_search_memd_mcp_and_privacy_on_disk(user: ClaudeCode, api: FakeAnthropic) -> None:
    search = "mcp__plugin_memd_memd__mem_search" if user.mode == "plugin" else "mcp__memd__mem_search"
    user.run("Remember that deploys use blue/green\n@say noted")
    first = len(api.requests)
    run = user.run(
        f"Plan the billing tests <private>{PRIVATE}</private>\n"
        "@toolsearch select:TaskCreate,TaskUpdate\n"
        '@tool TaskCreate {"subject": "Write the billing tests", "description": "cover the cron timers",'
        ' "activeForm": "Writing the billing tests"}\n'
        '@tool TaskUpdate {"taskId": "1", "status": "in_progress"}\n'
        f'@mcp {search} {{"query": "deploys blue/green"}}\n'
        f"@bash echo aws_access_key_id={SECRET}\n"
        "@say planned"
    )
    assert run.result.get("result") == "planned"
    assert_stored_once(user, skip=memd_tool)
    # ToolSearch is plumbing; the task is carried across sessions, in progress.
    assert user.memd.query("SELECT importance FROM events WHERE tool = 'ToolSearch'") == [(1,)]
    assert user.memd.query("SELECT content, status FROM tasks") == [("Write the billing tests", "in_progress")]
    # memd's MCP answer reached the model, citing the earlier prompt.
    (answer,) = {s for r in api.requests[first:] for s in strings(r.get("messages")) if "memories in" in s}
    assert "Remember that deploys use blue/green" in answer
    # This session's own prompt, in the model's context already, comes after the earlier session's.
    assert answer.index("Remember that deploys") < answer.index("Plan the billing tests")
    # Neither the secret nor the private span reached memd's files (database, WAL, log, spool).
    claude_dirs = {p for p in Path(user.memd.root).iterdir() if p.name.startswith("cc-")}  # transcripts hold all
    memd_files = [p for p in Path(user.memd.root).rglob("*") if p.is_file() and not claude_dirs & set(p.parents)]
    assert any(p.name.startswith("memd.sqlite3") for p in memd_files)
    for path in memd_files:
        data = path.read_bytes()
        assert SECRET.encode() not in data and PRIVATE.encode() not in data, path
    assert "Hook Stop (Stop) cancelled" not in run.debug


def test_clear_and_a_plugin_slash_command(plugin_user: ClaudeCode, api: FakeAnthropic) -> None:
    user = plugin_user
    started = user.run("Goal: migrate the billing cron to systemd timers\n@bash echo timers\n@say timers planned")
    searched = user.run("/memd:memory-search billing", "--resume", started.session_id)
    assert not searched.result.get("is_error")
    user.run("/clear", "--resume", started.session_id)
    assert_stored_once(user)
    fired = user.fired()
    assert ("SessionEnd", "clear") in [(p["_recorded_as"], p.get("reason")) for p in fired]
    (cleared,) = [p for p in fired if p["_recorded_as"] == "SessionStart" and p.get("source") == "clear"]
    # The slash command is a prompt (Claude Code fired UserPromptSubmit for it); its search ran.
    prompts = [t for (t,) in user.memd.query("SELECT text FROM events WHERE kind = 'prompt'")]
    assert "/memd:memory-search billing" in prompts
    # After /clear, the next prompt of the cleared session gets the project's memory back.
    first = len(api.requests)
    user.run("Where were we with the timers?\n@say back", "--resume", cleared["session_id"])
    assert "billing" in context_sent(api.requests[first])


def test_tool_calls_whose_hooks_never_ran_come_back_at_the_session_end(
    claude_binary: str, api: FakeAnthropic, daemon: Instance
) -> None:
    """As if every async tool hook had been killed before it could hand its event over: memd's
    tool hooks are taken out of the settings, and the session's end brings the calls in from
    its transcript, each once."""
    user = _user(claude_binary, api, daemon, "settings")
    settings = json.loads(user.settings.read_text())
    for event in ("PostToolUse", "PostToolUseFailure"):
        for group in settings["hooks"][event]:
            group["hooks"] = [h for h in group["hooks"] if "hook.py" not in h["command"]]
    user.settings.write_text(json.dumps(settings))
    run = user.run(f"Check the notes\n@write {user.project}/n.txt hello\n@bash false\n@say no bye")
    assert run.result.get("result") == "no bye"
    assert {p["_recorded_as"] for p in user.fired()} >= {"PostToolUse", "PostToolUseFailure"}

    # Tool calls compared without the prompt_id their hook gets: this transcript does not record it.
    def once(events: Counter[tuple[str, ...]]) -> Counter[tuple[str, ...]]:
        return Counter({(*k[:3], "" if k[0].startswith("PostToolUse") else k[3], *k[4:]): n for k, n in events.items()})

    user.memd.wait_for(lambda: once(stored(user)) == once(fired(user)), timeout=30)  # SETTLE s after the end
    assert once(stored(user)) == once(fired(user))
