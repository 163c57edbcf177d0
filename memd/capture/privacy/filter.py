"""The privacy filter: private tags, then secrets, over text or JSON-like values.

``privacy.extra_patterns``: regular expressions of your own, compiled once; every
non-empty match that does not touch a marker already in the text is replaced.

The shapes run first, all on the same text (overlapping matches merge into one marker,
named by the first rule), then ``key = value`` on the result, then XML elements and
attribute pairs named for a secret (``markup``), then each extra pattern,
so each step sees what a second filtering would see.  A shape glued to a word
(``xghp_...``), or to a marker, is not a token; a marker itself never matches anything.
A ``key = value`` secret is named by what its key names (``DB_PASSWORD=`` gives
``[REDACTED:password]``, ``api_key:`` ``[REDACTED:api-key]``: see ``secret_kind``); an
``extra_patterns`` match is ``[REDACTED:custom]``.

``text`` never raises and is idempotent (filtering its output changes nothing, and a
second pass finds no secret: a marker is none).  It runs in linear time: no pattern nests
quantifiers over overlapping characters, runs that could meet themselves again are
bounded (``{8,512}``), one Aho-Corasick pass finds which rules' triggers the text holds
(a search per trigger made 1 MB of code and logs take ~51 ms, one pass ~28 ms), only those rules
run, each starting with a literal the regex engine skips to (bench/privacy.py: a 1 MB
text in ~30 ms, bench/secret_rules.py: 50 KB in ~2.3 ms), and Python only looks at
candidates.  Should removing a span change which text is code (a backtick merging with
another), the tags are scanned again, at most four rounds, after which everything from
the first tag still live is removed.  Offsets are Python string indices, so Korean, emoji and any
other text are handled like ASCII.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

import msgspec

from ...config import PrivacyConfig
from .assignments import KEY_TRIGGER, assignments
from .key_files import lone_tokens, reads_key_file
from .keys import names_identifier, secret_kind
from .markup import cookies, markup
from .randomness import random_tokens
from .redactions import MARKER, Edit, Redactions, Span, lower, redacted, splice
from .shapes import token_secrets
from .tags import TagRules

__all__ = ["Privacy"]

_MAX_ROUNDS: Final = 4
"""Rounds of tag removal before the fallback cut (see ``Privacy.text``)."""


def _extra_matches(regex: re.Pattern[str], text: str, private_marker: str) -> list[Span]:
    """A user pattern's non-empty matches that do not touch a marker (so output is stable)."""
    markers = [match.span() for match in MARKER.finditer(text)]
    if private_marker:
        markers += _literal_spans(text, private_marker)
    return [
        match.span()
        for match in regex.finditer(text)
        if match.end() > match.start() and not any(a < match.end() and match.start() < b for a, b in markers)
    ]


def _literal_spans(text: str, literal: str) -> list[Span]:
    spans: list[Span] = []
    found = text.find(literal)
    while found >= 0:
        spans.append((found, found + len(literal)))
        found = text.find(literal, found + len(literal))
    return spans


def _strings(value: Any) -> Iterator[str]:
    """Every string in JSON-like data, keys left out."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _redact(text: str, spans: list[tuple[int, int, str]]) -> tuple[str, Redactions]:
    """``text`` with each (start, end, kind) span replaced by its kind's marker, and the counts."""
    if not spans:
        return text, Redactions()
    result = splice(text, (Edit(start, end, redacted(kind)) for start, end, kind in spans))
    kinds: dict[str, int] = {}
    for _, _, kind in spans:
        kinds[kind] = kinds.get(kind, 0) + 1
    removed = sum(end - start for start, end, _ in spans)
    return result, Redactions(secrets=len(spans), chars_removed=removed, kinds=kinds)


# --- the filter ---------------------------------------------------------------------


