"""Secrets no rule names, found because they read as drawn at random: the shape layer.

The provider rules know a token by its prefix and the structural layers by its name (a key,
a flag, a header); a key pasted bare into an SDK call (``Client("q8Xr…")``) has neither.  What
it has is the look of randomness, which code and prose do not: identifiers are made of words
(``PytestRemovedIn10Warning``, ``manylinux_2_28_x86_64``), random tokens are not.

A *candidate* is a run of base64/base64url characters (``A-Z a-z 0-9 + / _ - ~ .``, ``=``
padding) of 20 to 1,024; a path, a URL or a dotted name (half its pieces between ``/`` and
``.`` or more read as words) is judged piece by piece.  A piece is scored by ``features``, each measured per
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
UUIDs and a prefix before one (``req-<uuid>``), a value named for an id, a digest or a
signature (``"id": …``, ``request_id=``, ``sha256=``, ``integrity``, ``h1:``, ``sha512-``, a
thinking block's ``"signature"``), the agents' own ids (``toolu_``, ``msg_``, ``req_``,
``call_``…), dates and timestamps, punycode, an alphabet, words and numbers joined by ``-`` and
``_`` (``cp311-manylinux_2_28_x86_64``), base64 of text, a public key (``ssh-ed25519 AAAA…``),
a data URI's base64, and a block of base64 lines (a certificate, an attachment: a key is one
line).
"""

from __future__ import annotations

import base64
import math
import re
import string
from collections import Counter
from collections.abc import Iterator
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
_TOKEN_CHARS: Final = string.ascii_letters + string.digits + "_+/~.-"
_TOKEN_BYTES: Final = bytes(ord("a") if chr(code) in _TOKEN_CHARS else ord(" ") for code in range(256))
_WORDY: Final = re.compile(r"(?:[A-Z]?+[a-z]{2,}+|[A-Z]{2,}+|\d++)++")
"""A piece of a path or dotted name that reads as words (``VerifyFlags``, ``com``, ``2024``): a
token half of whose pieces do is judged piece by piece, base64 with a ``/`` in it whole."""


def _spelling(chars: str) -> dict[int, str]:
    """A table that spells ``chars`` as ``a`` and every other ASCII character as a space."""
    return {code: "a" if chr(code) in chars else " " for code in range(128)}


