"""Remove private content and secrets from text before memd stores anything.

A pure module: no IO, no logging, no state between calls.  Build a ``Privacy`` once
from the ``[privacy]`` config and call ``text`` or ``value`` for every event; both
return the filtered result and a ``Redactions`` (counts and lengths, never content,
so it is safe to log).

Private tags
------------
The user marks what must never be stored.  Three syntaxes, each enabled by
``privacy.tags`` (all three by default), in any letter case, and strictly::

    <private>...</private>              "xml"
    [private]...[/private]              "bracket"
    <!-- private -->...<!-- /private -->  "comment" (spaces or tabs around the word, or none)

Anything else is text: ``<private >``, ``< private>``, ``<pri vate>``, ``<privateX>``,
``<private/>`` and a tag split over two lines are not tags.

- Code is literal: a tag inside a fenced block (a line starting, after at most three
  spaces, with three or more backticks or tildes, up to the closing fence or the end of
  the text) or inside inline code (a run of backticks up to the next run of the same
  length on the same line) is not a tag, so text *about* the tags survives.
- A span runs from an opening tag to its closing tag of the same syntax; tags nest, and
  the outermost span is removed whole, inner tags of any syntax included.
- The span becomes ``privacy.marker`` (``"[PRIVATE]"``, ``"[REDACTED]"`` or ``""``); a
  span with nothing but whitespace inside vanishes without a marker.  With
  ``preserve_lines`` the replacement also keeps the span's newlines (marker first), so
  the line numbers of what follows stay right.
- An ``<private>`` or ``<!-- private -->`` whose span never closes is *unclosed*
  (``Redactions.unclosed``).  ``unclosed = "redact"`` (default) removes everything from
  it to the end of the text: the user asked for privacy and forgot the end, so memd
  errs toward removing.  ``unclosed = "keep"`` keeps that tag and the text after it as
  they are (spans further on are still removed), for people who would rather keep a
  typo than lose the rest of a prompt.
- A ``[private]`` opens a span only if a ``[/private]`` follows it: the span ends where
  nesting closes, or at the last ``[/private]`` when it never does.  Without one it is
  text, because ``[PRIVATE]`` is memd's own marker and a common label in prose: taking
  it for an unclosed tag would delete everything after any text quoting filtered output.
- A closing tag with no opening tag before it is removed (it hides nothing, and left
  alone it could pair with a marker later).

Secrets
-------
Whatever tags say, these are replaced by a marker naming the rule that found them,
``[REDACTED:stripe-key]`` (``privacy.secrets = false`` turns them off), inside code too:

- PEM private-key blocks, ``-----BEGIN ... PRIVATE KEY-----`` through ``-----END ...``,
  whole; a block cut before its END loses its base64 lines.
- Tokens recognised by shape, one rule each in ``_TOKEN_PATTERNS`` (data: a name, a
  literal that triggers it, a regex; tests/test_secret_rules.py generates fakes for every
  rule): AWS access key ids (``AKIA``/``ASIA`` + 16) and secret keys after
  ``aws_secret_access_key``, GitHub (``ghp_ gho_ ghs_ ghu_ ghr_ github_pat_``), OpenAI and
  Anthropic (``sk-...`` with a digit in it, so ``sk-learn-tutorial`` stays), Slack tokens
  (``xox[abposre]-``) and webhook URLs, JWTs (``eyJ...`` + two more base64url segments), and
  the provider formats of gitleaks' default rules: Google API keys, Hugging Face, PyPI,
  Stripe (``sk_/rk_`` live and test), SendGrid, Telegram bots, DigitalOcean, Shopify, GitLab
  (personal, runner, deploy, feed, trigger tokens...), npm, Twilio, Databricks, Square,
  Postman, Vault, age secret keys, Linear, New Relic, Doppler, Atlassian, 1Password,
  Adobe, Alibaba, Artifactory, Azure AD client secrets, ClickHouse, Clojars, Cloudflare
  origin CA, Duffel, Dynatrace, EasyPost, Facebook, Flutterwave, Fly.io, Frame.io, Grafana,
  Harness, Terraform Cloud, Heroku, Infracost, 42 Intra, MaxMind, Microsoft Teams webhooks,
  Notion, Octopus Deploy, OpenShift, Perplexity, PlanetScale, Prefect, Pulumi, ReadMe,
  RubyGems, Scalingo, Brevo (Sendinblue), Sentry, SettleMint, Shippo, Sourcegraph, Defined
  Networking, Dropbox, Mailchimp, Lob, Plaid, Typeform, Yandex, Twitter bearer tokens,
  Google OAuth client secrets, xAI, Groq, Replicate; and three shapes without a prefix,
  taken only where the text names their service: Discord bot tokens, Facebook
  ``<app id>|<token>`` and Mailgun ``key-<hex>``.  A shape whose fixed part is not at its
  start (Mailchimp's ``-us12``, MaxMind's ``_mmk``) is found by that part and looks back
  in a lookbehind (``_Pattern.reach``).
- Credentials on a command line: ``mysql``/``mariadb`` ``-pPASSWORD``, ``-u``/``--user
  user:password`` (curl, httpie...), and ``--password``, ``--token``, ``--secret``,
  ``--api-key`` (and kin) followed by a space and a value (``--token=x`` is an assignment,
  below).
- ``Authorization: <scheme> <credentials>`` (the credentials; the scheme stays) and
  ``Bearer <token>`` anywhere when the token has 16+ characters and a digit.
- The password in a URL: ``scheme://user:password@host`` keeps scheme, user and host.
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

  A quoted value stays when it is empty, a bare scheme (``"Bearer " + token``) or a
  template (``f"Bearer {token}"``, ``"${DB_PASSWORD}"``, ``"%s"``): built, not written.
- ``privacy.extra_patterns``: regular expressions of your own, compiled once; every
  non-empty match that does not touch a marker already in the text is replaced.

The shapes run first, all on the same text (overlapping matches merge into one marker,
named by the first rule), then ``key = value`` on the result, then each extra pattern,
so each step sees what a second filtering would see.  A shape glued to a word
(``xghp_...``), or to a marker, is not a token; a marker itself never matches anything.
A ``key = value`` secret is named by what its key names (``DB_PASSWORD=`` gives
``[REDACTED:password]``, ``api_key:`` ``[REDACTED:api-key]``: see ``secret_kind``); an
``extra_patterns`` match is ``[REDACTED:custom]``.

Sensitive keys
--------------
``is_sensitive_key`` splits a name into words (``snake_case``, ``kebab-case``,
``dotted.names``, ``camelCase``) and finds the last word that names a secret: password,
passwd, passphrase, pwd, secret, token, credential, auth, authorization (plurals of
password, passphrase, secret and credential too, but not ``tokens``, a count), a word
ending in one of them (``dbpassword``, ``authtoken``), or ``key`` after api, private,
secret, access, signing, encryption, master or account; digits at a word's end are
ignored (``password2``).  The key is sensitive when only encodings or digits
follow it (``value``, ``base``, ``b64``, ``hex``, ``raw``, ``str``, ``string``,
``bytes``, ``data``, ``encoded``, ``confirmation``...): ``password``, ``DB_PASSWORD``,
``apiKey``, ``x-api-key``, ``secret_key_base``, ``password2`` are; ``max_tokens``,
``input_tokens``, ``token_count``, ``token_type``, ``tokenizer``, ``password_field``,
``auth_method``, ``private_key_id``, ``author`` are not.  ``PWD`` and ``OLDPWD`` are
directories, not passwords.  In ``value``, the whole value of a sensitive key is
redacted: a string becomes ``[REDACTED:<kind>]`` and so does every string inside a list
or object under it; numbers, booleans and null stay.

Guarantees
----------
``text`` never raises and is idempotent (filtering its output changes nothing, and a
second pass finds no secret: a marker is none).  It runs in linear time: no pattern nests
quantifiers over overlapping characters, runs that could meet themselves again are
bounded (``{8,512}``), one Aho-Corasick pass finds which rules' triggers the text holds
(a search per trigger made 1 MB of code and logs take ~51 ms, one pass ~28 ms), only those rules
run, each starting with a literal the regex engine skips to (bench/privacy.py: a 1 MB
text in ~30 ms, bench/secrets.py: 50 KB in ~2.3 ms), and Python only looks at
candidates.  Should removing a span change
which text is code (a backtick merging with another), the tags are scanned again, at
most four rounds, after which everything from the first tag still live is removed.
Offsets are Python string indices, so Korean, emoji and any other text are handled
like ASCII.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import Any, Final, NamedTuple

import ahocorasick
import msgspec

from .config import PrivacyConfig

__all__ = ["MARKER", "Privacy", "Redactions", "is_sensitive_key", "redacted", "secret_kind"]

MARKER: Final = re.compile(r"\[REDACTED(?::[a-z0-9-]{1,40})?\]")
"""Any secret's marker, with or without its kind (rows stored before kinds have none)."""


