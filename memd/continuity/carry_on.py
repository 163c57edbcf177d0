"""What carries a session on from an earlier one: pure pieces of the endless-mode decisions
(``memd.services.session_start`` and ``memd.services.prompt_context`` make them).

- the aspects a snapshot and a prompt are compared by (``continuity.score``);
- when a forked or resumed session's parent last replied (Claude Code says how long ago),
  and which session ``claude --resume ID --fork-session`` forks;
- why a continuation block was given, in the words its header shows;
- where the last session left off, in one line, on a topic shift.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from ..capture.extract import aspects
from ..capture.prepare import NewEvent
from ..capture.snapshot import Snapshot

__all__ = ["CARRIED", "left_off", "prompt_aspects", "replied_at", "resume_target", "snapshot_aspects"]

CARRIED: Final = {
    "compact": "compaction: this session's working state, taken from its own events",
    "resume": "resume: the session's working state, and what other sessions did since",
    "fork": "fork: the working state of session {of}, the one forked",
}
"""Why a session that compacted, resumed or forked gets a continuation (``of``: the
first 8 characters of the session it carries on)."""


def snapshot_aspects(snapshot: Snapshot) -> dict[str, Sequence[str]]:
    """The aspects of a session's working state."""
    return {"topics": snapshot.topics, "files": snapshot.file_names, "entities": snapshot.entities}


def prompt_aspects(text: str) -> dict[str, Sequence[str]]:
    """The aspects of a prompt: the best evidence of what a fresh session is about."""
    found = aspects([text])
    return {"topics": found.topics, "files": found.files, "entities": found.entities}


def replied_at(event: NewEvent) -> float | None:
    """When the session this one continues last replied (a fork's or a resume's SessionStart)."""
    try:
        since = msgspec.json.decode(event.meta).get("since_last_response")
    except (msgspec.DecodeError, AttributeError):
        return None
    return event.client_ts - since if isinstance(since, int | float) and not isinstance(since, bool) else None


def resume_target(argv: Sequence[str]) -> str | None:
    """The session a ``claude`` command line forks (``--resume ID``, ``-r ID`` or ``--resume=ID``
    with ``--fork-session``); None when it names none."""
    if "--fork-session" not in argv:
        return None
    for i, arg in enumerate(argv):
        if arg.startswith("--resume="):
            return arg.partition("=")[2] or None
        if arg in ("--resume", "-r") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return None


def left_off(snapshot: Snapshot) -> str:
    """Where a session left off, in one line: its goal, else its first task; "" for neither."""
    return snapshot.goal[0].text if snapshot.goal else (snapshot.tasks[0].text if snapshot.tasks else "")
