"""Claude Code's own memory: read into memd, kept current, and not repeated.

The files are laid out as Claude Code 2.1 lays them out: ``<home>/projects/<slug of the
project root>/memory/`` with one file per fact (the frontmatter its system prompt tells
the model to write) and ``MEMORY.md``; the transcript beside, with the records Claude
Code writes (``relevant_memories`` attachments, ``memory_saved``).  Events go through the
real hook client.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import Instance

from memd.capture.claude_memory import (
    MemoryFile,
    index_lines,
    marked_lines,
    parse,
    read_transcript_line,
    render,
    slug,
)  # fmt: skip
from memd.protocol import Ingest, Ingested
from memd.retrieve.native import InContext, repeats
from memd.tokens import estimate_tokens

COOKIE = """---
name: cookie-ttl
description: Session cookies expire after 3600 seconds; the TTL lives in auth/session.py
metadata:
  type: project
---

The session cookie TTL is 3600 s (one hour), set by SESSION_TTL in `auth/session.py`.

**Why:** the security review asked for short sessions.
**How to apply:** keep SESSION_TTL at 3600 when touching the auth code; see [[user-pytest]].
"""
PYTEST = """---
name: user-pytest
description: The user writes tests with pytest fixtures, never unittest classes
metadata:
  type: feedback
---

Write tests with pytest fixtures, not unittest classes.
"""
INDEX = (
    "- [Cookie TTL](cookie-ttl.md) — session cookies expire after 3600 s\n"
    "- [Prefers pytest](user-pytest.md) — pytest fixtures, never unittest\n"
)


class Claude:
    """One Claude Code home with a project, as Claude Code 2.1 lays them out."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home" / ".claude"
        self.project = root / "work" / "api"
        self.project.mkdir(parents=True)
        (self.project / ".git").mkdir()
        self.memory = self.home / "projects" / slug(os.path.realpath(self.project)) / "memory"
        self.memory.mkdir(parents=True)
        self.session = str(uuid.uuid4())

    @property
    def transcript(self) -> Path:
        path = self.home / "projects" / slug(str(self.project)) / f"{self.session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        return path

    def write(self, name: str, content: str) -> Path:
        path = self.memory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        return path

    def record(self, record: dict[str, Any]) -> None:
        with self.transcript.open("a") as f:
            f.write(json.dumps({"uuid": str(uuid.uuid4()), "sessionId": self.session, **record}) + "\n")

    def recall(self, *paths: Path) -> None:
        """The per-turn recall attaching ``paths``, as Claude Code records it."""
        memories = [
            {"path": str(p), "content": p.read_text(), "mtimeMs": p.stat().st_mtime * 1000, "header": f"Memory: {p}:"}
            for p in paths
        ]
        self.record({"type": "attachment", "attachment": {"type": "relevant_memories", "memories": memories}})

    def new_session(self) -> None:
        self.session = str(uuid.uuid4())

    def payload(self, event: str, **fields: Any) -> bytes:
        base = {
            "session_id": self.session, "transcript_path": str(self.transcript), "cwd": str(self.project),
            "hook_event_name": event,
        }  # fmt: skip
        return json.dumps({**base, **fields}).encode()


