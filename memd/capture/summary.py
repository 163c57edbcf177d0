"""LLM-free session summaries: what a session did, from its events' structure alone.

``summarize`` reads a session's normalized events (kind, tool, meta, time) and
returns one line a person can scan::

    Goal: fix the flaky login test · Edited 3 files: config.py, handler.py, schema.py
    · Commands: pytest; git commit · Errors (1): pytest -x: Exit code 1 · 15 events, 12 min

The store refreshes it on Stop (at most every 15 s per session) and on SessionEnd,
so a session whose SessionEnd never arrives (it has a 1.5 s budget) still has its
summary, at most 15 s of activity stale.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, NamedTuple

from .text import plural, shorten

__all__ = ["EDIT_TOOLS", "SessionSummary", "SummaryRow", "program", "split_goal", "summarize"]

EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_AFTER_GOAL = re.compile(r" · (?=Edited \d+ files?: |Commands: |Errors \(\d+\): |\d+ events?, )")
_TWO_WORD = frozenset({"git", "npm", "pnpm", "yarn", "cargo", "go", "uv", "pip", "docker", "make", "poetry", "kubectl"})


class SummaryRow(NamedTuple):
    kind: str
    tool: str | None
    title: str
    meta: dict[str, Any]
    ts: float


class SessionSummary(NamedTuple):
    line: str
    meta: dict[str, Any]


def _goal(rows: list[SummaryRow]) -> str:
    """The first substantive prompt: not a slash command, not a notification, 3+ words."""
    for row in rows:
        if row.kind != "prompt":
            continue
        text = row.title.removeprefix("Prompt: ")
        if not text.startswith(("/", "<")) and len(text.split()) >= 3:
            return text
    return ""


def split_goal(line: str) -> tuple[str, str]:
    """(the goal, the rest) of a summary line as ``summarize`` writes it; ("", line) for one
    without a goal.  The goal ends where one of the parts after it starts."""
    if not line.startswith("Goal: "):
        return "", line
    goal, *rest = _AFTER_GOAL.split(line.removeprefix("Goal: "), maxsplit=1)
    return goal, "".join(rest)


def program(command: str) -> str:
    """The program a shell command runs (`git commit` for two-word tools), without env assignments."""
    words = [w for w in command.split() if "=" not in w or w.startswith("-")]
    if not words:
        return ""
    name = words[0].rsplit("/", 1)[-1]
    if name in _TWO_WORD and len(words) > 1 and not words[1].startswith("-"):
        return f"{name} {words[1]}"
    return name


def _basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return "<1 min"
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def summarize(rows: list[SummaryRow]) -> SessionSummary:
    """The summary of a session's events (in time order)."""
    edited: Counter[str] = Counter()
    commands: dict[str, None] = {}
    errors: list[str] = []
    tools: Counter[str] = Counter()
    for row in rows:
        if row.tool:
            tools[row.tool] += 1
        if row.kind == "tool" and row.tool in EDIT_TOOLS:
            edited.update(f for f in row.meta.get("files", []) if isinstance(f, str) and f)
        if row.kind in ("tool", "tool_error") and row.tool == "Bash":
            name = program(str(row.meta.get("command", "")))
            if name:
                commands.setdefault(name)
        if row.kind == "tool_error":
            errors.append(shorten(row.title.split(" failed: ", 1)[-1], 80))
    goal = _goal(rows)
    span = rows[-1].ts - rows[0].ts if rows else 0.0
    parts = [f"Goal: {goal}"] if goal else []
    if edited:
        names = ", ".join(_basename(f) for f, _ in edited.most_common(5))
        more = f" (+{len(edited) - 5} more)" if len(edited) > 5 else ""
        parts.append(f"Edited {len(edited)} file{'s' if len(edited) > 1 else ''}: {names}{more}")
    if commands:
        parts.append("Commands: " + "; ".join(list(commands)[:6]))
    if errors:
        parts.append(f"Errors ({len(errors)}): " + "; ".join(errors[:3]))
    parts.append(f"{plural(len(rows), 'event')}, {_duration(span)}")
    meta = {
        "goal": goal,
        "files_edited": dict(edited.most_common(50)),
        "commands": list(commands)[:50],
        "errors": errors[:20],
        "tools": dict(tools.most_common()),
        "events": len(rows),
        "duration_s": round(span, 1),
    }
    return SessionSummary(" · ".join(parts), meta)
