"""``memctl history`` and ``sessions``: what happened lately, event by event or session by
session, as the daemon lists it."""

from __future__ import annotations

import argparse
import os

from .common import connect, emit, plain, when
from .parsing import Command, at_least

__all__ = ["HISTORY", "SESSIONS"]

IMPORTANCE = {1: "·", 2: "•", 3: "!"}


def history_arguments(p: argparse.ArgumentParser) -> None:
    from memd.protocol import AGENTS, KINDS

    p.add_argument("--session", help="only this session id")
    p.add_argument("--agent", choices=AGENTS, help="only events of this agent's sessions")
    p.add_argument("--kind", choices=sorted(KINDS), help="only events of this kind")
    p.add_argument("--tool", help="only calls of this tool (Bash, Edit, mcp__server__tool, ...)")
    p.add_argument("--project", help="only this project (its root path, or a part of it)")
    p.add_argument("--limit", type=at_least(1), default=20, help="how many events (default 20)")
    p.set_defaults(handler=run_history)


def run_history(args: argparse.Namespace) -> int:
    from memd.cite import label
    from memd.protocol import CLAUDE_CODE, KINDS, Events, History

    request = History(
        session=args.session, limit=args.limit, kind=args.kind, tool=args.tool, project=args.project, agent=args.agent
    )
    with connect(args) as client:
        reply = client.call(request, Events)
    lines = [
        f"{KINDS.get(e.kind, KINDS['event'])} [{label(e.cite)}] {when(e.client_ts or e.received_at)}"
        f" {IMPORTANCE.get(e.importance, ' ')} {(e.session_id or '-')[:8]}  {e.title}"
        + ("" if e.agent == CLAUDE_CODE else f"  ({e.agent})")
        for e in reply.events
    ]
    emit(args, plain(reply), "\n".join(lines) if lines else "no events match")
    return 0


def sessions_arguments(p: argparse.ArgumentParser) -> None:
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="another project (its root path, or a part of it)")
    scope.add_argument("--all-projects", action="store_true", help="every project")
    p.add_argument("--limit", type=at_least(1), default=20, help="how many sessions (default 20)")
    p.set_defaults(handler=run_sessions)


def run_sessions(args: argparse.Namespace) -> int:
    from memd.protocol import SessionList, Sessions

    cwd = None if args.all_projects else os.getcwd()
    with connect(args) as client:
        reply = client.call(Sessions(cwd=cwd, project=args.project, limit=args.limit), SessionList)
    lines = [f"latest sessions of {reply.scope or 'all projects'}, newest first:"]
    for s in reply.sessions:
        where = f"  {s.project}" if reply.scope is None and s.project else ""
        lines.append(f"{s.id}  {when(s.first_seen)} → {when(s.last_seen)[11:16]}  {s.events:>5} events{where}")
        if s.summary:
            lines.append(f"    {s.summary}")
    if not reply.sessions:
        lines.append("no sessions recorded" + (" here (--all-projects lists every project's)" if reply.scope else ""))
    emit(args, plain(reply), "\n".join(lines))
    return 0


HISTORY = Command("history", "the latest events, oldest first (! high, • medium, · low importance)", history_arguments)
SESSIONS = Command(
    "sessions", "the latest sessions of this project, newest first, with their summaries", sessions_arguments
)
