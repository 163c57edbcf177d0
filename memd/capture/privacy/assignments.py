"""Secrets as the value of a sensitive key: ``key = value`` and its relatives.

- The value in ``key = value``, ``key: value``, ``key := value``, ``key => value``,
  ``--key=value`` and the JSON ``"key": "value"`` when the key is sensitive (see
  ``is_sensitive_key``).  A quoted value is a secret (only its inside is replaced, so
  JSON stays JSON); an unquoted one only when it is data rather than code:

  * never: a number under 8 digits, ``true``/``null``/..., a value under 3 characters,
    a reference (``$VAR``, ``%VAR%``, ``@x``), something called, indexed or
    parameterised (``Auth()``, ``env["X"]``, ``Option<String>``), an operator first
    (``&str``, ``*mut``, ``!x``);
  * always: anything with characters no identifier has (``hunter2!``, ``a/b+c=``,
    ``3f9c...``), or an identifier with a 12+ character run that mixes letters and
    digits (``sk_live_4eC39HqLyjWDarjtT1``: random, not a name);
  * otherwise (a plain identifier such as ``hunter2`` or ``self.token``) only where it is
    data: a command-line flag (``--password=x``), an environment assignment
    (``DB_PASSWORD=x``, key in capitals, no space before ``=``), a pair of a connection
    string (``Server=db;Password=x;``, ``host=db password=x dbname=app``), a URL's query
    parameter (``?password=x&next=y``: the value ends at ``&``), or a whole line
    ``key: value`` / ``key=value`` (YAML, .env, .properties) whose value is not a type
    name (``str``, ``String``, ``SecretStr``) nor itself named like a secret
    (``password=password``).  So ``password = new_password`` in Python stays; the same
    line in an INI file stays too: memd cannot tell them apart.

  Where code is read as code, what it holds may still be a literal secret: a .env or shell line
  (``DB_PASSWORD=p@ss(word)``) takes its value to the next space; a URL's query parameter is
  data whatever it looks like (``&password=s3cr3t.Pass``); a pair of strings is (user, password)
  (``auth=("svc", "…")``); and code's fallback literal is one (``process.env.API_KEY || "…"``,
  ``os.environ.get("API_KEY") or "…"``).

  A quoted value stays when it is empty, a bare scheme (``"Bearer " + token``), a
  template (``f"Bearer {token}"``, ``"${DB_PASSWORD}"``, ``"%s"``): built, not written, a
  placeholder (``placeholders.py``) or itself the name of a secret (``"LAST_TOKEN"``).

Keys are found from the words naming secrets (in the lower-cased text), then judged in
Python: the key by ``secret_kind``, the value by ``_bare_verdict``.
"""

from __future__ import annotations

import re
from typing import Final

from .keys import TRAILERS, is_sensitive_key, secret_kind
from .placeholders import is_placeholder
from .redactions import MARKER, Span
from .rule import has_digit, has_letter_and_digit

__all__ = ["KEY_TRIGGER", "assignments"]

_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_WORDS: Final = (
    "pass(?:words?|wd|phrases?)?",
    "pwd",
    "secrets?",
    "token",
    "credentials?",
    "auth(?:orization)?",
    "keys?",
)
_KEY_TAIL: Final = (
    rf"(?:[_.-]?(?:{'|'.join(sorted(TRAILERS, key=len, reverse=True))}|[0-9]+)){{0,3}}"
    r"""(?P<quote>\\?["']?)[ \t]{0,8}(?P<sep>=>|:=|=(?![=~>])|:(?![:=]))[ \t]{0,8}"""
)
_KEY_STEMS: Final = tuple(re.compile(word + _KEY_TAIL) for word in _KEY_WORDS)
KEY_TRIGGER: Final = re.compile("|".join(_KEY_WORDS))
"""A word naming a secret, then only trailers up to a separator: each starts with a
literal, so the search is fast, and keys like ``max_tokens`` never reach Python."""
_QUOTED: Final = re.compile(
    r"""[rbfuRBFU]{0,2}(?:"((?:[^"\\\n`]|\\[^\n`]){1,512})"|'((?:[^'\\\n`]|\\[^\n`]){1,512})'|\\"([^"\\\n`]{1,512})\\")"""
)
_BARE: Final = re.compile(r"""[^\s"'`,;()\[\]{}<>]{1,512}""")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
"""A name in code, JavaScript's ``$`` too (``CancelToken$1``, a bundler's rename)."""
_NAME_OF_WORDS: Final = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]*)+")
"""An identifier of two words or more (``LAST_TOKEN``, ``authToken``); ``secret123`` is one."""
_SHORT_NUMBER: Final = re.compile(r"[+-]?[0-9]{1,7}(?:\.[0-9]+)?")
_RANDOM_RUN: Final = re.compile(r"[A-Za-z0-9]{12,}")
_LINE_LEAD: Final = re.compile(r"""[ \t]*(?:(?:export|set|-)[ \t]+)?\\?["']?""")
_LINE_TAIL: Final = re.compile(r"[ \t]*(?:#[^\n]{0,1024})?(?:\r?\n|\Z)")
_PAIR_AFTER: Final = re.compile(r"[ \t]+[A-Za-z_][A-Za-z0-9_]{0,30}=[^\s=,;()]")
_PAIR_BEFORE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,30}=[^\s=,;()]{1,128}[ \t]+\Z")
_NOT_DATA_FIRST: Final = frozenset("$%@&*!|^~")
"""A value starting so is a reference ($VAR, %VAR%), a decorator or an operator."""
_CODE_NEXT: Final = frozenset("([<")
"""A value followed so is called, indexed or parameterised: code."""
_SCHEMES: Final = frozenset({"bearer", "basic", "token", "digest"})
_PLACEHOLDER: Final = re.compile(
    r"\$\{[^{}\n]{1,64}\}"
    r"|\{\{?[ \t]{0,4}[A-Za-z_][A-Za-z0-9_.]{0,64}[ \t]{0,4}\}"
    r"|%(?:\([A-Za-z_][A-Za-z0-9_]{0,64}\))?s"
)
"""``${VAR}``, ``{name}``, ``{{ name }}``, ``%s``, ``%(name)s``: a value built, not written."""
_LITERALS: Final = frozenset(
    {"true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off", "required", "optional", "empty"}
)
_TYPE_NAMES: Final = frozenset(
    {"str", "string", "bytes", "int", "integer", "float", "number", "bool", "boolean", "any", "unknown", "object"}
)


