"""memctl import and export against a temporary HOME laid out as Claude Code's: the real
transcripts, generated ones (compaction, subagents, secrets, corrupt lines, 50 MB), and
an export moved into a fresh data directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from conftest import PYTHON, SHARED, Instance

from memd.protocol import Ingest, Ingested
from memd_client.importer import slug

TRANSCRIPTS = SHARED / "fixtures" / "claude-code" / "transcripts"
SPOTTER = "/home/marco/projects/spotter"


def home_with(instance: Instance, *folders: Path) -> Path:
    """A HOME whose ~/.claude/projects holds ``folders``."""
    projects = Path(instance.root) / "home" / ".claude" / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    for folder in folders:
        shutil.copytree(folder, projects / folder.name)
    instance.env["HOME"] = str(projects.parents[1])
    return projects


def memctl_json(instance: Instance, *args: str) -> dict:
    done = instance.memctl(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kinds(instance: Instance) -> dict[str, int]:
    return dict(instance.query("SELECT kind, count(*) FROM events GROUP BY kind"))


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def record(kind: str, session: str, cwd: str, at: str, uuid: str, **fields: object) -> str:
    return json.dumps({"type": kind, "sessionId": session, "cwd": cwd, "timestamp": at, "uuid": uuid, **fields})


def user(session: str, cwd: str, at: str, uuid: str, content: object, **fields: object) -> str:
    return record("user", session, cwd, at, uuid, message={"role": "user", "content": content}, **fields)


def assistant(session: str, cwd: str, at: str, uuid: str, message_id: str, block: dict, **fields: object) -> str:
    message = {"id": message_id, "role": "assistant", "content": [block]}
    return record("assistant", session, cwd, at, uuid, message=message, **fields)


def tool_use(s: str, cwd: str, at: str, uuid: str, call: str, name: str, args: dict, **fields: object) -> str:
    block = {"type": "tool_use", "id": call, "name": name, "input": args}
    return assistant(s, cwd, at, uuid, f"msg_{uuid}", block, **fields)


def tool_result(s: str, cwd: str, at: str, uuid: str, call: str, text: str, result: object, **fields: object) -> str:
    error = {"is_error": True} if isinstance(result, str) else {}
    block = {"type": "tool_result", "tool_use_id": call, "content": text, **error}
    return user(s, cwd, at, uuid, [block], toolUseResult=result, **fields)


def reply(s: str, cwd: str, at: str, uuid: str, text: str, **fields: object) -> str:
    return assistant(s, cwd, at, uuid, f"msg_{uuid}", {"type": "text", "text": text}, **fields)


def test_the_real_transcripts(daemon: Instance) -> None:
    home_with(daemon, TRANSCRIPTS / "-home-marco-projects-spotter")
    first = memctl_json(daemon, "import", "--all")
    assert (first["files"], first["sessions"], first["corrupt_lines"]) == (3, 3, 0)
    assert first["stored"] == first["events"] == 31
    # /mcp ran in Claude Code itself (its output record follows it): no hook fired, no prompt.
    assert kinds(daemon) == {"prompt": 5, "tool": 22, "assistant": 4, "session_summary": 3, "snapshot": 3}
    # cwd comes from the records, not from the folder's lossy name.
    assert daemon.query("SELECT root FROM projects") == [(SPOTTER,)]
    # A refused tool call fires no hook live, so none is imported; the rejected session has only its prompt.
    refused = daemon.query("SELECT count(*) FROM events WHERE session_id = '55604662-cf2a-4331-851a-ec234028f8ca'")
    assert refused == [(4,)]  # prompt, reply, summary, snapshot
    # The same files again: nothing new.
    again = memctl_json(daemon, "import", "--all")
    assert again["stored"] == 0 and again["duplicates"] == 31
    assert daemon.query("SELECT count(*) FROM events") == [(37,)]
    # --force: each session forgotten, then imported again: the same events, new rows (and
    # new citation ids: a forgotten memory's id is never given to another).
    cites = "SELECT c.cite FROM events e JOIN citations c ON c.event_id = e.id WHERE e.event != 'memd'"
    ids = {row[0] for row in daemon.query(cites)}
    forced = daemon.memctl("import", "--all", "--force", "--json")
    assert forced.returncode == 0 and "forgot 37 events of 3 sessions" in forced.stderr  # with their summaries
    assert json.loads(forced.stdout)["stored"] == 31
    again_ids = {row[0] for row in daemon.query(cites)}
    assert len(again_ids) == 31 and not ids & again_ids


def test_history_retention_would_remove_is_not_imported(daemon: Instance) -> None:
    """With retention on, old low-importance events (reads, searches, trivial commands) are
    left out, and the summary says so and how to keep them; prompts, replies, edits and
    commands that matter are imported whatever their age."""
    daemon.stop()
    daemon.configure("[retention]\nenabled = true\nmax_age_days = 1.0\n")  # every fixture record is older
    daemon.start()
    home_with(daemon, TRANSCRIPTS / "-home-marco-projects-spotter")
    done = daemon.memctl("import", "--all")
    assert done.returncode == 0, done.stderr
    assert "31 events: 18 stored, 13 left out by retention, 0 already there" in done.stdout
    assert "13 events older than 1 days were low-importance" in done.stdout and "max_age_days" in done.stdout
    assert kinds(daemon) == {"prompt": 5, "tool": 9, "assistant": 4, "session_summary": 3, "snapshot": 3}
    assert daemon.query("SELECT count(*) FROM events WHERE kind = 'tool' AND importance <= 1") == [(0,)]
    again = memctl_json(daemon, "import", "--all")
    assert (again["stored"], again["expired"], again["duplicates"], again["max_age_days"]) == (0, 13, 18, 1.0)


def test_exact_prompt_time(daemon: Instance) -> None:
    """The stored time of an imported prompt is its record's timestamp, to the millisecond."""
    path = TRANSCRIPTS / "-home-marco-projects-spotter" / "d6e0bada-1959-4eec-a9d2-0bfade768d8f.jsonl"
    first_prompt = next(
        json.loads(line)
        for line in path.read_text().splitlines()
        if json.loads(line).get("type") == "user" and isinstance(json.loads(line)["message"]["content"], str)
    )
    home_with(daemon, TRANSCRIPTS / "-home-marco-projects-spotter")
    memctl_json(daemon, "import", "--session", str(Path(daemon.env["HOME"]) / ".claude/projects" /
                path.parent.name / path.name))  # fmt: skip
    (ts,) = daemon.query("SELECT client_ts FROM events WHERE kind = 'prompt' ORDER BY id LIMIT 1")
    assert abs(ts[0] - stamp(first_prompt["timestamp"])) < 0.002


