"""Whole tables of a TOML file taken out, renamed or added, everything else kept as written.

Python reads TOML (``tomllib``) but does not write it, and a user's config file is theirs:
its comments, order and spelling must survive memd's edits.  So these functions work on
the text, a table at a time.  A table is its header line (``[a.b."c.d"]`` or ``[[a.b]]``)
and the lines down to the next header; its key path is read by ``tomllib`` itself, so a
quoted key with dots in it is one key, however it is quoted.  Every result is parsed again
before it is returned: an edit that would leave a file TOML cannot read raises instead.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from typing import Any

__all__ = ["TomlError", "edit", "header", "parse"]

Path = tuple[str, ...]


class TomlError(ValueError):
    """The file is no TOML, or the edit would make it none."""


def parse(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError(str(exc)) from None


def header(path: Path) -> str:
    """The header line of the table at ``path``: bare keys where TOML allows them, the others
    quoted as basic strings (``[hooks.state."/home/me/.codex/hooks.json:stop:0:0"]``)."""
    return "[" + ".".join(_key(key) for key in path) + "]"


def _key(key: str) -> str:
    if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key):
        return key
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _path_of(line: str) -> Path | None:
    """The key path of a table header line, None for any other line."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    array = stripped.startswith("[[")
    try:
        table = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None  # an inline array value that starts a line: no header
    path: list[str] = []
    node: Any = table
    while isinstance(node, dict) and len(node) == 1:
        key = next(iter(node))
        path.append(key)
        node = node[key]
        if array and isinstance(node, list):
            node = node[0] if node else {}
    return tuple(path) if path else None


def edit(text: str, change: Callable[[Path], Path | None], added: str = "") -> str:
    """``text`` with each table passed through ``change``: kept (its path returned), renamed
    (another path returned: its header is rewritten) or taken out (None); then ``added``
    (whole tables) appended.  Raises ``TomlError`` when ``text`` or the result is no TOML."""
    parse(text)
    out: list[str] = []
    keeping = True
    for line in text.splitlines(keepends=True):
        path = _path_of(line)
        if path is not None:
            new = change(path)
            keeping = new is not None
            if new is not None and new != path:
                indent = line[: len(line) - len(line.lstrip())]
                line = indent + header(new) + ("\n" if line.endswith("\n") else "")
        if keeping:
            out.append(line)
    result = "".join(out)
    if added:  # one blank line before, whatever the tables taken out had left at the end
        result = (result.rstrip() + "\n\n" if result.strip() else "") + added
    parse(result)
    return result
