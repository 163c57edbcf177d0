"""Endless mode end to end: a working session, then Claude Code's real compaction stream
through the real hook client; /clear and new sessions scored for continuity; tasks and the
endless switch through memctl."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from typing import Any

from conftest import FIXTURES, HOOK_FILE, PYTHON, Instance
from test_recall import hook, send

from memd.protocol import Details, DetailsResult, Endless, EndlessStatus, Ingest, Ingested

STREAM = FIXTURES / "hooks" / "stream_compact.jsonl"
SESSION = "8bbcceab-0b3e-4e24-98c9-ec146b1ca8c6"  # the session of the real stream
HOUR = 3600.0
ON_TOPIC = "the cookie TTL and the flaky login test in auth.py"


def todo(*items: tuple[str, str]) -> dict[str, Any]:
    return {
        "tool_name": "TodoWrite",
        "tool_input": {"todos": [{"content": c, "status": s, "activeForm": c} for c, s in items]},
        "tool_response": {"oldTodos": [], "newTodos": []},
    }


def bash(command: str, ok: bool) -> tuple[str, dict[str, Any]]:
    if ok:
        return "PostToolUse", {"tool_name": "Bash", "tool_input": {"command": command},
                               "tool_response": {"stdout": "3 passed", "stderr": "", "interrupted": False}}  # fmt: skip
    return "PostToolUseFailure", {"tool_name": "Bash", "tool_input": {"command": command},
                                  "error": "Exit code 1\nFAILED"}  # fmt: skip


def working_session(inst: Instance, cwd: str, session: str, start: float) -> None:
    """A session of real work: a goal, a todo list, edits, a test that fails then passes,
    a build that fails and stays failed."""
    os.makedirs(cwd, exist_ok=True)
    steps: list[tuple[str, dict[str, Any]]] = [
        ("UserPromptSubmit", {"prompt": "Fix the session cookie expiry in src/auth.py; the login test is flaky"}),
        ("PostToolUse", todo(("Reproduce the flaky login test", "in_progress"), ("Raise the cookie TTL", "pending"),
                             ("Document the TTL setting", "pending"))),
        ("PostToolUse", {"tool_name": "Read", "tool_input": {"file_path": f"{cwd}/src/auth.py"},
                         "tool_response": {"type": "text", "file": {"filePath": f"{cwd}/src/auth.py",
                                                                    "content": "ttl = 60", "numLines": 1}}}),
        bash("pytest -x tests/test_login.py", ok=False),
        ("PostToolUse", {"tool_name": "Edit", "tool_input": {"file_path": f"{cwd}/src/auth.py",
                                                             "old_string": "ttl = 60", "new_string": "ttl = 3600"},
                         "tool_response": {"filePath": f"{cwd}/src/auth.py"}}),
        bash("pytest -x tests/test_login.py", ok=True),
        bash("npm run build", ok=False),
        ("PostToolUse", todo(("Reproduce the flaky login test", "completed"), ("Raise the cookie TTL", "completed"),
                             ("Document the TTL setting", "in_progress"))),
        ("UserPromptSubmit", {"prompt": "Let's use a 1 hour TTL from now on, never 60 seconds"}),
        ("Stop", {"last_assistant_message": "The TTL is now 3600 s and the login test passes."}),
    ]  # fmt: skip
    for n, (event, payload) in enumerate(steps):
        send(inst, event, start + n, session, cwd, tool_use_id=f"toolu_{session[:4]}_{n}", **payload)


def cites(block: str) -> list[str]:
    return re.findall(r"\[mem:([A-Za-z0-9]{8,12})\]", block)


def section(block: str, name: str) -> list[str]:
    lines = block.splitlines()
    start = lines.index(f"{name}:") + 1
    return [line for line in lines[start:] if line.startswith("- ")][
        : next((i for i, line in enumerate(lines[start:]) if not line.startswith("- ")), len(lines))
    ]


def test_compaction_gives_back_the_working_state(daemon: Instance) -> None:
    stream = [json.loads(line) for line in STREAM.read_text().splitlines()]
    cwd = stream[0]["cwd"]
    working_session(daemon, cwd, SESSION, time.time() - 600)
    blocks = {}
    for payload in stream:  # the real stream: resume, PreCompact, SubagentStop, SessionStart(compact), ...
        event = payload["hook_event_name"]
        blocks[payload.get("source") or event] = hook(daemon, event, SESSION, cwd, **{
            k: v for k, v in payload.items() if k not in ("session_id", "cwd", "hook_event_name", "transcript_path")
        })  # fmt: skip
    block = blocks["compact"]
    assert 'mode="continuation"' in block and 'reason="compaction:' in block
    assert section(block, "Goal")[0].endswith("Let's use a 1 hour TTL from now on, never 60 seconds")
    assert "Fix the session cookie expiry in src/auth.py" in block
    assert section(block, "Open tasks") == [section(block, "Open tasks")[0]]
    assert "[in_progress] Document the TTL setting" in block and "Raise the cookie TTL" not in block
    assert "src/auth.py (1 edits, 1 reads)" in block
    assert "Bash failed: npm run build" in block  # still failing
    assert "pytest -x tests/test_login.py" not in section(block, "Open errors")[0]  # fixed by the later run
    assert len(section(block, "Open errors")) == 1
    assert "never 60 seconds" in "\n".join(section(block, "Decisions"))
    assert "The TTL is now 3600 s" in block
    every = cites(block)
    resolved = daemon.call(Details(ids=every, budget=20_000), DetailsResult)
    assert not resolved.missing and len(resolved.details) == len(set(every))
    # The stored snapshot is a searchable event of its own.
    assert daemon.query("SELECT count(*) FROM events WHERE kind = 'snapshot' AND session_id = ?", SESSION) == [(1,)]


def test_clear_then_the_first_prompt_decides(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    working_session(daemon, cwd, "s-work", time.time() - 0.5 * HOUR)
    send(daemon, "SessionEnd", time.time() - 0.4 * HOUR, "s-work", cwd, reason="clear")
    start = hook(daemon, "SessionStart", "s-after", cwd, source="clear")
    assert 'mode="standard"' in start and "break; the first prompt decides again" in start
    first = hook(daemon, "UserPromptSubmit", "s-after", cwd, prompt=ON_TOPIC)
    assert 'mode="continuation"' in first and "first prompt: continuity" in first and "seamless" in first
    assert "[in_progress] Document the TTL setting" in first
    again = hook(daemon, "UserPromptSubmit", "s-after", cwd, prompt="the cookie TTL in auth.py and the login test")
    assert 'mode="continuation"' not in again  # given once

    hook(daemon, "SessionStart", "s-slash", cwd, source="clear")
    assert hook(daemon, "UserPromptSubmit", "s-slash", cwd, prompt="/model opus") == ""
    after_command = hook(daemon, "UserPromptSubmit", "s-slash", cwd, prompt=ON_TOPIC)
    assert 'mode="continuation"' in after_command  # a slash command is not the first prompt

    hook(daemon, "SessionStart", "s-shift", cwd, source="clear")
    shifted = hook(daemon, "UserPromptSubmit", "s-shift", cwd, prompt="deploy the login service to the staging cluster")
    assert 'mode="previously"' in shifted and "topic shift" in shifted and 'mode="continuation"' not in shifted
    assert "Previously:\n- [mem:" in shifted

    hook(daemon, "SessionStart", "s-other", cwd, source="clear")
    other = hook(daemon, "UserPromptSubmit", "s-other", cwd, prompt="write a haiku about kubernetes ingress")
    assert 'mode="continuation"' not in other and 'mode="previously"' not in other  # unrelated: a break


def test_two_weeks_later_the_score_decays(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    working_session(daemon, cwd, "s-old", time.time() - 14 * 24 * HOUR)
    send(daemon, "SessionEnd", time.time() - 14 * 24 * HOUR + 20, "s-old", cwd, reason="other")
    hook(daemon, "SessionStart", "s-new", cwd, source="startup")
    late = hook(daemon, "UserPromptSubmit", "s-new", cwd, prompt=ON_TOPIC)
    assert 'mode="continuation"' not in late
    fresh_cwd = f"{daemon.root}/fresh"
    working_session(daemon, fresh_cwd, "s-recent", time.time() - HOUR)
    send(daemon, "SessionEnd", time.time() - HOUR + 20, "s-recent", fresh_cwd, reason="other")
    hook(daemon, "SessionStart", "s-next", fresh_cwd, source="startup")
    soon = hook(
        daemon, "UserPromptSubmit", "s-next", fresh_cwd, prompt="the cookie TTL and the flaky login test in auth.py"
    )
    assert 'mode="continuation"' in soon


def test_resume_and_fork_carry_the_session_on(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    working_session(daemon, cwd, "s-main", time.time() - HOUR)
    send(daemon, "UserPromptSubmit", time.time() - 60, "s-side", cwd, prompt="Bump the version to 2.1 in setup.cfg")
    resumed = hook(daemon, "SessionStart", "s-main", cwd, source="resume")
    assert 'reason="resume:' in resumed and "Document the TTL setting" in resumed
    assert "Since then, in other sessions:" in resumed and "Bump the version to 2.1" in resumed
    forked = hook(daemon, "SessionStart", "s-fork", cwd, source="fork")
    # The session forked is the one last active: s-main, which was just resumed.
    assert 'reason="fork: the working state of session s-main' in forked and "Document the TTL setting" in forked


AGENT = """
import json, subprocess, sys
outputs = []
for event, body in json.load(sys.stdin):
    done = subprocess.run([*json.loads(sys.argv[1]), event], input=json.dumps(body).encode(), capture_output=True)
    outputs.append(done.stdout.decode())