@pytest.fixture
def project(instance: Instance) -> Iterator[tuple[Path, str]]:
    """A generated transcript folder for a real directory, and that directory."""
    cwd = f"{instance.root}/work/my app"
    os.makedirs(cwd)
    folder = Path(instance.root) / "transcripts" / slug(cwd)
    folder.mkdir(parents=True)
    yield folder, cwd


def test_compaction_subagents_privacy_and_corrupt_lines(instance: Instance, project: tuple[Path, str]) -> None:
    folder, cwd = project
    s = "sess-gen-1"
    t = "2026-10-01T10:{}.000Z".format
    key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"
    summary = "This session is being continued from a previous conversation. Summary: the linker fails."
    lines = [
        user(s, cwd, t("00:00"), "u1", f"Deploy with key {key} please"),
        user(s, cwd, t("00:01"), "u2", "<private>my home address</private> and fix the build"),
        tool_use(s, cwd, t("00:02"), "a1", "toolu_1", "Bash", {"command": "make build"}),
        "{this line is torn",
        tool_result(s, cwd, t("00:03"), "u3", "toolu_1", "make: *** [build] Error 2", "Error: make: *** Error 2"),
        reply(s, cwd, t("00:04"), "a2", "The build fails in the linker step."),
        record("system", s, cwd, t("05:00"), "c1", subtype="compact_boundary", compactMetadata={"trigger": "manual"}),
        user(s, cwd, t("05:01"), "c2", summary, isCompactSummary=True),
        user(s, cwd, t("06:00"), "u4", "Continue from where you left off.", isMeta=True),
        "",
        "[1, 2, 3]",
    ]
    (folder / f"{s}.jsonl").write_text("\n".join(lines) + "\n")
    agents = folder / s / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-abc.meta.json").write_text(json.dumps({"agentType": "Explore"}))
    side = {"isSidechain": True, "agentId": "abc"}
    found = {"mode": "content", "numFiles": 1, "filenames": ["Makefile"], "content": "Makefile:3: ld: -lfoo"}
    subagent = [
        tool_use(s, cwd, t("01:00"), "x1", "toolu_x", "Grep", {"pattern": "ld:"}, **side),
        tool_result(s, cwd, t("01:01"), "x2", "toolu_x", "Makefile:3: ld: -lfoo", found, **side),
        reply(s, cwd, t("01:02"), "x3", "The Makefile links -lfoo, which is missing.", **side),
    ]
    (agents / "agent-abc.jsonl").write_text("\n".join(subagent) + "\n")
    instance.env["CLAUDE_CONFIG_DIR"] = str(folder.parents[1])
    (folder.parents[1] / "projects").mkdir()
    folder.rename(folder.parents[1] / "projects" / folder.name)
    instance.start()
    done = subprocess.run(
        [*instance.memctl_argv(), "import", "--json"], cwd=cwd, env=instance.env, capture_output=True, text=True
    )  # the default: the project of the current directory
    assert done.returncode == 0, done.stderr
    totals = json.loads(done.stdout)
    assert (totals["files"], totals["corrupt_lines"]) == (2, 2)
    assert kinds(instance) == {
        "prompt": 2, "tool_error": 1, "assistant": 1, "compact_summary": 1, "tool": 1, "subagent_stop": 1,
        "session_summary": 1, "snapshot": 1,
    }  # fmt: skip
    stored = "\n".join(row[0] + row[1] + row[2] for row in instance.query("SELECT title, text, payload FROM events"))
    assert "sk-ant-api03" not in stored and "my home address" not in stored  # one capture path: privacy applies
    assert "fix the build" in stored
    (meta,) = instance.query("SELECT meta FROM events WHERE kind = 'subagent_stop'")[0]
    assert json.loads(meta)["agent_type"] == "Explore"
    (trigger,) = instance.query("SELECT meta FROM events WHERE kind = 'compact_summary'")[0]
    assert json.loads(trigger)["trigger"] == "manual"
    assert instance.query("SELECT root FROM projects") == [(cwd,)]
    assert instance.stop() == 0