def redacted(kind: str) -> str:
    """What a secret of ``kind`` becomes: ``[REDACTED:stripe-key]``.  The kind is a rule's
    name (lower case, digits, dashes), never anything of the secret."""
    return f"[REDACTED:{kind}]"


_MAX_ROUNDS: Final = 4
"""Rounds of tag removal before the fallback cut (see ``Privacy.text``)."""

Span = tuple[int, int]


class Redactions(msgspec.Struct, frozen=True, kw_only=True):
    """What a filter removed: counts and lengths, never content (safe to log)."""

    private_spans: int = 0
    """Private-tag spans removed (empty ones included)."""
    secrets: int = 0
    """Secrets replaced by a ``[REDACTED:<kind>]`` marker."""
    unclosed: bool = False
    """Some ``<private>`` or ``<!-- private -->`` was never closed."""
    chars_removed: int = 0
    """Characters of the input that were replaced, tags included."""
    kinds: dict[str, int] = {}
    """The secrets by the kind in their marker: a shape's name (``github-token``,
    ``stripe-key``...), what a key names (``password``, ``api-key``...: a value named like
    a secret) or ``custom`` (an ``extra_patterns`` match).  Names, never content."""

    def __add__(self, other: Redactions) -> Redactions:
        """The sum of two, e.g. over the fields of one event."""
        kinds = dict(self.kinds)
        for kind, n in other.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
        return Redactions(
            private_spans=self.private_spans + other.private_spans,
            secrets=self.secrets + other.secrets,
            unclosed=self.unclosed or other.unclosed,
            chars_removed=self.chars_removed + other.chars_removed,
            kinds=kinds,
        )


class _Edit(NamedTuple):
    start: int
    end: int
    replacement: str


def _splice(text: str, edits: Iterable[_Edit]) -> str:
    """``text`` with each (sorted, disjoint) edit applied."""
    parts: list[str] = []
    pos = 0
    for start, end, replacement in edits:
        parts += (text[pos:start], replacement)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _lower(text: str) -> str:
    """``text.lower()`` with the same length, so offsets into it are offsets into ``text``.

    U+0130 (İ) is the one character whose lower case is two characters.
    """
    low = text.lower()
    return low if len(low) == len(text) else text.replace("\u0130", "i").lower()


# --- private tags ---------------------------------------------------------------

_TAG_SYNTAX: Final = {
    "xml": r"<(?P<xml>/?)private>",
    "bracket": r"\[(?P<bracket>/?)private\]",
    "comment": r"<!--[ \t]{0,16}(?P<comment>/?)private[ \t]{0,16}-->",
}
"""Each syntax's tag, in lower case (matched against the lower-cased text); its named
group holds the ``/`` of a closing tag."""

_TAG_WORD: Final = re.compile(r"private(?:>|\]|[ \t]{0,16}-->)")
"""Where a tag can end: found by a fast literal search; the tag is then matched from the
few places it can start."""

_FENCE_LINE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)", re.M)
_BACKTICKS: Final = re.compile(r"`+")


class _Tag(NamedTuple):
    start: int
    end: int
    syntax: str
    closing: bool


def _fenced_blocks(text: str) -> list[Span]:
    """Fenced code blocks, fence lines included (CommonMark's rules, minus containers).

    A backtick fence's info string may not hold a backtick; the closing fence uses the
    same character, at least as many, and nothing but spaces after; an unclosed block
    runs to the end of the text.
    """
    blocks: list[Span] = []
    opened: tuple[int, str] | None = None
    for line in _FENCE_LINE.finditer(text):
        fence, rest = line.groups()
        if opened is None:
            if not (fence[0] == "`" and "`" in rest):
                opened = (line.start(), fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]) and not rest.strip():
            blocks.append((opened[0], line.end()))
            opened = None
    if opened is not None:
        blocks.append((opened[0], len(text)))
    return blocks


def _inline_code(text: str, start: int, end: int) -> list[Span]:
    """Inline code spans in ``text[start:end]`` (one line): a backtick run to the next run
    of the same length.  Linear: each run's partner is found by one right-to-left pass."""
    runs = [match.span() for match in _BACKTICKS.finditer(text, start, end)]
    partner: list[int | None] = [None] * len(runs)
    last_of_length: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        partner[index] = last_of_length.get(length)
        last_of_length[length] = index
    spans: list[Span] = []
    index = 0
    while index < len(runs):
        other = partner[index]
        if other is None:
            index += 1
        else:
            spans.append((runs[index][0], runs[other][1]))
            index = other + 1
    return spans


