"""One normalizer per Claude Code tool: what a tool call was, in a form worth searching.

Each normalizer takes the call's ``tool_input`` and ``tool_response`` (either may be
missing or of an unexpected type: fields come and go between Claude Code versions)
and returns a ``ToolView``: a one-line ``subject`` (the command, the path, the
pattern), a ``title`` for a successful call, the searchable ``text``, structured
``meta`` and an ``importance``.  Unknown tools, MCP tools included, go through
``generic``; nothing here raises on odd input.

Shapes follow ../shared/fixtures/claude-code/tool_response_examples.json.  The file
tools' normalizers are in ``file_tools.py``, what they all return in ``toolview.py``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from .file_tools import edit, glob, grep, notebook_edit, read, write
from .text import first_line, join, line_count, shorten, string
from .toolview import HIGH, LIST_MAX, LOW, MEDIUM, Limits, Normalizer, ToolView, as_dict, as_int, strings

__all__ = ["TOOLS", "is_trivial_command", "view"]


# --- shell --------------------------------------------------------------------------------

_SEGMENTS = re.compile(r"\|\||&&|[;|&\n]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def is_trivial_command(command: str, trivial: frozenset[str]) -> bool:
    """Whether every segment of a shell command starts with a read-only trivial program."""
    programs = []
    for segment in _SEGMENTS.split(command):
        words = [w for w in segment.split() if not _ASSIGNMENT.match(w)]
        if words:
            programs.append(words[0].rsplit("/", 1)[-1])
    return bool(programs) and all(p in trivial for p in programs)


def bash(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    command = string(inp.get("command"))
    description = string(inp.get("description"))
    res = as_dict(out)
    stdout, stderr = string(res.get("stdout")), string(res.get("stderr"))
    interrupted = res.get("interrupted") is True
    background = inp.get("run_in_background") is True or bool(res.get("backgroundTaskId"))
    meta: dict[str, Any] = {"command": command, "interrupted": interrupted, "background": background}
    if description:
        meta["description"] = description
    if res.get("backgroundTaskId"):
        meta["background_task_id"] = string(res.get("backgroundTaskId"))
    if res.get("returnCodeInterpretation"):
        meta["outcome"] = string(res.get("returnCodeInterpretation"))
    subject = shorten(first_line(command) or description, 80)
    suffix = " (interrupted)" if interrupted else " (background)" if background else ""
    return ToolView(
        subject=subject,
        title=f"Bash: {subject}{suffix}",
        text=join(description, command, limits.clip(stdout), limits.clip(stderr)),
        meta=meta,
        importance=HIGH if interrupted else MEDIUM,
    )


# --- web ----------------------------------------------------------------------------------


def web_fetch(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    url = string(inp.get("url")) or string(res.get("url"))
    host = urlsplit(url).hostname or url if url else ""
    status = as_int(res.get("code"))
    meta: dict[str, Any] = {"url": url, "host": host}
    if status is not None:
        meta["status"] = status
    return ToolView(
        subject=url,
        title=f"Fetched {shorten(url, 80)}{f' ({status})' if status is not None else ''}",
        text=join(url, string(inp.get("prompt")), limits.clip(string(res.get("result")))),
        meta=meta,
        importance=LOW,
    )


def web_search(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    query = string(inp.get("query"))
    found: list[str] = []
    results = as_dict(out).get("results")
    for result in results if isinstance(results, list) else []:
        content = as_dict(result).get("content")
        for item in content if isinstance(content, list) else []:
            item = as_dict(item)
            found.append(join(string(item.get("title")), string(item.get("url"))))
    return ToolView(
        subject=query,
        title=f"Web search: {shorten(query, 80)}",
        text=join(query, limits.clip("\n".join(found))),
        meta={"query": query, "result_count": len(found)},
        importance=LOW,
    )


# --- agents, skills, questions, plans -----------------------------------------------------


def agent(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    kind = string(inp.get("subagent_type")) or "agent"
    description = string(inp.get("description"))
    content = res.get("content")
    answer = "\n".join(strings(content)) if isinstance(content, list) else ""
    meta: dict[str, Any] = {"subagent_type": kind, "description": description}
    for key, name in (("agentId", "agent_id"), ("status", "status")):
        if isinstance(res.get(key), str):
            meta[name] = res[key]
    if inp.get("run_in_background") is True:
        meta["background"] = True
    return ToolView(
        subject=f"{kind}: {shorten(description, 70)}",
        title=f"Agent ({kind}): {shorten(description, 80)}",
        text=join(description, limits.clip(string(inp.get("prompt"))), limits.clip(answer)),
        meta=meta,
    )


def skill(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    name = string(inp.get("skill")) or string(as_dict(out).get("commandName"))
    args = string(inp.get("args"))
    return ToolView(
        subject=name,
        title=f"Skill: {name}{' ' + shorten(args, 60) if args else ''}",
        text=join(name, args),
        meta={"skill": name, "args": args},
    )


def ask_user(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    questions = (
        [q for q in inp.get("questions", []) if isinstance(q, dict)] if isinstance(inp.get("questions"), list) else []
    )
    lines = []
    for q in questions:
        options = [string(as_dict(o).get("label")) for o in q.get("options", []) if isinstance(o, dict)]
        lines.append(join(string(q.get("question")), " / ".join(o for o in options if o)))
    answers = as_dict(as_dict(out).get("answers"))
    answered = [f"{k} → {v}" for k, v in answers.items() if isinstance(v, str)]
    first = string(questions[0].get("question")) if questions else ""
    return ToolView(
        subject=shorten(first, 80),
        title=f"Asked: {shorten(first, 90)}",
        text=limits.clip(join("\n".join(lines), "\n".join(answered))),
        meta={"questions": len(questions), "answered": len(answered)},
    )


def exit_plan_mode(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    plan = string(inp.get("plan")) or string(res.get("plan"))
    path = string(res.get("filePath"))
    subject = shorten(first_line(plan).lstrip("# "), 80) or path
    return ToolView(
        subject=subject,
        title=f"Plan: {subject}" if subject else "Plan ready",
        text=join(path, limits.clip(plan)),
        meta={"files": [path] if path else [], "plan_lines": line_count(plan)},
    )


# --- harness plumbing ---------------------------------------------------------------------


def tool_search(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    """Claude Code 2.1 loads a deferred tool's schema with a ToolSearch call
    (``{"query": "select:TodoWrite", "max_results": 5}``): harness plumbing, not work, so
    low importance: never among a SessionStart's important memories nor in the working set."""
    query = string(inp.get("query"))
    matches = as_dict(out).get("matches")  # {"matches": [...], "query": ..., "total_deferred_tools": 21}
    names = [m for m in matches if isinstance(m, str)] if isinstance(matches, list) else []
    meta: dict[str, Any] = {"query": query}
    if names:
        meta["matches"] = names[:LIST_MAX]
    found = f": {', '.join(names[:5])}{'…' if len(names) > 5 else ''}" if names else ""
    return ToolView(
        subject=shorten(query, 80),
        title=f"ToolSearch '{shorten(query, 60)}'{found}",
        text=join(query, "\n".join(names[:LIST_MAX])),
        meta=meta,
        importance=LOW,
    )


