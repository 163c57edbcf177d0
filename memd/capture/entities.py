"""The entities an event names, found without a model: pure functions over its stored text.

    person    who said it (a ``Name:`` turn, a git ``Author:``), an ``@handle``
    file      a path or a file name with an extension (``src/app/login.py``)
    symbol    a defined or called function, class or test (``def refresh_token``, ``TestLogin``)
    command   the program (and subcommand) a shell command runs (``git rebase``, ``pytest``)
    error     an exception or error code (``KeyError``, ``ENOENT``, ``TS2345``)
    issue     a ticket (``#412``, ``PAY-91``, ``CVE-2024-3094``)
    url, host a web address (without its query: that is where tokens travel) and its host
    package   what an install or an import names (``pip install httpx``, ``from rapidfuzz import``)
    name      a capitalized word inside a sentence: a person, place or thing someone named

Each entity has a canonical ``name`` and ``aliases``: the lower-case forms a question may use
for it (``src/app/login.py``, ``login.py``, ``login``).  Extraction reads the text that is
stored, i.e. after the privacy filter: a ``[REDACTED:kind]`` marker is never part of an entity,
so no entity can hold a secret the filter caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise
from typing import Final, NamedTuple

__all__ = ["KINDS", "Entity", "aliases_of", "extract", "named_in", "speaker"]

KINDS: Final = ("person", "file", "symbol", "command", "error", "issue", "url", "host", "package", "name")

MAX_ENTITIES: Final = 40
"""Entities kept per event (the first found): a 1 MB log names thousands of things, none of them well."""
SCAN: Final = 20_000
"""Characters of an event's text read: names come early, and extraction stays under a millisecond."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


class Entity(NamedTuple):
    kind: str
    name: str
    role: str = "mention"
    """``speaker`` (the event is this person's turn), ``author`` or ``mention``."""


_LABELS: Final = _words(
    """
    note error warning todo step example summary update fix bug question answer title subject re fwd hint tip
    info debug output input result status usage traceback caused expected actual user assistant system human ai
    prompt reply response context goal task tasks files decision decisions file path command description reason
    source date time edit edited read wrote run ran test tests plan next done fixed error warning remember
    important caveat session snapshot consolidated
    """
)
"""Words that end a ``Word:`` label rather than a speaker's name."""
_COMMON: Final = _words(
    """
    the a an this that these those there then than when what which who why how where while after before i i'm
    i've i'll i'd it it's its we you he she they my our your his her their me us him them and but or so if yes
    no not ok okay oh ah wow hey hi hello thanks thank sorry please also just still yeah well sure maybe monday
    tuesday wednesday thursday friday saturday sunday january february march april may june july august
    september october november december today tomorrow yesterday tonight god lol omg haha
    """
)
"""Capitalized words that name nobody: sentence openers, pronouns, days and months."""

