"""The viewer's pages: a Starlette app that reads through the daemon, as memctl does.

Every page asks the daemon (``memd_client.rpc``) in a worker thread and renders a Jinja2
template with autoescaping on: whatever a memory holds (a prompt with HTML, a tool output
with ``<script>``) reaches the browser as text.  The viewer writes nothing itself: a forget
is the daemon's ``Forget``, as ``memctl forget`` sends it, so it reaches every store.

Pages: ``/`` the timeline across projects (new events appear without a reload: the page
asks ``/api/events`` every few seconds), ``/search``, ``/m/ID`` a memory (details and its
neighbours; forget), ``/s/SESSION`` a session (summary, working state, events), ``/entities``
the most mentioned files, people, symbols, errors and tickets, ``/e/NAME`` one of them (where it
was seen, what it goes with, the memories that name it), ``/tasks``,
``/stats`` (bars drawn as inline SVG by the template, no script).
"""

from __future__ import annotations

import os
import time
import urllib.parse
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import msgspec
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memd.capture.entities import KINDS as ENTITY_KINDS
from memd.cite import CITATION_RE
from memd.context import block_body
from memd.protocol import (
    Continuation,
    ContinuationResult,
    DayCount,
    Details,
    DetailsResult,
    Entities,
    EntitiesResult,
    Events,
    Forget,
    Forgotten,
    History,
    ListProjects,
    ProjectList,
    Search,
    SearchResults,
    SessionList,
    Sessions,
    Stats,
    StatsReport,
    TaskList,
    Tasks,
    Timeline,
    TimelineResult,
)
from memd.protocol import Request as DaemonRequest

from ..rpc import Client, ClientError, R
from .guard import COOKIE, Guard

__all__ = ["viewer"]

HERE = Path(__file__).resolve().parent


