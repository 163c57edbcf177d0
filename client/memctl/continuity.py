"""``memctl tasks`` and ``endless``: what carries over from one session to the next, the
project's open tasks and the working state endless mode hands on."""

from __future__ import annotations

import argparse
import os

from .common import connect, emit, plain, when
from .parsing import Command

__all__ = ["ENDLESS", "TASKS"]

TASK_MARK = {"in_progress": "▶", "pending": "○", "completed": "✓", "dropped": "✗"}


def tasks_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="completed and dropped ones too")
    p.add_argument("--project", help="another project (its root path, or a part of it)")
    p.set_defaults(handler=run_tasks)


def run_tasks(args: argparse.Namespace) -> int:
    from memd.cite import label
    from memd.protocol import TaskList, Tasks

    with connect(args) as client:
        reply = client.call(Tasks(cwd=os.getcwd(), project=args.project, all=args.all), TaskList)
    where = reply.project or "this directory"
    lines = [f"{'tasks' if args.all else 'open tasks'} of {where}:"]
    for t in reply.tasks:
        lines.append(
            f"  {TASK_MARK.get(t.status, '?')} [{label(t.cite)}] {t.status:<11} {t.content}"
            f"  ({when(t.updated_at)}, {t.changes} change{'s' if t.changes != 1 else ''})"
        )
    if not reply.tasks:
        lines.append("  none")
    emit(args, plain(reply), "\n".join(lines))
    return 0


def endless_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["on", "off", "status", "snapshot", "consolidate"])
    p.add_argument("--session", help="snapshot: this session (default: the latest of this project)")
    p.set_defaults(handler=run_endless)


def run_endless(args: argparse.Namespace) -> int:
    from memd.protocol import Continuation, ContinuationResult, Endless, EndlessStatus

    with connect(args) as client:
        if args.action == "snapshot":
            reply = client.call(Continuation(session=args.session, cwd=os.getcwd()), ContinuationResult)
            human = reply.block or f"session {reply.session_id} has no working state to carry on yet"
            emit(args, plain(reply), human)
            return 0
        enabled = {"on": True, "off": False}.get(args.action)
        request = Endless(enabled=enabled, consolidate=args.action == "consolidate", cwd=os.getcwd())
        status = client.call(request, EndlessStatus)
    if args.action == "consolidate":
        emit(
            args,
            plain(status),
            f"consolidated {status.consolidated} new memor{'y' if status.consolidated == 1 else 'ies'}",
        )
        return 0
    state = "on" if status.enabled else "off"
    what = (
        "sessions start where the last one stood (compact, resume, fork; clear and startup when seamless)"
        if status.enabled
        else "sessions start with the standard block of the project's memories"
    )
    emit(args, plain(status), f"endless mode is {state}: {what}; working set here: {status.working_set} events")
    return 0


TASKS = Command("tasks", "the open tasks of this project, carried across its sessions", tasks_arguments)
ENDLESS = Command(
    "endless",
    "endless mode: on, off, status; snapshot (a session's continuation), consolidate (now)",
    endless_arguments,
)