print(json.dumps(outputs))
"""
"""A stand-in for ``claude``: one process running the real hook client for each of its events
in turn, with a command line of its own (what follows the script)."""


def hooks_run_by(inst: Instance, argv: list[str], *events: tuple[str, dict[str, Any]]) -> list[str]:
    """The context each event's hook printed, run by one agent process with ``argv``."""
    client = json.dumps([PYTHON, "-I", "-S", HOOK_FILE])
    done = subprocess.run([PYTHON, "-c", AGENT, client, *argv], input=json.dumps(events).encode(),
                          capture_output=True, env=inst.env, timeout=60, check=True)  # fmt: skip
    outputs = json.loads(done.stdout)
    return [json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else "" for out in outputs]


def test_a_fork_carries_on_the_session_its_process_forked(daemon: Instance) -> None:
    """Another session replying about when the forked one did is not taken for its parent: the
    command line names it (``--resume ID --fork-session``), or it is the last session the
    process started (``/fork``)."""
    cwd = f"{daemon.root}/proj"
    now = time.time()
    working_session(daemon, cwd, "s-main", now - 15.4)  # its last reply 5.4 s ago
    send(daemon, "UserPromptSubmit", now - 5.2, "s-race", cwd, prompt="Rotate the staging TLS certificates")
    send(daemon, "Stop", now - 5.0, "s-race", cwd, last_assistant_message="The TLS certificates are rotated.")
    fork = {"session_id": "s-fork", "cwd": cwd, "hook_event_name": "SessionStart", "transcript_path": "/dev/null",
            "source": "fork", "seconds_since_last_response": 5}  # fmt: skip
    (named,) = hooks_run_by(daemon, ["-p", "go on", "--resume", "s-main", "--fork-session"], ("SessionStart", fork))
    assert 'reason="fork: the working state of session s-main' in named and "Document the TTL" in named
    assert "TLS" not in named

    start = {**fork, "session_id": "s-main", "source": "resume"}
    _, forked = hooks_run_by(daemon, [], ("SessionStart", start), ("SessionStart", {**fork, "session_id": "s-fork2"}))
    assert 'reason="fork: the working state of session s-main' in forked and "TLS" not in forked

    # Told by neither (``--continue --fork-session``): the session that replied when the forked one did.
    (timed,) = hooks_run_by(daemon, ["--continue", "--fork-session"], ("SessionStart", {**fork, "session_id": "s-f3"}))
    assert 'reason="fork: the working state of session s-race' in timed


