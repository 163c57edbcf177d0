"""What every check gives (a ``Finding``), and the little the checks share."""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

from memd.capture.text import plural as plural  # the doctor's wording is memd's

Level = Literal["ok", "warn", "error"]


class Finding(NamedTuple):
    name: str
    """The check: config, hooks, agents, daemon, permissions, database, quarantine, vector_index, model, spool,
    disk, sync.
    A check with several problems gives one finding for each."""
    level: Level
    message: str
    fix: str = ""
    """What to run (or do) about it; "" when nothing needs doing."""


RESTART: Final = "memctl daemon stop && memctl daemon start"
START: Final = "memctl daemon start"
