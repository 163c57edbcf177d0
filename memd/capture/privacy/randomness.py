"""Secrets no rule names, found because they read as drawn at random: the shape layer.

The provider rules know a token by its prefix and the structural layers by its name (a key,
a flag, a header); a key pasted bare into an SDK call (``Client("q8Xr…")``) has neither.  What
it has is the look of randomness, which code and prose do not: identifiers are made of words
(``PytestRemovedIn10Warning``, ``manylinux_2_28_x86_64``), random tokens are not.

A *candidate* is a run of base64/base64url characters (``A-Z a-z 0-9 + / _ - ~ .``, ``=``
padding) of 20 to 1,024; a path, a URL or a dotted name (a piece between ``/`` or ``.`` reads
as a word) is judged piece by piece.  A piece is scored by ``features``, each measured per
character class and normalised by length: its entropy over ``log2(len)``, the vowels among its
letters (a fifth of random letters, two fifths of words), the neighbouring letters that are
both consonants (two thirds at random, a third in words), the case switches between
neighbouring letters (half at random, few in ``camelCase``), its digits, its length and how
many classes (upper, lower, digit) it mixes.  ``WEIGHTS`` and ``THRESHOLD`` are a logistic
model fitted by ``bench/secret_shapes.py --fit`` on half of the secret kinds and half of the
third-party code (and on random tokens over each alphabet keys are drawn from), and checked
on the other halves (the bench says how it fares on both).

After a word prefix (``acme_live_``, ``rubygems_``, ``SK``), a hex body of 24 or more is a
secret too: a digest has no prefix, a key often has one.

Not secrets, whatever their look (the known non-secret shapes): hex alone (git SHAs, digests),
UUIDs and a prefix before one (``req-<uuid>``), a value named for an id or a digest
(``"id": …``, ``request_id=``, ``sha256=``, ``integrity``, ``h1:``, ``sha512-``), the agents'
own ids (``toolu_``, ``msg_``, ``req_``, ``call_``…), dates and timestamps, punycode, an alphabet,
words and numbers joined by ``-`` and ``_`` (``cp311-manylinux_2_28_x86_64``), base64 of text,
a public key (``ssh-ed25519 AAAA…``), a data URI's base64, and a block of base64 lines (a
certificate, an attachment: a key is one line).
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from typing import Final

from .placeholders import is_placeholder

__all__ = [
    "BIAS",
    "KIND",
    "THRESHOLD",
    "WEIGHTS",
    "candidates",
    "excused",
    "features",
    "random_tokens",
    "score",
    "shape",
]

KIND: Final = "random-token"

_CANDIDATE: Final = re.compile(r"[A-Za-z0-9_+/~.-]{20,}=*")
_AFTER_A_BREAK: Final = re.compile(r"[^A-Za-z0-9_+/~.-]([A-Za-z0-9_+/~.-]{20,}=*)")
"""A candidate where it starts: consuming the character before it, rather than looking behind
at every position, halves the scan."""
_PIECE: Final = re.compile(r"[^./]+")
_WORDY: Final = re.compile(r"(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}|\d+)+")
"""A piece of a path or dotted name that reads as words (``VerifyFlags``, ``com``, ``2024``): a
token half of whose pieces do is judged piece by piece, base64 with a ``/`` in it whole."""
_VOWELS: Final = frozenset("aeiouAEIOU")
_PREFIX: Final = re.compile(r"(?:[A-Za-z][A-Za-z0-9]{0,11}[_-]){1,3}|[A-Z]{2,4}(?=[0-9a-f]{24})")
"""A word prefix before a token's random part: ``sk_live_``, ``dckr_pat_``, ``rubygems_``, ``SK``."""
_HEX: Final = re.compile(r"[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*")
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NOT_SECRET: Final = re.compile(
    r"(?:toolu|srvtoolu|msg|req|call|resp|fc|rs|chatcmpl)[_-]"  # the agents' own ids
    r"|sha\d+-|xn--"  # SRI hashes (``sha512-…``), punycode
    r"|.*(?:\d{4}-\d{2}-\d{2}|\d{8}T\d)",  # a date or a timestamp in it
    re.IGNORECASE,
)
_ID_WORDS: Final = (
    r"(?:\bid|_id|-id|[a-z]Id|ID|[Uu]uid|[Gg]uid|hash|digest|integrity|checksum|etag|nonce"
    r"|sha\d*|md5|commit|rev(?:ision)?|signature)"
)
_NAMED_ID: Final = re.compile(_ID_WORDS + r"""["']?\s*[=:]\s*["']?$|(?:sha\d*|md5|h1)[=:-]$""")
"""What comes just before a value named for an id or a digest: ``"id": "``, ``requestId=``,
``sha256=``, ``h1:`` (go.sum)."""
_ID_PREFIX: Final = re.compile(_ID_WORDS + r"[_-]$", re.IGNORECASE)
_PUBLIC: Final = re.compile(r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-[a-z0-9]+|sk-ssh-\S+|base64,)\s?$")
_SEPARATORS: Final = re.compile(r"[-_]+")
_BASE64: Final = re.compile(r"[A-Za-z0-9+/]+|[A-Za-z0-9_-]+")
_LONGEST: Final = 1024
"""Longer than this, a run is data (an inline image, a font), whatever it looks like."""
_BLOCK_LINE: Final = 60
"""A line that is one token this long or longer, beside another such line: a base64 block."""