def mcp(tool: str, inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    _, server, name = [*tool.split("__", 2), "", ""][:3]
    response = "\n".join(strings(out))
    arguments = "\n".join(strings(inp))
    subject = shorten(first_line(arguments), 60)
    return ToolView(
        subject=f"{server}/{name}",
        title=f"MCP {server}/{name}{': ' + subject if subject else ''}",
        text=join(limits.clip(arguments), limits.clip(response)),
        meta={"mcp_server": server, "mcp_tool": name},
    )


def generic(tool: str, inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    arguments = "\n".join(strings(inp))
    subject = shorten(first_line(arguments), 70)
    return ToolView(
        subject=subject,
        title=f"{tool}{': ' + subject if subject else ''}",
        text=join(limits.clip(arguments), limits.clip("\n".join(strings(out)))),
        meta={},
    )


TOOLS: dict[str, Normalizer] = {
    "Bash": bash,
    "Read": read,
    "Write": write,
    "Edit": edit,
    "MultiEdit": edit,
    "NotebookEdit": notebook_edit,
    "Grep": grep,
    "Glob": glob,
    "WebFetch": web_fetch,
    "WebSearch": web_search,
    "Agent": agent,
    "Task": agent,  # the Agent tool's name before Claude Code 2.1
    "Skill": skill,
    "AskUserQuestion": ask_user,
    "ExitPlanMode": exit_plan_mode,
    "ToolSearch": tool_search,
}


def view(tool: str, tool_input: Any, tool_response: Any, limits: Limits) -> ToolView:
    """Normalize one tool call; any tool name and any input shapes are accepted."""
    inp = as_dict(tool_input)
    if tool.startswith("mcp__"):
        return mcp(tool, inp, tool_response, limits)
    normalizer = TOOLS.get(tool)
    if normalizer is None:
        return generic(tool, inp, tool_response, limits)
    return normalizer(inp, tool_response, limits)