def _outside_code(text: str, tags: list[_Tag]) -> list[_Tag]:
    """The tags (sorted) that are not inside a fenced block or inline code.

    One pass: fences are found once, inline code only on the lines holding a tag.
    """
    fences = _fenced_blocks(text) if "```" in text or "~~~" in text else []
    fence_index = 0
    line_end = -1
    inline: list[Span] = []
    starts: list[int] = []
    live: list[_Tag] = []
    for tag in tags:
        while fence_index < len(fences) and fences[fence_index][1] <= tag.start:
            fence_index += 1
        if fence_index < len(fences) and fences[fence_index][0] <= tag.start:
            continue
        if tag.start > line_end:
            line_start = text.rfind("\n", max(line_end, 0), tag.start) + 1
            line_end = text.find("\n", tag.start)
            line_end = len(text) if line_end < 0 else line_end
            inline = _inline_code(text, line_start, line_end)
            starts = [start for start, _ in inline]
        index = bisect_right(starts, tag.start) - 1
        if index < 0 or inline[index][1] <= tag.start:
            live.append(tag)
    return live


def _partners(tags: list[_Tag]) -> dict[int, int]:
    """Opening tag index -> its closing tag index, nesting per syntax."""
    open_tags: dict[str, list[int]] = {}
    partners: dict[int, int] = {}
    for index, tag in enumerate(tags):
        stack = open_tags.setdefault(tag.syntax, [])
        if not tag.closing:
            stack.append(index)
        elif stack:
            partners[stack.pop()] = index
    return partners


class _TagScan(NamedTuple):
    edits: list[_Edit]
    found: Redactions


# --- secrets ----------------------------------------------------------------------

_SECRET_WORDS: Final = frozenset(
    {
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "passphrases",
        "pwd",
        "secret",
        "secrets",
        "token",
        "credential",
        "credentials",
        "auth",
        "authorization",
    }
)
_SECRET_ENDINGS: Final = ("password", "passwords", "passwd", "passphrase", "secret", "secrets", "token", "credentials")
_KEY_KINDS: Final = frozenset({"api", "private", "secret", "access", "signing", "encryption", "master", "account"})
_KEY_COMPOUNDS: Final = tuple(kind + key for kind in sorted(_KEY_KINDS) for key in ("key", "keys"))
_TRAILERS: Final = frozenset(
    {
        "value",
        "base",
        "b64",
        "base64",
        "hex",
        "raw",
        "str",
        "string",
        "bytes",
        "data",
        "enc",
        "encoded",
        "plain",
        "plaintext",
        "confirm",
        "confirmation",
    }
)
_DIRECTORIES: Final = frozenset({"PWD", "OLDPWD", "pwd", "oldpwd"})
"""The shell's working directories (``Pwd`` in a connection string is a password)."""
_WORDS: Final = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
"""Words of a key, digits kept on the word they end (``b64``, ``password2``)."""


def _is_trailer(word: str) -> bool:
    """An encoding or a number after the secret's name: ``value``, ``b64``, ``2``."""
    return word in _TRAILERS or word.rstrip("0123456789") in _TRAILERS or word.isdigit()


def _names_secret(word: str) -> bool:
    return word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) or word.endswith(_KEY_COMPOUNDS)


_WORD_KINDS: Final = (
    (("password", "passwords", "passwd", "passphrase", "passphrases", "pwd"), "password"),
    (("secret", "secrets"), "secret"),
    (("token",), "token"),
    (("credential", "credentials"), "credential"),
    (("auth", "authorization"), "auth"),
)


def _word_kind(stem: str) -> str:
    """The kind a secret-naming word stands for: ``dbpassword`` -> ``password``, ``apikey`` ->
    ``api-key``."""
    for words, kind in _WORD_KINDS:
        if stem.endswith(words):
            return kind
    return next(f"{kind}-key" for kind in sorted(_KEY_KINDS) if stem.endswith((kind + "key", kind + "keys")))


@functools.lru_cache(maxsize=4096)
def secret_kind(name: str) -> str | None:
    """What secret a key (a dict key, a variable, an env var, a flag) names, if any:
    ``password``, ``secret``, ``token``, ``credential``, ``auth`` or ``<kind>-key``.

    The last word naming a secret decides, and only encodings or digits may follow
    it: ``api_key`` (``api-key``), ``DB_PASSWORD`` (``password``), ``clientSecret``,
    ``secret_key_base`` name one; ``max_tokens``, ``token_count``, ``password_field``,
    ``auth_method`` do not.  The module docstring lists the words.
    """
    if name in _DIRECTORIES:
        return None
    words = [word.lower() for word in _WORDS.findall(name)]
    stems = [word.rstrip("0123456789") for word in words]
    for index in range(len(words) - 1, -1, -1):
        stem = stems[index]
        compound = stem in ("key", "keys") and index > 0 and stems[index - 1] in _KEY_KINDS
        if compound or _names_secret(stem):
            if not all(_is_trailer(word) for word in words[index + 1 :]):
                return None
            return f"{stems[index - 1]}-key" if compound else _word_kind(stem)
    return None


def is_sensitive_key(name: str) -> bool:
    """Whether a key names a secret (``secret_kind`` says which)."""
    return secret_kind(name) is not None


class _Pattern(NamedTuple):
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
    """A last test on the secret part, for shapes a regex says badly."""
    reach: int = 0
    """Characters before the match that are part of the secret: a shape whose fixed literal is
    not at its start (``<32 hex>-us12``) is found by that literal, fast, and checks what comes
    before it in a lookbehind of this width."""

    def __call__(self, text: str, low: str) -> list[Span]:
        subject = low if self.lowered else text
        return [
            (match.start(self.group) - self.reach, match.end(self.group))
            for match in self.regex.finditer(subject)
            if self.check is None or self.check(match.group(self.group))
        ]


def _has_digit(secret: str) -> bool:
    return any(char.isdigit() for char in secret)


def _has_letter_and_digit(secret: str) -> bool:
    return _has_digit(secret) and any(char.isalpha() for char in secret)