WEIGHTS: Final = (-3.149, 13.774, 17.678, 12.471, 24.938, 1.699, 1.419)
"""Per feature, in ``features``' order (``bench/secret_shapes.py --fit`` prints them)."""
BIAS: Final = -24.238
THRESHOLD: Final = 0.45
"""The logit over which a piece is a secret (``bench/secret_shapes.py --fit``: the fewest
missed secrets and false alarms on the tuning halves, a false alarm weighing five misses)."""


def features(piece: str) -> tuple[float, ...] | None:
    """What ``score`` weighs of a token's random part, or None when it is not a candidate
    (too short, one class of character, no letter).  See the module docstring."""
    n = len(piece)
    uppers = lowers = digits = 0
    for char in piece:
        if char.isupper():
            uppers += 1
        elif char.islower():
            lowers += 1
        elif char.isdigit():
            digits += 1
    classes = (uppers > 0) + (lowers > 0) + (digits > 0)
    letters = uppers + lowers
    if n < 16 or classes < 2 or letters < 2:
        return None
    entropy = -sum(count / n * math.log2(count / n) for count in Counter(piece).values())
    pairs = consonants = switches = 0
    for left, right in pairwise(piece):
        if left.isalpha() and right.isalpha():
            pairs += 1
            consonants += left not in _VOWELS and right not in _VOWELS
            switches += left.isupper() != right.isupper()
    return (
        entropy / math.log2(n),
        sum(char in _VOWELS for char in piece) / letters,
        consonants / pairs if pairs else 1.0,
        switches / pairs if pairs else 0.0,
        digits / n,
        math.log(n),
        float(classes),
    )


def score(values: tuple[float, ...]) -> float:
    """The logit that a piece with these ``features`` is a secret."""
    return BIAS + sum(weight * value for weight, value in zip(WEIGHTS, values, strict=True))


def shape(token: str) -> bool | tuple[float, ...]:
    """What a token (no ``/`` or ``.`` in it) is by its shape: decided (a known non-secret
    shape is False, a word prefix before long hex True) or the ``features`` to ``score``."""
    token = token.rstrip("=")
    if len(token) < 20 or len(token) > _LONGEST or _NOT_SECRET.match(token) or _UUID.search(token):
        return False
    prefix = _PREFIX.match(token)
    body = token[prefix.end() :] if prefix else token
    if _HEX.fullmatch(body):
        return prefix is not None and len(body) >= 24 and not _ID_PREFIX.search(token[: prefix.end()])
    if 2 * sum(ord(right) - ord(left) == 1 for left, right in pairwise(body)) >= len(body):
        return False  # an alphabet or a keyboard run: ``abcdefghijklmnopqrstuvwxyz0123456789``
    if _made_of_words(token) or _base64_of_text(body):
        return False
    return features(body) or False


