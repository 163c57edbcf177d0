"""What memd knows: search (``/search``, matches highlighted, the timeline's filters), one
memory (``/m/ID``: its text, its neighbours, the entities it names), entities (``/entities``,
``/e/NAME`` with what it goes with drawn as a graph), tasks and statistics."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from memd.capture.entities import KINDS as ENTITY_KINDS
from memd.protocol import (
    Details,
    DetailsResult,
    Entities,
    EntitiesResult,
    ListProjects,
    ProjectList,
    Search,
    SearchResults,
    Stats,
    StatsReport,
    TaskList,
    Tasks,
    Timeline,
    TimelineResult,
)

from . import charts
from .view import Filters, View

__all__ = ["entities", "entity", "memory", "search", "stats", "tasks"]

HITS = 20
"""Hits a search shows first; "more" asks for as many again, up to ``MAX_HITS``."""
MAX_HITS = 100


async def search(view: View, request: Request) -> Response:
    f = Filters.of(request.query_params)
    wanted = request.query_params.get("limit", "")
    limit = min(MAX_HITS, int(wanted)) if wanted.isdigit() and int(wanted) > 0 else HITS
    since, until = f.span
    results = None
    if f.q:
        asked = Search(
            query=f.q, project=f.project or None, all_projects=not f.project, kind=f.kind or None,
            agent=f.agent or None, session=f.session or None, since=since, until=until, limit=limit,
        )  # fmt: skip
        results = await view.ask(asked, SearchResults)
    listed = await view.ask(ListProjects(), ProjectList)
    return view.page(
        request, "search.html", filters=f, results=results, projects=listed.projects, limit=limit, most=MAX_HITS
    )


async def memory(view: View, request: Request) -> Response:
    ref = request.path_params["ref"]
    found = await view.ask(Details(ids=[ref]), DetailsResult)
    if not found.details:
        return view.page(request, "missing.html", ref=ref)
    around = await view.ask(Timeline(id=ref, before=5, after=5), TimelineResult)
    return view.page(request, "memory.html", memory=found.details[0], around=around)


async def entities(view: View, request: Request) -> Response:
    kind = request.query_params.get("kind") or None
    listed = await view.ask(Entities(kind=kind, all_projects=True, limit=100), EntitiesResult)
    return view.page(request, "entities.html", listed=listed, kind=kind, entity_kinds=ENTITY_KINDS)


async def entity(view: View, request: Request) -> Response:
    name = request.path_params["name"]
    found = await view.ask(Entities(name=name, all_projects=True, limit=20), EntitiesResult)
    return view.page(request, "entity.html", asked=name, found=found, graphs=[charts.graph(d) for d in found.details])


async def tasks(view: View, request: Request) -> Response:
    projects = (await view.ask(ListProjects(), ProjectList)).projects
    lists = [(p, await view.ask(Tasks(project=p.root), TaskList)) for p in projects]
    return view.page(request, "tasks.html", lists=[(p, t) for p, t in lists if t.tasks])


async def stats(view: View, request: Request) -> Response:
    report = await view.ask(Stats(limit=10, days=charts.DAYS), StatsReport)
    now = time.time()
    uses, saved = charts.usage(report.usage_per_day, now)
    return view.page(
        request, "stats.html", stats=report, bars=charts.bars, per_project=charts.per_project(report.per_day, now),
        uses=uses, saved=saved, height=charts.HEIGHT,
        project_rows=[(charts.project_name(p.root), p.events) for p in report.projects],
    )  # fmt: skip