def test_live_captured_events_are_not_imported_again(daemon: Instance, project: tuple[Path, str]) -> None:
    folder, cwd = project
    s = "sess-live"
    for event, fields in (
        ("UserPromptSubmit", {"prompt": "Add a health endpoint"}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}, "tool_use_id": "toolu_live",
                         "tool_response": {"stdout": "3 passed", "stderr": "", "interrupted": False}}),
        ("Stop", {"last_assistant_message": "Added /health with a test."}),
    ):  # fmt: skip
        payload = {"session_id": s, "cwd": cwd, "hook_event_name": event, "transcript_path": "x", "prompt_id": "p1"}
        daemon.call(Ingest(event=event, sent_at_ns=1, payload=json.dumps(payload | fields).encode()), Ingested)
    before = daemon.query("SELECT count(*) FROM events WHERE event != 'memd'")[0][0]
    t = "2026-10-02T09:{}.000Z".format
    passed = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    lines = [
        user(s, cwd, t("00:00"), "l1", "Add a health endpoint"),
        tool_use(s, cwd, t("00:01"), "l2", "toolu_live", "Bash", {"command": "pytest -q"}),
        tool_result(s, cwd, t("00:02"), "l3", "toolu_live", "3 passed", passed),
        reply(s, cwd, t("00:03"), "l4", "Added /health with a test."),
        user(s, cwd, t("01:00"), "l5", "Now document it"),
    ]
    transcript = folder / f"{s}.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    totals = memctl_json(daemon, "import", "--session", str(transcript))
    assert (totals["stored"], totals["duplicates"]) == (1, 3)  # only "Now document it" is new
    after = daemon.query(
        "SELECT count(*) FROM events WHERE event != 'memd' AND kind NOT IN ('session_summary', 'snapshot')"
    )
    assert after[0][0] == before + 1


