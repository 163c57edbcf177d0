"""Values that are secrets by what stands beside them: rows of the secret table.

- *pairs*: a key's id and its secret passed together, ``algoliasearch("L8XK2M4PQZ",
  "<32 hex>")``, ``Client("AC…", "<32 hex>")``: long hex alone is a digest or a commit, but hex
  passed right after an id-like literal in one call is the key that goes with the id;
- *prose*: a secret said in a sentence, ``the password is Tr0ub4dor&3x``, ``login is
  admin@acme.io / hunter2!``, where ``key = value`` finds nothing: only a value that looks
  made up (a digit, a symbol or mixed case: not ``the password is stored in vault``);
- a URL query parameter named for an API key (``?appid=``, ``&key=``) with a long value, and
  a URL whose path names a webhook (``/webhooks/<token>``, ``/hooks/<token>``): the rest of it.
"""

from __future__ import annotations

import re
from typing import Final

from .placeholders import is_placeholder
from .rule import Rule, has_letter_and_digit

__all__ = ["NEIGHBOUR_RULES"]

_VALUE: Final = r"""["'`]?([^\s"'`]{4,127}[^\s"'`.,;:!?)])"""
"""A value said in prose: no spaces or quotes, sentence punctuation left out at its end.  Each
row's regex starts with its trigger, a literal, which the regex engine skips to."""


def _made_up(value: str) -> bool:
    """A value people make up for a secret rather than a word: a digit, a symbol or mixed case."""
    if is_placeholder(value) or (value.isalpha() and (value.islower() or value.istitle())):
        return False
    return any(not char.isalpha() for char in value) or not value.islower()


_SAID: Final = r"(?:\s+(?:is|was|would be|should be|will be)\s+|\s+(?:is|was)\s*:\s*)"

NEIGHBOUR_RULES: Final = (
    *(
        Rule(
            "paired-key",
            opening,
            re.compile(
                rf"""{re.escape(opening)}[A-Za-z0-9_-]{{6,40}}(\\?["'])\s*,\s*(\\?["'])([0-9a-fA-F]{{32,128}})\2"""
            ),
            group=3,
        )
        for opening in ('("', "('", '(\\"')
    ),
    *(
        Rule(kind, word, re.compile(rf"{word}{_SAID}{_VALUE}"), group=1, lowered=True, check=_made_up)
        for kind, words in (
            ("password", ("password", "passphrase", "passwd", "pwd")),
            ("secret", ("secret",)),
            ("token", ("token",)),
            ("api-key", ("api key", "api-key", "apikey", "access key")),
        )
        for word in words
    ),
    *(
        Rule(
            "password",
            trigger,
            re.compile(rf"{start}{rest}(?:{_SAID}|\s*:\s*)[^\s/,]{{1,128}}\s*(?:/|,|\band\b)\s*{_VALUE}"),
            group=1,
            lowered=True,
            check=_made_up,
        )
        for trigger, start, rest in (
            ("login", "login", r"s?"),
            ("log-in", "log-in", r"s?"),
            ("cred", "cred", r"(?:entials?|s)"),
            ("pass", "user", r"(?:name)?\s*/\s*pass(?:word)?"),  # found by its rarer word
        )
    ),
    Rule(  # a URL whose path names a webhook: what follows is its secret (any service, not only Slack's)
        "webhook-url",
        "hook",
        re.compile(r"/(?:web)?hooks?(?:b2)?/(?:[0-9]+/)?([^\s\"'<>?#]{16,512})"),  # after a numeric id
        group=1,
        lowered=True,
        check=lambda path: has_letter_and_digit(path) and not is_placeholder(path),
    ),
    *(
        Rule(
            "api-key",
            trigger,
            re.compile(rf"{trigger}(?<=[?&]{trigger})([^&#\s\"'<>]{{16,256}})"),
            group=1,
            check=has_letter_and_digit,
        )
        for trigger in ("appid=", "app_id=", "key=")
    ),
)
