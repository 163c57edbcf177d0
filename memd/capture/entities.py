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
SCAN: Final = 2_000
"""Characters of an event's text read: what an event is about comes early, and a long tool output
would cost ingest more than its tail is worth (0.1-0.4 ms for these 2,000)."""


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
_HANDLE: Final = re.compile(r"@([A-Za-z][\w-]{1,38})")
_NAME: Final = re.compile(r"[A-Z][a-z]{2,}")
_PATH: Final = re.compile(
    r"(?:~|\.{1,2})?(?:/?[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}"
    r"|[\w-]{2,}(?:\.[\w-]+)*\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|m|"
    r"scala|sql|sh|bash|zsh|ps1|md|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|xml|html|css|scss|vue|"
    r"svelte|proto|graphql|tf|hcl|gradle|csv|ipynb|dockerfile)"
)
_IDENT: Final = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:test_\w+|Test[A-Z]\w+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|"
    r"[a-z]+(?:[A-Z][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)"
)
_ERROR: Final = re.compile(r"[A-Z][A-Za-z0-9]*(?:Error|Exception|Warning|Fault|Panic)|E[A-Z]{4,}|TS\d{4}|E\d{4}")
_NOT_MEMBERS: Final = frozenset({"py", "js", "ts", "md", "json", "com", "org", "io", "txt"})
"""What ends a dotted word that names a file or a host, not an attribute."""
_ERROR_ENDS: Final = ("Error", "Exception", "Warning", "Fault", "Panic")
_ISSUE: Final = re.compile(r"#\d{1,6}|CVE-\d{4}-\d{3,7}|[A-Z][A-Z0-9]{1,9}-\d{1,6}")
_NOT_ISSUE: Final = frozenset({"UTF", "SHA", "ISO", "AES", "RSA", "HS", "RS", "ES", "PS", "TLS", "SSL", "MD", "X"})
_URL: Final = re.compile(r"(https?)://([A-Za-z0-9.-]+(?::\d+)?)(/[^\s?#'\"<>)\]`]*)?")
_MANAGERS: Final = frozenset({"pip", "pip3", "uv", "poetry", "pipx", "npm", "pnpm", "yarn", "bun", "cargo", "gem", "go",
                              "composer", "apt", "apt-get", "brew"})  # fmt: skip
_INSTALLS: Final = frozenset({"install", "add", "get", "i"})
_DEFINERS: Final = frozenset({"def", "class", "fn", "func", "function", "interface", "struct", "enum", "trait", "impl"})
_IMPORT: Final = re.compile(
    r"^\s*(?:from\s+([A-Za-z_][\w]*)[\w.]*\s+import\b|import\s+([A-Za-z_][\w]*)\b(?!\s*[=(])"
    r"|(?:import|export)\b.*?\bfrom\s+['\"]((?:@[\w-]+/)?[\w-][\w.-]*)['\"])"
    r"|\brequire\(\s*['\"]((?:@[\w-]+/)?[\w-][\w.-]*)['\"]\s*\)",
    re.MULTILINE,
)
_REDACTED: Final = re.compile(r"\[(?:REDACTED|PRIVATE)[^\]\n]{0,80}\]?")
_PUNCTUATION: Final = ".,;:'\"`()[]{}<>!?*|="
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