def _token(prefix: str | tuple[str, ...], body: str) -> re.Pattern[str]:
    """``prefix`` (a fixed-width literal, or several) not glued to a word or a marker, then ``body``.

    Starting with the literal lets the regex engine skip to candidates; the boundary
    checks follow it as lookbehinds.  Right after a ``]`` (where every marker ends) is no
    start either: there the token was glued to the secret the marker replaced, so it was
    no token in the first pass and must not become one in the second (filtering is
    idempotent).
    """
    prefixes = (prefix,) if isinstance(prefix, str) else prefix
    starts = "|".join(rf"{p}(?<![A-Za-z0-9_\]-]{p})" for p in prefixes)
    return re.compile(starts + body if len(prefixes) == 1 else rf"(?:{starts}){body}")  # a literal first: fast


def _tokens(
    name: str, trigger: str, prefixes: tuple[str, ...], body: str, check: Callable[[str], bool] | None = None
) -> tuple[_Pattern, ...]:
    """One rule per prefix (a fixed-width regex; a regex that starts with a literal is searched
    fast), all behind one ``trigger``."""
    return tuple(_Pattern(name, trigger, _token(prefix, body), check=check) for prefix in prefixes)


_B: Final = r"(?![A-Za-z0-9_-])"
"""The end of a token: no further character it could be made of."""

