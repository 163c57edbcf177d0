"""Forget, as ``memctl forget`` does it: one memory (``?id=``), a whole session
(``?session=``) or the hits a search showed (``?ids=…&ids=…``).  A GET shows what would go,
counted first (the daemon's dry run); only the POST its form sends (the guard checks it comes
from the viewer's own page, ``confirm.js`` asks once more) deletes, through the daemon, so it
reaches every store memd keeps."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence

from starlette.requests import Request
from starlette.responses import Response

from memd.protocol import Forget, Forgotten

from .view import View

__all__ = ["forget"]

MOST = 100
"""Memories one forget of search results may name: the most a search page shows."""


def _selected(fields: Mapping[str, Sequence[str]]) -> tuple[Forget | None, dict[str, str | list[str]]]:
    """The forget a form or URL asks for, and the fields that ask it again (None: nothing asked)."""
    if session := (fields.get("session") or [""])[0]:
        return Forget(session=session), {"session": session}
    ids = [i for i in fields.get("ids", []) if i][:MOST] or [i for i in fields.get("id", []) if i][:1]
    if ids:
        return Forget(ids=ids), {"ids": ids}
    return None, {}


async def forget(view: View, request: Request) -> Response:
    if request.method == "GET":
        fields: dict[str, list[str]] = {}
        for key, value in request.query_params.multi_items():
            fields.setdefault(key, []).append(value)
    else:  # a form of hidden fields
        fields = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))
    asked, again = _selected(fields)
    back = (fields.get("back") or [""])[0]
    back = back if back.startswith(view.base) else view.base  # only ever back into the viewer
    if asked is None:
        return view.page(request, "forget.html", asked=None, again={}, preview=None, done=None, back=back)
    if request.method == "GET":
        asked.dry_run = True
        preview = await view.ask(asked, Forgotten)
        return view.page(request, "forget.html", asked=asked, again=again, preview=preview, done=None, back=back)
    done = await view.ask(asked, Forgotten)
    return view.page(request, "forget.html", asked=asked, again=again, preview=None, done=done, back=back)
