"""Normalizers of the tools that read, write and search files: Read, Write, Edit,
MultiEdit, NotebookEdit, Grep and Glob.

File contents are never kept whole: Read keeps a head, Write a preview, Edit a compact
old → new summary; Grep and Glob keep the file list, not the matches.
"""

from __future__ import annotations

from typing import Any

from .text import join, line_count, plural, shorten, string
from .toolview import LIST_MAX, LOW, Limits, ToolView, as_dict, as_int, file_type

__all__ = ["FILE_TOOLS", "edit", "glob", "grep", "notebook_edit", "read", "write"]

FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})
"""The tools that touch one file: its path is the event's subject."""


# --- files --------------------------------------------------------------------------------


def read(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    file = as_dict(res.get("file"))
    path = string(inp.get("file_path")) or string(file.get("filePath"))
    content = string(file.get("content"))
    lines = as_int(file.get("totalLines")) or as_int(file.get("numLines")) or (line_count(content) if content else None)
    meta: dict[str, Any] = {"files": [path] if path else [], "file_type": file_type(path) or string(res.get("type"))}
    if lines is not None:
        meta["lines"] = lines
    if as_int(inp.get("offset")) or as_int(file.get("startLine", 1)) not in (None, 1):
        meta["start_line"] = as_int(inp.get("offset")) or as_int(file.get("startLine"))
    counted = f" ({plural(lines, 'line')})" if lines is not None else ""
    return ToolView(
        subject=path,
        title=f"Read {path}{counted}",
        text=join(path, limits.head(content)),
        meta=meta,
        importance=LOW,
    )


def write(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    path = string(inp.get("file_path")) or string(res.get("filePath"))
    content = string(inp.get("content")) or string(res.get("content"))
    created = res.get("type") == "create"
    lines = line_count(content)
    return ToolView(
        subject=path,
        title=f"{'Created' if created else 'Wrote'} {path} ({plural(lines, 'line')})",
        text=join(path, limits.head(content)),
        meta={"files": [path] if path else [], "lines": lines, "created": created, "file_type": file_type(path)},
    )


def _edit_summary(pairs: list[tuple[str, str]]) -> tuple[int, int, str]:
    removed = sum(line_count(old) for old, _ in pairs)
    added = sum(line_count(new) for _, new in pairs)
    text = "\n".join(f"- {shorten(old, 160)}\n+ {shorten(new, 160)}" for old, new in pairs[:10])
    return removed, added, text


def edit(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    path = string(inp.get("file_path")) or string(res.get("filePath"))
    edits = inp.get("edits")
    raw_edits: list[Any] = edits if isinstance(edits, list) else [inp]
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
            "file_type": file_type(path),
        },
    )


def notebook_edit(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    path = string(inp.get("notebook_path"))
    mode = string(inp.get("edit_mode")) or "replace"
    cell = string(inp.get("cell_id")) or str(as_int(inp.get("cell_number")) or "")
    source = string(inp.get("new_source"))
    return ToolView(
        subject=path,
        title=f"Edited notebook {path} ({mode}{' cell ' + cell if cell else ''})",
        text=join(path, limits.clip(source)),
        meta={"files": [path] if path else [], "edit_mode": mode, "cell": cell, "file_type": "ipynb"},
    )


# --- search -------------------------------------------------------------------------------


def grep(inp: dict[str, Any], out: Any, limits: Limits) -> ToolView:
    res = as_dict(out)
    pattern, path = string(inp.get("pattern")), string(inp.get("path"))
    files = (
        [f for f in res.get("filenames", []) if isinstance(f, str)] if isinstance(res.get("filenames"), list) else []
    )
    mode = string(res.get("mode")) or string(inp.get("output_mode")) or "files_with_matches"
    count = as_int(res.get("numFiles")) or len(files)
    counted = string(res.get("content")).strip()
    if mode == "count" and counted.isdigit():
        matches: int | None = int(counted)
    else:
        matches = as_int(res.get("numMatches")) or as_int(res.get("numLines"))
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
    res = as_dict(out)
    pattern, path = string(inp.get("pattern")), string(inp.get("path"))
    files = (
        [f for f in res.get("filenames", []) if isinstance(f, str)] if isinstance(res.get("filenames"), list) else []
    )
    count = as_int(res.get("numFiles")) or len(files)
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
