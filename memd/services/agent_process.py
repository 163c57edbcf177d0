"""Which session a fork was made of, from the agent process that ran its SessionStart hook.

Claude Code names no parent in a fork's SessionStart, and has written no transcript for it
yet (not even by its first prompt's hook).  What it does say, ``seconds_since_last_response``
in whole seconds, matches whichever session of the project replied about then: another
session replying within a few seconds of the fork was taken for its parent.  The process
that runs the hook knows better:

- ``claude --resume ID --fork-session`` (``-p`` or not) names the parent on its command line;
- ``/fork`` (``/branch``) in a running Claude Code forks the session that process has on,
  the last one whose SessionStart it ran.

So the hook client sends its parent's pid with SessionStart (``Ingest.agent_pid``), and
``agent_process`` reads that process from ``/proc``, through the shells between (Claude Code
runs hook commands with ``sh -c``, the plugin through its launcher); ``Forks`` remembers the
last session each process started.  Where neither tells (``--continue --fork-session``, a
system without ``/proc``), the caller falls back to the time match (``store.state.forked_from``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from ..continuity.carry_on import resume_target

__all__ = ["AgentProcess", "Forks", "agent_process"]

SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ksh", "mksh", "fish", "env"})
"""Processes between the agent and the hook client (``/proc/PID/comm``), seen through."""
DEPTH = 4
REMEMBERED = 256
"""Agent processes whose last session is kept: the newest."""


class AgentProcess(NamedTuple):
    pid: int
    started: int
    """Its start time (clock ticks after boot): a pid used again later is another process."""
    argv: tuple[str, ...]


def agent_process(pid: int, proc: str = "/proc") -> AgentProcess | None:
    """The agent process at or above ``pid`` (the first that is no shell), or None."""
    for _ in range(DEPTH):
        if pid <= 1:
            return None
        try:
            with open(f"{proc}/{pid}/stat", "rb") as f:
                stat = f.read()
            with open(f"{proc}/{pid}/cmdline", "rb") as f:
                argv = tuple(arg.decode("utf-8", "replace") for arg in f.read().split(b"\0")[:-1])
        except OSError:  # gone already, or no /proc here
            return None
        # comm is in parentheses and may hold anything, spaces and parentheses included
        comm, fields = stat[stat.index(b"(") + 1 : stat.rindex(b")")], stat[stat.rindex(b")") + 2 :].split()
        if comm.decode("utf-8", "replace") not in SHELLS:
            return AgentProcess(pid, int(fields[19]), argv)
        pid = int(fields[1])
    return None


class Forks:
    """The last session each agent process started: the session a ``/fork`` in it was made of."""

    def __init__(self) -> None:
        self._last: OrderedDict[tuple[int, int], str] = OrderedDict()

    def parent(self, process: AgentProcess, session: str) -> str | None:
        """The session the fork ``session``, started by ``process``, was made of, if it tells."""
        key = (process.pid, process.started)
        if (last := self._last.get(key)) is not None and last != session:
            return last
        named = resume_target(process.argv)
        return named if named and named != session else None

    def started(self, process: AgentProcess, session: str) -> None:
        key = (process.pid, process.started)
        self._last.pop(key, None)
        self._last[key] = session
        while len(self._last) > REMEMBERED:
            self._last.popitem(last=False)
