"""The pure policy behind the context memd injects, alone: the standard block's choice
(``continuity/session_start.py``), the carry-on pieces (``continuity/carry_on.py``, and the
fork's parent as its process tells, ``services/agent_process.py``) and the prompt gate
(``retrieve/prompt_gate.py``).  ``test_recall.py`` and ``test_endless.py``
check them end to end, through a daemon."""

from __future__ import annotations

import json
from pathlib import Path

from memd.capture.prepare import NewEvent
from memd.capture.snapshot import Item, Snapshot
from memd.capture.summary import split_goal
from memd.capture.task_rules import OpenTask
from memd.continuity import session_start
from memd.continuity.carry_on import CARRIED, left_off, prompt_aspects, replied_at, resume_target, snapshot_aspects
from memd.protocol import Hit
from memd.retrieve.prompt_gate import PROMPT_SUGGESTIONS, QUESTION_CHARS, not_a_question, question_of, suggestions
from memd.services.agent_process import AgentProcess, Forks, agent_process
from memd.store.session_start import Candidate, Head

DAY = 86400.0
NOW = 1_800_000_000.0


def head(event_id: int, title: str, text: str = "", kind: str = "prompt", ts: float = NOW) -> Head:
    return (event_id, f"c{event_id}", kind, None, title, text, ts)


# --- the standard block ---------------------------------------------------------------


def test_worth_weighs_kind_importance_recency_and_use() -> None:
    assert (
        session_start.worth("memory", 2, 0, 0)
        > session_start.worth("prompt", 2, 0, 0)
        > session_start.worth("tool", 2, 0, 0)
    )
    assert session_start.worth("prompt", 3, 0, 0) - session_start.worth("prompt", 2, 0, 0) == 0.5
    fresh, week = (
        session_start.worth("prompt", 2, 0, 0),
        session_start.worth("prompt", 2, session_start.RECENCY_DAYS, 0),
    )
    assert abs((fresh - week) - 0.5) < 1e-9  # recency halves every RECENCY_DAYS
    assert session_start.worth("prompt", 2, 0, 5) == session_start.worth("prompt", 2, 0, 50)  # uses count up to 5


def test_most_worth_ranks_the_best_first_and_keeps_enough_for_repeats() -> None:
    old_tool: Candidate = (1, "tool", 2, NOW - 30 * DAY, 0)
    memory: Candidate = (2, "memory", 3, NOW - DAY, 2)
    prompt: Candidate = (3, "prompt", 2, NOW, 0)
    assert session_start.most_worth([old_tool, memory, prompt], NOW) == [2, 3, 1]
    many: list[Candidate] = [(i, "prompt", 2, NOW - i, 0) for i in range(100)]
    assert len(session_start.most_worth(many, NOW)) == 3 * session_start.IMPORTANT
    future: Candidate = (4, "prompt", 2, NOW + DAY, 0)  # a clock that went back counts as now
    assert session_start.most_worth([future], NOW) == [4]


def test_the_same_failure_twice_is_one_error_line() -> None:
    errors = [head(i, "Bash: pytest -x" if i % 2 else f"Bash: make {i}", kind="tool_error") for i in range(20)]
    distinct = session_start.distinct_errors(errors)
    assert len(distinct) == session_start.ERRORS
    assert [row[0] for row in distinct] == [0, 1, 2, 4, 6]  # the first of each title, in order


def test_the_same_prompt_twice_is_one_important_line() -> None:
    heads = {1: head(1, "Prompt: fix the parser", "fix the parser"), 2: head(2, "Prompt: fix it", "fix the parser")}
    heads[3] = head(3, "Prompt: add a flag", "add a flag")
    important = session_start.distinct_important([9, 1, 2, 3], heads)  # 9: gone since it was weighed
    assert [row[0] for row in important.values()] == [1, 3]
    many = {i: head(i, f"Prompt {i}", f"distinct text number {i}") for i in range(50)}
    assert len(session_start.distinct_important(list(many), many)) == session_start.IMPORTANT