def _random_looking(identifier: str) -> bool:
    """A 12+ character run of letters and digits with both: generated, not a name."""
    return any(has_letter_and_digit(run) for run in _RANDOM_RUN.findall(identifier))


def _names_a_type(identifier: str) -> bool:
    if identifier.lower() in _TYPE_NAMES:
        return True
    return identifier[0].isupper() and any(c.islower() for c in identifier) and not has_digit(identifier)


def _quoted_is_secret(inside: str) -> bool:
    """A quoted value is a secret unless empty, already redacted, a bare auth scheme
    (``"Bearer " + token``) or a template (``f"Bearer {token}"``, ``"${DB_PASSWORD}"``)."""
    if not inside.strip() or MARKER.search(inside) or inside.strip().lower() in _SCHEMES or is_placeholder(inside):
        return False
    if _NAME_OF_WORDS.fullmatch(inside) and is_sensitive_key(inside) and not _random_looking(inside):
        return False  # a name, not a value: ``LAST_TOKEN = "LAST_TOKEN"``, ``"authToken"``
    return _PLACEHOLDER.search(inside) is None


def _bare_verdict(value: str, next_char: str) -> bool | None:
    """Whether an unquoted value of a sensitive key is a secret: ``None`` for a plain
    identifier, which is one only where it is data (module docstring: the rules)."""
    if len(value) < 3 or value[0] in _NOT_DATA_FIRST or next_char in _CODE_NEXT:
        return False
    if value.lower() in _LITERALS or _SHORT_NUMBER.fullmatch(value):
        return False
    if not _IDENTIFIER.fullmatch(value) or _random_looking(value):
        return True
    if "." in value or _names_a_type(value) or is_sensitive_key(value):
        return False
    return None


def _key_start(low: str, stem_start: int) -> int:
    """Where the key holding a stem begins: back over key characters, 64 at most."""
    start = stem_start
    limit = max(0, stem_start - 64)
    while start > limit and low[start - 1] in _KEY_CHARS:
        start -= 1
    return start


def _is_data_line(text: str, key_start: int, value_end: int) -> bool:
    """Whether ``key: value`` fills its line, as in YAML, .env or .properties.

    Looks at most 80 characters back and one comment forward, so a long line with many
    candidates stays linear.
    """
    window = max(0, key_start - 80)
    newline = text.rfind("\n", window, key_start)
    if newline < 0 and window > 0:
        return False
    if not _LINE_LEAD.fullmatch(text, newline + 1, key_start):
        return False
    return _LINE_TAIL.match(text, value_end) is not None


def _in_query(text: str, key_start: int, match: re.Match[str]) -> bool:
    """Whether ``key=value`` is a parameter of a URL's query: right after ``?`` or ``&``."""
    return text[key_start - 1 : key_start] in ("?", "&") and match.group("sep") == "=" and not match.group("quote")


def _in_pairs(text: str, key_start: int, value_end: int) -> bool:
    """Whether ``key=value`` is one pair of a connection string: ``;`` before or after it
    (``Server=db;Password=x;``), or another ``name=value`` next to it across a space
    (``host=db password=x dbname=app``)."""
    if text[key_start - 1 : key_start] == ";" or text[value_end : value_end + 1] == ";":
        return True
    if _PAIR_AFTER.match(text, value_end):
        return True
    return _PAIR_BEFORE.search(text, max(0, key_start - 160), key_start) is not None