_TOKEN_PATTERNS: Final = (
    _Pattern(
        "private-key",
        "-----begin",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----BEGIN )){0,65536}?"
            r"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[ \t]*(?:\r?\n|\\r?\\n)[A-Za-z0-9+/=]{8,128}){0,1024})"
        ),
    ),
    _Pattern(
        "url-password", "://", re.compile(r"://[^\s/:@?#'\"`<>\[\]]{0,256}:([^\s/@?#'\"`<>\[\]]{1,256})@"), group=1
    ),
    _Pattern(
        "authorization",
        "authorization",
        re.compile(
            r"authorization\\?[\"']?[ \t]{0,8}[:=][ \t]{0,8}\\?[\"']?"
            r"(?:bearer|basic|token|digest|bot|negotiate|ntlm|apikey)[ \t]{1,8}([a-z0-9._~+/=-]{1,4096})"
        ),
        group=1,
        lowered=True,
    ),
    _Pattern(
        "bearer-token",
        "bearer",
        re.compile(r"bearer(?<![a-z0-9_\]]bearer)[ \t]{1,8}([a-z0-9._~+/=-]{16,4096})"),
        group=1,
        lowered=True,
        check=_has_digit,
    ),
    *_tokens("github-token", "gh", (r"gh[pousr]_",), r"[A-Za-z0-9]{20,255}"),
    *_tokens("github-token", "github_pat_", (r"github_pat_",), r"[A-Za-z0-9_]{22,255}"),
    *_tokens("openai-anthropic-key", "sk-", (r"sk-",), r"[A-Za-z0-9_-]{20,512}", check=_has_letter_and_digit),
    *_tokens("slack-token", "xox", (r"xox[abposre]-",), r"[A-Za-z0-9-]{10,255}"),
    *_tokens("jwt", "eyj", (r"eyJ",), r"[A-Za-z0-9_-]{5,4096}\.[A-Za-z0-9_-]{5,8192}\.[A-Za-z0-9_-]{0,4096}"),
    *_tokens("aws-access-key", "ia", (r"A[KS]IA",), r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _Pattern(
        "aws-secret-key",
        "aws_s",
        re.compile(r"aws_(?:secret_access_key|session_token)\\?[\"']?[ \t]{1,8}\\?[\"']?([a-z0-9/+=]{16,1024})"),
        group=1,
        lowered=True,
    ),  # ``aws configure set aws_secret_access_key VALUE``: no separator the key=value rule knows
    # Provider tokens, after gitleaks' default rules: a fixed prefix, then a body of a known shape.
    *_tokens("google-api-key", "aiza", (r"AIza",), rf"[0-9A-Za-z_-]{{35}}{_B}"),
    *_tokens("huggingface-token", "hf_", (r"hf_",), rf"[A-Za-z]{{34}}{_B}"),
    *_tokens("huggingface-token", "api_org_", (r"api_org_",), rf"[A-Za-z]{{34}}{_B}"),
    *_tokens("pypi-token", "pypi-", (r"pypi-AgEIcHlwaS5vcmc",), r"[A-Za-z0-9_-]{50,1024}"),
    *_tokens("stripe-key", "k_", (r"sk_live_", r"rk_live_", r"sk_test_", r"rk_test_"), rf"[0-9A-Za-z]{{10,247}}{_B}"),
    *_tokens("sendgrid-key", "sg.", (r"SG\.",), rf"[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_B}"),
    _Pattern(
        "slack-webhook",
        "hooks.slack.com/",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,256})"),
        group=1,
    ),
    _Pattern(  # no prefix: searched only when ":AA" is in the text
        "telegram-bot-token",
        ":aa",
        re.compile(r"(?<![0-9A-Za-z_:-])[0-9]{8,10}:AA[0-9A-Za-z_-]{33}(?![0-9A-Za-z_-])"),
    ),
    *_tokens("digitalocean-token", "_v1_", (r"do[por]_v1_",), rf"[a-f0-9]{{64}}{_B}"),
    *_tokens("shopify-token", "shp", (r"shp(?:at|ca|pa|ss)_",), rf"[a-fA-F0-9]{{32}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"gl(?:rt|dt|ft)-", r"gl(?:pat|cbt)-", r"glsoat-"), rf"[0-9A-Za-z_-]{{20,64}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"glptt-",), rf"[0-9a-f]{{40}}{_B}"),
    *_tokens("npm-token", "npm_", (r"npm_",), rf"[A-Za-z0-9]{{36}}{_B}"),
    *_tokens("twilio-key", "sk", (r"SK",), rf"[0-9a-fA-F]{{32}}{_B}", check=_has_letter_and_digit),
    *_tokens("databricks-token", "dapi", (r"dapi",), rf"[a-f0-9]{{32}}(?:-[0-9])?{_B}"),
    *_tokens("square-token", "sq0", (r"sq0(?:atp|csp)-",), rf"[0-9A-Za-z_-]{{22,43}}{_B}"),
    *_tokens("square-token", "eaaa", (r"EAAA",), rf"[0-9A-Za-z_-]{{60}}{_B}"),
    *_tokens("postman-key", "pmak-", (r"PMAK-",), rf"[a-f0-9]{{24}}-[a-f0-9]{{34}}{_B}"),
    *_tokens("vault-token", "hv", (r"hv[sb]\.",), rf"[A-Za-z0-9_-]{{24,255}}{_B}"),
    *_tokens("age-secret-key", "age-secret-key-1", (r"AGE-SECRET-KEY-1",), r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    *_tokens("linear-key", "lin_api_", (r"lin_api_",), rf"[A-Za-z0-9]{{40}}{_B}"),
    *_tokens("newrelic-key", "nrak-", (r"NRAK-",), rf"[A-Z0-9]{{27}}{_B}"),
    *_tokens(
        "doppler-token", "dp.", (r"dp\.(?:pt|st|sa|ct)\.", r"dp\.scim\.", r"dp\.audit\."), rf"[A-Za-z0-9]{{40,44}}{_B}"
    ),
    *_tokens("atlassian-token", "atatt3", (r"ATATT3",), rf"[A-Za-z0-9_=-]{{150,300}}{_B}"),
    *_tokens("1password-token", "ops_eyj", (r"ops_eyJ",), r"[A-Za-z0-9+/]{250,8192}={0,3}"),
    *_tokens(
        "1password-secret-key",
        "a3-",
        (r"A3-",),
        rf"[A-Z0-9]{{6}}-(?:[A-Z0-9]{{11}}|[A-Z0-9]{{6}}-[A-Z0-9]{{5}})-[A-Z0-9]{{5}}-[A-Z0-9]{{5}}-[A-Z0-9]{{5}}{_B}",
    ),
    *_tokens("adobe-client-secret", "p8e-", (r"p8e-",), rf"[A-Za-z0-9]{{32}}{_B}"),
    *_tokens("alibaba-access-key", "ltai", (r"LTAI",), rf"[A-Za-z0-9]{{20}}{_B}", check=_has_letter_and_digit),
    *_tokens("artifactory-key", "akcp", (r"AKCp",), rf"[A-Za-z0-9]{{69}}{_B}"),
    *_tokens("artifactory-key", "cmvmd", (r"cmVmd",), rf"[A-Za-z0-9]{{59}}{_B}"),
    _Pattern(  # ``Q~`` after 4 characters
        "azure-client-secret",
        "q~",
        re.compile(r"Q~(?<=(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
        reach=4,
    ),
    *_tokens("clickhouse-key", "4b1d", (r"4b1d",), rf"[A-Za-z0-9]{{38}}{_B}", check=_has_letter_and_digit),
    *_tokens("clojars-token", "clojars_", (r"CLOJARS_",), rf"[A-Za-z0-9]{{60}}{_B}"),
    *_tokens("cloudflare-origin-key", "v1.0-", (r"v1\.0-",), rf"[a-f0-9]{{24}}-[a-f0-9]{{146}}{_B}"),
    *_tokens("duffel-token", "duffel_", (r"duffel_(?:test|live)_",), rf"[A-Za-z0-9_=-]{{43}}{_B}"),
    *_tokens("dynatrace-token", "dt0c01.", (r"dt0c01\.",), rf"[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{64}}{_B}"),
    *_tokens("easypost-token", "ez", (r"EZ[AT]K",), rf"[A-Za-z0-9]{{54}}{_B}"),
    *_tokens("facebook-token", "eaa", (r"EAA[MC]",), rf"[A-Za-z0-9]{{100,1024}}{_B}"),
    *_tokens(
        "flutterwave-key",
        "flw",
        (r"FLWSECK_TEST-", r"FLWPUBK_TEST-", r"FLWSECK-", r"FLWPUBK-"),
        rf"[a-hA-H0-9]{{12,32}}(?:-X)?{_B}",
    ),
    *_tokens("flyio-token", "fo1_", (r"fo1_",), rf"[A-Za-z0-9_-]{{43}}{_B}"),
    *_tokens("flyio-token", "fm", (r"fm1[ar]_", r"fm2_"), r"[A-Za-z0-9+/]{100,4096}={0,3}"),
    *_tokens("frameio-token", "fio-u-", (r"fio-u-",), rf"[A-Za-z0-9_=-]{{64}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"glffct-",), rf"[0-9A-Za-z_-]{{20}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"glimt-",), rf"[0-9A-Za-z_-]{{25}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"glagent-",), rf"[0-9A-Za-z_-]{{50}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"gloas-",), rf"[0-9A-Za-z_-]{{64}}{_B}"),
    *_tokens("gitlab-token", "gr1348941", (r"GR1348941",), rf"[0-9A-Za-z_-]{{20}}{_B}"),
    _Pattern("gitlab-token", "_gitlab_session=", re.compile(r"_gitlab_session=([0-9a-z]{32})(?![0-9a-z])"), group=1),
    *_tokens("grafana-token", "eyjrijoi", (r"eyJrIjoi",), r"[A-Za-z0-9]{70,400}={0,3}"),
    *_tokens("grafana-token", "glc_", (r"glc_",), r"[A-Za-z0-9+/]{32,400}={0,3}"),
    *_tokens("grafana-token", "glsa_", (r"glsa_",), rf"[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}{_B}"),
    *_tokens(
        "harness-token", "at.", (r"pat\.", r"sat\."), rf"[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{20}}{_B}"
    ),
    _Pattern(  # ``.atlasv1.`` after 14 characters
        "terraform-token",
        ".atlasv1.",
        re.compile(
            r"\.atlasv1\.(?<=(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.)[A-Za-z0-9_=-]{60,70}(?![A-Za-z0-9_=-])"
        ),
        reach=14,
    ),
    *_tokens("heroku-key", "hrku-", (r"HRKU-AA",), rf"[0-9A-Za-z_-]{{58}}{_B}"),
    *_tokens("infracost-token", "ico-", (r"ico-",), rf"[A-Za-z0-9]{{32}}{_B}", check=_has_letter_and_digit),
    *_tokens("intra42-secret", "s-s4t2", (r"s-s4t2(?:ud|af)-",), rf"[a-f0-9]{{64}}{_B}"),
    *_tokens("jwt", "zxlk", (r"ZXlK",), r"(?:aGJHY2lPaU|MGVYQWlPaUp|cmFXUWlP)[A-Za-z0-9/+_-]{40,8192}={0,2}"),
    _Pattern(  # a fixed suffix
        "maxmind-key",
        "_mmk",
        re.compile(r"_mmk(?<=(?<![A-Za-z0-9_])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?![A-Za-z0-9_])"),
        reach=36,
    ),
    _Pattern(
        "teams-webhook",
        "webhook.office.com/webhookb2/",
        re.compile(r"webhook\.office\.com/webhookb2/([A-Za-z0-9@/-]{60,400})"),
        group=1,
    ),
    *_tokens("notion-token", "ntn_", (r"ntn_",), rf"[0-9]{{11}}[A-Za-z0-9]{{35}}{_B}"),
    *_tokens("octopus-key", "api-", (r"API-",), rf"[A-Z0-9]{{26}}{_B}", check=_has_letter_and_digit),
    *_tokens("openshift-token", "sha256~", (r"sha256~",), rf"[A-Za-z0-9_-]{{43}}{_B}"),
    *_tokens("perplexity-key", "pplx-", (r"pplx-",), rf"[A-Za-z0-9]{{48}}{_B}"),
    *_tokens(
        "planetscale-token", "pscale_", (r"pscale_tkn_", r"pscale_oauth_", r"pscale_pw_"), r"[A-Za-z0-9_=.-]{32,64}"
    ),
    *_tokens("prefect-token", "pnu_", (r"pnu_",), rf"[A-Za-z0-9]{{36}}{_B}"),
    *_tokens("pulumi-token", "pul-", (r"pul-",), rf"[a-f0-9]{{40}}{_B}"),
    *_tokens("readme-token", "rdme_", (r"rdme_",), rf"[a-z0-9]{{70}}{_B}"),
    *_tokens("rubygems-token", "rubygems_", (r"rubygems_",), rf"[a-f0-9]{{48}}{_B}"),
    *_tokens("scalingo-token", "tk-us-", (r"tk-us-",), rf"[A-Za-z0-9_-]{{48}}{_B}"),
    *_tokens("sendinblue-key", "xkeysib-", (r"xkeysib-",), rf"[a-f0-9]{{64}}-[A-Za-z0-9]{{16}}{_B}"),
    *_tokens("sentry-token", "sntry", (r"sntrys_eyJ",), r"[A-Za-z0-9+/=_]{50,1024}"),
    *_tokens("sentry-token", "sntry", (r"sntryu_",), rf"[a-f0-9]{{64}}{_B}"),
    *_tokens("settlemint-token", "sm_", (r"sm_(?:aat|pat|sat)_",), rf"[A-Za-z0-9]{{16}}{_B}"),
    *_tokens("shippo-token", "shippo_", (r"shippo_(?:live|test)_",), rf"[a-fA-F0-9]{{40}}{_B}"),
    *_tokens("slack-token", "xapp-", (r"xapp-",), r"[0-9]-[A-Z0-9]{1,64}-[0-9]{1,32}-[a-z0-9]{16,128}"),
    *_tokens("sourcegraph-token", "sgp_", (r"sgp_",), rf"(?:(?:[a-fA-F0-9]{{16}}|local)_)?[a-fA-F0-9]{{40}}{_B}"),
    *_tokens("defined-networking-key", "dnkey-", (r"dnkey-",), rf"[a-z0-9=_-]{{26}}-[a-z0-9=_-]{{52}}{_B}"),
    *_tokens("dropbox-token", "sl.", (r"sl\.",), rf"[A-Za-z0-9=_-]{{135,1024}}{_B}"),
    _Pattern(  # a fixed suffix
        "mailchimp-key",
        "-us",
        re.compile(r"-us(?<=(?<![A-Za-z0-9])[a-f0-9]{32}-us)[0-9]{1,2}(?![A-Za-z0-9])"),
        reach=32,
    ),
    _Pattern(  # ``key-`` + 32 hex is a Mailgun key only where the text mentions Mailgun
        "mailgun-key", "mailgun", re.compile(r"(?<![A-Za-z0-9_-])(?:pub)?key-[a-f0-9]{32}(?![A-Za-z0-9_-])")
    ),
    *_tokens("newrelic-key", "nr", (r"NRJS-",), rf"[a-f0-9]{{19}}{_B}"),
    *_tokens("newrelic-key", "nr", (r"NRII-",), rf"[A-Za-z0-9-]{{32}}{_B}"),
    *_tokens(
        "plaid-token",
        "access-",
        (r"access-sandbox-", r"access-development-", r"access-production-"),
        rf"[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}{_B}",
    ),
    *_tokens("typeform-token", "tfp_", (r"tfp_",), rf"[A-Za-z0-9_.=-]{{59}}{_B}"),
    *_tokens("yandex-token", "t1.", (r"t1\.",), rf"[A-Za-z0-9_-]{{1,128}}={{0,2}}\.[A-Za-z0-9_-]{{86}}={{0,2}}{_B}"),
    *_tokens("yandex-token", "aqvn", (r"AQVN",), rf"[A-Za-z0-9_-]{{35,38}}{_B}"),
    *_tokens("twitter-token", "a" * 22, (r"A{22}",), r"[A-Za-z0-9%]{80,100}"),
    *_tokens("lob-key", "_pub_", (r"(?:test|live)_pub_",), rf"[a-f0-9]{{31}}{_B}"),
    *_tokens("google-oauth-secret", "gocspx-", (r"GOCSPX-",), rf"[A-Za-z0-9_-]{{28}}{_B}"),
    *_tokens("xai-key", "xai-", (r"xai-",), rf"[A-Za-z0-9]{{80}}{_B}"),
    *_tokens("groq-key", "gsk_", (r"gsk_",), rf"[A-Za-z0-9]{{52}}{_B}"),
    *_tokens("replicate-token", "r8_", (r"r8_",), rf"[A-Za-z0-9]{{37}}{_B}"),
    _Pattern(  # ``<id>|<token>``: no prefix, searched only in text that mentions Facebook
        "facebook-token",
        "facebook",
        re.compile(r"(?<![0-9A-Za-z])[0-9]{15,16}(?:\||%7[Cc])[0-9A-Za-z_-]{27,40}(?![0-9A-Za-z_-])"),
    ),
    _Pattern(  # no prefix: searched only in text that mentions Discord
        "discord-bot-token",
        "discord",
        re.compile(
            r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_.-])"
        ),
        check=_has_letter_and_digit,
    ),
    # Credentials on a command line: the flags that take them, in the forms clients accept.
    _Pattern(
        "cli-password",
        "mysql",
        re.compile(r"mysql(?:dump|admin)?(?:[ \t]+-[^\s]+)*?[ \t]+-p([^\s'\"-][^\s'\"]{0,255})"),
        group=1,
    ),
    _Pattern(
        "cli-password",
        "mariadb",
        re.compile(r"mariadb(?:-dump)?(?:[ \t]+-[^\s]+)*?[ \t]+-p([^\s'\"-][^\s'\"]{0,255})"),
        group=1,
    ),
    *(
        _Pattern(
            "cli-user-password",
            flag,
            re.compile(rf"{flag}(?<![A-Za-z0-9_-]{flag})(?:[ \t]+|=)[\"']?[^\s:'\"@/]{{1,128}}:([^\s'\"@]{{1,256}})"),
            group=1,
        )
        for flag in ("-u", "--user")
    ),
    _Pattern(
        "cli-secret-flag",
        "--",
        re.compile(
            r"--(?<![A-Za-z0-9_-]--)(?:password|passwd|pass|token|secret|api-key|apikey|access-token|auth-token"
            r"|client-secret|secret-key)[ \t]+[\"']?([^\s'\"$<{%-][^\s'\"]{2,511})"
        ),
        group=1,
    ),
)


