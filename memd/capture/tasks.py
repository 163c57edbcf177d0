"""Todo-tool calls as task-state events: the raw material of continuity's task tracking.

``TodoWrite`` carries the whole list (``todos``: content, status, activeForm);
Claude Code 2.1's task tools (``TaskCreate``, ``TaskUpdate``, ``TaskGet``,
``TaskList``) carry one task or a listing.  Either way the event's ``meta`` holds
the tasks as plain records, ``{"op", "tasks": [{"id", "content", "status",
"active_form", "description"}]}``, so later stages never look at tool shapes.
"""

from __future__ import annotations

from typing import Any

from .text import join, plural, shorten, string
from .toolview import LOW, MEDIUM, Limits, ToolView

__all__ = ["TASK_TOOLS", "task_view"]

TASK_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "TaskGet", "TaskList"})
_OPS = {"TodoWrite": "write", "TaskCreate": "create", "TaskUpdate": "update", "TaskGet": "get", "TaskList": "list"}


def _task(record: dict[str, Any]) -> dict[str, str]:
    task = {
        "id": string(record.get("id")) or string(record.get("taskId")) or str(record.get("id") or ""),
        "content": string(record.get("content")) or string(record.get("subject")),
        "status": string(record.get("status")),
        "active_form": string(record.get("activeForm")),
        "description": string(record.get("description")),
    }
    return {k: v for k, v in task.items() if v}


def _records(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return [value] if isinstance(value, dict) else []


def task_view(tool: str, tool_input: Any, tool_response: Any, limits: Limits) -> ToolView:
    op = _OPS[tool]
    inp = tool_input if isinstance(tool_input, dict) else {}
    res = tool_response if isinstance(tool_response, dict) else {}
    if op == "write":
        tasks = [_task(t) for t in _records(inp.get("todos"))]
    elif op == "list":
        tasks = [_task(t) for t in _records(res.get("tasks") or tool_response)]
    else:  # one task: the input names it, the response may add its id and state
        task = res.get("task")
        tasks = [_task({**inp, **(task if isinstance(task, dict) else {})})]
        tasks = [t for t in tasks if t]
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task.get("status", "pending")] = counts.get(task.get("status", "pending"), 0) + 1
    tally = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(counts.items()))
    if op in ("write", "list"):
        subject = plural(len(tasks), "task") + (f" ({tally})" if tally else "")
    else:
        task = tasks[0] if tasks else {}
        name = shorten(task.get("content", ""), 70) or f"#{task.get('id', '?')}"
        subject = f"{op} {name}" + (f" → {task['status']}" if op == "update" and task.get("status") else "")
    lines = [f"[{t.get('status', 'pending')}] {t.get('content', '')}".rstrip() for t in tasks]
    return ToolView(
        subject=subject,
        title=f"Tasks: {subject}",
        text=limits.clip(join(*lines)),
        meta={"op": op, "tasks": tasks},
        importance=LOW if op in ("get", "list") else MEDIUM,
    )