def _is_data(text: str, key_start: int, match: re.Match[str], value_end: int) -> bool:
    """Whether a ``key <sep> value`` is data, not code: a command-line flag, an
    environment assignment, a pair of a connection string, or a line of YAML, .env or
    .properties."""
    key = text[key_start : match.start("quote")]
    tight = match.start("sep") == match.end("quote")
    sep = match.group("sep")
    if key.startswith("-") or (tight and sep == "=" and key.isupper()):
        return True
    if tight and sep == "=" and (_in_query(text, key_start, match) or _in_pairs(text, key_start, value_end)):
        return True
    return tight and sep in (":", "=") and _is_data_line(text, key_start, value_end)


def _assignment_secret(text: str, key_start: int, match: re.Match[str]) -> Span | None:
    """The secret part of one ``key <sep> value`` whose key is sensitive, if any."""
    value_start = match.end()
    quoted = _QUOTED.match(text, value_start)
    if quoted:
        group = next(index for index in (1, 2, 3) if quoted.group(index) is not None)
        return quoted.span(group) if _quoted_is_secret(quoted.group(group)) else None
    if (pair := _PAIR_OF_STRINGS.match(text, value_start)) is not None:  # ``auth=("svc", "…")``
        return pair.span(2) if _quoted_is_secret(pair.group(2)) else None
    if _is_env_line(text, key_start, match):  # ``DB_PASSWORD=p@ss(word)``: the whole word is the value
        bare = _ENV_VALUE.match(text, value_start)
    else:
        bare = _BARE.match(text, value_start)
    if bare is None:
        return None
    value = bare.group()
    if is_placeholder(value):  # before its trailing dots go (``sk-...``), and before the rest is judged
        return None
    query = _in_query(text, key_start, match)
    if query:  # a URL's ``?password=x&next=y``: ``&`` ends the value
        value = value.split("&", 1)[0].split("#", 1)[0]
    value = value.rstrip(".:")
    value_end = value_start + len(value)
    next_char = text[bare.end() : bare.end() + 1]
    verdict = (query and len(value) >= 3) or (_bare_verdict(value, next_char) if value else False)
    if verdict is None:
        verdict = _is_data(text, key_start, match, value_end)
    if not verdict:  # code, but a literal may be its fallback: ``env.API_KEY || "…"``, ``get("K") or "…"``
        return _fallback(text, bare.end())
    return (value_start, value_end)


_PAIR_OF_STRINGS: Final = re.compile(
    r"""[(\[][ \t]*(["'][^"'\n]{1,128}["'])[ \t]*,[ \t]*["']([^"'\n]{1,512})["'][ \t]*[)\]]"""
)
"""A (user, password) pair: requests' ``auth=("svc", "…")``, a tuple or list of two strings."""
_ENV_VALUE: Final = re.compile(r"[^\s'\"#]{1,512}")
_ENV_LEAD: Final = re.compile(r"[ \t]*(?:export[ \t]+)?")
_FALLBACK: Final = re.compile(r"""(?:\([^()\n]{0,120}\))?[ \t]*(?:\|\||\?\?|\bor\b)[ \t]*["']([^"'\n]{1,512})["']""")


def _is_env_line(text: str, key_start: int, match: re.Match[str]) -> bool:
    """Whether ``KEY=value`` starts its line (``export`` aside): a .env or shell line, whose value
    runs to the next space whatever characters it holds."""
    key = text[key_start : match.start("quote")]
    if not (key.isupper() and match.group("sep") == "=" and match.start("sep") == match.end("quote")):
        return False
    line_start = text.rfind("\n", max(0, key_start - 80), key_start) + 1
    return _ENV_LEAD.fullmatch(text, line_start, key_start) is not None


def _fallback(text: str, at: int) -> Span | None:
    """The literal a value in code falls back to: ``process.env.API_KEY || "…"``,
    ``os.environ.get("API_KEY") or "…"``."""
    found = _FALLBACK.match(text, at)
    return found.span(1) if found and _quoted_is_secret(found.group(1)) else None


def assignments(text: str, low: str) -> list[tuple[int, int, str]]:
    """Secret values of sensitive keys in ``key = value`` and its relatives, each with the
    kind its key names."""
    hits: dict[int, tuple[int, re.Match[str]]] = {}
    for stem in _KEY_STEMS:
        for match in stem.finditer(low):
            if match.end() not in hits:
                hits[match.end()] = (_key_start(low, match.start()), match)
    spans: list[tuple[int, int, str]] = []
    for _, (key_start, match) in sorted(hits.items()):
        if spans and key_start < spans[-1][1]:
            continue  # inside the secret just found
        if text[key_start - 1 : key_start] == ":":
            continue  # a segment of a colon-separated name (``arn:aws:secretsmanager:…:secret:prod/db``)
        kind = secret_kind(text[key_start : match.start("quote")])
        if kind is None:
            continue
        span = _assignment_secret(text, key_start, match)
        if span is not None:
            spans.append((*span, kind))
    return spans