class _Found:
    """The entities of one event as they are found: each kind and name once, the first ``MAX_ENTITIES``."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], Entity] = {}

    def add(self, kind: str, name: str, role: str = "mention") -> None:
        name = name.strip(_PUNCTUATION)
        if 2 <= len(name) <= 200 and len(self.found) < MAX_ENTITIES and "REDACTED" not in name:
            self.found.setdefault((kind, name), Entity(kind, name, role))


def _word(found: _Found, token: str) -> None:
    """What one whitespace-separated token is: a URL, a handle, a ticket, a path, an error, a symbol.
    Cheap tests first (a character it must hold), a regex only for the tokens that pass them."""
    if "://" in token:
        if match := _URL.search(token):
            host = match.group(2).lower()
            found.add("url", f"{match.group(1)}://{host}{(match.group(3) or '').rstrip('.,;:')}")
            found.add("host", host)
        return
    word = token.strip(_PUNCTUATION)
    if ":" in word:  # tests/test_login.py::test_refresh, src/app.py:88:12, key:value
        for part in word.split(":"):
            if part and not part.isdigit():
                _word(found, part)
        return
    if not word:
        return
    first = word[0]
    if first == "@":
        if (match := _HANDLE.fullmatch(word)) and "/" not in word:
            found.add("person", "@" + match.group(1))
        return
    if (first == "#" or "-" in word) and (match := _ISSUE.fullmatch(word)):
        if word.split("-", 1)[0] not in _NOT_ISSUE:
            found.add("issue", word)
        return
    if ("/" in word or "." in word) and _PATH.fullmatch(word) and not word.replace(".", "").isdigit():
        found.add("file", word)
        return
    word = word.split("(", 1)[0].strip(_PUNCTUATION)  # a call: refresh_token(user
    if first.isupper() and (word.endswith(_ERROR_ENDS) or word[:1] in "ET") and _ERROR.fullmatch(word):
        found.add("error", word)
        return
    dotted_file = "." in word and word.rsplit(".", 1)[-1].lower() in _NOT_MEMBERS
    if ("_" in word or not (word.islower() or word.isupper())) and not dotted_file and _IDENT.fullmatch(word):
        found.add("symbol", word)


def _install(found: _Found, words: list[str], at: int) -> None:
    """``pip install httpx "fastapi>=0.1"`` at ``words[at]`` (the manager): the packages it names."""
    for word in words[at + 2 : at + 12]:
        if word.startswith("-"):
            continue
        if not re.match(r"[a-z@]", word) or word.lower() in _COMMON or word in ("&&", "||", ";", "|"):
            break  # the command's arguments ended: prose or another command follows
        name = word if word.startswith("@") else re.split(r"[=<>~^:@\[]", word, maxsplit=1)[0]
        name = re.split(r"@(?=[\d^~<>=])", name, maxsplit=1)[0].strip(_PUNCTUATION)
        if re.fullmatch(r"(?:@[\w-]+/)?[A-Za-z][\w.-]{0,60}", name) and not name.endswith((".txt", ".toml")):
            found.add("package", name)


def extract(kind: str, tool: str | None, text: str, meta: dict[str, object] | None = None) -> list[Entity]:
    """The entities of one stored event, first found first, each kind and name once.

    One pass over its words (``str.split``): a regex runs only on a word that holds the character
    its kind needs (``/`` or ``.`` for a path, ``_`` or mixed case for a symbol...), so a 2 KB
    tool output costs about a tenth of a millisecond."""
    meta = meta or {}
    head = text[:SCAN]
    if "[" in head:
        head = _REDACTED.sub(" ", head)  # a marker (and what it names) is never part of an entity
    found = _Found()
    conversational = kind in ("prompt", "assistant", "memory", "claude-memory")
    if kind in ("prompt", "assistant", "memory") and (who := speaker(head)):
        found.add("person", who, "speaker")
    if "Author:" in head:
        for match in _AUTHOR.finditer(head):
            found.add("person", match.group(1), "author")
    for key in ("file_path", "path", "notebook_path"):
        if isinstance(value := meta.get(key), str) and value and "REDACTED" not in value:
            found.add("file", value)
    if isinstance(command := meta.get("command"), str) and (program := _command(command)):
        found.add("command", program)
    words = head.split()
    previous = ""
    for at, token in enumerate(words):
        if not (token.isalpha() and token.islower()):  # a plain lower-case word names nothing by itself
            _word(found, token)
        if token in _DEFINERS and at + 1 < len(words):
            name = words[at + 1].split("(", 1)[0].split(":", 1)[0].strip(_PUNCTUATION)
            if re.fullmatch(r"[A-Za-z_]\w{2,60}", name):
                found.add("symbol", name)
        elif token in _INSTALLS and previous in _MANAGERS:
            _install(found, words, at - 1)
        elif conversational and token[:1].isupper() and (previous[-1:].islower() or previous[-1:] in (",", ";")):
            name = token.strip(_PUNCTUATION)
            if _NAME.fullmatch(name) and name.lower() not in _COMMON and not token.endswith(("(", "'s(")):
                found.add("name", name)
        previous = token
    if "import" in head or "require(" in head:
        for match in _IMPORT.finditer(head):
            found.add("package", next(group for group in match.groups() if group))
    errors = {name for entity_kind, name in found.found if entity_kind == "error"}
    return [e for e in found.found.values() if not (e.kind == "symbol" and e.name in errors)]


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
