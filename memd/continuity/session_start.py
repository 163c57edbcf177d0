"""The standard block a session starts with when there is no working state to carry on:
recent session summaries, open tasks, recent errors and important memories of its project.

Pure: it chooses among the rows the store answers with (``memd.store.session_start``)
and writes their lines; ``memd.services.session_start`` reads the rows and renders the block.

**Important** is what is most worth remembering at a session's start: a kind's weight
(``KIND_WEIGHT``: a memory someone asked to keep first, a tool call last), its
importance, its recency (halving every ``RECENCY_DAYS``) and how often agents and people
used it.  The same failure twice is one error line; the same prompt twice one important line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Protocol

from ..capture.summary import split_goal
from ..context import Line, day
from ..retrieve.digest import summary
from ..store.session_start import Candidate, Head

__all__ = [
    "CANDIDATES",
    "ERRORS",
    "ERROR_ROWS",
    "IMPORTANT",
    "KIND_WEIGHT",
    "MIN_IMPORTANCE",
    "OPEN_TASKS",
    "SECTIONS",
    "SUMMARIES",
    "distinct_errors",
    "distinct_important",
    "most_worth",
    "standard_lines",
    "worth",
]

SECTIONS: Final = ("Recent sessions", "Open tasks", "Important", "Recent errors")
SUMMARIES: Final = 3
OPEN_TASKS: Final = 10
IMPORTANT: Final = 10
ERRORS: Final = 5
ERROR_ROWS: Final = 50
"""Latest errors read to find ``ERRORS`` distinct ones."""
CANDIDATES: Final = 300
"""Latest events weighed for the important ones."""
MIN_IMPORTANCE: Final = 2
LINE_CHARS: Final = 300
"""Longest line of a SessionStart block (a session summary can run long)."""
KIND_WEIGHT: Final = {
    "memory": 1.5,
    "prompt": 1.0,
    "compact_summary": 1.0,
    "assistant": 0.7,
    "task_state": 0.6,
    "subagent_stop": 0.5,
    "tool": 0.3,
}
"""How much a kind of event is worth remembering at a session's start, before recency and use."""
RECENCY_DAYS: Final = 7.0


class Task(Protocol):
    """An open task as its line shows it (``memd.capture.task_rules.OpenTask``)."""

    @property
    def cite(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def event_id(self) -> int: ...


def worth(kind: str, importance: int, age_days: float, uses: int) -> float:
    """How much an event is worth showing when a session starts: its kind and importance,
    its recency (halving every RECENCY_DAYS) and how often agents and people used it."""
    return KIND_WEIGHT[kind] + 0.5 * (importance - 2) + 2 ** (-age_days / RECENCY_DAYS) + 0.3 * min(uses, 5) / 5


def most_worth(candidates: Iterable[Candidate], now: float) -> list[int]:
    """The ids of the candidates most worth showing, the best first: enough to fill
    ``IMPORTANT`` lines once repeats are left out."""
    ranked = sorted(candidates, key=lambda c: -worth(c[1], c[2], max(0.0, now - c[3]) / 86400, c[4]))
    return [c[0] for c in ranked[: 3 * IMPORTANT]]  # (id, kind, importance, client_ts, uses)


def distinct_errors(errors: Iterable[Head]) -> list[Head]:
    """The first ``ERRORS`` errors of distinct titles: the same failure twice is one line."""
    by_title: dict[str, Head] = {}
    for row in errors:
        by_title.setdefault(row[4], row)  # (id, cite, kind, tool, title, head, client_ts)
    return list(by_title.values())[:ERRORS]


_COUNTS_ONLY: Final = re.compile(r"\d+ events?, [^·]*")


def distinct_important(best: Sequence[int], heads: dict[int, Head]) -> dict[str, Head]:
    """The first ``IMPORTANT`` of ``best`` (those still stored) by summary: the same prompt
    twice is one line."""
    important: dict[str, Head] = {}
    for event_id in best:
        if len(important) < IMPORTANT and event_id in heads:
            _id, _cite, kind, _tool, title, head, _ts = row = heads[event_id]
            important.setdefault(summary(kind, title, head), row)
    return important


def _without_said_goal(line: str, said: Callable[[str], bool]) -> str:
    """The summary ``line`` to show: without a goal the agent was ``said``, and none when only
    its counts are left ("4 events, <1 min" says nothing worth a line)."""
    goal, rest = split_goal(line)
    shown = line if goal and not said(goal) else rest
    return "" if _COUNTS_ONLY.fullmatch(shown) else shown


def _line(section: str, event_id: int, text: str, quote: str = "") -> Line:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= LINE_CHARS else flat[: LINE_CHARS - 1] + "…"
    return Line(section, flat, event_id, quote=quote)


def standard_lines(
    summaries: Iterable[Head], tasks: Iterable[Task], errors: Iterable[Head], important: dict[str, Head],
    said: Callable[[str], bool] = lambda _text: False,
) -> list[Line]:  # fmt: skip
    """A standard block's candidate lines, in priority order: session summaries, open tasks,
    errors, then important memories (``memory_block`` keeps what its budget allows).  A
    session's goal the agent has ``said`` to it already (Claude Code's memory) is left out of
    its summary, and a summary with nothing but its counts is left out."""
    return [
        *(_line("Recent sessions", event_id, f"[mem:{cite}] {day(ts)}: {text}")
          for event_id, cite, _kind, _tool, title, head, ts in summaries
          if (text := _without_said_goal(head or title, said))),
        *(Line("Open tasks", f"[mem:{t.cite}] [{t.status}] {' '.join(t.content.split())[:LINE_CHARS]}", t.event_id,
               quote=t.content)
          for t in tasks),
        *(_line("Recent errors", event_id, f"[mem:{cite}] {day(ts)}: {shown}", shown)
          for event_id, cite, kind, _tool, title, head, ts in errors if (shown := summary(kind, title, head))),
        *(_line("Important", row[0], f"[mem:{row[1]}] {day(row[6])} {row[2]}: {text}", text)
          for text, row in important.items()),
    ]  # fmt: skip