def _made_of_words(token: str) -> bool:
    """Words and numbers joined by separators, an identifier's make: ``manylinux_2_28_x86_64``,
    ``gcc-12-vs-avx512fp16``, ``zephyr-orpo-141b-A35b-v0``.  A random token's parts between
    its rare ``-`` and ``_`` are long and switch class at every other character."""
    parts = [part for part in _SEPARATORS.split(token) if part]
    return len(parts) >= 3 and all(len(part) <= 12 and _switches(part) <= 2 for part in parts)


def _switches(part: str) -> int:
    """Changes of character class along ``part``; a capital starting a word is none."""
    classes = [2 if char.isdigit() else 1 if char.isupper() else 0 for char in part]
    return sum(left != right and (left, right) != (1, 0) for left, right in pairwise(classes))


def _base64_of_text(body: str) -> bool:
    """Base64 that decodes to text (a patch, a file's content): data, not a key, whose bytes
    are random."""
    if len(body) < 40 or not _BASE64.fullmatch(body):
        return False
    try:
        urlsafe = "-" in body or "_" in body
        decoded = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None)
    except ValueError:
        return False
    printable = sum(32 <= byte < 127 or byte in (9, 10, 13) for byte in decoded)
    return printable >= 0.95 * len(decoded) and (b" " in decoded or b"\n" in decoded)


def candidates(text: str) -> Iterator[tuple[int, str]]:
    """The tokens of ``text`` worth judging, with their offsets: a path, URL or dotted name
    (half its pieces or more read as words) piece by piece."""
    first = _CANDIDATE.match(text)
    matches = _AFTER_A_BREAK.finditer(text)
    for match in (first, *matches) if first else matches:
        start = match.start(match.lastindex or 0)
        token = match.group(match.lastindex or 0).rstrip(".")
        pieces = [(start + piece.start(), piece.group()) for piece in _PIECE.finditer(token)]
        if len(pieces) > 1 and 2 * sum(bool(_WORDY.fullmatch(piece)) for _, piece in pieces) >= len(pieces):
            yield from pieces
        else:
            yield start, token


def random_tokens(text: str) -> list[tuple[int, int, str]]:
    """The spans of ``text`` that read as random secrets: (start, end, ``KIND``)."""
    found: list[tuple[int, int, str]] = []
    for start, token in candidates(text):
        judged = shape(token)
        secret = judged if isinstance(judged, bool) else score(judged) >= THRESHOLD
        if secret and not excused(text, start, start + len(token)):
            found.append((start, start + len(token), KIND))
    return found


def excused(text: str, start: int, end: int) -> bool:
    """A random-looking value that is none by where it stands: named for an id or a digest,
    a public key, a data URI, a line of a base64 block, a placeholder."""
    before = text[max(0, start - 40) : start]
    if _NAMED_ID.search(before) or _PUBLIC.search(before) or is_placeholder(text[start:end]):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    line = text[line_start:line_end].strip()
    if len(line) < _BLOCK_LINE or _CANDIDATE.fullmatch(line) is None:
        return False
    return _block_line(text, line_start - 1, backwards=True) or _block_line(text, line_end, backwards=False)


def _block_line(text: str, newline: int, *, backwards: bool) -> bool:
    """Whether the line on the far side of the newline at ``newline`` is one long token."""
    if newline < 0 or newline >= len(text):
        return False
    if backwards:
        line = text[text.rfind("\n", 0, newline) + 1 : newline]
    else:
        stop = text.find("\n", newline + 1)
        line = text[newline + 1 : len(text) if stop < 0 else stop]
    line = line.strip()
    return len(line) >= _BLOCK_LINE and _CANDIDATE.fullmatch(line) is not None
