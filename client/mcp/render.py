"""The MCP tools' answers as text for the model: compact, every memory cited as
``[mem:ID]``, and a hint at the next layer to ask for."""

from __future__ import annotations

from memd.cite import label
from memd.context import detail_text, index_line, team_line, timeline_text
from memd.protocol import (
    DetailsResult,
    Forgotten,
    SearchResults,
    SmartResults,
    StatsReport,
    StatusReport,
    TeamResults,
    Verification,
)  # fmt: skip

__all__ = [
    "NEXT",
    "render_details",
    "render_forgotten",
    "render_index",
    "render_smart",
    "render_stats",
    "render_team",
    "render_verification",
]

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


def render_team(reply: TeamResults, query: str) -> str:
    where = f"the team memory of {reply.scope or 'every shared project'}"
    if reply.mode == "none":
        return f"Nothing searched in {where}: {reply.notice}"
    if not reply.results:
        wider = " Try other words, or all_projects: true." if reply.scope else " Try other words."
        return f"No team memories match {query!r} in {where}.{wider}"
    note = f"; {reply.notice}" if reply.notice else ""
    head = f"{len(reply.results)} team memories in {where} ({reply.mode} search{note})"
    tail = "mem_details(ids) opens those not marked 'on the server only'. Cite as [mem:ID]."
    return "\n".join([head + ", best first:", *(team_line(hit) for hit in reply.results), tail])


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