def viewer(socket: str, token: str, port: int, prefix: str) -> Guard:
    """The whole viewer for the daemon on ``socket``, behind its guard, every page under
    ``/PREFIX/`` (random per run: its cookie goes to no other path, ``guard.py``)."""
    base = f"/{prefix}/"
    templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
    templates.globals["base"] = base
    templates.filters["when"] = lambda ts: time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""
    templates.filters["project_name"] = lambda root: os.path.basename(root or "") or (root or "")
    templates.filters["cites"] = lambda text: linked_cites(text, base)
    templates.filters["block_body"] = block_body

    async def ask(request: DaemonRequest, expect: type[R]) -> R:
        def call() -> R:
            with Client(socket, timeout=30.0) as client:
                return client.call(request, expect)

        return await anyio.to_thread.run_sync(call)

    def page(request: Request, name: str, **context: Any) -> HTMLResponse:
        html = templates.get_template(name).render(page=name.removesuffix(".html"), **context)
        response = HTMLResponse(html)
        if request.query_params.get("t"):  # the first page: the token moves into a cookie
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path=base)
        return response

    async def timeline(request: Request) -> Response:
        events = await ask(History(limit=100), Events)
        return page(request, "timeline.html", events=events.events)

    async def live(request: Request) -> Response:
        events = await ask(History(limit=100), Events)
        return JSONResponse(msgspec.to_builtins(events.events))

    async def search(request: Request) -> Response:
        q = request.query_params
        query, project, kind = q.get("q", "").strip(), q.get("project") or None, q.get("kind") or None
        since = _day(q.get("since", ""))
        results = None
        if query:
            results = await ask(
                Search(query=query, project=project, all_projects=project is None, kind=kind, since=since, limit=20),
                SearchResults,
            )
        projects = await ask(ListProjects(), ProjectList)
        return page(request, "search.html", query=query, results=results, projects=projects.projects, params=q)

    async def memory(request: Request) -> Response:
        ref = request.path_params["ref"]
        found = await ask(Details(ids=[ref]), DetailsResult)
        if not found.details:
            return page(request, "missing.html", ref=ref)
        around = await ask(Timeline(id=ref, before=5, after=5), TimelineResult)
        return page(request, "memory.html", memory=found.details[0], around=around)

    async def session(request: Request) -> Response:
        sid = request.path_params["session"]
        events = await ask(History(session=sid, limit=500), Events)
        state = await ask(Continuation(session=sid), ContinuationResult)
        summary = next((s for s in (await ask(Sessions(limit=500), SessionList)).sessions if s.id == sid), None)
        return page(request, "session.html", sid=sid, events=events.events, state=state, summary=summary)

    async def entities(request: Request) -> Response:
        kind = request.query_params.get("kind") or None
        listed = await ask(Entities(kind=kind, all_projects=True, limit=100), EntitiesResult)
        return page(request, "entities.html", listed=listed, kind=kind, kinds=ENTITY_KINDS)

    async def entity(request: Request) -> Response:
        name = request.path_params["name"]
        found = await ask(Entities(name=name, all_projects=True, limit=20), EntitiesResult)
        return page(request, "entity.html", asked=name, found=found)

    async def tasks(request: Request) -> Response:
        projects = (await ask(ListProjects(), ProjectList)).projects
        lists = [(p, await ask(Tasks(project=p.root), TaskList)) for p in projects]
        return page(request, "tasks.html", lists=[(p, t) for p, t in lists if t.tasks])

    async def stats(request: Request) -> Response:
        report = await ask(Stats(limit=10, days=DAYS), StatsReport)
        project_rows = [(os.path.basename(p.root or "") or "(no project)", p.events) for p in report.projects]
        return page(
            request, "stats.html", stats=report, bars=_bars, project_rows=project_rows, days=_columns(report.per_day)
        )

    async def forget(request: Request) -> Response:
        if request.method == "GET":
            ref = request.query_params.get("id", "")
            preview = await ask(Forget(ids=[ref], dry_run=True), Forgotten)
            return page(request, "forget.html", ref=ref, preview=preview, done=None)
        form = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))  # a one-field form
        ref = form.get("id", [""])[0]
        done = await ask(Forget(ids=[ref]), Forgotten)
        return page(request, "forget.html", ref=ref, preview=None, done=done)

    async def unavailable(request: Request, exc: Exception) -> Response:
        advice = f"; {exc.advice}" if isinstance(exc, ClientError) and exc.advice else ""
        page = templates.get_template("error.html").render(page="error", error=f"{exc}{advice}")
        return HTMLResponse(page, status_code=503)

    pages = [
        Route("/", timeline),
        Route("/api/events", live),
        Route("/search", search),
        Route("/m/{ref}", memory),
        Route("/s/{session}", session),
        Route("/entities", entities),
        Route("/e/{name:path}", entity),
        Route("/tasks", tasks),
        Route("/stats", stats),
        Route("/forget", forget, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=[Mount(f"/{prefix}", routes=pages)],  # no /favicon.ico: each page names its icon (none)
        exception_handlers={ClientError: unavailable},
    )
    return Guard(app, token, port)


def linked_cites(text: str, base: str) -> Markup:
    """``text`` escaped, with every ``mem:`` id in it a link to that memory: escaping first, then
    the links, so nothing of the text itself can become markup (an id is letters and digits)."""
    return Markup(CITATION_RE.sub(lambda m: f'<a class="cite" href="{base}m/{m["id"]}">{m[0]}</a>', str(escape(text))))


def _day(text: str) -> float | None:
    """A ``YYYY-MM-DD`` from a date field, as the Unix time of its local midnight."""
    try:
        return time.mktime(time.strptime(text, "%Y-%m-%d")) if text else None
    except ValueError:
        return None


PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1")
DAYS = 30


class Column(NamedTuple):
    day: str
    total: int
    segments: list[tuple[str, int, int, int, str]]
    """(project, events, y, height, colour), bottom first."""


def _columns(counts: list[DayCount], height: int = 160) -> tuple[list[Column], list[tuple[str, str]]]:
    """The last ``DAYS`` days as stacked columns, one colour per project (the five busiest,
    the rest as "other"), and the legend."""
    totals: dict[str, int] = {}
    for c in counts:
        name = os.path.basename(c.project or "") or "(no project)"
        totals[name] = totals.get(name, 0) + c.events
    named = sorted(totals, key=lambda n: -totals[n])[: len(PALETTE) - 1]
    colour = {name: PALETTE[i] for i, name in enumerate(named)}
    by_day: dict[str, dict[str, int]] = {}
    for c in counts:
        name = os.path.basename(c.project or "") or "(no project)"
        bucket = name if name in colour else "other"
        by_day.setdefault(c.day, {})[bucket] = by_day.setdefault(c.day, {}).get(bucket, 0) + c.events
    today = time.time()
    days = [time.strftime("%Y-%m-%d", time.localtime(today - 86400 * n)) for n in range(DAYS - 1, -1, -1)]
    top = max((sum(v.values()) for v in by_day.values()), default=0) or 1
    columns = []
    for day in days:
        y, segments = height, []
        for name, events in sorted(by_day.get(day, {}).items(), key=lambda kv: kv[0] == "other"):
            h = max(1, round(height * events / top))
            y -= h
            segments.append((name, events, y, h, colour.get(name, PALETTE[-1])))
        columns.append(Column(day, sum(by_day.get(day, {}).values()), segments))
    legend = [(name, colour[name]) for name in named] + ([("other", PALETTE[-1])] if len(totals) > len(named) else [])
    return columns, legend


def _bars(counts: dict[str, int] | list[tuple[str, int]], width: int = 480) -> list[tuple[str, int, int]]:
    """(label, value, bar length in px) for a bar chart, the biggest first."""
    items = sorted(counts.items() if isinstance(counts, dict) else counts, key=lambda kv: -kv[1])
    top = max((v for _, v in items), default=0) or 1
    return [(label, value, max(1, round(width * value / top)) if value else 0) for label, value in items]
