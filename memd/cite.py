"""Citations: short ids for memories that mean the same on every machine, quotes aligned
to their source, rendering.

**Ids.** A memory is cited as ``mem:Ab3xY9Kq``: the first eight base62 characters of the
sha256 of its event's idempotency key (``key_citation``), the key every machine stores
the event under, so a citation copied on one machine opens the same memory on another
and for a teammate.  62^8 ≈ 2.2·10^14 ids: even odds of two memories sharing one only
past 17 million of them.  When one store does hold two that share a beginning, the later
takes the next character too (nine, up to twelve: git's short hashes do the same), and a
longer id resolves everywhere because every store keeps each event's twelve characters
(``memd.store.citations``).  Stores made before these ids cited by six characters derived
from the local row number (``legacy_citation_id``); those ids keep resolving as aliases.

**Alignment.** A quote offered as evidence is located in its source text in three
steps, each tried only when the one before found nothing:

    exact       the quote as typed                                      confidence 1.0
    normalized  whitespace runs collapsed to one space, casefolded      confidence 0.95
    fuzzy       best window of the normalized source by partial ratio   confidence = score / 100
                (rapidfuzz), at least ``threshold``; quotes of 5+ characters only;
                a quote longer than the source is scored against all of it (plain ratio)

The span returned is always in the *original* source: ``source[start:end]`` is the
text that matched, so a reader can be shown the evidence as it was written.

**Rendering.** Quotes with their attribution as a blockquote (``inline``), with
markdown footnotes (``footnote``) or with numbered references (``reference``).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

import msgspec


def _sha256(data: bytes) -> bytes:
    """The sha256 digest of ``data``; hashlib is imported at the first id made (it loads
    OpenSSL, ~3 ms), so a client that only shows ids never pays for it."""
    from hashlib import sha256

    return sha256(data).digest()


__all__ = [
    "ALPHABET",
    "CITATION_RE",
    "FORMATS",
    "LEGACY_LENGTH",
    "LENGTH",
    "MAX_LENGTH",
    "PREFIX",
    "Alignment",
    "Quoted",
    "align",
    "attribution",
    "key_citation",
    "label",
    "legacy_citation_id",
    "mentions",
    "parse",
    "render_quotes",
]

ALPHABET: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
LENGTH: Final = 8
"""Characters of a citation id; a few ids take more (up to ``MAX_LENGTH``), see above."""
MAX_LENGTH: Final = 12
"""Characters of ``key_citation``: every id is a beginning of it."""
LEGACY_LENGTH: Final = 6
PREFIX: Final = "mem:"
FORMATS: Final = ("inline", "footnote", "reference")

_ID: Final = f"[A-Za-z0-9]{{{LEGACY_LENGTH}}}(?:[A-Za-z0-9]{{{LENGTH - LEGACY_LENGTH},{MAX_LENGTH - LEGACY_LENGTH}}})?"
"""An id of today (8 to 12 characters of ``ALPHABET``) or a legacy one (6)."""
_PARSE: Final = re.compile(rf"\[(?i:mem):({_ID})\]|(?:(?i:mem):)?({_ID})")
CITATION_RE: Final = re.compile(
    # The brackets belong to the match only when both are there, so replacing a match
    # never leaves half a pair behind: "[" only if "]" follows, "]" only if "[" was taken.
    rf"(?P<open>\[(?=(?i:mem):{_ID}\]))?\b(?i:mem):(?P<id>{_ID})\b(?(open)\])"
)
"""``[mem:Ab3xY9Kq]`` or ``mem:Ab3xY9Kq`` in running text; the group ``id`` is the bare id."""

FUZZY_MIN_CHARS: Final = 5
"""Shorter quotes are found exactly or not at all: a 4-character window of any
source is 75% similar to almost anything."""


# -- ids -----------------------------------------------------------------------------


def _base62(digest: bytes, length: int) -> str:
    # 128 bits reduced mod 62^length (≤ 71.5 bits): each id is as likely as any other to one
    # part in 10^17, where taking each character as byte % 62 would favour the first 8 letters.
    number = int.from_bytes(digest[:16], "big") % 62**length
    chars = []
    for _ in range(length):
        number, digit = divmod(number, 62)
        chars.append(ALPHABET[digit])
    return "".join(reversed(chars))


def key_citation(idem_key: str) -> str:
    """The ``MAX_LENGTH`` characters of the event stored under ``idem_key``: its id is the
    first ``LENGTH`` of them (more on a collision)."""
    return _base62(_sha256(idem_key.encode("utf-8", "surrogatepass")), MAX_LENGTH)


def legacy_citation_id(event_id: int, salt: int = 0) -> str:
    """The 6-character id stores gave ``event_id`` before ids came from keys (schema 4 to 14;
    ``salt`` > 0 was the next candidate on a collision): still computed by the migrations
    that made them, and resolved as aliases."""
    key = str(event_id) if salt == 0 else f"{event_id}:{salt}"
    return _base62(_sha256(key.encode("ascii"))[:8].rjust(16, b"\0"), LEGACY_LENGTH)


def parse(text: str) -> str | None:
    """The bare id in ``mem:Ab3xY9Kq``, ``[mem:Ab3xY9Kq]`` or ``Ab3xY9Kq``, else None.

    The prefix may be in any case; the id itself is case-sensitive.  Brackets come in
    pairs: ``[mem:Ab3xY9Kq`` is rejected as a paste cut short rather than guessed at.
    """
    match = _PARSE.fullmatch(text.strip())
    return (match.group(1) or match.group(2)) if match else None


def label(cite: str) -> str:
    """``mem:Ab3xY9Kq``, the form a citation takes in text."""
    return PREFIX + cite


def mentions(text: str) -> list[str]:
    """The ids cited in ``text``, in order of first mention."""
    return list(dict.fromkeys(match["id"] for match in CITATION_RE.finditer(text)))


# -- alignment -----------------------------------------------------------------------


class Alignment(msgspec.Struct, frozen=True, kw_only=True):
    """Where a quote was found in its source: ``source[start:end]``, or -1/-1."""

    start: int
    end: int
    confidence: float
    method: str
    """``exact``, ``normalized``, ``fuzzy`` or ``none``."""
    quote_hash: str
    """16 hex characters of the sha256 of the normalized quote: spellings that differ
    only in whitespace or case hash alike."""

    @property
    def found(self) -> bool:
        return self.start >= 0


def _normalize(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, stripped and casefolded,
    and for each of its characters the index of the original character it came from.

    Built one character at a time because casefolding can change the length
    ("ß" → "ss", "İ" → "i̇"): every character of an expansion maps to the character
    it expands.  Casefolding is context-free and never makes or removes whitespace,
    so this equals ``" ".join(text.split()).casefold()``.
    """
    chars: list[str] = []
    origin: list[int] = []
    run = -1  # where the whitespace run since the last kept character began, if any
    for index, char in enumerate(text):
        if char.isspace():
            if run < 0 and chars:  # leading whitespace is dropped; trailing is never flushed
                run = index
            continue
        if run >= 0:
            chars.append(" ")
            origin.append(run)
            run = -1
        for folded in char.casefold():
            chars.append(folded)
            origin.append(index)
    return "".join(chars), origin


def _quote_hash(normalized: str) -> str:
    # surrogatepass: a lone surrogate (possible in decoded JSON) hashes instead of raising
    return _sha256(normalized.encode("utf-8", "surrogatepass")).hex()[:16]


def _fuzzy(quote: str, source: str, threshold: float) -> tuple[int, int, float] | None:
    """The best window ``source[start:end]`` for ``quote`` (both normalized) and its score in [0, 100]."""
    from rapidfuzz import fuzz  # here: every client that shows a citation id imports this module

    cutoff = threshold * 100
    if len(quote) <= len(source):
        result = fuzz.partial_ratio_alignment(quote, source, score_cutoff=cutoff)
        # dest_* index the second argument, the source: rapidfuzz swaps its arguments internally
        # when the first is the longer one, but swaps the result back.
        return (result.dest_start, result.dest_end, result.score) if result else None
    # A quote longer than its source cannot be wholly in it.  partial_ratio would slide the
    # *source* along the quote and score 100 for any source that is some part of the quote;
    # the plain ratio says how far "the quote is the whole source" is from true.
    score = fuzz.ratio(quote, source, score_cutoff=cutoff)
    return (0, len(source), score) if score else None


def align(quote: str, source: str, *, threshold: float = 0.85) -> Alignment:
    """Locate ``quote`` in ``source``: exactly, then normalized, then fuzzily (see the module doc)."""
    quote_norm = " ".join(quote.split()).casefold()
    quote_hash = _quote_hash(quote_norm)
    if not quote_norm:  # a blank quote is in every text, which is evidence of nothing
        return Alignment(start=-1, end=-1, confidence=0.0, method="none", quote_hash=quote_hash)
    start = source.find(quote)
    if start >= 0:
        return Alignment(start=start, end=start + len(quote), confidence=1.0, method="exact", quote_hash=quote_hash)
    source_norm, origin = _normalize(source)
    start = source_norm.find(quote_norm)
    if start >= 0:
        end = origin[start + len(quote_norm) - 1] + 1  # just after the original of the last matched character
        return Alignment(start=origin[start], end=end, confidence=0.95, method="normalized", quote_hash=quote_hash)
    window = _fuzzy(quote_norm, source_norm, threshold) if len(quote_norm) >= FUZZY_MIN_CHARS else None
    if window:
        start, end, score = window
        # the window is cut by length, not by words: it may begin or end on a space
        while start < end and source_norm[start] == " ":
            start += 1
        while end > start and source_norm[end - 1] == " ":
            end -= 1
        if start < end:
            confidence = round(score / 100, 4)
            return Alignment(
                start=origin[start],
                end=origin[end - 1] + 1,
                confidence=confidence,
                method="fuzzy",
                quote_hash=quote_hash,
            )
    return Alignment(start=-1, end=-1, confidence=0.0, method="none", quote_hash=quote_hash)


# -- rendering -----------------------------------------------------------------------


class Quoted(NamedTuple):
    text: str
    cite: str
    """The bare id, without ``mem:``."""
    when: str
    """Preformatted by the caller (a date, usually)."""
    session: str | None


def attribution(cite: str, when: str, session: str | None) -> str:
    """``[mem:Ab3xY9Kq] — 2026-11-21, session 8bbcce``: the session shortened to 6 characters."""
    where = f", session {session[:6]}" if session else ""
    return f"[{label(cite)}] — {when}{where}"


def _blockquote(text: str) -> str:
    # a blank line stays inside the quote as ">" (no trailing space for editors to strip)
    return "".join(f"> {line}\n" if line.strip() else ">\n" for line in text.strip().splitlines())


def render_quotes(quotes: list[Quoted], style: str) -> str:
    """The quotes with their attributions, in one of ``FORMATS``; ``""`` for no quotes."""
    if style not in FORMATS:
        raise ValueError(f"unknown citation style {style!r}: expected one of {', '.join(FORMATS)}")
    if not quotes:
        return ""
    sources = [attribution(q.cite, q.when, q.session) for q in quotes]
    if style == "inline":
        blocks = [_blockquote(q.text) + "> " + source for q, source in zip(quotes, sources, strict=True)]
        return "\n\n".join(blocks)
    if style == "footnote":
        texts = [f"{q.text.strip()}[^{n}]" for n, q in enumerate(quotes, 1)]
        notes = [f"[^{n}]: {source}" for n, source in enumerate(sources, 1)]
    else:
        texts = [f"{q.text.strip()} [{n}]" for n, q in enumerate(quotes, 1)]
        notes = [f"[{n}] {source}" for n, source in enumerate(sources, 1)]
    return "\n\n".join(texts) + "\n\n" + "\n".join(notes)
