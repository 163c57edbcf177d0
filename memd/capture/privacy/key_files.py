"""A file named for a secret, read: its lone tokens are the secret.

``cat config/master.key`` prints 32 hex characters and nothing names them: alone, hex is a
digest or a commit.  What names them is the file: when a text or an event reads a file whose
name says key, secret, token, password or credentials (``master.key``, ``*.pem``, ``id_ed25519``,
``.pgpass``, ``api_token.txt``), a line of what it holds that is one token (16 to 512
characters, letters and digits) is the secret, ``[REDACTED:key-file]``.

- A text that reads one itself (a reading command, ``cat``, ``less``, ``head``, ``type``,
  ``Get-Content``…, then the token on the next line): rows of the secret table
  (``KEY_FILE_RULES``), found by their command like every row.
- An event: one of its short strings is such a path (a Read tool's ``file_path``) or such a
  command (a Bash tool's ``cat``) and its output, another string, holds the lone token
  (``reads_key_file``, then ``lone_tokens`` over each string: ``Privacy.value``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from .placeholders import is_placeholder
from .rule import Rule, has_letter_and_digit

__all__ = ["KEY_FILE_RULES", "KIND", "lone_tokens", "reads_key_file"]

KIND: Final = "key-file"

_NAME: Final = (
    r"""[^\s"'`]*?(?:[\w.-]*\.(?:key|pem|p8)|id_(?:rsa|dsa|ecdsa|ed25519)|\.pgpass|\.netrc|credentials(?:\.\w+)?"""
    r"""|[\w.-]*(?:secret|token|api[_-]?key|passw(?:or)?d)[\w.-]*)"""
)
_ARGUMENTS: Final = rf"""(?:\s+-\S+)*\s+["']?{_NAME}["']?"""
_TOKEN: Final = r"[A-Za-z0-9+/=_.~-]{16,512}"
_COMMANDS: Final = ("cat", "less", "more", "head", "tail", "bat", "type", "get-content", "gc")

KEY_FILE_RULES: Final = tuple(
    Rule(
        KIND,
        command + " ",
        re.compile(
            rf"""{command}(?<![\w-]{command}){_ARGUMENTS}[^\S\n]*(?:\n|\\n)[^\S\n]*({_TOKEN})(?=["'`\\]|\s|$)"""
        ),
        group=1,
        lowered=True,
        check=lambda token: has_letter_and_digit(token) and not is_placeholder(token),
    )
    for command in _COMMANDS
)
"""``cat config/master.key`` and the token it printed on the next line (a newline, or ``\\n`` in
JSON).  Each regex starts with its command, a literal; the lookbehind after it makes it a word
(``concat`` is no ``cat``)."""

_PATH: Final = re.compile(rf"""\s*["']?{_NAME}["']?\s*""", re.IGNORECASE)
_READ: Final = re.compile(rf"""(?:^|[\s;&|(`$])(?:{"|".join(_COMMANDS)}){_ARGUMENTS}(?:\s|$)""", re.IGNORECASE)
_WORDS: Final = ("key", "pem", "id_", "pgpass", "netrc", "credential", "secret", "token", "passw")
"""One of these is in every name ``_NAME`` takes: most strings are ruled out by a substring search."""
_LONE: Final = re.compile(rf"^[^\S\n]*({_TOKEN})[^\S\n]*$", re.MULTILINE)
_PUBLIC_BLOCK: Final = re.compile(
    r"-----BEGIN (?:CERTIFICATE|[A-Z0-9 ]*PUBLIC KEY|CERTIFICATE REQUEST)-----.*?-----END [A-Z0-9 ]+-----", re.DOTALL
)
_SHORT: Final = 1024
"""A path or a command this long at most: an event's output is not searched for a path."""


def reads_key_file(strings: Iterable[str]) -> bool:
    """Whether one of an event's short strings is a key file's path or a command reading one."""
    for text in strings:
        if len(text) > _SHORT:
            continue
        low = text.lower()
        if not any(word in low for word in _WORDS):
            continue
        if _PATH.fullmatch(text) or _READ.search(text):
            return True
    return False


def lone_tokens(text: str) -> list[tuple[int, int, str]]:
    """The lines of ``text`` that are one token with letters and digits: (start, end, ``KIND``);
    not those of a certificate or a public key in it (``cert.pem`` holds no secret)."""
    public = [match.span() for match in _PUBLIC_BLOCK.finditer(text)] if "-----BEGIN" in text else []
    return [
        (match.start(1), match.end(1), KIND)
        for match in _LONE.finditer(text)
        if has_letter_and_digit(match.group(1))
        and not is_placeholder(match.group(1))
        and not any(start <= match.start() < end for start, end in public)
    ]
