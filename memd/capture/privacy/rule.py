"""One row of the secret table: a name, a literal that triggers it, a regex (``rules.py`` holds
the table, ``command_line.py`` the rows for credentials on a command line)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from .redactions import Span

__all__ = ["Rule", "has_digit", "has_letter_and_digit"]


class Rule(NamedTuple):
    """A secret recognised by a regular expression alone: one rule of the table below."""

    name: str
    """What it finds (``github-token``, ``stripe-key``): tests name their examples by it."""
    trigger: str
    """A literal every match contains, lower-cased: one search for all the triggers lets text
    without any skip every rule."""
    regex: re.Pattern[str]
    group: int = 0
    """The part of the match that is secret (the rest is context and stays)."""
    lowered: bool = False
    """Matched against the lower-cased text (the pattern is written in lower case)."""
    check: Callable[[str], bool] | None = None
    """A last test on the secret part (as the original text has it, even when ``lowered``), for
    shapes a regex says badly."""
    reach: int = 0
    """Characters before the match that are part of the secret: a shape whose fixed literal is
    not at its start (``<32 hex>-us12``) is found by that literal, fast, and checks what comes
    before it in a lookbehind of this width."""

    def __call__(self, text: str, low: str) -> list[Span]:
        subject = low if self.lowered else text
        return [
            (match.start(self.group) - self.reach, match.end(self.group))
            for match in self.regex.finditer(subject)
            if self.check is None or self.check(text[match.start(self.group) : match.end(self.group)])
        ]


def has_digit(secret: str) -> bool:
    return any(char.isdigit() for char in secret)


def has_letter_and_digit(secret: str) -> bool:
    return has_digit(secret) and any(char.isalpha() for char in secret)
