"""Dispatch: each request type bound to the service that answers it, and a request body
turned into a reply.

``routes`` is the table: one line per request type of the protocol, checked complete when
the daemon starts.  ``Dispatch.respond`` decodes a body, calls the handler its type is
bound to, and maps what goes wrong to a typed ``Error``: a malformed request or another
protocol version (the request's own code), an id that names nothing (``not_found``), and
anything unexpected (``internal``, logged), so that one bad request never takes the
connection, let alone the daemon, down.
"""

from __future__ import annotations

import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import structlog

from ..metrics import hook_key
from ..protocol import (
    Continuation,
    Details,
    Endless,
    Entities,
    Error,
    Forget,
    Gc,
    History,
    Import,
    Ingest,
    LinkProject,
    ListProjects,
    MirrorClaudeMemory,
    Ping,
    ProtocolError,
    Rebuild,
    Remember,
    Reply,
    Request,
    RequestType,
    Restore,
    Scan,
    Search,
    Sessions,
    Share,
    Shutdown,
    SmartSearch,
    Stats,
    Status,
    Tasks,
    TeamSearch,
    Timeline,
    Verify,
    decode_request,
)
from ..services.assembly import Services
from ..services.errors import NotFound

__all__ = ["Dispatch", "Handler", "routes"]

log = structlog.get_logger("memd.server")

R = TypeVar("R", bound=Request)
Handler = Callable[[Any], Awaitable[Reply]]
"""A service's answer to one request type (``route`` checks the pairing's types)."""


def route(kind: type[R], handler: Callable[[R], Awaitable[Reply]]) -> tuple[type[Request], Handler]:
    """One row of the table: requests of type ``kind`` go to ``handler``."""
    return kind, handler


def routes(services: Services, shutdown: Callable[[Shutdown], Awaitable[Reply]]) -> dict[type[Request], Handler]:
    """Every request type of the protocol, bound to the service that answers it;
    ``shutdown`` is the server's own (it stops accepting)."""
    s = services
    table = dict(
        [
            route(Ingest, s.ingester.ingest),
            route(Ping, s.reports.ping),
            route(Status, s.reports.status),
            route(Stats, s.reports.stats),
            route(History, s.browse.history),
            route(Search, s.browse.search),
            route(SmartSearch, s.browse.smart_search),
            route(Entities, s.browse.entities),
            route(Timeline, s.recall.lookups.timeline),
            route(Details, s.recall.lookups.details),
            route(Verify, s.recall.lookups.verify),
            route(Continuation, s.recall.starts.continuation),
            route(Tasks, s.recall.lookups.tasks),
            route(Endless, s.endless.switch),
            route(Import, s.bulk.import_events),
            route(Restore, s.bulk.restore),
            route(Remember, s.lifecycle.remember),
            route(Forget, s.lifecycle.forget),
            route(Scan, s.lifecycle.scan),
            route(Sessions, s.lifecycle.sessions),
            route(Gc, s.janitor.collect),
            route(Rebuild, s.rebuilder.rebuild),
            route(ListProjects, s.projects.list),
            route(LinkProject, s.projects.link),
            route(Share, s.syncer.share),
            route(TeamSearch, s.team.search),
            route(MirrorClaudeMemory, s.mirror.mirror),
            route(Shutdown, shutdown),
        ]
    )
    unbound = [kind.__name__ for kind in typing.get_args(RequestType) if kind not in table]
    if unbound:
        raise TypeError(f"no service answers these requests: {', '.join(unbound)}")
    return table


class Dispatch:
    """Answers request bodies with the handlers of a table (``routes``)."""

    def __init__(self, table: Mapping[type[Request], Handler]) -> None:
        self._table = {kind: (kind.__name__.lower(), handler) for kind, handler in table.items()}
        """Per request type: its kind as latencies and logs name it, and its handler."""

    async def respond(self, body: bytes) -> tuple[str, str, Reply]:
        """The request's kind, its hook event (an ingest's; else ""), and the reply."""
        try:
            request = decode_request(body)
        except ProtocolError as exc:
            log.warning("request_refused", code=exc.code, size=len(body))
            return "invalid", "", Error(code=exc.code, message=str(exc))
        op, handler = self._table[type(request)]
        hook = hook_key(request.event) if isinstance(request, Ingest) else ""
        try:
            return op, hook, await handler(request)
        except NotFound as exc:
            return op, hook, Error(code=exc.code, message=str(exc))
        except Exception as exc:
            log.exception("request_failed", op=op)
            return op, hook, Error(code="internal", message=f"{type(exc).__name__}: see the memd log")