_LETTER: Final = _spelling(string.ascii_letters)
_CONSONANTS: Final = "".join(char for char in string.ascii_letters if char not in "aeiouAEIOU")
_SPELT: Final = tuple(
    _spelling(chars) for chars in (string.ascii_lowercase, string.ascii_uppercase, _CONSONANTS, string.digits)
)
"""Lower case, upper case, consonants, digits: a candidate is ASCII, so spelt whole."""
_RUN: Final = re.compile(r"abcdef|ghijkl|mnopqr|stuvwx|ABCDEF|GHIJKL|MNOPQR|STUVWX|012345|123456|qwerty|QWERTY")
"""An alphabet or a keyboard run: ``abcdefghijklmnopqrstuvwxyz0123456789``, a key made up by hand."""
_PREFIX: Final = re.compile(r"(?:[A-Za-z][A-Za-z0-9]{0,11}[_-]){1,3}|[A-Z]{2,4}(?=[0-9a-f]{24})")
"""A word prefix before a token's random part: ``sk_live_``, ``dckr_pat_``, ``rubygems_``, ``SK``."""
_HEX: Final = re.compile(r"[0-9a-fA-F]+(?:-[0-9a-fA-F]+)*")
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NOT_SECRET: Final = (
    "toolu_", "srvtoolu_", "msg_", "req_", "call_", "resp_", "fc_", "rs_", "chatcmpl-",  # the agents' own ids
    "sha1-", "sha256-", "sha384-", "sha512-", "xn--",  # SRI hashes (``sha512-…``), punycode
)  # fmt: skip
"""How a known non-secret starts, in lower case."""
_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}|\d{8}T\d")
"""A date or a timestamp in a token: a name made at a time (``rollout-2026-11-28T00-19-45-…``)."""
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
_CASES: Final = str.maketrans(
    {**dict.fromkeys(string.ascii_lowercase, "l"), **dict.fromkeys(string.ascii_uppercase, "u"),
     **dict.fromkeys(string.digits, "d")}
)  # fmt: skip
_WORD_PARTS: Final = re.compile(r"[-_]*+(?:(?:u++l*+|l++|d++){1,3}+[-_]++)++(?:(?:u++l*+|l++|d++){1,3}+)?+")
"""Parts of at most three runs (``HTMLParser`` one, ``x86`` two, ``A35b`` three), spelt in
``_CASES``: one regex, no Python loop per character."""
_BASE64: Final = re.compile(r"[A-Za-z0-9+/]+|[A-Za-z0-9_-]+")
_SHORTEST: Final = 20
_A_RUN: Final = b"a" * _SHORTEST
_C_LOG2_C: Final = [0.0, *(count * math.log2(count) for count in range(1, 1025))]
"""``c·log2(c)`` for every count a character can have in a candidate: the entropy's terms,
looked up (Shannon entropy is ``log2(n) - Σ c·log2(c) / n``)."""
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
    (too short, one class of character, no letter).  See the module docstring.  Counted in
    C, not per character in Python: the piece is spelt once per class (``_SPELT``), a class's
    count is its letter ``a`` counted, and its neighbouring pairs are its count less its runs
    (``split``)."""
    n = len(piece)
    lower, upper, consonant, digit = (piece.translate(table) for table in _SPELT)
    lowers, uppers, digits = lower.count("a"), upper.count("a"), digit.count("a")
    classes = (uppers > 0) + (lowers > 0) + (digits > 0)
    letters = uppers + lowers
    if n < 16 or classes < 2 or letters < 2:
        return None
    consonants = consonant.count("a")
    lower_pairs = lowers - len(lower.split())
    upper_pairs = uppers - len(upper.split())
    letter_pairs = letters - len(piece.translate(_LETTER).split())
    consonant_pairs = consonants - len(consonant.split())
    entropy = math.log2(n) - sum(map(_C_LOG2_C.__getitem__, Counter(piece).values())) / n
    return (
        entropy / math.log2(n),
        (letters - consonants) / letters,
        consonant_pairs / letter_pairs if letter_pairs else 1.0,
        (letter_pairs - lower_pairs - upper_pairs) / letter_pairs if letter_pairs else 0.0,
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
    if len(token) < _SHORTEST or len(token) > _LONGEST or _HEX.fullmatch(token):
        return False  # too short or long, or hex alone: a digest, a commit, a UUID
    if token.lower().startswith(_NOT_SECRET) or _DATE.search(token) or _UUID.search(token):
        return False
    prefix = _PREFIX.match(token)
    body = token[prefix.end() :] if prefix else token
    if _HEX.fullmatch(body):
        return prefix is not None and len(body) >= 24 and not _ID_PREFIX.search(token[: prefix.end()])
    if _RUN.search(body) or _made_of_words(token) or _base64_of_text(body):
        return False
    return features(body) or False


def _made_of_words(token: str) -> bool:
    """Words and numbers joined by separators, an identifier's make: ``manylinux_2_28_x86_64``,
    ``gcc-12-vs-avx512fp16``, ``zephyr-orpo-141b-A35b-v0``: three parts or more, none over 12
    characters nor changing class more than twice (a capital starting a word is no change).  A
    random token's parts between its rare ``-`` and ``_`` are long and change at every other
    character."""
    if "-" not in token and "_" not in token:
        return False
    parts = [part for part in _SEPARATORS.split(token) if part]
    if len(parts) < 3 or max(map(len, parts)) > 12:
        return False
    return _WORD_PARTS.fullmatch(token.translate(_CASES)) is not None


def _base64_of_text(body: str) -> bool:
    """Base64 that decodes to text (a patch, a file's content): data, not a key, whose bytes
    are random; unless the text is a private key."""
    if len(body) < 40 or not _BASE64.fullmatch(body):
        return False
    try:
        urlsafe = "-" in body or "_" in body
        decoded = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None)
    except ValueError:
        return False
    printable = sum(32 <= byte < 127 or byte in (9, 10, 13) for byte in decoded)
    text = printable >= 0.95 * len(decoded) and (b" " in decoded or b"\n" in decoded)
    return text and b"PRIVATE KEY" not in decoded  # a PEM key, encoded: ``client-key-data``


def candidates(text: str) -> Iterator[tuple[int, str]]:
    """The tokens of ``text`` worth judging, with their offsets: a path, URL or dotted name
    (half its pieces or more read as words) piece by piece."""
    for start, token in _runs(text):
        if "/" not in token and "." not in token:
            yield start, token
            continue
        parts = token.replace(".", "/").split("/")
        if 2 * sum(1 for part in parts if _WORDY.fullmatch(part)) >= len(parts) - parts.count(""):
            at = start
            for part in parts:
                if len(part) >= _SHORTEST:
                    yield at, part
                at += len(part) + 1
        else:
            yield start, token


def _runs(text: str) -> Iterator[tuple[int, str]]:
    """Each run of ``_SHORTEST`` token characters or more, with its ``=`` padding, and where it
    starts.  Spelt as bytes (a token character ``a``, anything else a space: a non-ASCII
    character is one ``?`` in ASCII, so offsets hold), the runs are found by ``bytes.find``:
    four times faster than a regex stepping through every position (bench/privacy.py)."""
    spelt = text.encode("ascii", "replace").translate(_TOKEN_BYTES)
    at = spelt.find(_A_RUN)
    while at >= 0:
        start = spelt.rfind(b" ", 0, at) + 1
        end = spelt.find(b" ", at)
        end = len(text) if end < 0 else end
        padded = end
        while padded < len(text) and text[padded] == "=":
            padded += 1
        yield start, text[start:padded].rstrip(".")
        at = spelt.find(_A_RUN, end)


def random_tokens(text: str) -> list[tuple[int, int, str]]:
    """The spans of ``text`` that read as random secrets: (start, end, ``KIND``)."""
    found: list[tuple[int, int, str]] = []
    if len(text) < _SHORTEST:
        return found
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