def fire(daemon: Instance, claude: Claude, event: str, env: dict[str, str] | None = None, **fields: Any) -> str:
    """Run the real hook client for ``event``; the context it printed.  Each SessionStart
    starts a new session: the same payload twice is one event, answered once."""
    if event == "SessionStart":
        claude.new_session()
    done = daemon.hook(event, claude.payload(event, **fields), env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    return json.loads(out)["hookSpecificOutput"].get("additionalContext", "") if out.strip() else ""


@pytest.fixture
def claude(tmp_path: Path) -> Claude:
    return Claude(tmp_path)


def mirrored(daemon: Instance) -> list[tuple[str, str, str]]:
    return daemon.query("SELECT kind, title, meta FROM events WHERE kind = 'claude-memory' ORDER BY id")


# --- the format -----------------------------------------------------------------------------


def test_a_memory_file_parses_as_claude_code_writes_it_and_renders_back() -> None:
    memory = parse(COOKIE, "fallback")
    assert (memory.name, memory.type, memory.links) == ("cookie-ttl", "project", ["user-pytest"])
    assert memory.description.startswith("Session cookies expire after 3600 seconds")
    assert memory.body.startswith("The session cookie TTL is 3600 s") and "---" not in memory.body
    assert parse(render(memory), "x") == memory
    bare = parse("Just a note, no frontmatter.", "note")
    assert (bare.name, bare.type, bare.body) == ("note", "", "Just a note, no frontmatter.")
    odd = parse("---\nname: 'quoted'\ntype: nonsense\n---\nbody", "f")
    assert (odd.name, odd.type) == ("quoted", "")
    tricky = MemoryFile(name="n", description='Note: deploys freeze at 14:00 #release "sic"', type="user", body="b")
    assert '\ndescription: "Note: deploys freeze at 14:00 #release \\"sic\\""\n' in render(tricky)
    assert parse(render(tricky), "x") == tricky
    assert (
        index_lines(INDEX + "\n" * 3 + "x\n" * 300)[:2] == INDEX.splitlines() and len(index_lines("x\n" * 300)) == 200
    )


def test_transcript_records_are_read_as_claude_code_writes_them() -> None:
    recalled = {
        "type": "attachment",
        "attachment": {"type": "relevant_memories", "memories": [{"path": "/m/a.md", "content": "A", "mtimeMs": 1}]},
    }
    news = read_transcript_line(json.dumps(recalled).encode())
    assert news is not None and news.recalled == [("/m/a.md", "A")]
    saved = {"type": "system", "subtype": "memory_saved", "writtenPaths": ["/m/b.md"], "isMeta": False}
    news = read_transcript_line(json.dumps(saved).encode())
    assert news is not None and news.saved == ["/m/b.md"]
    news = read_transcript_line(b'{"type":"system","subtype":"compact_boundary"}')
    assert news is not None and news.compacted
    assert read_transcript_line(b'{"type":"user","message":{"content":"relevant_memories"}}') is None
    assert read_transcript_line(b'{"type":"attachment", "relevant_memories" broken') is None
    lines = [
        b'{"type":"user"}',
        json.dumps(recalled).encode(),
        b'{"subtype": "memory_saved", "then": "compact_boundary"}',
        b"{}",
    ]
    assert marked_lines(b"\n".join(lines) + b"\n") == lines[1:3]
    assert marked_lines(b'{"a": "memory_saved"}') == [b'{"a": "memory_saved"}'] and marked_lines(b"") == []


def test_what_says_the_same_thing_is_a_repeat_and_what_does_not_is_kept() -> None:
    context = InContext(recalled=frozenset({7}), indexed=frozenset({8}), texts=(COOKIE, INDEX))
    memories = {
        1: "Decision: keep the session cookie TTL at 3600 s (SESSION_TTL in auth/session.py)",
        2: "Fixed the flaky upload test by retrying the S3 multipart call",
        3: "TTL 3600",  # too short to tell
        7: "anything: its file is in the context",
        8: "a file MEMORY.md points to",
    }
    assert repeats(memories, context, index_only=True) == {1, 7, 8}
    assert repeats(memories, context, index_only=False) == {1, 7}  # in full, 8 says more than its line
    assert repeats(memories, InContext(), index_only=True) == set()


# --- read it --------------------------------------------------------------------------------


def test_a_fact_saved_in_claude_codes_memory_is_found_with_its_citation(daemon: Instance, claude: Claude) -> None:
    claude.write("cookie-ttl.md", COOKIE)
    claude.write(
        "team/deploy-window.md", PYTEST.replace("user-pytest", "deploy-window").replace("feedback", "reference")
    )
    claude.write("MEMORY.md", INDEX)
    fire(daemon, claude, "SessionStart", source="startup")
    rows = mirrored(daemon)
    assert len(rows) == 2  # the index is not a memory
    metas = sorted((json.loads(meta)["name"], json.loads(meta)["type"], json.loads(meta)["scope"]) for *_, meta in rows)
    assert metas == [("cookie-ttl", "project", "project"), ("deploy-window", "reference", "team")]
    found = daemon.search("session cookie TTL", cwd=str(claude.project))
    hit = found.results[0]
    assert hit.kind == "claude-memory" and "(project)" in hit.title
    shown = daemon.memctl("search", "session cookie TTL", "--kind", "claude-memory", "--all-projects")
    assert shown.returncode == 0 and f"mem:{hit.cite}" in shown.stdout and "🧠" in shown.stdout
    history = daemon.memctl("history", "--project", str(claude.project), "--kind", "claude-memory")
    assert history.returncode == 0 and history.stdout.count("Claude Code memory (") == 2, history.stdout
    around = daemon.memctl("timeline", f"mem:{hit.cite}")
    assert around.returncode == 0 and f"→ [mem:{hit.cite}]" in around.stdout, around.stdout + around.stderr
    shown = daemon.memctl("show", f"mem:{hit.cite}")
    assert "SESSION_TTL at 3600" in shown.stdout


def test_changes_replace_the_memory_and_a_deleted_file_is_forgotten(daemon: Instance, claude: Claude) -> None:
    path = claude.write("cookie-ttl.md", COOKIE)
    fire(daemon, claude, "SessionStart", source="startup")
    (before,) = daemon.query("SELECT id FROM events WHERE kind = 'claude-memory'")
    path.write_text(COOKIE.replace("3600", "7200"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    # The model edits the file with its Edit tool: the folder is looked at at once.
    fire(daemon, claude, "PostToolUse", tool_name="Edit", tool_use_id="toolu_1",
         tool_input={"file_path": str(path), "old_string": "3600", "new_string": "7200"}, tool_response={})  # fmt: skip
    rows = daemon.query("SELECT id, text FROM events WHERE kind = 'claude-memory'")
    assert len(rows) == 1 and rows[0][0] != before[0] and "7200" in rows[0][1] and "3600" not in rows[0][1]
    assert not daemon.search("3600", cwd=str(claude.project), kind="claude-memory").results
    path.unlink()
    fire(daemon, claude, "SessionStart", source="startup")
    assert mirrored(daemon) == []
    assert daemon.query("SELECT selector, events FROM forget_log") == [("claude-memory", 1), ("claude-memory", 1)]
    assert daemon.query("SELECT count(*) FROM claude_memory_files") == [(0,)]


def test_touched_is_not_changed_and_forgotten_by_hand_stays_forgotten(daemon: Instance, claude: Claude) -> None:
    path = claude.write("cookie-ttl.md", COOKIE)
    fire(daemon, claude, "SessionStart", source="startup")
    (first,) = daemon.query("SELECT id FROM events WHERE kind = 'claude-memory'")
    os.utime(path)  # same content, new mtime
    fire(daemon, claude, "SessionStart", source="resume")
    assert daemon.query("SELECT id FROM events WHERE kind = 'claude-memory'") == [first]
    forgot = daemon.memctl("forget", str(first[0]), "--yes")
    assert forgot.returncode == 0, forgot.stderr
    fire(daemon, claude, "SessionStart", source="startup")
    assert mirrored(daemon) == []  # not read back in
    path.write_text(COOKIE + "\nAlso for the admin app.\n")
    fire(daemon, claude, "SessionStart", source="startup")
    assert len(mirrored(daemon)) == 1  # a new version is


def test_secrets_in_a_memory_file_never_reach_the_store(daemon: Instance, claude: Claude) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    head = "---\nname: deploy\ndescription: how to deploy\nmetadata:\n  type: reference\n---\n\n"
    secret = f"Deploy with GITHUB_TOKEN={token} and <private>the password is hunter2</private>.\n"
    claude.write("deploy.md", head + secret)
    fire(daemon, claude, "SessionStart", source="startup")
    ((text, payload),) = daemon.query("SELECT text, payload FROM events WHERE kind = 'claude-memory'")
    for stored in (text, payload):
        assert token not in stored and "hunter2" not in stored
    assert "Deploy with" in text


def test_a_memory_saved_in_the_background_is_mirrored_from_the_transcript(daemon: Instance, claude: Claude) -> None:
    fire(daemon, claude, "SessionStart", source="startup")
    fire(daemon, claude, "UserPromptSubmit", prompt="first question about the release", prompt_id="p1")
    path = claude.write("release.md", PYTEST.replace("user-pytest", "release").replace("pytest fixtures", "tag v2"))
    claude.record({"type": "system", "subtype": "memory_saved", "writtenPaths": [str(path)], "isMeta": False})
    fire(daemon, claude, "UserPromptSubmit", prompt="and what about the release tag", prompt_id="p2")
    assert [json.loads(meta)["name"] for *_, meta in mirrored(daemon)] == ["release"]


# --- don't repeat it ------------------------------------------------------------------------


def remember(daemon: Instance, claude: Claude, text: str) -> int:
    payload = {"session_id": "earlier", "cwd": str(claude.project), "hook_event_name": "Remember", "text": text}
    request = Ingest(event="Remember", sent_at_ns=time.time_ns(), payload=json.dumps(payload).encode())
    return daemon.call(request, Ingested).event_id


def tokens_left_out(daemon: Instance) -> tuple[int, int]:
    ((lines, tokens),) = daemon.query(
        "SELECT coalesce(sum(lines), 0), coalesce(sum(tokens), 0) FROM claude_memory_savings"
    )
    return lines, tokens


def test_a_fact_claude_code_recalled_is_not_repeated_at_the_next_prompt(modeled: Instance, claude: Claude) -> None:
    """The Done-when: tokens of memd's prompt context with and without Claude Code's recall."""
    daemon = modeled
    path = claude.write("cookie-ttl.md", COOKIE)
    remember(daemon, claude, "Decision: the session cookie TTL stays at 3600 s, SESSION_TTL in auth/session.py")
    fire(daemon, claude, "SessionStart", source="startup")
    daemon.wait_embedded()
    prompt = "what is the session cookie TTL in auth/session.py?"
    without = fire(daemon, claude, "UserPromptSubmit", prompt=prompt, prompt_id="p1")
    assert "SESSION_TTL at 3600" in without  # the file, in full: memd is sure of it
    # The turn goes on: Claude Code's recall attaches the same file (its transcript records it).
    fire(daemon, claude, "SessionStart", source="startup")  # a fresh session asks the same,
    claude.recall(path)  # with the file in its transcript
    with_recall = fire(daemon, claude, "UserPromptSubmit", prompt=prompt, prompt_id="p2")
    assert "3600" not in with_recall
    saved = estimate_tokens(without) - estimate_tokens(with_recall)
    lines, tokens = tokens_left_out(daemon)
    assert lines == 1 and saved >= tokens > 150
    stats = daemon.memctl("stats")
    assert f"1 line, ~{tokens} tokens in 1 hook answer" in stats.stdout, stats.stdout


def test_after_a_compaction_the_recalled_fact_is_given_again(modeled: Instance, claude: Claude) -> None:
    daemon = modeled
    path = claude.write("cookie-ttl.md", COOKIE)
    fire(daemon, claude, "SessionStart", source="startup")
    daemon.wait_embedded()
    claude.recall(path)
    claude.record({"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto"}})
    given = fire(daemon, claude, "UserPromptSubmit", prompt="what is the session cookie TTL in auth/session.py?",
                 prompt_id="p1")  # fmt: skip
    assert "3600" in given


def test_the_session_start_leaves_out_what_memory_md_says(daemon: Instance, claude: Claude) -> None:
    remember(daemon, claude, "Session cookies expire after 3600 s (the cookie TTL)")
    remember(daemon, claude, "Never run the migrations against the production replica by hand")
    fire(daemon, claude, "SessionStart", source="startup")
    first = fire(daemon, claude, "SessionStart", source="startup")
    assert "3600" in first and "production replica" in first
    claude.write("MEMORY.md", INDEX)
    second = fire(daemon, claude, "SessionStart", source="startup")
    assert "3600" not in second and "production replica" in second
    assert tokens_left_out(daemon)[0] == 1
    # With Claude Code's per-turn recall on, MEMORY.md is not loaded: nothing of it is a repeat.
    assert "3600" in fire(daemon, claude, "SessionStart", env={"CLAUDE_MEMORY_STORES": "[]"}, source="startup")
    (claude.home / "settings.json").write_text('{"autoMemoryEnabled": false}')  # MEMORY.md is not loaded then
    assert "3600" in fire(daemon, claude, "SessionStart", source="startup")


def test_no_line_of_any_block_repeats_what_memory_md_says(daemon: Instance, claude: Claude) -> None:
    """Not the prompt that said it, nor what memd derived from it: the session's summary (its
    goal) and its working state quote the fact as well; nor the session's own continuation."""
    fire(daemon, claude, "SessionStart", source="startup")
    said = "Remember that session cookies expire after 3600 s"
    fire(daemon, claude, "UserPromptSubmit", prompt=said, prompt_id="p1")
    fire(daemon, claude, "Stop", last_assistant_message="Noted, I will keep that in mind.")
    fire(daemon, claude, "UserPromptSubmit", prompt="Never run the migrations against the production replica by hand",
         prompt_id="p2")  # fmt: skip
    fire(daemon, claude, "Stop", last_assistant_message="Understood, migrations go through the deploy job only.")
    worked = claude.session
    fire(daemon, claude, "SessionEnd", reason="other")
    daemon.wait_for(lambda: daemon.query("SELECT 1 FROM events WHERE kind = 'session_summary'"))
    before = fire(daemon, claude, "SessionStart", source="startup")
    assert "3600" in before and "production replica" in before
    claude.write("MEMORY.md", INDEX)
    after = fire(daemon, claude, "SessionStart", source="startup")
    assert "3600" not in after and "production replica" in after, after
    claude.session = worked  # that session, compacted: its working state comes back without it too
    carried = daemon.hook("SessionStart", claude.payload("SessionStart", source="compact")).stdout.decode()
    assert "production replica" in carried and "3600" not in carried, carried


# --- memctl import and promote --------------------------------------------------------------


def memctl(daemon: Instance, claude: Claude, *args: str) -> Any:
    """memctl as the user runs it: in the project, with Claude Code's home under HOME."""
    import subprocess

    env = {**daemon.env, "HOME": str(claude.home.parent)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run(
        [*daemon.memctl_argv(), *args], cwd=claude.project, env=env, capture_output=True, text=True, timeout=60
    )


def test_memctl_import_reads_the_memory_files_too(daemon: Instance, claude: Claude) -> None:
    claude.write("cookie-ttl.md", COOKIE)
    claude.write("user-pytest.md", PYTEST)
    done = memctl(daemon, claude, "import")
    assert done.returncode == 0, done.stderr
    assert "Claude Code memory: 2 files in 1 folder: 2 stored, 0 forgotten" in done.stdout
    assert len(mirrored(daemon)) == 2
    (claude.memory / "user-pytest.md").unlink()
    again = memctl(daemon, claude, "import", "--all", "--json")
    assert json.loads(again.stdout)["claude_memory"] == {"folders": 1, "files": 1, "stored": 0, "forgotten": 1}
    assert [json.loads(meta)["name"] for *_, meta in mirrored(daemon)] == ["cookie-ttl"]


def test_promote_writes_a_file_claude_code_reads_and_lists_it_in_memory_md(daemon: Instance, claude: Claude) -> None:
    claude.write("MEMORY.md", INDEX)
    event_id = remember(daemon, claude, "Deploys freeze on Fridays after 14:00 UTC; ask #release before merging")
    (cite,) = daemon.query("SELECT cite FROM citations WHERE event_id = ?", event_id)[0]
    done = memctl(daemon, claude, "promote", f"mem:{cite}", "--type", "feedback")
    assert done.returncode == 0, done.stderr
    (path,) = [p for p in claude.memory.glob("*.md") if p.name != "MEMORY.md"]
    memory = parse(path.read_text(), "x")
    assert memory.type == "feedback" and memory.description.startswith("Deploys freeze on Fridays")
    assert f"mem:{cite}" in memory.body and path.name == f"{memory.name}.md"
    assert path.read_text().startswith(f"---\nname: {memory.name}\ndescription: ")
    index = (claude.memory / "MEMORY.md").read_text()
    assert index.startswith(INDEX) and index.endswith(f"]({path.name}) — {memory.description}\n")
    assert [json.loads(meta)["name"] for *_, meta in mirrored(daemon)] == [memory.name]  # read back at once
    sneaky = memctl(daemon, claude, "promote", f"mem:{cite}", "--name", "../../outside")
    assert sneaky.returncode == 2 or "kebab-case" in sneaky.stderr
    assert not (claude.memory.parent.parent / "outside.md").exists()
    twice = memctl(daemon, claude, "promote", f"mem:{cite}")
    assert twice.returncode == 1 and "exists already" in twice.stderr
    own = daemon.query("SELECT cite FROM citations JOIN events ON events.id = event_id WHERE kind = 'claude-memory'")
    refused = memctl(daemon, claude, "promote", f"mem:{own[0][0]}")
    assert refused.returncode == 1 and "Claude Code's own memories already" in refused.stderr


def test_a_transcript_is_followed_a_chunk_at_a_time_and_half_lines_wait(tmp_path: Path, monkeypatch: Any) -> None:
    from memd.services import native_memory

    monkeypatch.setattr(native_memory, "FOLLOW_CHUNK", 64)
    path = tmp_path / "t.jsonl"
    recall = {"type": "attachment", "attachment": {"type": "relevant_memories", "memories": [{"path": "/m/a.md"}]}}
    path.write_text("\n".join([json.dumps({"type": "user", "pad": "x" * 100}), json.dumps(recall), ""]))
    tail = native_memory._Tail()
    native_memory._follow(str(path), tail)
    assert tail.recalled == {"/m/a.md": ""} and tail.offset == path.stat().st_size and tail.recalls
    half = json.dumps({"type": "system", "subtype": "compact_boundary"})
    with path.open("a") as f:
        f.write(half[:20])
    native_memory._follow(str(path), tail)
    assert tail.recalled == {"/m/a.md": ""}  # the half line waits
    with path.open("a") as f:
        f.write(half[20:] + "\n")
    native_memory._follow(str(path), tail)
    assert tail.recalled == {} and tail.offset == path.stat().st_size


def test_odd_memory_files_are_read_without_harm(daemon: Instance, claude: Claude) -> None:
    garbage = b"---\nname: \xff\xfe bad\n---\n\x00\xc3(\xed\xa0\x80 half an emoji \xf0\x9f"
    (claude.memory / "garbage.md").write_bytes(garbage)
    claude.write("huge.md", "---\nname: huge\ndescription: a long one\n---\n" + "the cron runs nightly. " * 50_000)
    (claude.memory / "folder.md").mkdir()  # not a file
    (claude.memory / "notes.txt").write_text("not a memory")
    fire(daemon, claude, "SessionStart", source="startup")
    names = sorted(json.loads(meta)["name"] for *_, meta in mirrored(daemon))
    assert names == ["huge", "\ufffd\ufffd bad"]  # U+FFFD for what is not UTF-8; no folder, no .txt
    ((size,),) = daemon.query("SELECT length(text) FROM events WHERE title LIKE '%a long one%'")
    assert size < 20_000  # clipped as any captured text is
    assert daemon.status().events > 0  # and the daemon serves on
