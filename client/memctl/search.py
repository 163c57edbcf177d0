"""``memctl search``, ``timeline``, ``show`` and ``cite verify``: memory in layers, as the
MCP tools serve it to the model.  A search lists compact hits with their citation ids;
a timeline shows what happened around one; show prints memories in full; cite verify
checks a quote against the memory it cites."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from .common import CommandError, connect, emit, plain
from .parsing import Command, at_least, common_options, moment

if TYPE_CHECKING:
    from memd.protocol import Hit

__all__ = ["CITE", "SEARCH", "SHOW", "TIMELINE"]


def search_arguments(p: argparse.ArgumentParser) -> None:
    from memd.protocol import AGENTS, KINDS

    p.add_argument("query")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--project", help="search this project (its root path, or a part of it)")
    scope.add_argument("--all-projects", action="store_true", help="search every project")
    p.add_argument("--kind", choices=sorted(KINDS), help="only events of this kind")
    p.add_argument("--tool", help="only calls of this tool")
    p.add_argument("--session", help="only this session id")
    p.add_argument("--path", help="only events about a file whose path contains this")
    p.add_argument("--entity", help="only events that name this entity (memctl entities lists them)")
    p.add_argument("--agent", choices=AGENTS, help="only events of this agent's sessions")
    p.add_argument("--since", type=moment, help="only events after this (2026-11-21, 12h, 7d)")
    p.add_argument("--until", type=moment, help="only events before this")
    p.add_argument("--limit", type=at_least(1), default=10, help="how many hits (default 10)")
    p.add_argument("--lanes", action="store_true", help="show why each hit was retrieved")
    p.add_argument("--smart", action="store_true", help="expand sure hits by themselves: timeline, details")
    p.add_argument("--budget", type=at_least(1), default=2000, help="tokens --smart may spend (default 2000)")
    p.add_argument("--team", action="store_true", help="search the team memory on the sync server instead")
    p.add_argument("--team-role", metavar="ROLE", help="with --team: only this team's (its PostgreSQL role)")
    p.set_defaults(handler=run_search)


def run_search(args: argparse.Namespace) -> int:
    from memd.context import detail_text, timeline_text
    from memd.protocol import Search, SearchResults, SmartResults, SmartSearch

    if args.team or args.team_role:
        return _team_search(args)
    options = dict(
        query=args.query,
        limit=args.limit,
        cwd=os.getcwd(),
        project=args.project,
        all_projects=args.all_projects,
        kind=args.kind,
        tool=args.tool,
        session=args.session,
        path=args.path,
        entity=args.entity,
        agent=args.agent,
        since=args.since,
        until=args.until,
    )
    smart: SmartResults | None = None
    with connect(args) as client:
        if args.smart:
            smart = client.call(SmartSearch(**options, budget=args.budget), SmartResults)
            reply = smart.index
        else:
            reply = client.call(Search(**options), SearchResults)
    where = reply.scope or "all projects"
    data = plain(smart) if smart is not None else plain(reply)
    if reply.mode == "none":
        emit(args, data, f"nothing searched in {where}: {reply.notice}")
        return 0
    lines = [f"{reply.mode} search in {where}" + (f" ({reply.notice})" if reply.notice else "")]
    lines += _index_lines(reply.results, args.lanes)
    if not reply.results:
        lines.append(f"no matches for {args.query!r}")
    if smart is not None:
        lines.append(f"\nrule {smart.rule}: {smart.reason} (~{smart.tokens} of {smart.budget} tokens)")
        lines += ["", *(timeline_text(t) for t in smart.timelines)] if smart.timelines else []
        lines += ["", *(detail_text(d) for d in smart.details)] if smart.details else []
    else:
        lines.append("\nexpand: memctl timeline mem:ID · memctl show mem:ID ...")
    emit(args, data, "\n".join(lines))
    return 0


def _team_search(args: argparse.Namespace) -> int:
    """``memctl search --team``: the team's memory where it is, on the sync server."""
    from memd.context import team_line
    from memd.protocol import KINDS, TeamResults, TeamSearch

    filters = ("project", "kind", "tool", "session", "path", "entity", "since", "until", "smart", "lanes")
    others = [f"--{name}" for name in filters if getattr(args, name)]
    if others:
        raise CommandError(f"--team searches by words and meaning only: drop {', '.join(others)}")
    request = TeamSearch(
        query=args.query, limit=args.limit, team=args.team_role, cwd=os.getcwd(), all_projects=args.all_projects
    )
    with connect(args) as client:
        reply = client.call(request, TeamResults)
    where = f"team memory of {reply.scope or 'every shared project'}"
    if reply.mode == "none":
        emit(args, plain(reply), f"nothing searched in the {where}: {reply.notice}")
        return 0
    lines = [f"{reply.mode} search in the {where}" + (f" ({reply.notice})" if reply.notice else "")]
    lines += [f"{KINDS.get(hit.kind, KINDS['event'])} {team_line(hit)}" for hit in reply.results]
    if not reply.results:
        wider = " (--all-projects searches every project the teams share)" if reply.scope else ""
        lines.append(f"no matches for {args.query!r}{wider}")
    emit(args, plain(reply), "\n".join(lines))
    return 0