def test_standard_lines_come_in_priority_order_and_are_cut() -> None:
    summary = head(1, "Session summary", "", kind="session_summary")
    task = OpenTask(7, "write  the\ntests", "in_progress", "Writing tests", "t7", NOW, "s", 70)
    error = head(2, "Bash: pytest", "E   AssertionError", kind="tool_error")
    long = "word " * 200
    important = {"the summary": head(3, "Prompt: long", long)}
    lines = session_start.standard_lines([summary], [task], [error], important)
    assert [line.section for line in lines] == ["Recent sessions", "Open tasks", "Recent errors", "Important"]
    assert lines[0].text.endswith(": Session summary") and lines[0].event_id == 1  # no text: the title
    assert lines[1].text == "[mem:t7] [in_progress] write the tests" and lines[1].event_id == 70
    assert lines[3].text.startswith("[mem:c3] ") and " prompt: the summary" in lines[3].text
    cut = session_start.standard_lines([head(4, "t", long, kind="session_summary")], [], [], {})[0].text
    assert len(cut) == session_start.LINE_CHARS and cut.endswith("…")
    assert session_start.SECTIONS == ("Recent sessions", "Open tasks", "Important", "Recent errors")


def test_a_session_goal_the_agent_has_already_is_left_out_of_its_summary() -> None:
    worked = "Goal: keep cookies at 3600 s · Edited 1 file: auth.py · Commands: pytest · 9 events, 4 min"
    talked = "Goal: keep cookies at 3600 s · 2 events, <1 min"
    summaries = [head(1, "s", worked, kind="session_summary"), head(2, "s", talked, kind="session_summary")]
    said = {"keep cookies at 3600 s"}.__contains__
    lines = session_start.standard_lines(summaries, [], [], {}, said)
    assert [line.text.split(": ", 1)[1] for line in lines] == [
        "Edited 1 file: auth.py · Commands: pytest · 9 events, 4 min"
    ]
    assert len(session_start.standard_lines(summaries, [], [], {})) == 2  # nothing said: both whole
    idle = [head(3, "s", "2 events, <1 min", kind="session_summary")]  # no goal, nothing done: no line
    assert session_start.standard_lines(idle, [], [], {}) == []
    assert split_goal("Goal: a · b · Errors (1): x · 1 event, <1 min") == ("a · b", "Errors (1): x · 1 event, <1 min")
    assert split_goal("Edited 2 files: a, b · 3 events, 1 min") == ("", "Edited 2 files: a, b · 3 events, 1 min")


# --- carrying on ------------------------------------------------------------------------


def event(meta: str, client_ts: float = NOW) -> NewEvent:
    return NewEvent(
        idem_key="k", event="SessionStart", kind="session_start", session_id="s", cwd="/p", tool=None, title="",
        text="", meta=meta, payload="{}", importance=1, client_ts=client_ts, received_at=client_ts, size=0,
        truncated=False,
    )  # fmt: skip


def test_replied_at_is_when_the_continued_session_last_replied() -> None:
    assert replied_at(event(json.dumps({"since_last_response": 90}))) == NOW - 90
    assert replied_at(event(json.dumps({"since_last_response": 2.5}))) == NOW - 2.5
    assert replied_at(event(json.dumps({"since_last_response": True}))) is None
    assert replied_at(event(json.dumps({"since_last_response": "90"}))) is None
    assert replied_at(event(json.dumps({}))) is None
    assert replied_at(event("[1, 2]")) is None  # not an object
    assert replied_at(event("{not json")) is None


