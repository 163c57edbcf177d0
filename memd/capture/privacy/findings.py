"""Where the privacy filter changes a text, line by line: what ``memctl scan FILE`` reports.

The filter (``Privacy.text``) returns the filtered text and counts, never where: its passes run
one after another on each other's output, so offsets would have to be carried through all of
them.  Two filterings say it from the outside: each line filtered alone, which keeps the line
count, so a changed line is a finding at its own number; and the whole text filtered at once,
for what only a whole text shows (a PEM block over lines, a private span over lines).  Where
the two disagree, a line diff places one finding over the original lines.  Each finding carries
the kinds its markers name (``[REDACTED:github-token]``) and its lines as memd would store them,
so a report never shows the secret it found.  Pure: the filter is passed in.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Callable
from typing import NamedTuple

from .redactions import MARKER

__all__ = ["PRIVATE", "PRIVATE_MARKER", "Finding", "findings"]

PRIVATE = "private"
"""The kind of a private span (``<private>...</private>``), and of a change no marker names."""
PRIVATE_MARKER = "[PRIVATE]"
"""What a private span becomes by default (``[privacy] marker``)."""


class Finding(NamedTuple):
    line: int
    """The first line it touches (1-based, in the original text)."""
    end_line: int
    """The last (the same line for a secret within one line)."""
    kinds: tuple[str, ...]
    """The kinds its markers name, in order of appearance, each once."""
    redacted: str
    """Its lines as the filter leaves them."""


def findings(text: str, filtered: Callable[[str], str]) -> list[Finding]:
    """Each place where ``filtered`` changes ``text``, first to last."""
    whole = filtered(text)
    if whole == text:
        return []
    before = text.splitlines()
    alone = [filtered(line) for line in before]
    after = whole.splitlines()
    found: list[Finding] = []
    matcher = difflib.SequenceMatcher(None, alone, after, autojunk=False)
    for equal, ops in itertools.groupby(matcher.get_opcodes(), key=lambda op: op[0] == "equal"):
        runs = list(ops)
        if equal:  # the whole text changed these lines as each alone: line by line
            found += [
                _finding(i + 1, i + 1, alone[i])
                for _, i1, i2, _, _ in runs
                for i in range(i1, i2)
                if alone[i] != before[i]
            ]
        elif (i1 := runs[0][1]) < (i2 := runs[-1][2]):  # only the whole text shows it: one finding over its lines
            shown = "\n".join(after[runs[0][3] : runs[-1][4]])
            if not shown and found and found[-1].end_line == i1:  # lines gone with the change just before
                found[-1] = found[-1]._replace(end_line=i2)
            else:
                found.append(_finding(i1 + 1, i2, shown))
    return found


def _finding(line: int, end_line: int, shown: str) -> Finding:
    kinds = [_kind(marker) for marker in MARKER.findall(shown)]
    if PRIVATE_MARKER in shown or not kinds:
        kinds.append(PRIVATE)
    return Finding(line, end_line, tuple(dict.fromkeys(kinds)), shown)


def _kind(marker: str) -> str:
    """``[REDACTED:github-token]`` -> ``github-token``; a marker without a kind is a secret's."""
    return marker[len("[REDACTED:") : -1] if ":" in marker else "secret"