def test_tasks_and_the_endless_switch_through_memctl(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    working_session(daemon, cwd, "s-work", time.time() - 60)
    listed = json.loads(daemon.memctl("tasks", "--project", "proj", "--json").stdout)
    assert [(t["content"], t["status"]) for t in listed["tasks"]] == [("Document the TTL setting", "in_progress")]
    everything = json.loads(daemon.memctl("tasks", "--project", "proj", "--all", "--json").stdout)["tasks"]
    assert {t["status"] for t in everything} == {"in_progress", "completed"} and len(everything) == 3
    human = daemon.memctl("tasks", "--project", "proj").stdout
    assert "in_progress Document the TTL setting" in human and "[mem:" in human

    snapshot = daemon.memctl("endless", "snapshot", "--session", "s-work")
    assert snapshot.returncode == 0 and 'mode="continuation"' in snapshot.stdout
    assert daemon.memctl("endless", "status").stdout.startswith("endless mode is on")
    members = daemon.call(Endless(cwd=cwd), EndlessStatus).working_set
    salient = daemon.query(
        "SELECT count(*) FROM events WHERE session_id = 's-work' AND importance >= 2"
        " AND kind IN ('prompt', 'assistant', 'tool', 'tool_error', 'task_state')"
    )[0][0]
    assert members == salient and members < len(daemon.query("SELECT id FROM events WHERE session_id = 's-work'"))
    assert daemon.memctl("endless", "off").stdout.startswith("endless mode is off")
    compacted = hook(daemon, "SessionStart", "s-work", cwd, source="compact", prompt_id="p-1")
    assert 'mode="standard"' in compacted and "endless mode is off" in compacted
    daemon.stop()
    daemon.start()  # the switch is persisted
    assert json.loads(daemon.memctl("endless", "status", "--json").stdout)["enabled"] is False
    daemon.memctl("endless", "on")
    assert 'mode="continuation"' in hook(daemon, "SessionStart", "s-work", cwd, source="compact", prompt_id="p-2")
    missing = daemon.memctl("endless", "snapshot", "--session", "nope")
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr


def test_consolidation_is_idempotent_cites_real_sources_and_keeps_privacy(daemon: Instance) -> None:
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd, exist_ok=True)
    now = time.time()
    prompts = [
        "Fix the flaky login test: the session cookie expires after 60 seconds",
        "The login test still fails on CI; check the cookie TTL in auth.py",
        "Raise the cookie TTL for the login session to one hour <private>password hunter2</private>",
        "Login test passes now; document the cookie TTL setting",
        "Write a haiku about autumn leaves",
    ]
    for n, prompt in enumerate(prompts):
        send(daemon, "UserPromptSubmit", now - 600 + n * 60, "s-c", cwd, prompt=prompt)
    made = json.loads(daemon.memctl("endless", "consolidate", "--json").stdout)["consolidated"]
    assert made >= 1
    rows = daemon.query("SELECT id, text, meta FROM events WHERE kind = 'consolidated'")
    assert len(rows) == made
    for _id, text, meta in rows:
        sources = json.loads(meta)["sources"]
        assert len(sources) >= 3
        cited = re.findall(r"\[mem:([A-Za-z0-9]{8,12})\]", text)
        real = dict(daemon.query("SELECT cite, event_id FROM citations"))
        assert cited and all(real[c] in sources for c in cited)  # every citation is one of its sources
        assert "hunter2" not in text and "haiku" not in text
        assert "Topics:" in text and "login" in text
    assert json.loads(daemon.memctl("endless", "consolidate", "--json").stdout)["consolidated"] == 0  # idempotent
    top = daemon.memctl("search", "login cookie TTL", "--project", "proj", "--kind", "consolidated", "--json")
    assert json.loads(top.stdout)["results"]  # searchable


