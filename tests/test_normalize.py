"""Normalization, pure: per-tool views, noise rules, tasks, summaries, project identity."""

from __future__ import annotations

import json
import os

import pytest
from conftest import FIXTURES

from memd.capture.events import Normalized, Skipped, normalize
from memd.capture.project import project_root
from memd.capture.summary import SummaryRow, summarize
from memd.capture.text import clip
from memd.capture.tools import is_trivial_command
from memd.config import TRIVIAL_COMMANDS, CaptureConfig

CONFIG = CaptureConfig()


def tool_payload(tool: str, tool_input: object, tool_response: object = None, event: str = "PostToolUse") -> dict:
    return {"hook_event_name": event, "tool_name": tool, "tool_input": tool_input, "tool_response": tool_response}


def normalized(payload: dict, config: CaptureConfig = CONFIG) -> Normalized:
    result = normalize(payload["hook_event_name"], payload, config)
    assert isinstance(result, Normalized), result
    return result


def test_clip_keeps_head_and_tail_with_a_marker() -> None:
    text = "\n".join(f"line {n}" for n in range(1000))
    clipped = clip(text, 10_000, 100)
    assert clipped.startswith("line 0\n") and clipped.endswith("line 999")
    assert "…[900 lines, " in clipped and " chars truncated]…" in clipped
    assert clip("short", 10, 10) == "short"
    long_line = "x" * 50_000
    assert clip(long_line, 1000, 100) == "x" * 500 + "…[0 lines, 49000 chars truncated]…" + "x" * 500


@pytest.mark.parametrize(
    ("command", "trivial"),
    [
        ("ls -la", True),
        ("cd src && ls", True),
        ("cat a | head -3", True),
        ("FOO=1 echo hi", True),
        ("/usr/bin/tail -f log", True),
        ("pytest -x", False),
        ("ls && rm -rf build", False),
        ("", False),
    ],
)
def test_trivial_commands(command: str, trivial: bool) -> None:
    assert is_trivial_command(command, frozenset(TRIVIAL_COMMANDS)) is trivial


def test_trivial_commands_are_low_or_skipped_but_failures_always_kept() -> None:
    ls = tool_payload("Bash", {"command": "ls"}, {"stdout": "a\nb", "stderr": ""})
    assert normalized(ls).importance == 1
    skip = CaptureConfig(trivial_action="skip")
    assert normalize("PostToolUse", ls, skip) == Skipped("trivial command")
    failed = {**tool_payload("Bash", {"command": "ls /nope"}, event="PostToolUseFailure"), "error": "Exit code 2"}
    result = normalized(failed, skip)
    assert (result.kind, result.importance, result.meta["exit_code"]) == ("tool_error", 3, 2)
    assert result.title == "Bash failed: ls /nope — Exit code 2"


def test_ignored_paths_and_skipped_tools() -> None:
    read = tool_payload("Read", {"file_path": "/p/node_modules/x/index.js"}, {"type": "text", "file": {}})
    assert normalize("PostToolUse", read, CONFIG) == Skipped("ignored path")
    assert normalized(tool_payload("Read", {"file_path": "/p/src/index.js"}, {})).importance == 1
    config = CaptureConfig(skip_tools=["WebSearch"])
    assert isinstance(normalize("PostToolUse", tool_payload("WebSearch", {"query": "q"}), config), Skipped)


def test_memd_own_tools_are_never_captured() -> None:
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        payload = tool_payload("mcp__memd__search", {"query": "x"}, [{"type": "text", "text": "hits"}], event)
        assert normalize(event, payload, CONFIG) == Skipped("memd's own tool")


def test_bash_output_is_clipped_head_and_tail() -> None:
    out = "\n".join(f"out {n}" for n in range(5000))
    result = normalized(tool_payload("Bash", {"command": "make", "description": "build"}, {"stdout": out}))
    assert "out 0" in result.text and "out 4999" in result.text and "out 2500" not in result.text
    assert result.title == "Bash: make" and result.meta["description"] == "build"


