"""memd's MCP tools: each an arguments Struct (the schema and its validator), a text
renderer, and the daemon request between them.

The descriptions teach the workflow the layers are built for, because the model reads
nothing else about memd: search returns a compact index (ids, one-line summaries, what
expanding each costs); a timeline shows what happened around one memory; details cost
the most and should be asked for only by id.  Every output cites ``[mem:ID]`` ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from memd.capture.events import KINDS
from memd.cite import label
from memd.context import detail_text, index_line, timeline_text
from memd.protocol import (
    Details,
    DetailsResult,
    Forget,
    Forgotten,
    Remember,
    Remembered,
    Reply,
    Request,
    Search,
    SearchResults,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    Status,
    StatusReport,
    Timeline,
    TimelineResult,
    Verification,
    Verify,
)

from ..times import parse_time
from .protocol import Tool, ToolError

__all__ = ["INSTRUCTIONS", "Context", "tools"]

R = TypeVar("R", bound=Reply)

Kind = Literal[tuple(KINDS)]  # type: ignore[valid-type]
Query = Annotated[str, msgspec.Meta(min_length=1, max_length=2000, description="What to look for, in plain words.")]
Id = Annotated[
    str, msgspec.Meta(min_length=1, max_length=40, description="A citation id from search results, like mem:Ab3xY9.")
]
Project = Annotated[
    str | None,
    msgspec.Meta(description="A project root or part of one (default: the current project; see all_projects)."),
]
Since = Annotated[
    str | None,
    msgspec.Meta(description="Only memories from then on: 2026-11-01, 2026-11-01T14:00, or an age: 30m, 12h, 7d, 2w."),
]
Budget = (
    Annotated[int, msgspec.Meta(ge=100, le=20000, description="Most tokens the answer may take (default 2000).")] | None
)


class SearchArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="Most hits to list.")] = 10
    project: Project = None
    all_projects: Annotated[bool, msgspec.Meta(description="Search every project.")] = False
    kind: Annotated[Kind | None, msgspec.Meta(description="Only memories of this kind.")] = None
    since: Since = None


class SmartArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: Query
    budget: Budget = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="Most hits to consider.")] = 10
    project: Project = None
    all_projects: Annotated[bool, msgspec.Meta(description="Search every project.")] = False


class TimelineArgs(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    before: Annotated[int, msgspec.Meta(ge=0, le=20, description="Events before it to show.")] = 3
    after: Annotated[int, msgspec.Meta(ge=0, le=20, description="Events after it to show.")] = 3


class DetailsArgs(msgspec.Struct, forbid_unknown_fields=True):
    ids: Annotated[
        list[Id], msgspec.Meta(min_length=1, max_length=20, description="Citation ids, the ones you need only.")
    ]
    budget: Budget = None


class CiteArgs(msgspec.Struct, forbid_unknown_fields=True):
    id: Id
    quote: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1, max_length=5000, description="Text you mean to quote from it: checked, located exactly."
            ),
        ]
        | None
    ) = None


class RememberArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=10000, description="What to keep, self-contained: it is read without this chat."
        ),
    ]


class ForgetArgs(msgspec.Struct, forbid_unknown_fields=True):
    ids: Annotated[list[Id], msgspec.Meta(max_length=100, description="Citation ids to delete.")] = []
    session: Annotated[str | None, msgspec.Meta(description="Or: every memory of this session id.")] = None
    before: Annotated[
        str | None,
        msgspec.Meta(description="Or: every memory of this project before then: 2026-01-01, or an age: 90d."),
    ] = None
    query: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                max_length=2000,
                description="Or: every memory of this project holding every word of this.",
            ),
        ]
        | None
    ) = None
    dry_run: Annotated[bool, msgspec.Meta(description="Only list what would be deleted.")] = False


class StatsArgs(msgspec.Struct, forbid_unknown_fields=True):
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="How many of the most-cited memories to list.")] = 10


INSTRUCTIONS = (
    "memd remembers this user's past coding sessions (prompts, commands, errors, decisions, summaries) locally. "
    "Look things up in layers: mem_search lists compact hits with citation ids and what expanding each costs; "
    "mem_timeline shows what happened around one; mem_details returns full text for the ids you need. "
    "mem_smart_search does all three in one call within a token budget. Cite memories as [mem:ID]."
)


@dataclass(frozen=True)
class Context:
    """What the tools act through: the daemon, and the session they serve."""

    call: Callable[[Request, type[Any]], Any]
    """Send a request to the daemon and return its reply (raises ToolError when it cannot)."""
    project_dir: str | None
    """The project the session works in ($CLAUDE_PROJECT_DIR); None: all projects."""
    session: str | None
    """The calling session ($CLAUDE_CODE_SESSION_ID), for usage tracking."""


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError as exc:
        raise ToolError(f"Invalid arguments: since: {exc}") from None


def _scope(ctx: Context, project: str | None, all_projects: bool) -> dict[str, Any]:
    return {"project": project, "all_projects": all_projects or (project is None and ctx.project_dir is None)} | (
        {"cwd": ctx.project_dir} if ctx.project_dir else {}
    )


NEXT = "Next: mem_timeline(id) for what happened around a hit, mem_details(ids) for full text. Cite as [mem:ID]."


def render_index(reply: SearchResults, query: str) -> str:
    where = reply.scope or "all projects"
    if reply.mode == "none":
        return f"Nothing searched in {where}: {reply.notice}"
    if not reply.results:
        wider = " Try other words, or all_projects: true." if reply.scope else " Try other words."
        return f"No memories match {query!r} in {where}.{wider}"
    head = (
        f"{len(reply.results)} memories in {where} ({reply.mode} search{'; ' + reply.notice if reply.notice else ''})"
    )
    head += ", best first; each: id, kind, date, confidence, cost of its details, summary:"
    return "\n".join([head, *(index_line(hit) for hit in reply.results), NEXT])


def render_smart(reply: SmartResults, query: str) -> str:
    parts = [render_index(reply.index, query).removesuffix("\n" + NEXT)]
    parts.append(f"Rule {reply.rule}: {reply.reason} (~{reply.tokens} of {reply.budget} tokens).")
    parts += [timeline_text(t) for t in reply.timelines]
    parts += [detail_text(d) for d in reply.details]
    if not reply.details and reply.index.results:
        parts.append(NEXT)
    return "\n\n".join(parts)


def render_details(reply: DetailsResult, budget: int | None) -> str:
    parts = [detail_text(d) for d in reply.details]
    if reply.omitted:
        parts.append(
            f"Not shown, over the {budget or 'default'}-token budget: {' '.join(reply.omitted)}"
            " (ask with a larger budget)."
        )
    if reply.missing:
        parts.append(f"No memory {', '.join(map(repr, reply.missing))}: use ids from mem_search.")
    return "\n\n".join(parts)


def render_verification(reply: Verification) -> str:
    where = f"[{label(reply.cite)}]"
    if not reply.found:
        return (
            f"Not found in {where}: no span matches the quote closely enough. Read it with mem_details before quoting."
        )
    return (
        f"Found in {where} ({reply.method} match, confidence {reply.confidence:.2f}) at characters"
        f" {reply.start}-{reply.end}. The stored text there:\n> {reply.matched}"
    )


FORGET_LISTED = 40
"""Memories a forget lists before saying how many more."""


def render_forgotten(reply: Forgotten) -> str:
    lines = [
        f"[{label(e.cite)}] {e.kind} · session {(e.session_id or '-')[:8]} · {e.title}"
        for e in reply.events[:FORGET_LISTED]
    ]
    if reply.total > len(lines):
        lines.append(f"... and {reply.total - len(lines)} more")
    if reply.dry_run:
        head = f"Would delete {reply.total} {'memory' if reply.total == 1 else 'memories'}"
        head += f" and {reply.derived} consolidated memories built from them" if reply.derived else ""
        lines.insert(0, head + ":" if reply.events else "Nothing to delete.")
    else:
        head = f"Deleted {reply.total} {'memory' if reply.total == 1 else 'memories'} for good ({reply.vectors} vectors"
        head += f", {reply.derived} consolidated memories built from them" if reply.derived else ""
        head += f"; summaries of {reply.refreshed} sessions recomputed)" if reply.refreshed else ")"
        lines.insert(0, head + ":" if reply.events else "Nothing was deleted.")
    if reply.missing:
        lines.append(f"No memory {', '.join(map(repr, reply.missing))}: use ids from mem_search.")
    return "\n".join(lines)


def render_stats(status: StatusReport, usage: StatsReport) -> str:
    lines = [
        f"memd {status.version}: {status.events} events, {status.sessions} sessions, {status.projects} projects;"
        f" database {status.db_bytes / 1e6:.1f} MB."
    ]
    if status.embedding is not None:
        e = status.embedding
        waiting = f", {e.backlog} events waiting for vectors" if e.backlog else ""
        reason = f": {e.reason}" if e.reason else ""
        lines.append(f"Search by meaning: {e.state}{reason} ({e.index_vectors} vectors{waiting}).")
    if usage.kinds:
        top = sorted(usage.kinds.items(), key=lambda kv: -kv[1])
        lines.append("By kind: " + ", ".join(f"{kind} {n}" for kind, n in top) + ".")
    if usage.projects:
        lines.append("Biggest projects: " + ", ".join(f"{p.root} ({p.events})" for p in usage.projects[:5]) + ".")
    if usage.sizes is not None:
        z = usage.sizes
        lines.append(
            f"On disk: database {z.database / 1e6:.1f} MB (keyword index {z.keyword_index / 1e6:.1f} MB),"
            f" vector index {z.vector_index / 1e6:.1f} MB."
        )
    lines.append("Memory use: " + ", ".join(f"{n} {how}" for how, n in usage.usage.items()) + ".")
    lines.append("Graduation levels: " + ", ".join(f"{level} {n}" for level, n in usage.levels.items()) + ".")
    if usage.most_cited:
        lines.append("Most cited:")
    lines += [f"[{label(c.cite)}] L{c.level} · {c.uses} uses · {c.kind}: {c.title}" for c in usage.most_cited]
    return "\n".join(lines)


def tools(ctx: Context) -> list[Tool]:
    """The tools, bound to ``ctx``."""

    def search(a: SearchArgs) -> str:
        request = Search(
            query=a.query, limit=a.limit, kind=a.kind, since=_since(a.since), caller=ctx.session,
            **_scope(ctx, a.project, a.all_projects),
        )  # fmt: skip
        return render_index(ctx.call(request, SearchResults), a.query)

    def smart(a: SmartArgs) -> str:
        request = SmartSearch(
            query=a.query, limit=a.limit, budget=a.budget, caller=ctx.session, **_scope(ctx, a.project, a.all_projects)
        )
        return render_smart(ctx.call(request, SmartResults), a.query)

    def timeline(a: TimelineArgs) -> str:
        request = Timeline(id=a.id, before=a.before, after=a.after, caller=ctx.session)
        return timeline_text(ctx.call(request, TimelineResult))

    def details(a: DetailsArgs) -> str:
        return render_details(
            ctx.call(Details(ids=a.ids, budget=a.budget, caller=ctx.session), DetailsResult), a.budget
        )

    def cite(a: CiteArgs) -> str:
        if a.quote is not None:
            return render_verification(ctx.call(Verify(id=a.id, quote=a.quote, caller=ctx.session), Verification))
        return render_details(ctx.call(Details(ids=[a.id], caller=ctx.session), DetailsResult), None)

    def remember(a: RememberArgs) -> str:
        reply = ctx.call(Remember(text=a.text, cwd=ctx.project_dir, session=ctx.session), Remembered)
        where = f" in {ctx.project_dir}" if ctx.project_dir else ""
        again = " (it was kept already)" if reply.duplicate else ""
        return f"Remembered as [{label(reply.cite)}]{where}{again}. Secrets and <private> text are never stored."

    def forget(a: ForgetArgs) -> str:
        try:
            before = parse_time(a.before) if a.before is not None else None
        except ValueError as exc:
            raise ToolError(f"Invalid arguments: before: {exc}") from None
        scope = {"cwd": ctx.project_dir, "all_projects": ctx.project_dir is None}  # before and query look here
        request = Forget(ids=a.ids, session=a.session, before=before, query=a.query, dry_run=a.dry_run, **scope)
        return render_forgotten(ctx.call(request, Forgotten))

    def stats(a: StatsArgs) -> str:
        return render_stats(ctx.call(Status(), StatusReport), ctx.call(Stats(limit=a.limit), StatsReport))

    return [
        Tool(
            "mem_search",
            "Search memory",
            "Search memd's memory of past coding sessions in this project: prompts, commands and their output,"
            " errors, decisions, session summaries. Returns a compact index, best first: one line per memory"
            " with its citation id (mem:Ab3xY9), kind, date, confidence (0-1; below 0.45 is a weak match)"
            " and what its details cost (~N tok). Start here; then mem_timeline for what happened around a hit"
            " and mem_details only for the ids you need. Cite memories as [mem:ID].",
            SearchArgs,
            search,
        ),
        Tool(
            "mem_timeline",
            "Memory timeline",
            "What happened around one memory, in its session: the events before and after it, one line each,"
            " oldest first (→ marks it). Cheap; use it to understand a hit from mem_search before asking for"
            " details.",
            TimelineArgs,
            timeline,
        ),
        Tool(
            "mem_details",
            "Memory details",
            "The full stored text of memories, by citation id, within a token budget (longer texts are cut and"
            " say so). The most expensive layer: ask only for ids you need, after mem_search or mem_timeline.",
            DetailsArgs,
            details,
        ),
        Tool(
            "mem_smart_search",
            "Smart memory search",
            "Search and, when memd is confident, expand the best hits (their timeline and details) in one call,"
            " within a token budget. It says which rule it applied; when nothing is confident it returns the"
            " index only. Use for a direct question about past work; use mem_search to browse.",
            SmartArgs,
            smart,
        ),
        Tool(
            "mem_cite",
            "Resolve or verify a citation",
            "Resolve a citation id to its source memory (what it says, when, in which session); with quote,"
            " check that the quote appears in that memory and get the exact stored text and its position."
            " Use before quoting a memory to the user.",
            CiteArgs,
            cite,
        ),
        Tool(
            "mem_remember",
            "Remember",
            "Keep something for future sessions: a fact, a decision and its reason, a preference the user"
            " stated. Use when the user asks you to remember something, or for a conclusion worth keeping."
            " Stored in this project at high importance; returns its citation id. Secrets and <private> text"
            " are removed before anything is stored.",
            RememberArgs,
            remember,
            read_only=False,
        ),
        Tool(
            "mem_forget",
            "Forget memories",
            "Delete memories for good: the events, their vectors, and the summaries and consolidated memories"
            " built from them. Name them one way: ids, a session, before a date, or a query (every memory of"
            " this project holding every word). Only when the user asks for it. Call with dry_run first and show"
            " the user what would go.",
            ForgetArgs,
            forget,
            read_only=False,
            destructive=True,
        ),
        Tool(
            "mem_stats",
            "Memory statistics",
            "What memd holds and how memories are used: events, sessions, projects, database size, the state of"
            " search by meaning, the most-cited memories and graduation levels.",
            StatsArgs,
            stats,
        ),
    ]
