"""What happened: the timeline (``/``, filtered and paged from its URL, new rows arriving by
themselves), projects (``/projects``), sessions (``/sessions``) and a session's replay
(``/s/ID``: its prompts, tool calls, errors and compactions in order, each with its citation,
long outputs folded)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memd.protocol import (
    Continuation,
    ContinuationResult,
    Details,
    DetailsResult,
    EventRow,
    Events,
    History,
    ListProjects,
    ProjectList,
    SessionList,
    Sessions,
)

from . import look
from .view import PAGE, Filters, View

__all__ = ["live", "projects", "replay", "sessions", "timeline"]

REPLAY = 100
"""Events a replay page shows: the most one ``Details`` answers."""
REPLAY_BUDGET = 400_000
"""Tokens of text a replay page may show (a long output is cut, the rest of it in its memory's page)."""


def _number(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


async def _events(view: View, f: Filters, before: int | None) -> tuple[list[EventRow], int | None]:
    """A page of the timeline, newest first, and the cursor of the page after it."""
    since, until = f.span
    found = await view.ask(
        History(
            limit=PAGE + 1, before=before, project=f.project or None, kind=f.kind or None, agent=f.agent or None,
            session=f.session or None, since=since, until=until, derived=look.FAMILY.get(f.kind) == "derived",
        ),
        Events,
    )  # fmt: skip
    rows = found.events[::-1]
    return rows[:PAGE], (rows[PAGE - 1].id if len(rows) > PAGE else None)


async def timeline(view: View, request: Request) -> Response:
    f = Filters.of(request.query_params)
    before = _number(request.query_params.get("before"))
    rows, older = await _events(view, f, before)
    listed = await view.ask(ListProjects(), ProjectList)
    return view.page(
        request, "timeline.html", events=rows, filters=f, older=older, first=before is None, projects=listed.projects
    )


async def live(view: View, request: Request) -> Response:
    """The timeline's first page as rendered rows, for ``live.js`` to add the new ones."""
    rows, _ = await _events(view, Filters.of(request.query_params), None)
    return JSONResponse([{"id": e.id, "html": view.render("_event_row.html", e=e)} for e in reversed(rows)])


async def projects(view: View, request: Request) -> Response:
    listed = await view.ask(ListProjects(), ProjectList)
    return view.page(request, "projects.html", projects=listed.projects)


async def sessions(view: View, request: Request) -> Response:
    f = Filters.of(request.query_params)
    before = request.query_params.get("before", "")
    cursor = float(before) if before.replace(".", "", 1).isdigit() else None
    found = await view.ask(
        Sessions(project=f.project or None, agent=f.agent or None, before=cursor, limit=PAGE + 1), SessionList
    )
    rows = found.sessions
    older = repr(rows[PAGE - 1].last_seen) if len(rows) > PAGE else None
    listed = await view.ask(ListProjects(), ProjectList)
    return view.page(request, "sessions.html", sessions=rows[:PAGE], filters=f, older=older, projects=listed.projects)


async def replay(view: View, request: Request) -> Response:
    sid = request.path_params["session"]
    after = _number(request.query_params.get("after"))
    found = await view.ask(Sessions(id=sid, limit=1), SessionList)
    rows = (await view.ask(History(session=sid, after=after or 0, limit=REPLAY + 1, derived=False), Events)).events
    more = rows[REPLAY - 1].id if len(rows) > REPLAY else None
    rows = rows[:REPLAY]
    texts = {}
    if rows:
        asked = Details(ids=[e.cite or str(e.id) for e in rows], budget=REPLAY_BUDGET, counted=False)
        texts = {d.id: d for d in (await view.ask(asked, DetailsResult)).details}
    state = await view.ask(Continuation(session=sid), ContinuationResult)
    return view.page(
        request, "session.html", sid=sid, info=found.sessions[0] if found.sessions else None, events=rows,
        texts=texts, state=state, more=more, start=rows[0].client_ts if rows else 0.0, continued=after is not None,
    )  # fmt: skip