def test_read_keeps_the_head_only() -> None:
    content = "\n".join(f"row {n}" for n in range(500))
    response = {"type": "text", "file": {"filePath": "/p/a.py", "content": content, "numLines": 500, "totalLines": 500}}
    result = normalized(tool_payload("Read", {"file_path": "/p/a.py"}, response))
    assert result.title == "Read /p/a.py (500 lines)"
    assert "row 19" in result.text and "row 20" not in result.text and "row 499" not in result.text
    assert result.meta == {"files": ["/p/a.py"], "file_type": "py", "lines": 500}


def test_multiedit_summarizes_old_and_new() -> None:
    edits = [{"old_string": "a = 1\nb = 2", "new_string": "a = 10"}, {"old_string": "c", "new_string": "d\ne\nf"}]
    result = normalized(tool_payload("MultiEdit", {"file_path": "/p/m.py", "edits": edits}, {}))
    assert result.title == "Edited /p/m.py (2 edits, -3 +4 lines)"
    assert "- a = 1 b = 2\n+ a = 10" in result.text
    assert result.meta["files"] == ["/p/m.py"]


def test_mcp_content_array_and_unknown_tools_never_crash() -> None:
    mcp = normalized(
        tool_payload("mcp__github__get_issue", {"number": 7, "repo": "a/b"}, [{"type": "text", "text": "Bug"}])
    )
    assert mcp.title == "MCP github/get_issue: a/b" and "Bug" in mcp.text
    for weird in (None, 5, "text", [1, {"x": None}], {"deep": [[[{"s": "found"}]]]}):
        result = normalized(tool_payload("BrandNewTool", weird, weird))
        assert result.kind == "tool" and result.title.startswith("BrandNewTool")
        result = normalized(tool_payload("Bash", weird, weird))
        assert result.title.startswith("Bash")


def test_tool_search_is_low_importance_plumbing() -> None:
    # Claude Code 2.1 loads a deferred tool's schema this way before the first TodoWrite
    found = {"matches": ["TodoWrite"], "query": "select:TodoWrite", "total_deferred_tools": 21}
    result = normalized(tool_payload("ToolSearch", {"query": "select:TodoWrite", "max_results": 5}, found))
    assert (result.kind, result.tool, result.importance) == ("tool", "ToolSearch", 1)
    assert result.title == "ToolSearch 'select:TodoWrite': TodoWrite"
    assert result.meta == {"query": "select:TodoWrite", "matches": ["TodoWrite"]}
    none = normalized(tool_payload("ToolSearch", {"query": "slack send"}, {"matches": [], "query": "slack send"}))
    assert (none.title, none.importance) == ("ToolSearch 'slack send'", 1)
    for weird in (None, 5, "text", [1, {"x": None}], {"matches": "TodoWrite"}):
        assert normalized(tool_payload("ToolSearch", weird, weird)).importance == 1


def test_claude_code_2_1_fields_are_kept() -> None:
    # mcp_server names the server the tool name mangles (plugin:memd:memd → plugin_memd_memd)
    call = tool_payload("mcp__plugin_tools_db__query", {"sql": "select 1"}, [{"type": "text", "text": "1"}])
    result = normalized({**call, "mcp_server": {"name": "plugin:tools:db", "source": "plugin"}})
    assert (result.meta["mcp_server"], result.meta["mcp_source"], result.meta["mcp_tool"]) == (
        "plugin:tools:db", "plugin", "query",
    )  # fmt: skip
    assert normalized({**call, "mcp_server": "odd"}).meta["mcp_server"] == "plugin_tools_db"  # the tool name's
    stop = normalized({"hook_event_name": "Stop", "last_assistant_message": "ok", "effort": {"level": "high"}})
    assert stop.meta["effort"] == "high"
    assert "effort" not in normalized({"hook_event_name": "Stop", "effort": "fast"}).meta
    fork = {"hook_event_name": "SessionStart", "source": "fork", "seconds_since_last_response": 42}
    started = normalized({**fork, "session_title": "Billing timers"})
    assert started.meta == {"source": "fork", "since_last_response": 42, "title": "Billing timers"}
    assert "since_last_response" not in normalized({**fork, "seconds_since_last_response": True}).meta