def test_lines_with_lone_surrogates_are_repaired_not_skipped(daemon: Instance, project: tuple[Path, str]) -> None:
    folder, cwd = project
    s = "sess-cut"
    t = "2026-10-04T09:{}.000Z".format
    cut = {"stdout": "tail: cut \udc00", "stderr": "", "interrupted": False}
    lines = [  # json.dumps writes a lone surrogate as Claude Code does: "\ud83d" with no other half
        user(s, cwd, t("00:00"), "v1", "Tail the log \ud83d"),
        tool_use(s, cwd, t("00:01"), "v2", "toolu_cut", "Bash", {"command": "tail log"}),
        tool_result(s, cwd, t("00:02"), "v3", "toolu_cut", "tail: cut \udc00", cut),
        reply(s, cwd, t("00:03"), "v4", "It ends in \U0001f600 and a cut \ud83d"),
        user(s, cwd, t("00:04"), "v5", "Thanks \U0001f600"),  # a valid pair: read as it is
    ]
    assert '"Tail the log \\ud83d"' in lines[0] and "\\ud83d\\ude00" in lines[4]
    transcript = folder / f"{s}.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    totals = memctl_json(daemon, "import", "--session", str(transcript))
    assert (totals["corrupt_lines"], totals["repaired_lines"], totals["stored"]) == (0, 3, 4)
    rows = daemon.query(
        "SELECT kind, text, meta FROM events WHERE kind IN ('prompt', 'tool', 'assistant') ORDER BY client_ts"
    )
    assert [(kind, json.loads(meta).get("lone_surrogates")) for kind, _, meta in rows] == [
        ("prompt", 1), ("tool", 2), ("assistant", 1), ("prompt", None),
    ]  # fmt: skip
    texts = [text for _, text, _ in rows]
    assert texts[0] == "Tail the log \ufffd" and texts[3] == "Thanks \U0001f600"
    assert "tail: cut \ufffd" in texts[1] and "It ends in \U0001f600 and a cut \ufffd" in texts[2]
    assert daemon.status().lone_surrogates == 3


def test_since_and_unknown_project(daemon: Instance, project: tuple[Path, str]) -> None:
    folder, cwd = project
    lines = [user("s-old", cwd, "2020-01-01T00:00:00.000Z", "o1", "An ancient prompt"),
             user("s-old", cwd, "2026-10-03T00:00:00.000Z", "o2", "A recent prompt")]  # fmt: skip
    (folder / "s-old.jsonl").write_text("\n".join(lines) + "\n")
    totals = memctl_json(daemon, "import", "--session", str(folder / "s-old.jsonl"), "--since", "2026-01-01")
    assert totals["stored"] == 1
    assert daemon.query("SELECT text FROM events WHERE kind = 'prompt'") == [("A recent prompt",)]
    daemon.env["HOME"] = f"{daemon.root}/nohome"
    missing = daemon.memctl("import", "--project", "/no/such/project")
    assert missing.returncode == 1 and "no Claude Code transcripts for /no/such/project" in missing.stderr


def test_slug_is_claude_codes() -> None:
    assert slug("/home/marco/projects/spotter") == "-home-marco-projects-spotter"
    assert slug("/tmp/shp-hooks-slash-_ul_amd7") == "-tmp-shp-hooks-slash--ul-amd7"
    assert slug("/tmp/a😀b") == "-tmp-a--b"  # an emoji is two UTF-16 units
    long = "/" + "x" * 250
    name, suffix = slug(long)[:200], slug(long)[200:]
    assert name == "-" + "x" * 199 and suffix[0] == "-" and suffix[1:].isalnum() and suffix == slug(long)[200:]