def _automaton(words: Iterable[str]) -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for word in words:
        automaton.add_word(word, word)
    automaton.make_automaton()
    return automaton


_TRIGGERS: Final = _automaton(p.trigger for p in _TOKEN_PATTERNS)
"""Every rule's trigger, found in one pass over the text (Aho-Corasick) rather than a search
per trigger (bench/privacy.py: 1 MB of code and logs in ~28 ms instead of ~51 ms)."""

# key = value: found from the words naming secrets (in the lower-cased text), then
# judged in Python: the key by is_sensitive_key, the value by _bare_verdict.
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_WORDS: Final = (
    "pass(?:words?|wd|phrases?)",
    "pwd",
    "secrets?",
    "token",
    "credentials?",
    "auth(?:orization)?",
    "keys?",
)
_KEY_TAIL: Final = (
    rf"(?:[_.-]?(?:{'|'.join(sorted(_TRAILERS, key=len, reverse=True))}|[0-9]+)){{0,3}}"
    r"""(?P<quote>\\?["']?)[ \t]{0,8}(?P<sep>=>|:=|=(?![=~>])|:(?![:=]))[ \t]{0,8}"""
)
_KEY_STEMS: Final = tuple(re.compile(word + _KEY_TAIL) for word in _KEY_WORDS)
_KEY_TRIGGER: Final = re.compile("|".join(_KEY_WORDS))
"""A word naming a secret, then only trailers up to a separator: each starts with a
literal, so the search is fast, and keys like ``max_tokens`` never reach Python."""
_QUOTED: Final = re.compile(
    r"""[rbfuRBFU]{0,2}(?:"((?:[^"\\\n`]|\\[^\n`]){1,512})"|'((?:[^'\\\n`]|\\[^\n`]){1,512})'|\\"([^"\\\n`]{1,512})\\")"""
)
_BARE: Final = re.compile(r"""[^\s"'`,;()\[\]{}<>]{1,512}""")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
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
    return any(_has_letter_and_digit(run) for run in _RANDOM_RUN.findall(identifier))