def test_todo_write_is_a_task_state_event() -> None:
    todos = [
        {"content": "Write tests", "status": "completed", "activeForm": "Writing tests"},
        {"content": "Fix bug", "status": "in_progress", "activeForm": "Fixing bug"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"},
    ]
    result = normalized(tool_payload("TodoWrite", {"todos": todos}, {"oldTodos": [], "newTodos": todos}))
    assert result.kind == "task_state" and result.meta["op"] == "write"
    assert result.meta["tasks"][1] == {"content": "Fix bug", "status": "in_progress", "active_form": "Fixing bug"}
    assert result.title == "Tasks: 3 tasks (1 completed, 1 in progress, 1 pending)"
    one = normalized(tool_payload("TodoWrite", {"todos": todos[1:2]}, {"oldTodos": [], "newTodos": todos[1:2]}))
    assert one.title == "Tasks: 1 task (1 in progress)"
    update = normalized(tool_payload("TaskUpdate", {"taskId": "1", "status": "completed"}, {"success": True}))
    assert (update.kind, update.title, update.meta["tasks"]) == (
        "task_state",
        "Tasks: update #1 → completed",
        [{"id": "1", "status": "completed"}],
    )


def test_old_and_partial_shapes() -> None:
    stop = json.loads((FIXTURES / "hooks" / "hook_Stop__docs_2025-12.json").read_bytes())
    assert normalized(stop).title == "Assistant stopped"
    assert normalized({"hook_event_name": "SessionEnd"}).title == "Session ended (unknown)"
    assert normalized({"hook_event_name": "BrandNewEvent", "detail": "x"}).kind == "event"


def test_session_summary_line() -> None:
    rows = [
        SummaryRow("prompt", None, "Prompt: /clear", {}, 0.0),
        SummaryRow("prompt", None, "Prompt: fix the flaky login test", {}, 10.0),
        SummaryRow("tool", "Edit", "Edited /p/config.py", {"files": ["/p/config.py"]}, 20.0),
        SummaryRow("tool", "Edit", "Edited /p/config.py", {"files": ["/p/config.py"]}, 30.0),
        SummaryRow("tool", "Write", "Created /p/handler.py", {"files": ["/p/handler.py"]}, 40.0),
        SummaryRow("tool", "Bash", "Bash: pytest -x", {"command": "pytest -x"}, 50.0),
        SummaryRow("tool", "Bash", "Bash: git commit -m x", {"command": "git commit -m x"}, 60.0),
        SummaryRow("tool_error", "Bash", "Bash failed: pytest -x — Exit code 1", {"command": "pytest -x"}, 70.0),
        SummaryRow("assistant", None, "Assistant: done", {}, 720.0),
    ]
    summary = summarize(rows)
    assert summary.line == (
        "Goal: fix the flaky login test · Edited 2 files: config.py, handler.py · Commands: pytest; git commit"
        " · Errors (1): pytest -x — Exit code 1 · 9 events, 12 min"
    )
    assert summary.meta["files_edited"] == {"/p/config.py": 2, "/p/handler.py": 1}


def test_worktrees_of_one_repository_are_one_project(tmp_path) -> None:  # type: ignore[no-untyped-def]
    main = tmp_path / "repo"
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    (main / ".git" / "worktrees" / "feature" / "commondir").write_text("../..\n")
    tree = tmp_path / "repo-feature"
    (tree / "src").mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {main}/.git/worktrees/feature\n")
    assert project_root(str(tree / "src")) == str(main.resolve())
    sub = tmp_path / "super" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (tmp_path / "super" / ".git" / "modules" / "lib").mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert project_root(str(sub)) == os.path.realpath(sub)  # a submodule is its own project
