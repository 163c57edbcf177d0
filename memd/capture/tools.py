"""One normalizer per Claude Code tool: what a tool call was, in a form worth searching.

Each normalizer takes the call's ``tool_input`` and ``tool_response`` (either may be
missing or of an unexpected type: fields come and go between Claude Code versions)
and returns a ``ToolView``: a one-line ``subject`` (the command, the path, the
pattern), a ``title`` for a successful call, the searchable ``text``, structured
``meta`` and an ``importance``.  Unknown tools, MCP tools included, go through
``generic``; nothing here raises on odd input.

Shapes follow ../shared/fixtures/claude-code/tool_response_examples.json.  File
contents are never kept whole: Read keeps a head, Write a preview, Edit a compact
old → new summary; Grep and Glob keep the file list, not the matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import msgspec

from .text import clip, first_line, join, line_count, plural, shorten, string

__all__ = ["HIGH", "LOW", "MEDIUM", "Limits", "ToolView", "is_trivial_command", "view"]

LOW, MEDIUM, HIGH = 1, 2, 3

HEAD_LINES = 20
"""Lines of a file kept from a Read, or previewed from a Write."""
LIST_MAX = 50
"""File names kept from a Grep or Glob."""


class Limits(msgspec.Struct, frozen=True):
    """Per-field size limits for stored text (``capture.max_field_chars`` / ``_lines``)."""

    chars: int = 10_000
    lines: int = 100

    def clip(self, text: str) -> str:
        return clip(text, self.chars, self.lines)

    def head(self, text: str, lines: int = HEAD_LINES) -> str:
        """The first ``lines`` lines only (a file's head, never its tail)."""
        kept = "".join(text.splitlines(keepends=True)[:lines])
        kept = kept[: self.chars]
        rest = text[len(kept) :]
        return kept + (f"…[{line_count(rest)} lines, {len(rest)} chars not kept]" if rest else "")


class ToolView(msgspec.Struct, kw_only=True):
    subject: str
    title: str
    text: str
    meta: dict[str, Any] = {}
    importance: int = MEDIUM


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strings(value: Any) -> list[str]:
    """Every string leaf of a JSON value, in order."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _file_type(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""


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
    res = _dict(out)
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


# --- files --------------------------------------------------------------------------------


def read(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
    file = _dict(res.get("file"))
    path = string(inp.get("file_path")) or string(file.get("filePath"))
    content = string(file.get("content"))
    lines = _int(file.get("totalLines")) or _int(file.get("numLines")) or (line_count(content) if content else None)
    meta: dict[str, Any] = {"files": [path] if path else [], "file_type": _file_type(path) or string(res.get("type"))}
    if lines is not None:
        meta["lines"] = lines
    if _int(inp.get("offset")) or _int(file.get("startLine", 1)) not in (None, 1):
        meta["start_line"] = _int(inp.get("offset")) or _int(file.get("startLine"))
    counted = f" ({plural(lines, 'line')})" if lines is not None else ""
    return ToolView(
        subject=path,
        title=f"Read {path}{counted}",
        text=join(path, limits.head(content)),
        meta=meta,
        importance=LOW,
    )


def write(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
    path = string(inp.get("file_path")) or string(res.get("filePath"))
    content = string(inp.get("content")) or string(res.get("content"))
    created = res.get("type") == "create"
    lines = line_count(content)
    return ToolView(
        subject=path,
        title=f"{'Created' if created else 'Wrote'} {path} ({plural(lines, 'line')})",
        text=join(path, limits.head(content)),
        meta={"files": [path] if path else [], "lines": lines, "created": created, "file_type": _file_type(path)},
    )


def _edit_summary(pairs: list[tuple[str, str]]) -> tuple[int, int, str]:
    removed = sum(line_count(old) for old, _ in pairs)
    added = sum(line_count(new) for _, new in pairs)
    text = "\n".join(f"- {shorten(old, 160)}\n+ {shorten(new, 160)}" for old, new in pairs[:10])
    return removed, added, text


def edit(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
    path = string(inp.get("file_path")) or string(res.get("filePath"))
    raw_edits = inp.get("edits") if isinstance(inp.get("edits"), list) else [inp]
    pairs = [(string(e.get("old_string")), string(e.get("new_string"))) for e in raw_edits if isinstance(e, dict)]
    removed, added, summary = _edit_summary(pairs)
    count = f"{len(pairs)} edits, " if len(pairs) > 1 else ""
    return ToolView(
        subject=path,
        title=f"Edited {path} ({count}-{removed} +{added} lines)",
        text=join(path, limits.clip(summary)),
        meta={
            "files": [path] if path else [],
            "edits": len(pairs),
            "removed_lines": removed,
            "added_lines": added,
            "replace_all": inp.get("replace_all") is True,
            "file_type": _file_type(path),
        },
    )


def notebook_edit(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    path = string(inp.get("notebook_path"))
    mode = string(inp.get("edit_mode")) or "replace"
    cell = string(inp.get("cell_id")) or str(_int(inp.get("cell_number")) or "")
    source = string(inp.get("new_source"))
    return ToolView(
        subject=path,
        title=f"Edited notebook {path} ({mode}{' cell ' + cell if cell else ''})",
        text=join(path, limits.clip(source)),
        meta={"files": [path] if path else [], "edit_mode": mode, "cell": cell, "file_type": "ipynb"},
    )


# --- search -------------------------------------------------------------------------------


def grep(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
    pattern, path = string(inp.get("pattern")), string(inp.get("path"))
    files = (
        [f for f in res.get("filenames", []) if isinstance(f, str)] if isinstance(res.get("filenames"), list) else []
    )
    mode = string(res.get("mode")) or string(inp.get("output_mode")) or "files_with_matches"
    count = _int(res.get("numFiles")) or len(files)
    counted = string(res.get("content")).strip()
    if mode == "count" and counted.isdigit():
        matches: int | None = int(counted)
    else:
        matches = _int(res.get("numMatches")) or _int(res.get("numLines"))
    if mode != "files_with_matches" and matches is not None:
        found = plural(matches, "match", "matches")
    else:
        found = plural(count, "file")
    where = f" in {path}" if path else ""
    meta: dict[str, Any] = {"pattern": pattern, "path": path, "mode": mode, "file_count": count}
    if files:
        meta["matched_files"] = files[:LIST_MAX]
    if matches is not None:
        meta["matches"] = matches
    return ToolView(
        subject=f"'{shorten(pattern, 60)}'{where}",
        title=f"Grep '{shorten(pattern, 60)}'{where}: {found}",
        text=join(pattern, path, string(inp.get("glob")), "\n".join(files[:LIST_MAX])),
        meta=meta,
        importance=LOW,
    )


def glob(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
    pattern, path = string(inp.get("pattern")), string(inp.get("path"))
    files = (
        [f for f in res.get("filenames", []) if isinstance(f, str)] if isinstance(res.get("filenames"), list) else []
    )
    count = _int(res.get("numFiles")) or len(files)
    meta: dict[str, Any] = {
        "pattern": pattern,
        "path": path,
        "file_count": count,
        "truncated": res.get("truncated") is True,
    }
    if files:
        meta["matched_files"] = files[:LIST_MAX]
    return ToolView(
        subject=f"'{pattern}'",
        title=f"Glob '{shorten(pattern, 60)}'{' in ' + path if path else ''}: {plural(count, 'file')}",
        text=join(pattern, path, "\n".join(files[:LIST_MAX])),
        meta=meta,
        importance=LOW,
    )


# --- web ----------------------------------------------------------------------------------


def web_fetch(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
    url = string(inp.get("url")) or string(res.get("url"))
    host = urlsplit(url).hostname or url if url else ""
    status = _int(res.get("code"))
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
    results = _dict(out).get("results")
    for result in results if isinstance(results, list) else []:
        content = _dict(result).get("content")
        for item in content if isinstance(content, list) else []:
            item = _dict(item)
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
    res = _dict(out)
    kind = string(inp.get("subagent_type")) or "agent"
    description = string(inp.get("description"))
    content = res.get("content")
    answer = "\n".join(_strings(content)) if isinstance(content, list) else ""
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
    name = string(inp.get("skill")) or string(_dict(out).get("commandName"))
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
        options = [string(_dict(o).get("label")) for o in q.get("options", []) if isinstance(o, dict)]
        lines.append(join(string(q.get("question")), " / ".join(o for o in options if o)))
    answers = _dict(_dict(out).get("answers"))
    answered = [f"{k} → {v}" for k, v in answers.items() if isinstance(v, str)]
    first = string(questions[0].get("question")) if questions else ""
    return ToolView(
        subject=shorten(first, 80),
        title=f"Asked: {shorten(first, 90)}",
        text=limits.clip(join("\n".join(lines), "\n".join(answered))),
        meta={"questions": len(questions), "answered": len(answered)},
    )


def exit_plan_mode(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = _dict(out)
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
    matches = _dict(out).get("matches")  # {"matches": [...], "query": ..., "total_deferred_tools": 21}
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
    response = "\n".join(_strings(out))
    arguments = "\n".join(_strings(inp))
    subject = shorten(first_line(arguments), 60)
    return ToolView(
        subject=f"{server}/{name}",
        title=f"MCP {server}/{name}{': ' + subject if subject else ''}",
        text=join(limits.clip(arguments), limits.clip(response)),
        meta={"mcp_server": server, "mcp_tool": name},
    )


def generic(tool: str, inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    arguments = "\n".join(_strings(inp))
    subject = shorten(first_line(arguments), 70)
    return ToolView(
        subject=subject,
        title=f"{tool}{': ' + subject if subject else ''}",
        text=join(limits.clip(arguments), limits.clip("\n".join(_strings(out)))),
        meta={},
    )


Normalizer = Callable[[dict[str, Any], Any, Limits], ToolView]

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

FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})


def view(tool: str, tool_input: Any, tool_response: Any, limits: Limits) -> ToolView:
    """Normalize one tool call; any tool name and any input shapes are accepted."""
    inp = _dict(tool_input)
    if tool.startswith("mcp__"):
        return mcp(tool, inp, tool_response, limits)
    normalizer = TOOLS.get(tool)
    if normalizer is None:
        return generic(tool, inp, tool_response, limits)
    return normalizer(inp, tool_response, limits)
