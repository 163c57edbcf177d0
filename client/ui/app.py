"""The viewer: a Starlette app that reads through the daemon, as memctl does.

Every page asks the daemon (``memd_client.rpc``) in a worker thread and renders a Jinja2
template with autoescaping on: whatever a memory holds (a prompt with HTML, a tool output
with ``<script>``) reaches the browser as text.  The viewer writes nothing itself: a forget
is the daemon's ``Forget``, as ``memctl forget`` sends it, so it reaches every store.

Pages, each in the module of its kind:

- ``activity``: ``/`` the timeline (filters and paging in its URL; new rows arrive from
  ``/api/rows``), ``/projects``, ``/sessions``, ``/s/SESSION`` a session's replay;
- ``knowledge``: ``/search``, ``/m/ID`` a memory, ``/entities``, ``/e/NAME`` an entity and its
  graph, ``/tasks``, ``/stats`` (charts drawn as SVG by the templates, no script);
- ``forgetting``: ``/forget``, a count first, then the deletion.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..rpc import ClientError, DaemonError
from . import activity, forgetting, knowledge
from .guard import Guard
from .view import View

__all__ = ["viewer"]

HERE = Path(__file__).resolve().parent


def viewer(socket: str, token: str, port: int, prefix: str) -> Guard:
    """The whole viewer for the daemon on ``socket``, behind its guard, every page under
    ``/PREFIX/`` (random per run: its cookie goes to no other path, ``guard.py``)."""
    view = View(socket, token, f"/{prefix}/")

    async def unavailable(request: Request, exc: Exception) -> Response:
        """The daemon refused (an unknown session: 404, with what it said), or did not answer
        (503, with what to do)."""
        if isinstance(exc, DaemonError):
            status = 404 if exc.code == "not_found" else 400
            return HTMLResponse(view.render("error.html", refused=str(exc), status=status), status_code=status)
        advice = f"; {exc.advice}" if isinstance(exc, ClientError) and exc.advice else ""
        return HTMLResponse(view.render("error.html", error=f"{exc}{advice}"), status_code=503)

    pages = [
        Route("/", partial(activity.timeline, view)),
        Route("/api/rows", partial(activity.live, view)),
        Route("/projects", partial(activity.projects, view)),
        Route("/sessions", partial(activity.sessions, view)),
        Route("/s/{session}", partial(activity.replay, view)),
        Route("/search", partial(knowledge.search, view)),
        Route("/m/{ref}", partial(knowledge.memory, view)),
        Route("/entities", partial(knowledge.entities, view)),
        Route("/e/{name:path}", partial(knowledge.entity, view)),
        Route("/tasks", partial(knowledge.tasks, view)),
        Route("/stats", partial(knowledge.stats, view)),
        Route("/forget", partial(forgetting.forget, view), methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=[Mount(f"/{prefix}", routes=pages)],  # no /favicon.ico: each page names its icon (none)
        exception_handlers={ClientError: unavailable},
    )
    return Guard(app, token, port)