class Privacy:
    """The privacy filter for one configuration: build once, call for every event."""

    def __init__(self, config: PrivacyConfig) -> None:
        self._config = config
        self._tags = TagRules(config)
        self._marker = config.marker
        self._builtin_secrets = config.secrets
        self._extra = [re.compile(pattern) for pattern in config.extra_patterns]

    def secrets_only(self) -> Privacy:
        """This filter without its private-tag rules, for content stored already: its tags
        went when it arrived, and what is left of them is text (``memd.capture.rescan``)."""
        return Privacy(msgspec.structs.replace(self._config, tags=[]))

    def text(self, text: str, *, by_shape: bool = True, key_file: bool = False) -> tuple[str, Redactions]:
        """``text`` without private spans and secrets, and what was removed; ``by_shape=False``
        leaves out the layer that knows a secret by its random look (``randomness``), for a
        value named for an id or a digest; ``key_file=True`` says the text comes from an event
        that reads a key file, whose lone tokens are secrets (``key_files``; a text that reads
        one itself, ``cat config/master.key``, is found by the table's rows).

        Tags first (a secret inside a private span goes with the span), then secrets.
        Removing a span can change which text is code (a backtick it held no longer
        pairs, two lines become one), so a tag once literal may be live in the result:
        the tags are scanned again until none is, and after ``_MAX_ROUNDS`` rounds
        everything from the first live tag on is removed, which bounds the work.
        """
        low = lower(text)
        tags = self._tags.candidates(low)
        if not tags:
            return self._secrets(text, low, by_shape, key_file)
        found = Redactions()
        scan = self._tags.scan(text, tags)
        for _ in range(_MAX_ROUNDS):
            found += scan.found
            filtered, secrets = self._secrets(splice(text, scan.edits), None if scan.edits else low, by_shape, key_file)
            found += secrets
            if filtered == text:
                return text, found
            text = filtered
            scan = self._tags.scan(text, self._tags.candidates(lower(text)))
            if not scan.edits:
                return text, found + scan.found
        start = scan.edits[0].start
        tail = self._tags.replacement(text[start:], has_content=True)
        cut = Redactions(private_spans=1, unclosed=scan.found.unclosed, chars_removed=len(text) - start)
        return text[:start] + tail, found + cut

    def value(self, value: Any) -> tuple[Any, Redactions]:
        """A filtered copy of JSON-like data (dict, list, str, int, float, bool, None).

        Every string is filtered as by ``text``; the value of a sensitive key (see
        ``is_sensitive_key``) is replaced whole: a non-empty string, and every non-empty
        string inside a list or object under it, becomes ``[REDACTED:<kind>]`` with the
        kind the key names (``secret_kind``: ``password``, ``api-key``...); the value of a
        key naming an id or a digest (``tool_use_id``, ``sha256``: ``names_identifier``) is
        not judged by its random look, which ids share with keys; when one of the strings is a
        key file's path or a command reading one (``key_files``), a line of any string that is
        a lone token is that key.  Keys are
        names and stay as they are; numbers, booleans, None and any other type are
        returned untouched.  The input is not modified.  Iterative, so depth is no
        concern.
        """
        found = Redactions()
        key_file = reads_key_file(_strings(value))
        root: list[Any] = [None]
        stack: list[tuple[Any, Any, Any, str | None, bool]] = [(value, root, 0, None, False)]
        while stack:
            node, parent, slot, kind, an_id = stack.pop()
            if isinstance(node, dict):
                parent[slot] = mapping = dict.fromkeys(node)
                for key, item in node.items():
                    named = isinstance(key, str)
                    stack.append((
                        item, mapping, key, kind or (secret_kind(key) if named else None),
                        named and names_identifier(key),
                    ))  # fmt: skip
            elif isinstance(node, list):
                parent[slot] = items = [None] * len(node)
                stack.extend((item, items, index, kind, an_id) for index, item in enumerate(node))
            elif isinstance(node, str):
                parent[slot], redactions = self._string(node, kind, an_id, key_file)
                found += redactions
            else:
                parent[slot] = node
        return root[0], found

    def _string(self, text: str, kind: str | None, an_id: bool, key_file: bool) -> tuple[str, Redactions]:
        """A string, filtered; the value of a key naming ``kind`` of secret, redacted whole."""
        if kind is None:
            return self.text(text, by_shape=not an_id, key_file=key_file and not an_id)
        if not text.strip() or MARKER.fullmatch(text):
            return text, Redactions()
        return redacted(kind), Redactions(secrets=1, chars_removed=len(text), kinds={kind: 1})

    def _secrets(self, text: str, low: str | None, by_shape: bool, key_file: bool) -> tuple[str, Redactions]:
        """Provider shapes, then ``key = value`` on the result, then XML names (``markup``), cookies,
        then what reads as random (``randomness``), then each extra pattern in turn: each step
        sees the markers of the steps before, as a second filtering would.  ``low`` is
        ``lower(text)`` when already known."""
        found = Redactions()
        if self._builtin_secrets:
            low = lower(text) if low is None else low
            text, found = _redact(text, token_secrets(text, low))
            if found.secrets:
                low = lower(text)
            if KEY_TRIGGER.search(low):
                text, more = _redact(text, assignments(text, low))
                found += more
                if more.secrets:
                    low = lower(text)
                text, more = _redact(text, markup(text, low))
                found += more
            if "cookie" in low:
                text, more = _redact(text, cookies(text, lower(text)))
                found += more
            if by_shape:
                text, more = _redact(text, random_tokens(text))
                found += more
            if key_file:
                text, more = _redact(text, lone_tokens(text))
                found += more
        for regex in self._extra:
            text, more = _redact(text, [(*span, "custom") for span in _extra_matches(regex, text, self._marker)])
            found += more
        return text, found
