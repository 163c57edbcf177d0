"""Values that stand for a secret without being one: what people write in docs, prompts and
examples, and references to where a secret lives.

Redacting them hides nothing and costs the reader the example (``sk-xxxx…``, ``"password":
"********"``, ``<YOUR_API_KEY>``, ``AKIAIOSFODNN7EXAMPLE``), so every layer of the filter asks
``is_placeholder`` before it redacts: the provider shapes, ``key = value`` and the command-line
flags.  Three kinds:

- *masked*: one filler character (``x``, ``X``, ``*``, ``#``, ``.``, ``0``, ``•``) is most of
  the value, after any provider prefix, or the value is cut short (``sk-...``): a random secret
  never repeats one character like that;
- *named*: the value says what it stands for (``<...>``, ``{...}``, ``YOUR_TOKEN``, ``changeme``,
  the documented example keys' ``EXAMPLE``, the bare word ``password``);
- *elsewhere*: a reference to where the secret is, not the secret (``$VAR``, ``${VAR}``,
  ``$(command)``, a file path, an ARN).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Final

__all__ = ["is_placeholder"]

_FILLERS: Final = frozenset("xX*#.0•_-")
_MASKED_SHARE: Final = 0.6
"""A filler character this share of a value or more: masked (a random 20-character token's most
frequent character is ~15% of it)."""
_NAMED: Final = re.compile(
    r"<[^<>\n]{1,64}>|\{\{?[^{}\n]{1,64}\}\}?|\[[A-Za-z_ -]{1,64}\]"
    r"|(?:^|[^a-z])your[-_ ]?(?:[a-z]+[-_ ]?){0,3}(?:key|token|secret|password|pass|pwd|id)"
    r"|example|placeholder|changeme|change[-_]me|redacted|dummy|fake[-_]?(?:key|token|secret|password)",
    re.IGNORECASE,
)
_WORDS: Final = frozenset(
    {"password", "passwd", "secret", "token", "apikey", "api_key", "none", "null", "todo", "tbd", "...", "…"}
)
_CUT: Final = re.compile(r"[A-Za-z0-9]{0,8}[-_]?[A-Za-z0-9]{0,4}(?:\.{2,}|…)")
"""A prefix and an ellipsis: ``sk-...``, ``hf_…``, ``ghp_abc...``."""
_ELSEWHERE: Final = re.compile(r"\$\{|\$\(|\$[A-Za-z_]|%[A-Za-z_][A-Za-z0-9_]*%|arn:aws")
_PATH: Final = re.compile(
    r"(?:~|\.{1,2})?(?:/[a-z0-9_.@-]+)+/?|(?:~|\.{1,2}|/(?:run|var|etc|home|tmp|opt|srv|Users|secrets))/[^\s]*"
)
"""A file path: lower-case segments (``/var/secrets/google/key.json``) or a well-known root; base64
has upper case in its segments, so a secret that starts with ``/`` is not taken for one."""


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a secret rather than being one (module docstring)."""
    value = value.strip().strip("\"'`")
    if not value or value.lower() in _WORDS:
        return True
    if _NAMED.search(value) or _ELSEWHERE.match(value) or _CUT.fullmatch(value) or _PATH.fullmatch(value):
        return True
    body = re.sub(r"^[A-Za-z]{1,8}[-_]", "", value)  # after a provider prefix: ``sk-``, ``ghp_``
    if len(body) >= 4:
        char, count = Counter(body).most_common(1)[0]
        if char in _FILLERS and count >= _MASKED_SHARE * len(body):
            return True
    return False
