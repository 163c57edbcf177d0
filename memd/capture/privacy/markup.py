"""Credentials in markup and config formats that are not ``key = value``.

- ``<password>…</password>``, ``<apiToken>…</apiToken>``: an element whose name names a
  secret (``secret_kind``), with text and no child element (``markup``);
- ``<add key="ClearTextPassword" value="…"/>`` (NuGet, .NET ``appSettings``): a ``key``
  attribute naming a secret and the ``value`` beside it (``markup``);
- ``Cookie: session=…`` and ``Set-Cookie:``: a value long enough to be a session (``cookies``);
- ``machine api.example.com login me password …`` (``.netrc``, which curl and git read) and a
  signed URL's signature (``?sig=``, ``X-Amz-Signature=``): rows of the secret table
  (``FORMAT_RULES``; ``shapes.py`` leaves a placeholder alone, as for every row).

A value that is a placeholder stays (``placeholders.py``).  An element is looked at only from a
closing tag whose name names a secret back to its opening tag: other tags cost a name lookup.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from .keys import secret_kind
from .placeholders import is_placeholder
from .redactions import MARKER
from .rule import Rule

__all__ = ["COOKIE_VALUE_CHARS", "FORMAT_RULES", "cookies", "markup"]

_OPEN: Final = re.compile(r"<([A-Za-z][\w.:-]{0,40})(?:[ \t][^<>]{0,200})?>")
_CLOSE: Final = re.compile(r"</([A-Za-z][\w.:-]{0,40})>")
_INNER: Final = re.compile(r"[ \t]*([^<>\s][^<>\n]{0,511}?)[ \t]*")
_KEY_VALUE: Final = re.compile(
    r"""key(?<![\w.-]key)[ \t]*=[ \t]*["']([\w.:-]{1,64})["'][ \t]+value[ \t]*=[ \t]*["']([^"'\n]{1,512})["']"""
)


@functools.lru_cache(maxsize=1024)
def _kind(name: str) -> str | None:
    return secret_kind(name.replace(":", "_"))  # ``db:password``: a namespace, then the name


def markup(text: str, low: str) -> list[tuple[int, int, str]]:
    """Secret values of XML elements and ``key``/``value`` attribute pairs named for a secret,
    each with the kind its name names."""
    spans: list[tuple[int, int, str]] = []
    if "</" in low:
        for close in _CLOSE.finditer(text):  # from each closing tag named for a secret back to its opening
            name = close.group(1)
            if (kind := _kind(name)) is None:
                continue
            opening = text.rfind(f"<{name}", max(0, close.start() - 800), close.start())
            tag = _OPEN.match(text, opening) if opening >= 0 else None
            if tag is None or tag.group(1) != name:
                continue
            inner = _INNER.fullmatch(text, tag.end(), close.start())
            if inner and _secret(inner.group(1)):
                spans.append((*inner.span(1), kind))
    if "value" in low:
        for pair in _KEY_VALUE.finditer(text):
            kind = secret_kind(pair.group(1))
            if kind is not None and _secret(pair.group(2)):
                spans.append((*pair.span(2), kind))
    return sorted(spans)


def _secret(value: str) -> bool:
    return not is_placeholder(value) and not MARKER.search(value)


_COOKIE_LINE: Final = re.compile(r"(?im)(?:^|(?<=[\s\"'{,]))(?:set-)?cookie[\"']?[ \t]*:[ \t]*[\"']?([^\n\"']{1,4096})")
"""A ``Cookie:`` or ``Set-Cookie:`` header: on its own line, in ``curl -H "..."``, or as a JSON
or Python dict's item (``{"Cookie": "sid=..."}``)."""
_COOKIE_PAIR: Final = re.compile(r"([^=;\s]{1,64})=([^;\s]{1,2048})")
_ATTRIBUTES: Final = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority", "version"})
COOKIE_VALUE_CHARS: Final = 16
"""A cookie value this long is a credential (a session id, a signed token); shorter ones are
preferences (``theme=dark``, ``lang=en``)."""


def cookies(text: str, low: str) -> list[tuple[int, int, str]]:
    """The values of ``Cookie:`` and ``Set-Cookie:`` headers long enough to be a session: a
    cookie is how a site knows it is you, so a logged-in session's cookie is a password."""
    if "cookie" not in low:
        return []
    spans: list[tuple[int, int, str]] = []
    for line in _COOKIE_LINE.finditer(text):
        for pair in _COOKIE_PAIR.finditer(text, line.start(1), line.end(1)):
            name, value = pair.group(1), pair.group(2)
            if name.lower() in _ATTRIBUTES or len(value) < COOKIE_VALUE_CHARS or not _secret(value):
                continue
            spans.append((*pair.span(2), "cookie"))
    return spans


FORMAT_RULES: Final = (
    Rule(
        "netrc-password",
        "machine",
        re.compile(r"machine[ \t]+\S+(?:[ \t]+(?:login|account)[ \t]+\S+){0,2}[ \t]+password[ \t]+(\S{1,512})"),
        group=1,
        lowered=True,
    ),
    Rule(  # a signed URL's signature: Azure SAS ``sig=``, S3's and GCS's ``X-Amz-Signature``, ``X-Goog-Signature``
        "url-signature",
        "sig",
        re.compile(r"[?&](?:sig|signature|x-amz-signature|x-goog-signature)=([^&#\s\"'<>]{16,1024})"),
        group=1,
        lowered=True,
    ),
)
