"""Stored content against today's secret rules: ``memctl scan`` and restore from an export.

What memd stored was filtered by the rules of the day it arrived; a store written by an
older memd, with ``privacy.secrets`` off, or an export from another machine may hold what
today's rules call a secret.  ``Rescan.content`` runs the secret rules over every field an
event keeps content in, and returns the fields redacted (or None when nothing changes:
a marker already there is no secret, so a second scan finds nothing).

Only the secret rules run, never the private-tag rules: the tags were removed when the
event arrived, and what is left of them is text (a tag quoted in code, a ``[PRIVATE]``
marker) that a second removal must not touch.  JSON fields (``meta``, ``payload``) are
filtered as values, so a sensitive key's whole value goes as it does at capture; a JSON
field that does not parse is filtered as text.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import msgspec

from .privacy import Privacy, Redactions

__all__ = ["Content", "Rescan"]

_encode = msgspec.json.Encoder().encode


class Content(NamedTuple):
    """The fields of a stored event that hold content."""

    title: str
    text: str
    meta: str
    """JSON."""
    payload: str
    """JSON (``{}`` for a derived event)."""


def _one_event(fields: tuple[Redactions, ...]) -> Redactions:
    """What one event held: the title, text and meta repeat what its payload says, so a
    secret found in several of them is counted once (per kind, the most any field held),
    as capture counts it; the characters removed add up."""
    kinds: dict[str, int] = {}
    for found in fields:
        for kind, n in found.kinds.items():
            kinds[kind] = max(kinds.get(kind, 0), n)
    return Redactions(
        secrets=sum(kinds.values()), chars_removed=sum(found.chars_removed for found in fields), kinds=kinds
    )


class Rescan:
    """Today's secret rules (``privacy.secrets`` and ``extra_patterns``), for stored content."""

    def __init__(self, privacy: Privacy) -> None:
        self._privacy = privacy.secrets_only()

    def content(self, content: Content) -> tuple[Content, Redactions] | None:
        """``content`` with every secret today's rules find redacted, and what was found;
        None when they find nothing."""
        title, in_title = self._privacy.text(content.title)
        text, in_text = self._privacy.text(content.text)
        meta, in_meta = self._json(content.meta)
        payload, in_payload = self._json(content.payload)
        redacted = Content(title, text, meta, payload)
        if redacted == content:
            return None
        return redacted, _one_event((in_title, in_text, in_meta, in_payload))

    def _json(self, field: str) -> tuple[str, Redactions]:
        try:
            value: Any = json.loads(field)
        except ValueError:
            return self._privacy.text(field)
        filtered, found = self._privacy.value(value)
        return (_encode(filtered).decode() if found.secrets else field), found
