"""Credentials on a command line: the rows of the secret table for flags that take them.

``mysql``/``mariadb`` ``-pPASSWORD``, ``-u``/``--user user:password`` (curl, httpie...), the short
password flags of everyday tools after their tool (``_TOOL_FLAGS``), and any flag whose name says
it takes a credential, in any tool (``keys.CREDENTIAL_NAME``): the class a person meets in every shell
history, not one provider's format.  A value that is a ``--help`` metavar, a plain word of prose,
OpenSSL's ``env:``/``file:`` is no credential (``_flag_placeholder``; a placeholder such as
``xxxx`` or ``<TOKEN>`` is left alone by ``shapes.py``, as for every row).
"""

from __future__ import annotations

import re
from typing import Final

from .keys import CREDENTIAL_NAME
from .rule import Rule

__all__ = ["COMMAND_LINE_RULES"]

_METAVAR: Final = re.compile(r"[A-Z][A-Z0-9_]*")
_PROSE_WORD: Final = re.compile(r"[a-z]+")
_NOT_A_VALUE: Final = re.compile(r"(?:env|file|fd|stdin)(?::|\Z)|x{4,}|(?:your|my|the)[-_]", re.IGNORECASE)


def _flag_placeholder(value: str) -> bool:
    """A flag's value that is no credential: a metavar (``PASSWORD``), a plain lower-case word
    (prose: "pass --token when asked"), OpenSSL's ``env:VAR``/``file:path``, or a placeholder
    (``xxxx``, ``your-token``)."""
    value = value.rstrip(".,;:)]}>`")  # the punctuation of the prose or markup around it
    return bool(_METAVAR.fullmatch(value) or _PROSE_WORD.fullmatch(value) or _NOT_A_VALUE.match(value))


_TOOL_FLAGS: Final = (
    ("docker login", "-p", False),
    ("podman login", "-p", False),
    ("redis-cli", "-a", False),
    ("sshpass", "-p", False),
    ("ldapsearch", "-w", False),
    ("ldapmodify", "-w", False),
    ("ldapadd", "-w", False),
    ("ldapdelete", "-w", False),
    ("ldapwhoami", "-w", False),
    ("ldappasswd", "-w", False),
    ("ssh-keygen", "-N", False),
    ("ssh-keygen", "-P", False),
    ("zip", "-P", False),
    ("unzip", "-P", False),
    ("7z", "-p", True),
    ("mongo", "-p", False),
    ("mongosh", "-p", False),
    ("az login", "-p", False),
)
"""Short flags that take a password in everyday tools (``docker login -p``, ``redis-cli -a``,
``sshpass -p``, ``ldapsearch -w``, ``ssh-keygen -N``, ``zip -P``, ``7z -pSECRET``): a short flag
means a password only for its tool (``docker run -p`` is a port), so each is looked for after
its tool, or its tool's command, on the same line."""


def _tool_flag(tool: str, flag: str, attached: bool) -> Rule:
    gap = "" if attached else r"[ \t]+"
    return Rule(
        "cli-password",
        tool,
        re.compile(
            rf"{re.escape(tool)}(?<![A-Za-z0-9_.-]{re.escape(tool)})(?![A-Za-z0-9_-])[^\n|;&]{{0,200}}?[ \t]{flag}"
            rf"{gap}[\"']?([^\s'\"`$<{{[%-][^\s'\"]{{2,255}})"
        ),
        group=1,
        check=lambda value: not _flag_placeholder(value),
    )


COMMAND_LINE_RULES: Final = (
    # Credentials on a command line: the flags that take them, in the forms clients accept.
    Rule(
        "cli-password",
        "mysql",
        re.compile(r"mysql(?:dump|admin)?(?:[ \t]+-[^\s]+)*?[ \t]+-p([^\s'\"-][^\s'\"]{0,255})"),
        group=1,
    ),
    Rule(
        "cli-password",
        "mariadb",
        re.compile(r"mariadb(?:-dump)?(?:[ \t]+-[^\s]+)*?[ \t]+-p([^\s'\"-][^\s'\"]{0,255})"),
        group=1,
    ),
    *(
        Rule(
            "cli-user-password",
            flag,
            re.compile(rf"{flag}(?<![A-Za-z0-9_-]{flag})(?:[ \t]+|=)[\"']?[^\s:'\"@/]{{1,128}}:([^\s'\"@]{{1,256}})"),
            group=1,
        )
        for flag in ("-u", "--user")
    ),
    *(_tool_flag(tool, flag, attached) for tool, flag, attached in _TOOL_FLAGS),
    Rule(  # a flag whose name says it takes a credential, in any tool: --password, -storepass, --auth-key
        "cli-secret-flag",
        "-",
        re.compile(
            rf"-(?<![a-z0-9_-]-)-?(?:[a-z0-9]+[-_.])*?{CREDENTIAL_NAME}(?:[-_.]?[0-9]+)?"
            r"[ \t]+(?:pass:)?[\"']?([^\s'\"`$<{[%@*-][^\s'\"]{2,511})"
        ),
        group=1,
        lowered=True,  # faster than a case-blind pattern; the check reads the original
        check=lambda value: not _flag_placeholder(value),
    ),
)
