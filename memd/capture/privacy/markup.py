"""Credentials in markup and config formats that are not ``key = value``.

- ``<password>…</password>``, ``<apiToken>…</apiToken>``: an element whose name names a
  secret (``secret_kind``), with text and no child element (``markup``);
- ``<add key="ClearTextPassword" value="…"/>`` (NuGet, .NET ``appSettings``): a ``key``
  attribute naming a secret and the ``value`` beside it (``markup``);
- ``machine api.example.com login me password …`` (``.netrc``, which curl and git read): a
  row of the secret table (``NETRC_RULES``).

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

__all__ = ["NETRC_RULES", "markup"]

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


NETRC_RULES: Final = (
    Rule(
        "netrc-password",
        "machine",
        re.compile(r"machine[ \t]+\S+(?:[ \t]+(?:login|account)[ \t]+\S+){0,2}[ \t]+password[ \t]+(\S{1,512})"),
        group=1,
        lowered=True,
        check=lambda value: not is_placeholder(value),
    ),
)
