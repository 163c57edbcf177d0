"""memd's MCP tools: each an arguments Struct (the schema and its validator: ``arguments``),
a text renderer (``render``), and the daemon request between them (here).

The descriptions teach the workflow the layers are built for, because the model reads
nothing else about memd: search returns a compact index (ids, one-line summaries, what
expanding each costs); a timeline shows what happened around one memory; details cost
the most and should be asked for only by id.  Every output cites ``[mem:ID]`` ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memd.cite import label
from memd.context import entities_text, timeline_text
from memd.protocol import (
    Details,
    DetailsResult,
    Entities,
    EntitiesResult,
    Forget,
    Forgotten,
    Remember,
    Remembered,
    Request,
    Search,
    SearchResults,
    SmartResults,
    SmartSearch,
    Stats,
    StatsReport,
    Status,
    StatusReport,
    TeamResults,
    TeamSearch,
    Timeline,
    TimelineResult,
    Verification,
    Verify,
)

from ..times import parse_time
from .arguments import (
    CiteArgs,
    DetailsArgs,
    EntitiesArgs,
    ForgetArgs,
    RememberArgs,
    SearchArgs,
    SmartArgs,
    StatsArgs,
    TimelineArgs,
)
from .protocol import Tool, ToolError
from .render import (
    render_details,
    render_forgotten,
    render_index,
    render_smart,
    render_stats,
    render_team,
    render_verification,
)  # fmt: skip

__all__ = ["INSTRUCTIONS", "Context", "tools"]

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


def tools(ctx: Context) -> list[Tool]:
    """The tools, bound to ``ctx``."""

    def search(a: SearchArgs) -> str:
        if a.team is not None:
            scope = _scope(ctx, a.project, a.all_projects)
            team = TeamSearch(
                query=a.query, limit=a.limit, team=a.team or None, cwd=scope.get("cwd"),
                all_projects=scope["all_projects"],
            )  # fmt: skip
            return render_team(ctx.call(team, TeamResults), a.query)
        request = Search(
            query=a.query, limit=a.limit, kind=a.kind, agent=a.agent, since=_since(a.since), entity=a.entity,
            caller=ctx.session,
            **_scope(ctx, a.project, a.all_projects),
        )  # fmt: skip
        return render_index(ctx.call(request, SearchResults), a.query)

    def smart(a: SmartArgs) -> str:
        request = SmartSearch(
            query=a.query, limit=a.limit, budget=a.budget, caller=ctx.session, **_scope(ctx, a.project, a.all_projects)
        )
        return render_smart(ctx.call(request, SmartResults), a.query)

    def entities(a: EntitiesArgs) -> str:
        request = Entities(name=a.name, kind=a.kind, limit=a.limit, **_scope(ctx, a.project, a.all_projects))
        return entities_text(ctx.call(request, EntitiesResult))

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
        request = Forget(
            ids=a.ids, session=a.session, before=before, query=a.query, dry_run=a.dry_run,
            cwd=ctx.project_dir, all_projects=ctx.project_dir is None,  # where before and query look
        )  # fmt: skip
        return render_forgotten(ctx.call(request, Forgotten))

    def stats(a: StatsArgs) -> str:
        return render_stats(ctx.call(Status(), StatusReport), ctx.call(Stats(limit=a.limit), StatsReport))

    return [
        Tool(
            "mem_search",
            "Search memory",
            "Search memd's memory of past coding sessions in this project: prompts, commands and their output,"
            " errors, decisions, session summaries. Returns a compact index, best first: one line per memory"
            " with its citation id (mem:Ab3xY9Kq), kind, date, confidence (0-1; below 0.45 is a weak match)"
            " and what its details cost (~N tok). Start here; then mem_timeline for what happened around a hit"
            " and mem_details only for the ids you need. Cite memories as [mem:ID].",
            SearchArgs,
            search,
        ),
        Tool(
            "mem_entities",
            "Entities in memory",
            "What memd knows of a file, person, function, error, ticket or package its memories name: when it was"
            " first and last seen, in how many sessions, what it goes with (files named together, the test of a"
            " file, the file edited after an error) and the memories that name it, with citation ids. Without a"
            " name: the most mentioned entities. Then mem_search with entity to search within one.",
            EntitiesArgs,
            entities,
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