def test_a_big_session_still_fits_its_budget(daemon: Instance) -> None:
    from memd.tokens import estimate_tokens

    cwd = f"{daemon.root}/big"
    os.makedirs(cwd)
    start = time.time() - 3000
    for n in range(40):
        send(
            daemon,
            "UserPromptSubmit",
            start + n,
            "s-big",
            cwd,
            prompt=f"Refactor module {n}: " + "we decided to always " * 40,
        )
        send(daemon, "PostToolUse", start + n, "s-big", cwd, tool_use_id=f"e{n}", tool_name="Edit",
             tool_input={"file_path": f"{cwd}/src/module_{n}.py", "old_string": "a", "new_string": "b"},
             tool_response={"filePath": f"{cwd}/src/module_{n}.py"})  # fmt: skip
        send(daemon, "PostToolUseFailure", start + n, "s-big", cwd, tool_use_id=f"f{n}", tool_name="Bash",
             tool_input={"command": f"make target{n}"}, error="boom " * 200)  # fmt: skip
    send(
        daemon,
        "PostToolUse",
        start + 50,
        "s-big",
        cwd,
        **todo(*((f"task {n} " + "x" * 200, "pending") for n in range(30))),
    )
    block = hook(daemon, "SessionStart", "s-big", cwd, source="compact")
    assert 'mode="continuation"' in block
    assert estimate_tokens(block) <= 2000 and len(block) <= 8000


def test_two_compactions_whose_transcript_stood_still_are_two(daemon: Instance) -> None:
    """Claude Code writes its transcript lazily: a second compaction in one prompt may fire
    its PreCompact and SessionStart(compact), byte-identical to the first's, while the
    transcript still ends where it did.  The first's PostCompact between them tells them
    apart; the same event sent twice (a second registration of the hook) is still one."""
    cwd = f"{daemon.root}/proj"
    os.makedirs(cwd)
    base = {"session_id": "s-cc", "cwd": cwd, "transcript_path": "/dev/null", "prompt_id": "p1"}

    def ingest(event: str, **fields: object) -> Ingested:
        payload = json.dumps({**base, "hook_event_name": event, **fields}).encode()
        request = Ingest(event=event, sent_at_ns=time.time_ns(), payload=payload, position="u-stale")
        return daemon.call(request, Ingested)

    for summary in ("<summary>1. Primary Request: first</summary>", "<summary>1. Primary Request: second</summary>"):
        pre = ingest("PreCompact", trigger="auto", custom_instructions=None)
        assert ingest("PreCompact", trigger="auto", custom_instructions=None).duplicate  # fired twice: one
        assert not pre.duplicate
        assert not ingest("SessionStart", source="compact", model="m").duplicate  # so it gets its context
        ingest("PostCompact", trigger="auto", compact_summary=summary)
    rows = daemon.query(
        "SELECT event, count(*) FROM events WHERE session_id = 's-cc' AND event != 'memd' GROUP BY event ORDER BY event"
    )
    assert rows == [("PostCompact", 2), ("PreCompact", 2), ("SessionStart", 2)]
