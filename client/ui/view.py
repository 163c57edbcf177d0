"""What every page of the viewer shares: asking the daemon, rendering a template, and the
filters a listing reads from its URL.

A listing's whole state lives in its URL (``?project=api&kind=tool_error&before=812``): a
page can be reloaded, bookmarked or sent, and its "older" link is the same URL with one
more parameter.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from memd.context import block_body
from memd.protocol import AGENTS
from memd.protocol import Request as DaemonRequest

from ..rpc import Client, R
from . import look
from .guard import COOKIE

__all__ = ["PAGE", "Filters", "View"]

HERE = Path(__file__).resolve().parent
PAGE = 50
"""Rows a listing shows at a time."""


class Filters(NamedTuple):
    """What a listing is narrowed to, as its URL says: every field optional."""

    project: str = ""
    kind: str = ""
    agent: str = ""
    session: str = ""
    since: str = ""
    """``YYYY-MM-DD``, the first day shown."""
    until: str = ""
    """``YYYY-MM-DD``, the last day shown."""
    q: str = ""

    @classmethod
    def of(cls, params: Mapping[str, str]) -> Filters:
        return cls(**{name: params.get(name, "").strip() for name in cls._fields})

    def url(self, path: str, **more: str | int) -> str:
        """``path`` with these filters (and ``more``) as its query, empty ones left out."""
        given = {k: v for k, v in {**self._asdict(), **more}.items() if v not in ("", None)}
        return path + ("?" + urllib.parse.urlencode(given) if given else "")

    @property
    def active(self) -> bool:
        return any(self)

    @property
    def span(self) -> tuple[float | None, float | None]:
        """The date range as Unix times: from ``since``'s start to the end of ``until``."""
        return look.day(self.since), look.day(self.until, end=True)


class View:
    """The viewer's link to the daemon on ``socket`` and its templates, under ``base``."""

    def __init__(self, socket: str, token: str, base: str) -> None:
        self.socket, self.token, self.base = socket, token, base
        env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
        env.globals.update(base=base, kinds=look.KINDS, agents=AGENTS, label=look.label, PAGE=PAGE)
        env.filters.update(
            when=lambda ts: time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "",
            clock=lambda ts: time.strftime("%H:%M:%S", time.localtime(ts)) if ts else "",
            project_name=lambda root: os.path.basename(root or "") or (root or ""),
            cites=lambda text: look.linked_cites(text, base),
            block_body=block_body,
            chip=look.chip,
            relative=look.relative,
            highlighted=look.highlighted,
        )
        self.templates = env

    async def ask(self, request: DaemonRequest, expect: type[R]) -> R:
        """The daemon's answer, in a worker thread (the client is blocking)."""

        def call() -> R:
            with Client(self.socket, timeout=30.0) as client:
                return client.call(request, expect)

        return await anyio.to_thread.run_sync(call)

    def render(self, name: str, **context: Any) -> str:
        return self.templates.get_template(name).render(page=name.removesuffix(".html"), **context)

    def page(self, request: Request, name: str, **context: Any) -> HTMLResponse:
        """A whole page; the first one (its URL holds the token) moves the token into a cookie."""
        response = HTMLResponse(self.render(name, **context))
        if request.query_params.get("t"):
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path=self.base)
        return response
