"""Claude Code's own memory, with the real CLI: the model saves a memory the way Claude Code
tells it to, memd finds it (``memctl search``, ``mem_search``), Claude Code's recall attaches
it, memd does not repeat it, and a memory ``memctl promote`` wrote is one Claude Code loads.

Claude Code's per-turn recall is switched on by ``CLAUDE_MEMORY_STORES`` (it is behind a
feature flag otherwise); the fake API answers its selector with the prompt's ``@recall`` lines.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import Instance

from e2e.conftest import _user
from e2e.fake_api import FakeAnthropic
from e2e.harness import ClaudeCode
from e2e.test_capture_e2e import strings
from memd.capture.claude_memory import parse, slug

COOKIE = (
    "---\\nname: cookie-ttl\\ndescription: Session cookies expire after 3600 seconds; the TTL lives in"
    " auth/session.py\\nmetadata:\\n  type: project\\n---\\n\\nThe session cookie TTL is 3600 s (one hour), set by"
    " SESSION_TTL in auth/session.py.\\n\\n**Why:** the security review asked for short sessions.\\n"
    "**How to apply:** keep SESSION_TTL at 3600 when touching the auth code."
)
QUESTION = "what is the session cookie TTL in auth/session.py?"


@pytest.fixture
def user(claude_binary: str, api: FakeAnthropic, modeled: Instance) -> ClaudeCode:
    return _user(claude_binary, api, modeled, "plugin")


def memory_folder_told(request: dict[str, object]) -> str:
    """The memory folder Claude Code's system prompt tells the model to write to."""
    (folder,) = {m.group(1) for s in strings(request.get("system")) for m in re.finditer(r"memory at `([^`]+)`", s)}
    return folder.rstrip("/")


def new_context(api: FakeAnthropic, first: int) -> str:
    """memd's context blocks the request ``first`` sent that no earlier request had (a resumed
    or forked conversation carries its earlier turns' blocks along)."""
    earlier = {s for r in api.requests[:first] for s in strings(r.get("messages"))}
    return "\n".join(
        s for s in strings(api.requests[first].get("messages")) if "<memory-context" in s and s not in earlier
    )


def test_claude_codes_memory_is_found_recalled_not_repeated_and_promoted(user: ClaudeCode, api: FakeAnthropic) -> None:
    first = len(api.requests)
    user.run("Hello\n@say hi")
    folder = memory_folder_told(api.requests[first])
    assert folder == str(user.home / ".claude" / "projects" / slug(os.path.realpath(user.project)) / "memory")

    # The model saves a memory as Claude Code's system prompt says: the file, then its line in MEMORY.md.
    user.run(
        "Remember that session cookies expire after an hour\n"
        f"@write {folder}/cookie-ttl.md {COOKIE}\n"
        f"@write {folder}/MEMORY.md - [Cookie TTL](cookie-ttl.md) — session cookies expire after 3600 s\n"
        "@say saved"
    )
    assert parse((Path(folder) / "cookie-ttl.md").read_text(), "x").type == "project"
    ((cite, meta),) = user.memd.query(
        "SELECT cite, meta FROM events JOIN citations ON event_id = events.id WHERE kind = 'claude-memory'"
    )
    assert json.loads(meta)["path"] == f"{folder}/cookie-ttl.md"
    found = user.memctl("search", QUESTION, "--kind", "claude-memory", "--all-projects")
    assert f"mem:{cite}" in found.stdout

    # mem_search, as the model calls it, answers with the fact and its citation.
    first = len(api.requests)
    user.run(f'Look it up\n@mcp mcp__plugin_memd_memd__mem_search {{"query": "{QUESTION}"}}\n@say found')
    (answer,) = {s for r in api.requests[first:] for s in strings(r.get("messages")) if "memories in" in s}
    assert f"mem:{cite}" in answer and "Claude Code memory (project)" in answer

    # Claude Code's recall attaches the file in a turn about something else than memd searched for.
    user.env["CLAUDE_MEMORY_STORES"] = "[]"
    first = len(api.requests)
    turn = user.run(
        "Next the billing cron moves to systemd timers\n@recall cookie-ttl.md\n@bash sleep 1; echo ok\n@say ok"
    )
    assert cite not in new_context(api, first)  # memd gave nothing of the memory
    recalled = [
        r for r in user.transcript(turn.session_id) if (r.get("attachment") or {}).get("type") == "relevant_memories"
    ]
    assert [m["path"] for m in recalled[0]["attachment"]["memories"]] == [f"{folder}/cookie-ttl.md"]
    # Asked about it next in that session, memd leaves out what the recall gave...
    first = len(api.requests)
    user.run(f"{QUESTION}\n@say 3600 s", "--resume", turn.session_id)
    assert "SESSION_TTL" not in new_context(api, first)
    ((lines, tokens),) = user.memd.query(
        "SELECT lines, tokens FROM claude_memory_savings WHERE session_id = ? AND hook = 'UserPromptSubmit'"
        " ORDER BY at DESC LIMIT 1",
        turn.session_id,
    )
    assert lines == 1 and tokens > 100
    assert "tokens in" in user.memctl("stats").stdout
    # ... which a session without it gets from memd.
    first = len(api.requests)
    user.run(f"{QUESTION}\n@say 3600 s")
    assert "SESSION_TTL at 3600" in new_context(api, first)

    # promote: a memory of memd's becomes a Claude Code memory file that Claude Code loads and recalls.
    ((decision,),) = user.memd.query("SELECT cite FROM citations JOIN events ON event_id = events.id"
                                     " WHERE kind = 'prompt' AND text LIKE 'Remember that session%'")  # fmt: skip
    promoted = json.loads(user.memctl("promote", f"mem:{decision}", "--name", "cookie-hour", "--json").stdout)
    assert promoted["path"] == f"{folder}/cookie-hour.md"
    # Claude Code loads MEMORY.md (while its per-turn recall is off), with the promoted line...
    del user.env["CLAUDE_MEMORY_STORES"]
    first = len(api.requests)
    user.run("What do you remember?\n@say ok")
    index = next(s for s in strings(api.requests[first]) if "MEMORY.md (user's auto-memory" in s)
    assert "](cookie-hour.md) — Remember that session cookies expire after an hour" in index
    started = new_context(api, first).split("UserPromptSubmit hook additional context")[0]
    assert "memory-context" in started and "cookies expire after an hour" not in started  # no line repeats it
    # ... and its recall lists the file with its type and description, and attaches it.
    user.env["CLAUDE_MEMORY_STORES"] = "[]"
    first = len(api.requests)
    loaded = user.run("What do you remember?\n@recall cookie-hour.md\n@bash sleep 1; echo ok\n@say ok")
    listing = next(s for r in api.requests[first:] for s in strings(r) if s.startswith("Available memories:"))
    assert re.search(r"^- \[project\] cookie-hour\.md \([^)]+\): Remember that session cookies", listing, re.M)
    attached = [
        m
        for r in user.transcript(loaded.session_id)
        if (r.get("attachment") or {}).get("type") == "relevant_memories"
        for m in r["attachment"]["memories"]
    ]
    assert [m["path"] for m in attached] == [promoted["path"]] and f"mem:{decision}" in attached[0]["content"]