_SPEAKER: Final = re.compile(r"\A\s*([A-Z][a-z'\-]{1,30}(?: [A-Z][a-z'\-]{1,30})?)\s?:\s+\S")
_AUTHOR: Final = re.compile(r"^Author:\s+([A-Z][\w'\-]+(?: [A-Z][\w'\-]+){0,3})\s*<", re.MULTILINE)
_HANDLE: Final = re.compile(r"(?<![\w.@/])@([A-Za-z][\w-]{1,38})\b(?![.@/]\w)")
_NAME: Final = re.compile(r"(?<=[a-z0-9,;] )([A-Z][a-z]{2,}(?:[ -][A-Z][a-z]{2,})?)\b(?!['\u2019]?\w*\()")
_PATH: Final = re.compile(
    r"(?<![\w/.@:-])((?:~|\.{1,2})?(?:/?[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}"
    r"|[\w-]{2,}(?:\.[\w-]+)*\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|m|"
    r"scala|sql|sh|bash|zsh|ps1|md|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|xml|html|css|scss|vue|"
    r"svelte|proto|graphql|tf|hcl|gradle|csv|ipynb|dockerfile))(?![\w/])"
)
_DEFINED: Final = re.compile(
    r"\b(?:def|class|fn|func|function|interface|struct|enum|trait|impl|type|const|let|var|async def)\s+"
    r"([A-Za-z_][\w]{2,60})"
)
_IDENT: Final = re.compile(
    r"(?<![\w.$/-])((?:[A-Za-z_]\w*\.)*(?:test_\w+|Test[A-Z]\w+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|"
    r"[a-z]+(?:[A-Z][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+))(?=\s*\(|\b)(?![./-]\w)"
)
_ERROR: Final = re.compile(
    r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Fault|Panic)|E[A-Z]{4,}|TS\d{4}|E\d{4}|SQLSTATE\s?\w{5}"
    r"|HTTP [45]\d\d|[45]\d\d (?:Not Found|Unauthorized|Forbidden|Internal Server Error|Bad Gateway|"
    r"Service Unavailable|Bad Request|Conflict|Too Many Requests))\b"
)
_ISSUE: Final = re.compile(r"(?<![\w/&#])(#\d{1,6})\b|\b(CVE-\d{4}-\d{3,7}|[A-Z][A-Z0-9]{1,9}-\d{1,6})\b")
_NOT_ISSUE: Final = frozenset({"UTF", "SHA", "ISO", "AES", "RSA", "HS", "RS", "ES", "PS", "TLS", "SSL", "MD", "X"})
_URL: Final = re.compile(r"\bhttps?://([A-Za-z0-9.-]+(?::\d+)?)(/[^\s?#'\"<>)\]`]*)?")
_INSTALL: Final = re.compile(
    r"\b(?:pip3?|uv(?: pip)?|poetry|pipx|npm|pnpm|yarn|bun|cargo|gem|go|composer|apt(?:-get)?|brew)\s+"
    r"(?:install|add|get|i)\s+((?:[@\w./:=<>~^-]+[ \t]*)+)"
)
_IMPORT: Final = re.compile(
    r"^\s*(?:from\s+([A-Za-z_][\w]*)[\w.]*\s+import\b|import\s+([A-Za-z_][\w]*)\b(?!\s*[=(])"
    r"|(?:import|export)\b.*?\bfrom\s+['\"]((?:@[\w-]+/)?[\w-][\w.-]*)['\"])"
    r"|\brequire\(\s*['\"]((?:@[\w-]+/)?[\w-][\w.-]*)['\"]\s*\)",
    re.MULTILINE,
)
_REDACTED: Final = re.compile(r"\[(?:REDACTED|PRIVATE)[^\]\n]{0,80}\]?")
_SHELL_SKIP: Final = frozenset({"sudo", "env", "time", "nice", "nohup", "exec", "command", "xargs", "timeout"})
_SUBCOMMANDS: Final = _words(
    """
    git npm pnpm yarn cargo go docker kubectl helm uv pip poetry make gh terraform systemctl memctl
    """
)


def speaker(text: str) -> str | None:
    """The name a ``Name: words`` turn opens with (a chat export, a meeting log), if any."""
    match = _SPEAKER.match(text)
    if match is None:
        return None
    name = match.group(1)
    return None if name.split()[0].lower() in _LABELS | _COMMON else name


def _command(command: str) -> str | None:
    """``git rebase`` for ``sudo git rebase -i main``; ``pytest`` for ``FOO=1 pytest -x``."""
    words = [w for w in command.split()[:6] if "=" not in w or w.startswith("-")]
    while words and (words[0] in _SHELL_SKIP or words[0].startswith("-")):
        words = words[1:]
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if not re.fullmatch(r"[A-Za-z][\w.+-]{0,40}", program):
        return None
    if program in _SUBCOMMANDS and len(words) > 1 and re.fullmatch(r"[a-z][\w-]{1,30}", words[1]):
        return f"{program} {words[1]}"
    return program


def _packages(spec: str) -> list[str]:
    names = []
    for word in spec.split():
        if word.startswith("-"):
            continue
        if not re.match(r"[a-z@]", word) or word.lower() in _COMMON:
            break  # the command's arguments ended: prose or another command follows
        name = re.split(r"[=<>~^:@]", word.lstrip("@"), maxsplit=1)[0] if not word.startswith("@") else word
        name = re.split(r"@(?=[\d^~<>=])", name, maxsplit=1)[0]
        if re.fullmatch(r"(?:@[\w-]+/)?[A-Za-z][\w.-]{0,60}", name) and not name.endswith((".txt", ".toml")):
            names.append(name)
    return names[:10]