def _names_a_type(identifier: str) -> bool:
    if identifier.lower() in _TYPE_NAMES:
        return True
    return identifier[0].isupper() and any(c.islower() for c in identifier) and not _has_digit(identifier)


def _quoted_is_secret(inside: str) -> bool:
    """A quoted value is a secret unless empty, already redacted, a bare auth scheme
    (``"Bearer " + token``) or a template (``f"Bearer {token}"``, ``"${DB_PASSWORD}"``)."""
    if not inside.strip() or MARKER.search(inside) or inside.strip().lower() in _SCHEMES:
        return False
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
    bare = _BARE.match(text, value_start)
    if bare is None:
        return None
    value = bare.group()
    if _in_query(text, key_start, match):  # a URL's ``?password=x&next=y``: ``&`` ends the value
        value = value.split("&", 1)[0].split("#", 1)[0]
    value = value.rstrip(".:")
    value_end = value_start + len(value)
    verdict = _bare_verdict(value, text[bare.end() : bare.end() + 1]) if value else False
    if verdict is None:
        verdict = _is_data(text, key_start, match, value_end)
    return (value_start, value_end) if verdict else None


def _assignments(text: str, low: str) -> list[tuple[int, int, str]]:
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
        kind = secret_kind(text[key_start : match.start("quote")])
        if kind is None:
            continue
        span = _assignment_secret(text, key_start, match)
        if span is not None:
            spans.append((*span, kind))
    return spans


def _token_secrets(text: str, low: str) -> list[tuple[int, int, str]]:
    """Every shape rule run on the same text: (start, end, rule name); overlapping spans (a
    JWT that is also a bearer token) are merged into one secret, named by the first."""
    merged: list[tuple[int, int, str]] = []
    present = {trigger for _, trigger in _TRIGGERS.iter(low)}
    if not present:
        return merged
    markers = [match.span() for match in MARKER.finditer(text)] if "[redacted" in low else []
    found = [
        (*span, pattern.name)
        for pattern in _TOKEN_PATTERNS
        if pattern.trigger in present
        for span in pattern(text, low)
    ]
    for start, end, name in sorted(item for item in found if not _overlaps((item[0], item[1]), markers)):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
        else:
            merged.append((start, end, name))
    return merged


def _overlaps(span: Span, markers: list[Span]) -> bool:
    """Whether ``span`` shares a character with one of the (sorted, disjoint) ``markers``: a
    flag's value that is a marker (``-p[REDACTED:cli-password]``) was found already, and a
    match running into one was no match before the marker was there (filtering is idempotent)."""
    index = bisect_right(markers, (span[1], -1)) - 1  # the last marker starting before the span ends
    return index >= 0 and markers[index][1] > span[0]


def _extra_matches(regex: re.Pattern[str], text: str, private_marker: str) -> list[Span]:
    """A user pattern's non-empty matches that do not touch a marker (so output is stable)."""
    markers = [match.span() for match in MARKER.finditer(text)]
    if private_marker:
        markers += _literal_spans(text, private_marker)
    return [
        match.span()
        for match in regex.finditer(text)
        if match.end() > match.start() and not any(a < match.end() and match.start() < b for a, b in markers)
    ]


def _literal_spans(text: str, literal: str) -> list[Span]:
    spans: list[Span] = []
    found = text.find(literal)
    while found >= 0:
        spans.append((found, found + len(literal)))
        found = text.find(literal, found + len(literal))
    return spans


def _redact(text: str, spans: list[tuple[int, int, str]]) -> tuple[str, Redactions]:
    """``text`` with each (start, end, kind) span replaced by its kind's marker, and the counts."""
    if not spans:
        return text, Redactions()
    result = _splice(text, (_Edit(start, end, redacted(kind)) for start, end, kind in spans))
    kinds: dict[str, int] = {}
    for _, _, kind in spans:
        kinds[kind] = kinds.get(kind, 0) + 1
    removed = sum(end - start for start, end, _ in spans)
    return result, Redactions(secrets=len(spans), chars_removed=removed, kinds=kinds)


# --- the filter ---------------------------------------------------------------------