def _big_transcript(path: Path, cwd: str, megabytes: int) -> None:
    """A transcript of ~``megabytes`` MB: turns of a prompt, a Read of 25 KB and a reply."""
    content = "".join(f"line {i}: some source code that goes on for a while\n" for i in range(480))

    def path_of(turn: int) -> str:
        return f"{cwd}/src/parser_{turn}.py"

    with path.open("w") as f:
        turn = 0
        while f.tell() < megabytes * 1024 * 1024:
            at = f"2026-09-01T{turn // 3600 % 24:02d}:{turn // 60 % 60:02d}:{turn % 60:02d}.000Z"
            f.write(user("s-big", cwd, at, f"p{turn}", f"Read part {turn} of the parser") + "\n")
            f.write(tool_use("s-big", cwd, at, f"a{turn}", f"t{turn}", "Read", {"file_path": path_of(turn)}) + "\n")
            result = {"type": "text", "file": {"filePath": path_of(turn), "content": content}}
            f.write(tool_result("s-big", cwd, at, f"r{turn}", f"t{turn}", content, result) + "\n")
            turn += 1


def _peak_rss_kb(argv: list[str], env: dict[str, str]) -> int:
    """The peak RSS of ``argv`` run to completion in a fresh process of its own."""
    probe = (
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True);"
        " assert r.returncode == 0, r.stderr; print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run([PYTHON, "-c", probe, *argv], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_a_50_mb_transcript_in_constant_memory(daemon: Instance, project: tuple[Path, str]) -> None:
    folder, cwd = project
    _big_transcript(folder / "small.jsonl", cwd, 5)
    _big_transcript(folder / "big.jsonl", cwd, 50)
    assert (folder / "big.jsonl").stat().st_size >= 50 * 1024 * 1024
    small = _peak_rss_kb([*daemon.memctl_argv(), "import", "--session", str(folder / "small.jsonl")], daemon.env)
    big = _peak_rss_kb([*daemon.memctl_argv(), "import", "--session", str(folder / "big.jsonl")], daemon.env)
    assert big < small * 1.25, (small, big)  # ten times the data, the same memory
    with (folder / "big.jsonl").open("rb") as f:
        turns = sum(1 for _ in f) // 3
    # The small file's turns are the big one's first ones (same tool_use ids): stored once.
    assert daemon.query("SELECT count(*) FROM events WHERE kind = 'tool' AND tool = 'Read'") == [(turns,)]


def test_export_then_import_elsewhere_keeps_results_and_citations(daemon: Instance) -> None:
    home_with(daemon, TRANSCRIPTS / "-home-marco-projects-spotter")
    memctl_json(daemon, "import", "--all")
    daemon.remember("Deploys run through the blue/green script", f"{daemon.root}/other")
    used = daemon.search("phoenix background", all_projects=True).results[0].cite
    assert daemon.memctl("show", f"mem:{used}").returncode == 0  # a use by id, and a graduation row
    exported = subprocess.run([*daemon.memctl_argv(), "export"], env=daemon.env, capture_output=True, timeout=60)
    assert exported.returncode == 0 and b"exported 38 events" in exported.stderr
    path = Path(daemon.root) / "memd.jsonl"
    path.write_bytes(exported.stdout)
    header = json.loads(exported.stdout.splitlines()[0])
    assert header["format"] == "memd-export/1"
    only = subprocess.run([*daemon.memctl_argv(), "export", "--project", "spotter", "--since", "2026-01-01"],
                          env=daemon.env, capture_output=True, timeout=60)  # fmt: skip
    assert b"exported 37 events" in only.stderr

    elsewhere = Instance(tempfile.mkdtemp(prefix="memd-t-", dir="/tmp"))
    try:
        elsewhere.start()
        restored = memctl_json(elsewhere, "import", "--from-export", str(path))
        assert restored["stored"] == 38 and restored["cites_kept"] == 38
        again = memctl_json(elsewhere, "import", "--from-export", str(path))
        assert again["stored"] == 0
        cites = "SELECT c.cite, e.kind, e.title FROM events e JOIN citations c ON c.event_id = e.id ORDER BY c.cite"
        assert elsewhere.query(cites) == daemon.query(cites)
        # What memd learned of a memory moves with it: its uses by id and its graduation.
        uses = ("SELECT c.cite, u.session_id, u.used_at, u.how FROM citation_usage u JOIN citations c USING (event_id)"
                " ORDER BY 1, 3")  # fmt: skip
        levels = ("SELECT c.cite, l.level, l.accesses, l.sessions, l.last_access FROM memory_levels l"
                  " JOIN citations c USING (event_id) ORDER BY 1")  # fmt: skip
        assert used in {row[0] for row in daemon.query(uses)} and daemon.query(levels)
        assert elsewhere.query(uses) == daemon.query(uses) and elsewhere.query(levels) == daemon.query(levels)
        for query in ("phoenix background", "beads", "blue/green deploys"):
            here = [(h.cite, h.kind) for h in daemon.search(query, all_projects=True).results]
            there = [(h.cite, h.kind) for h in elsewhere.search(query, all_projects=True).results]
            assert here == there and here, query
        shown = elsewhere.memctl("show", f"mem:{daemon.search('blue/green', all_projects=True).results[0].cite}")
        assert "blue/green" in shown.stdout
        bad = Path(daemon.root) / "not-an-export.jsonl"
        bad.write_text('{"hello": 1}\n')
        refused = elsewhere.memctl("import", "--from-export", str(bad))
        assert refused.returncode == 1 and "not a memctl export file" in refused.stderr
    finally:
        if elsewhere.process is not None:
            elsewhere.stop()
        shutil.rmtree(elsewhere.root, ignore_errors=True)