def _clean(value: str) -> str:
    return value.strip(".,;:'\"`()[]{}")


def extract(kind: str, tool: str | None, text: str, meta: dict[str, object] | None = None) -> list[Entity]:
    """The entities of one stored event, first found first, each kind and name once."""
    meta = meta or {}
    head = _REDACTED.sub(" ", text[:SCAN])  # a marker (and what it names) is never part of an entity
    found: dict[tuple[str, str], Entity] = {}

    def add(entity_kind: str, name: str, role: str = "mention") -> None:
        name = _clean(name)
        if len(name) < 2 or len(name) > 200 or _REDACTED.search(name) or len(found) >= MAX_ENTITIES:
            return
        found.setdefault((entity_kind, name), Entity(entity_kind, name, role))

    if kind in ("prompt", "assistant", "memory") and (who := speaker(head)):
        add("person", who, "speaker")
    for match in _AUTHOR.finditer(head):
        add("person", match.group(1), "author")
    for match in _HANDLE.finditer(head):
        add("person", "@" + match.group(1))
    for key in ("file_path", "path", "notebook_path"):
        if isinstance(value := meta.get(key), str) and value and not _REDACTED.search(value):
            add("file", value)
    if isinstance(command := meta.get("command"), str) and (program := _command(command)):
        add("command", program)
    for match in _URL.finditer(head):
        host = match.group(1).lower()
        add("url", f"{match.group(0).split('://', 1)[0]}://{host}{(match.group(2) or '').rstrip('.,;:')}")
        add("host", host)
    for match in _PATH.finditer(_URL.sub(" ", head)):
        path = match.group(1)
        if not path.startswith(("http", "www.")) and not re.fullmatch(r"[\d.]+\w?", path):
            add("file", path)
    for match in _ERROR.finditer(head):
        add("error", match.group(1))
    for match in _ISSUE.finditer(head):
        issue = match.group(1) or match.group(2)
        if issue.split("-", 1)[0] not in _NOT_ISSUE:
            add("issue", issue)
    errors = {name for entity_kind, name in found if entity_kind == "error"}
    for match in _DEFINED.finditer(head):
        add("symbol", match.group(1))
    for match in _IDENT.finditer(head):
        name = match.group(1)
        if name in errors:
            continue
        if "." in name and name.rsplit(".", 1)[-1].lower() in {"py", "js", "ts", "md", "json", "com", "org", "io"}:
            continue
        add("symbol", name)
    for match in _INSTALL.finditer(head):
        for name in _packages(match.group(1)):
            add("package", name)
    for match in _IMPORT.finditer(head):
        add("package", next(group for group in match.groups() if group))
    if kind in ("prompt", "assistant", "memory", "claude-memory"):
        for match in _NAME.finditer(head):
            name = match.group(1)
            if name.split()[0].lower() not in _COMMON:
                add("name", name)
    return list(found.values())


def aliases_of(kind: str, name: str) -> list[str]:
    """The lower-case forms a question may name an entity by, the canonical one first."""
    lowered = name.lower()
    forms = [lowered]
    if kind == "file":
        base = lowered.rstrip("/").rsplit("/", 1)[-1]
        forms += [base, base.split(".", 1)[0]]
    elif kind == "symbol":
        last = lowered.rsplit(".", 1)[-1]
        forms += [last, last.replace("_", " ").strip()]
    elif kind == "url":
        forms.append(lowered.split("://", 1)[-1])
    elif kind == "person":
        forms += [*lowered.lstrip("@").split()[:1], lowered.lstrip("@")]
    elif kind == "command":
        forms += lowered.split()[-1:]
    elif kind == "package":
        forms.append(lowered.rsplit("/", 1)[-1])
    return [form for form in dict.fromkeys(forms) if len(form) >= 2]


def named_in(words: Iterable[str]) -> list[str]:
    """The aliases a query may be naming: its words, and each pair of neighbouring words."""
    words = list(words)
    return list(dict.fromkeys([*words, *(f"{a} {b}" for a, b in pairwise(words))]))