def _index_lines(hits: list[Hit], explain: bool) -> list[str]:
    from memd.context import index_line
    from memd.protocol import KINDS

    lines = []
    for hit in hits:
        lines.append(f"{KINDS.get(hit.kind, KINDS['event'])} {index_line(hit)}")
        if explain:
            lanes = ", ".join(f"{lane} #{rank}" for lane, rank in hit.lanes.items())
            similarity = f"; similarity {hit.similarity:.2f}" if hit.similarity is not None else ""
            entities = f"; {', '.join(hit.entities)}" if hit.entities else ""
            lines.append(f"     why: {lanes}; matched {', '.join(hit.matched) or 'no words'}{similarity}{entities}")
    return lines


def timeline_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", help="a citation id (mem:Ab3xY9Kq) or an event number")
    p.add_argument("--before", type=at_least(0), default=3, help="events before it (default 3)")
    p.add_argument("--after", type=at_least(0), default=3, help="events after it (default 3)")
    p.set_defaults(handler=run_timeline)


def run_timeline(args: argparse.Namespace) -> int:
    from memd.context import timeline_text
    from memd.protocol import Timeline, TimelineResult

    with connect(args) as client:
        reply = client.call(Timeline(id=args.id, before=args.before, after=args.after), TimelineResult)
    emit(args, plain(reply), timeline_text(reply))
    return 0


def show_arguments(p: argparse.ArgumentParser) -> None:
    from memd.cite import FORMATS

    p.add_argument("ids", nargs="+", metavar="ID", help="citation ids (mem:Ab3xY9Kq) or event numbers")
    p.add_argument("--budget", type=at_least(1), default=20_000, help="tokens to show at most (default 20000)")
    p.add_argument("--format", choices=FORMATS, default="inline", help="how the source is cited (default inline)")
    p.set_defaults(handler=run_show)


def run_show(args: argparse.Namespace) -> int:
    from memd.context import detail_text
    from memd.protocol import Details, DetailsResult

    with connect(args) as client:
        reply = client.call(Details(ids=args.ids, budget=args.budget), DetailsResult)
    parts = [detail_text(d, args.format) for d in reply.details]
    if reply.omitted:
        parts.append(f"not shown, over the {args.budget}-token budget: {' '.join(reply.omitted)} (raise --budget)")
    if parts or args.json:
        emit(args, plain(reply), "\n\n".join(parts))
    if reply.missing:
        raise CommandError(
            f"no memory {', '.join(map(repr, reply.missing))} on this machine: use ids from memctl search"
            " (a teammate's memory that `memctl search --team` found on the server only is not here)"
        )
    return 0


def cite_arguments(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="cite_command", required=True, metavar="ACTION")
    verify = actions.add_parser("verify", parents=[common_options(False)], help="is QUOTE in memory ID, and where")
    verify.add_argument("id", help="a citation id (mem:Ab3xY9Kq)")
    verify.add_argument("quote")
    verify.set_defaults(handler=run_cite_verify)


def run_cite_verify(args: argparse.Namespace) -> int:
    from memd.cite import label
    from memd.protocol import Verification, Verify

    with connect(args) as client:
        reply = client.call(Verify(id=args.id, quote=args.quote), Verification)
    where = f"[{label(reply.cite)}]"
    if reply.found:
        human = (
            f"found in {where} ({reply.method}, confidence {reply.confidence:.2f})"
            f" at characters {reply.start}-{reply.end}:\n> {reply.matched}"
        )
    else:
        human = f"not found in {where}: no span matches the quote closely enough (memctl show {label(reply.cite)})"
    emit(args, plain(reply), human)
    return 0 if reply.found else 1


SEARCH = Command("search", "hybrid (keyword + meaning) search, best match first, in this project", search_arguments)
TIMELINE = Command("timeline", "the events around a memory in its session (→ marks it)", timeline_arguments)
SHOW = Command("show", "memories in full: content, files, session, neighbours, citation", show_arguments)
CITE = Command("cite", "check a quote against the memory it cites", cite_arguments)