def test_an_export_that_cannot_be_written_says_so(daemon: Instance) -> None:
    daemon.remember("Deploys run through the blue/green script", f"{daemon.root}/proj")
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*daemon.memctl_argv(), "export"], env=daemon.env, stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr == "memctl: cannot write the export (No space left on device): the output is incomplete\n"


def test_tool_calls_the_hooks_lost_come_back_from_the_transcript_at_the_session_end(
    daemon: Instance, project: tuple[Path, str]
) -> None:
    """One tool call's hook delivered it, another's was killed before it could (Claude Code's
    SIGTERM at the end of ``claude -p``): at SessionEnd the daemon reads the transcript and
    stores the lost one, once; nothing of what live capture has comes twice."""
    folder, cwd = project
    s = "sess-recover"
    passed = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    t = "2026-10-02T09:{}.000Z".format
    transcript = folder / f"{s}.jsonl"
    transcript.write_text("\n".join([
        user(s, cwd, t("00:00"), "r1", "Add a health endpoint"),
        tool_use(s, cwd, t("00:01"), "r2", "toolu_kept", "Bash", {"command": "pytest -q"}),
        tool_result(s, cwd, t("00:02"), "r3", "toolu_kept", "3 passed", passed),
        tool_use(s, cwd, t("00:03"), "r4", "toolu_lost", "Bash", {"command": "ruff check"}),
        tool_result(s, cwd, t("00:04"), "r5", "toolu_lost", "Exit code 1\nE501", "Error: Exit code 1\nE501"),
        reply(s, cwd, t("00:05"), "r6", "Added /health; ruff still complains."),
    ]) + "\n")  # fmt: skip

    def hook(event: str, **fields: object) -> None:
        payload = {"session_id": s, "cwd": cwd, "hook_event_name": event, "transcript_path": str(transcript)}
        assert daemon.hook(event, json.dumps(payload | fields).encode()).returncode == 0

    hook("PostToolUse", tool_name="Bash", tool_input={"command": "pytest -q"}, tool_use_id="toolu_kept",
         tool_response=passed)  # fmt: skip
    hook("SessionEnd", reason="other")
    calls = "SELECT event, json_extract(payload, '$.tool_use_id') FROM events WHERE kind IN ('tool', 'tool_error')"
    daemon.wait_for(lambda: len(daemon.query(calls)) == 2, timeout=20)
    assert sorted(daemon.query(calls)) == [("PostToolUse", "toolu_kept"), ("PostToolUseFailure", "toolu_lost")]
    assert "tool_calls_recovered" in daemon.stderr() and "ruff" not in daemon.stderr()  # counts, not content
    summaries = "SELECT text FROM events WHERE kind = 'session_summary' AND session_id = ?"
    daemon.wait_for(lambda: any("ruff check" in t for (t,) in daemon.query(summaries, s)), timeout=20)
    hook("SessionEnd", reason="other")  # the same end again (a replay): nothing more
    assert len(daemon.query(calls)) == 2
