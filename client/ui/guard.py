"""Who may talk to the viewer: pure checks over a request's parts, and the ASGI layer that
applies them before any page is built.

The viewer listens on 127.0.0.1 only, but any web page the user visits can make their
browser send requests there, and any process of any user on the machine can connect.  So:

- **The token.**  ``memctl ui`` makes a random token and prints the URL holding it; a
  request must carry it (``?t=`` in the URL, which the first page turns into a cookie
  bound to this host, ``HttpOnly`` and ``SameSite=Strict``).  Without it: 403, nothing else.
- **The Host header** must name this server (``127.0.0.1:PORT`` or ``localhost:PORT``): a
  DNS-rebinding page whose own name resolves to 127.0.0.1 sends its own name, and is refused.
- **State changes** (``POST``: forget) also need an ``Origin`` (or, lacking one, a
  ``Referer``) of this very server: a cross-site form cannot forget anything, token or not.
- **No other page can frame it**, so none can overlay its Forget button (click-jacking):
  ``frame-ancestors 'none'`` and ``X-Frame-Options: DENY`` on every answer (``HEADERS``),
  with a policy that runs no inline script and loads nothing from elsewhere.
- **The cookie goes to no other local server.**  Cookies ignore ports, so one set for
  ``127.0.0.1`` would reach every server the user visits there.  Every page lives under a
  random path prefix per run (``/PREFIX/``, in the printed URL), and the cookie's ``Path``
  is that prefix (``memd_client.ui.app``).
"""

from __future__ import annotations

import hmac
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

__all__ = ["COOKIE", "HEADERS", "Guard", "allowed_host", "same_origin", "token_of"]

COOKIE: Final = "memd_ui"
POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
    " form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS: Final = (
    (b"content-security-policy", POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)
"""Sent with every answer, a refusal's too."""
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def allowed_host(host: str, port: int) -> bool:
    """Whether a ``Host`` header names this server (loopback, this port)."""
    return host.lower() in (f"127.0.0.1:{port}", f"localhost:{port}")


def same_origin(origin: str, referer: str, port: int) -> bool:
    """Whether a state-changing request comes from this server's own pages."""
    if origin:
        return origin.lower() in (f"http://127.0.0.1:{port}", f"http://localhost:{port}")
    parts = urllib.parse.urlsplit(referer)
    return parts.scheme == "http" and allowed_host(parts.netloc, port)


def token_of(query: str, cookie_header: str) -> str:
    """The token a request carries: in the URL (``t=``), else in the viewer's cookie."""
    if found := urllib.parse.parse_qs(query).get("t"):
        return found[0]
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return ""


class Guard:
    """ASGI middleware: the checks of the module doc, then the app."""

    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = scope.get("query_string", b"").decode("latin-1")
        problem = ""
        if not allowed_host(headers.get("host", ""), self.port):
            problem = "this viewer answers only to its own address (127.0.0.1)"
        elif not hmac.compare_digest(token_of(query, headers.get("cookie", "")), self.token):
            problem = "no valid token: open the URL `memctl ui` printed"
        elif scope["method"] not in ("GET", "HEAD") and not same_origin(
            headers.get("origin", ""), headers.get("referer", ""), self.port
        ):
            problem = "a change must come from the viewer's own pages"

        async def guarded(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        if problem:
            await _refuse(guarded, problem)
            return
        await self.app(scope, receive, guarded)


async def _refuse(send: Callable[[Any], Awaitable[None]], why: str) -> None:
    body = f"403 Forbidden: {why}\n".encode()
    await send({"type": "http.response.start", "status": 403, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
    ]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})