class Privacy:
    """The privacy filter for one configuration: build once, call for every event."""

    def __init__(self, config: PrivacyConfig) -> None:
        self._config = config
        syntax = [_TAG_SYNTAX[name] for name in dict.fromkeys(config.tags)]
        self._tags = re.compile("|".join(syntax)) if syntax else None
        self._marker = config.marker
        self._preserve_lines = config.preserve_lines
        self._keep_unclosed = config.unclosed == "keep"
        self._builtin_secrets = config.secrets
        self._extra = [re.compile(pattern) for pattern in config.extra_patterns]

    def secrets_only(self) -> Privacy:
        """This filter without its private-tag rules, for content stored already: its tags
        went when it arrived, and what is left of them is text (``memd.capture.rescan``)."""
        return Privacy(msgspec.structs.replace(self._config, tags=[]))

    def text(self, text: str) -> tuple[str, Redactions]:
        """``text`` without private spans and secrets, and what was removed.

        Tags first (a secret inside a private span goes with the span), then secrets.
        Removing a span can change which text is code (a backtick it held no longer
        pairs, two lines become one), so a tag once literal may be live in the result:
        the tags are scanned again until none is, and after ``_MAX_ROUNDS`` rounds
        everything from the first live tag on is removed, which bounds the work.
        """
        low = _lower(text)
        tags = self._candidates(low)
        if not tags:
            return self._secrets(text, low)
        found = Redactions()
        scan = self._scan(text, tags)
        for _ in range(_MAX_ROUNDS):
            found += scan.found
            filtered, secrets = self._secrets(_splice(text, scan.edits), None if scan.edits else low)
            found += secrets
            if filtered == text:
                return text, found
            text = filtered
            scan = self._scan(text, self._candidates(_lower(text)))
            if not scan.edits:
                return text, found + scan.found
        start = scan.edits[0].start
        tail = self._replacement(text[start:], has_content=True)
        cut = Redactions(private_spans=1, unclosed=scan.found.unclosed, chars_removed=len(text) - start)
        return text[:start] + tail, found + cut

    def value(self, value: Any) -> tuple[Any, Redactions]:
        """A filtered copy of JSON-like data (dict, list, str, int, float, bool, None).

        Every string is filtered as by ``text``; the value of a sensitive key (see
        ``is_sensitive_key``) is replaced whole: a non-empty string, and every non-empty
        string inside a list or object under it, becomes ``[REDACTED:<kind>]`` with the
        kind the key names (``secret_kind``: ``password``, ``api-key``...).  Keys are
        names and stay as they are; numbers, booleans, None and any other type are
        returned untouched.  The input is not modified.  Iterative, so depth is no
        concern.
        """
        found = Redactions()
        root: list[Any] = [None]
        stack: list[tuple[Any, Any, Any, str | None]] = [(value, root, 0, None)]
        while stack:
            node, parent, slot, kind = stack.pop()
            if isinstance(node, dict):
                parent[slot] = clone = dict.fromkeys(node)
                for key, item in node.items():
                    stack.append((item, clone, key, kind or (secret_kind(key) if isinstance(key, str) else None)))
            elif isinstance(node, list):
                parent[slot] = clone = [None] * len(node)
                stack.extend((item, clone, index, kind) for index, item in enumerate(node))
            elif isinstance(node, str):
                parent[slot], redactions = self._string(node, kind)
                found += redactions
            else:
                parent[slot] = node
        return root[0], found

    def _string(self, text: str, kind: str | None) -> tuple[str, Redactions]:
        """A string, filtered; the value of a key naming ``kind`` of secret, redacted whole."""
        if kind is None:
            return self.text(text)
        if not text.strip() or MARKER.fullmatch(text):
            return text, Redactions()
        return redacted(kind), Redactions(secrets=1, chars_removed=len(text), kinds={kind: 1})

    def _candidates(self, low: str) -> list[_Tag]:
        """Every tag in the text, live or in code, from its lower-cased copy."""
        if self._tags is None or "private" not in low:
            return []
        tags: list[_Tag] = []
        for word in _TAG_WORD.finditer(low):
            start = word.start()
            for begin in (start - 1, start - 2, low.rfind("<!--", max(0, start - 24), start)):
                match = self._tags.match(low, begin) if begin >= 0 else None
                if match and match.end() == word.end() and (syntax := match.lastgroup) is not None:
                    tags.append(_Tag(begin, match.end(), syntax, match.group(syntax) == "/"))
                    break
        return tags

    def _scan(self, text: str, candidates: list[_Tag]) -> _TagScan:
        """The edits one pass of the tag rules makes (module docstring: the rules)."""
        tags = _outside_code(text, candidates)
        partners = _partners(tags)
        closes = [index for index, tag in enumerate(tags) if tag.syntax == "bracket" and tag.closing]
        last_bracket_close = closes[-1] if closes else -1
        edits: list[_Edit] = []
        spans = 0
        unclosed = False
        index = 0
        while index < len(tags):
            tag = tags[index]
            close = partners.get(index)
            if close is None and tag.syntax == "bracket" and not tag.closing and last_bracket_close > index:
                close = last_bracket_close
            if tag.closing:  # a closing tag no span took: stray
                edits.append(_Edit(tag.start, tag.end, ""))
            elif close is not None:
                edits.append(self._span(text, tag.start, tag.end, tags[close].start, tags[close].end))
                spans += 1
                index = close
            elif tag.syntax != "bracket":
                unclosed = True
                if not self._keep_unclosed:
                    edits.append(self._span(text, tag.start, tag.end, len(text), len(text)))
                    spans += 1
                    break
            index += 1
        removed = sum(edit.end - edit.start for edit in edits)
        found = Redactions(private_spans=spans, unclosed=unclosed, chars_removed=removed)
        return _TagScan(edits, found)

    def _span(self, text: str, start: int, inner_start: int, inner_end: int, end: int) -> _Edit:
        """The edit removing one span, from its opening tag to its closing tag's end."""
        has_content = bool(text[inner_start:inner_end].strip())
        return _Edit(start, end, self._replacement(text[start:end], has_content))

    def _replacement(self, removed: str, has_content: bool) -> str:
        """The marker (none for an empty span), then the span's newlines if kept."""
        marker = self._marker if has_content else ""
        return marker + "\n" * removed.count("\n") if self._preserve_lines else marker

    def _secrets(self, text: str, low: str | None) -> tuple[str, Redactions]:
        """Shapes, then ``key = value`` on the result, then each extra pattern in turn:
        each step sees the markers of the steps before, as a second filtering would.
        ``low`` is ``_lower(text)`` when already known."""
        found = Redactions()
        if self._builtin_secrets:
            low = _lower(text) if low is None else low
            text, found = _redact(text, _token_secrets(text, low))
            if found.secrets:
                low = _lower(text)
            if _KEY_TRIGGER.search(low):
                text, more = _redact(text, _assignments(text, low))
                found += more
        for regex in self._extra:
            text, more = _redact(text, [(*span, "custom") for span in _extra_matches(regex, text, self._marker)])
            found += more
        return text, found
