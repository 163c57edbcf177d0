"""How task-state events change a project's tasks: the rules, without the table.

The writer applies each task-state event (``capture/tasks.py`` makes them of todo-tool
calls) to the project's ``tasks`` table in the transaction that stores it
(``store/tasks.py``); what it decides by is here, pure.

**The same task.**  A task's key is its content normalized (casefolded, punctuation
and extra spaces dropped).  An incoming task with a new key is still the same task when
its wording changed only a little: ``fuzz.token_sort_ratio`` >= ``SAME_TASK`` (88)
against an open task of the project not already matched in the same list and touched
within ``STALE_DAYS`` of the change (an older one is not carried over any more).  88 accepts
"Add tests for the parser" → "Add unit tests for the parser" (90) and rejects "Fix the
login test" → "Fix the logout test" (84).

**Transitions.**  ``pending → in_progress → completed`` is the way forward (skipping
``in_progress`` is allowed: agents often do); ``completed → pending | in_progress`` is a
*reopen*, and ``in_progress → pending`` a *pause*, both recorded as such.  TodoWrite
sends the whole list, so an open task the same session wrote before and left out of its
new list was *dropped*; a task from an earlier session is never dropped by a list that
did not know it.  Task-tool ``TaskUpdate``s name a task by the session's own id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "OPEN",
    "SAME_TASK",
    "STALE_DAYS",
    "Candidate",
    "Change",
    "OpenTask",
    "Resemblance",
    "canonical",
    "change_of",
]

OPEN: Final = ("pending", "in_progress")
SAME_TASK: Final = 88.0
STALE_DAYS: Final = 14.0
_PUNCTUATION: Final = re.compile(r"[^\w\s]")


def canonical(content: str) -> str:
    """The key of a task: its content casefolded, without punctuation, single-spaced."""
    return " ".join(_PUNCTUATION.sub(" ", content.casefold()).split())


def change_of(previous: str | None, status: str) -> str | None:
    """What a status change is: created, started, completed, reopened, paused, dropped or
    ``changed`` (a status memd does not know); None when nothing changed."""
    if previous == status:
        return None
    if previous is None:
        return "created"
    if status == "dropped":
        return "dropped"
    if previous in ("completed", "dropped") and status in OPEN:
        return "reopened"
    if previous == "in_progress" and status == "pending":
        return "paused"
    return {"in_progress": "started", "completed": "completed"}.get(status, "changed")


class Change(NamedTuple):
    task_id: int
    previous: str | None
    status: str
    change: str


class OpenTask(NamedTuple):
    id: int
    content: str
    status: str
    active_form: str
    cite: str
    """The citation id of the event that last changed it."""
    updated_at: float
    session_id: str | None
    event_id: int


class Candidate(NamedTuple):
    """An open task a reworded one may be: its id, status and key."""

    id: int
    status: str
    key: str


class Resemblance:
    """How much each of one event's task keys resembles each open candidate task, scored
    all at once, in C (a project can hold hundreds of open tasks).

    Asking per task would give the same answers: every task the event creates or changes
    is ``taken``, and taken tasks are never candidates."""

    def __init__(self, keys: Sequence[str], candidates: Sequence[Candidate]) -> None:
        import numpy as np  # here: the MCP server and memctl import the task modules for their types only
        from rapidfuzz import fuzz, process

        self.candidates = list(candidates)
        self.scores: npt.NDArray[np.float32] = process.cdist(
            list(keys), [c.key for c in self.candidates], scorer=fuzz.token_sort_ratio, dtype=np.float32
        )

    def best(self, index: int, taken: set[int]) -> tuple[int, str] | None:
        """(id, status) of the candidate most like key ``index`` (of equals the latest), if one
        scores >= SAME_TASK and is not ``taken``."""
        import numpy as np

        scores = self.scores[index]
        matches = [
            (float(scores[c]), int(c))
            for c in np.flatnonzero(scores >= SAME_TASK)
            if self.candidates[c].id not in taken
        ]
        if not matches:
            return None
        _, column = max(matches)
        return self.candidates[column].id, self.candidates[column].status