def test_the_session_a_fork_was_made_of_as_its_process_tells(tmp_path: Path) -> None:
    assert resume_target(["claude", "-p", "go", "--resume", "abc", "--fork-session"]) == "abc"
    assert resume_target(["claude", "--fork-session", "-r", "abc"]) == "abc"
    assert resume_target(["claude", "--resume=abc", "--fork-session"]) == "abc"
    assert resume_target(["claude", "--resume", "abc"]) is None  # a resume, not a fork
    assert resume_target(["claude", "--continue", "--fork-session"]) is None
    assert resume_target(["claude", "--fork-session", "--resume", "--verbose"]) is None  # the picker

    def proc(pid: int, comm: str, ppid: int, argv: list[str], started: int = 77) -> None:
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) S {ppid} 1 1 0 -1 0 " + "0 " * 12 + f"{started} 0\n")
        (tmp_path / str(pid) / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))

    proc(40, "claude (main)", 1, ["claude", "--resume", "s-1", "--fork-session"])  # comm may hold anything
    proc(41, "sh", 40, ["/bin/sh", "-c", "sh memd-launch hook SessionStart"])
    proc(42, "dash", 41, ["sh", "memd-launch", "hook", "SessionStart"])
    found = agent_process(42, proc=str(tmp_path))
    assert found == AgentProcess(40, 77, ("claude", "--resume", "s-1", "--fork-session"))
    assert agent_process(99, proc=str(tmp_path)) is None  # gone
    forks = Forks()
    assert forks.parent(found, "s-2") == "s-1"  # named on its command line
    forks.started(found, "s-2")
    assert forks.parent(found, "s-3") == "s-2"  # /fork in the same process: the session it has on
    assert forks.parent(found._replace(started=78), "s-3") == "s-1"  # the pid used again: another process


def test_where_a_session_left_off_and_why_it_carries_on() -> None:
    goal, task = Item(text="ship the parser", cite="g"), Item(text="[pending] docs", cite="t")
    assert left_off(Snapshot(session_id="s", taken_at=NOW, goal=[goal], tasks=[task])) == "ship the parser"
    assert left_off(Snapshot(session_id="s", taken_at=NOW, tasks=[task])) == "[pending] docs"
    assert left_off(Snapshot(session_id="s", taken_at=NOW)) == ""
    assert CARRIED["fork"].format(of="abcd1234") == "fork: the working state of session abcd1234, the one forked"
    assert CARRIED["compact"].format(of="x") == CARRIED["compact"]
    snapshot = Snapshot(session_id="s", taken_at=NOW, topics=["parser"], file_names=["lexer.py"], entities=["Lexer"])
    assert snapshot_aspects(snapshot) == {"topics": ["parser"], "files": ["lexer.py"], "entities": ["Lexer"]}
    assert set(prompt_aspects("fix the Lexer in lexer.py")) == {"topics", "files", "entities"}
    assert "lexer.py" in prompt_aspects("fix the Lexer in lexer.py")["files"]


# --- the prompt gate --------------------------------------------------------------------


def hit(event_id: int, confidence: float) -> Hit:
    return Hit(
        id=event_id, cite=f"c{event_id}", kind="prompt", tool=None, title="t", snippet="", score=confidence,
        confidence=confidence, session_id=None, received_at=NOW,
    )  # fmt: skip


def test_a_prompt_is_shown_sure_hits_it_was_not_given_yet() -> None:
    hits = [hit(1, 0.9), hit(2, 0.8), hit(3, 0.7), hit(4, 0.6), hit(5, 0.5), hit(6, 0.3)]
    assert [h.id for h in suggestions(hits, set(), 0.45)] == [1, 2, 3][:PROMPT_SUGGESTIONS]
    assert [h.id for h in suggestions(hits, {1, 3}, 0.45)] == [2, 4, 5]
    assert suggestions(hits, set(), 0.95) == []


def test_commands_echoes_and_memds_own_text_are_not_questions() -> None:
    for text in ("/compact", "<command-name>/clear</command-name>", "<memory-context project='x'>…",
                 "memd: noted", "Caveat: The messages below were generated", "mem:Ab3xY9, mem:Cd4zZ0."):  # fmt: skip
        assert not_a_question(text), text
    for text in ("그거 고쳐줘", "why does the parser fail?", "is mem:Ab3xY9 still true?"):
        assert not not_a_question(text), text


def test_a_long_prompt_is_searched_for_its_question_wherever_it_is() -> None:
    log = "\n".join(f"2026-11-26 08:{m:02d} worker-3 INFO flushed batch {m} of the export queue" for m in range(30))
    short = "why does the export worker stall after the nightly batch?"
    assert question_of(short) == short
    for prompt in (
        f"{short}\n{log}",
        f"Here is the log:\n{log}\n{short}",
        f"{log}\nfix the stall in the export worker",
    ):
        asked = question_of(prompt)
        assert len(asked) <= 2 * QUESTION_CHARS
        assert "export worker" in asked and asked.count("flushed batch") <= 1, asked
