"""A repository's remote as a project key: read from its git config, normalized so that every
way of writing one repository's address gives the same key, and no credential survives.

``remote_urls`` reads the ``url`` of each ``[remote "NAME"]`` section of a git config file's
text, as git parses it (quotes, escapes, comments, continued lines), without running git.
``remote_key`` turns one into a key::

    git@github.com:Acme/API.git                  → github.com/Acme/API
    ssh://git@github.com:22/Acme/API             → github.com/Acme/API
    https://user:token@github.com/Acme/API.git/  → github.com/Acme/API
    /srv/git/api.git                             → file:/srv/git/api

The host is lowercased (DNS names are case-insensitive; repository paths may not be); the
scheme, user, password, port, query, fragment, a ``.git`` suffix and slashes at either end
are dropped.  A key keeps only a host and a path, so a token in the user, password or query
never reaches it; and a path that looks like it holds one (the secret rules of
``memd.capture.privacy``) gives no key at all.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterator
from typing import Final

from .privacy.shapes import token_secrets

__all__ = ["parse_key", "remote_key", "remote_urls"]

_SECTION: Final = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]')
"""``[remote "origin"]`` (the subsection as written) or ``[remote.origin]`` (the old form)."""
_KEY: Final = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=?)")
_SCP: Final = re.compile(r"(?:[^/]*@)?(\[[^\]/@]+\]|[^:/@\[\]]+):(.*)", re.S)
"""git's scp-like syntax, ``[user@]host:path``: a colon before any slash.  The user part runs
to the last ``@`` before the host, so ``user:password@host:path`` loses its password too."""
_ESCAPES: Final = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


def remote_urls(text: str) -> dict[str, str]:
    """Each remote's first ``url``, by remote name, in the order the file gives them."""
    urls: dict[str, str] = {}
    remote: str | None = None  # the name of the remote whose section we are in
    lines = iter(text.splitlines())
    for line in lines:
        section = _SECTION.match(line)
        if section:
            name, sub = section.groups()
            if sub is not None:
                remote = re.sub(r"\\(.)", r"\1", sub) if name.lower() == "remote" else None
            else:  # [remote.origin]: the old syntax, whose subsection git lowercases
                head, _, rest = name.partition(".")
                remote = rest.lower() if head.lower() == "remote" and rest else None
            line = line[section.end() :]  # a variable may follow the header on its line
        variable = _KEY.match(line)
        if variable is None or not variable.group(2):
            continue  # a blank line, a comment, or a variable without a value
        value = _value(line[variable.end() :], lines)
        if remote is not None and variable.group(1).lower() == "url":
            urls.setdefault(remote, value)
    return urls


def _value(rest: str, lines: Iterator[str]) -> str:
    """A variable's value from the text after its ``=``, as git reads it: whitespace outside
    quotes trimmed at the ends (inner runs kept), quotes removed, escapes applied, a ``#`` or
    ``;`` comment cut, and a trailing backslash continuing it on the next line."""
    out: list[str] = []
    spaces = 0  # whitespace seen outside quotes, written out only if more text follows
    quoted = False
    i = 0
    while i < len(rest):
        char = rest[i]
        i += 1
        if char.isspace() and not quoted:
            spaces += 1 if out else 0
            continue
        if char in "#;" and not quoted:
            break
        if spaces:
            out.append(" " * spaces)
            spaces = 0
        if char == "\\":
            if i == len(rest):
                rest, i = next(lines, ""), 0
            else:
                if rest[i] in _ESCAPES:  # git refuses any other escape: it names no URL
                    out.append(_ESCAPES[rest[i]])
                i += 1
        elif char == '"':
            quoted = not quoted
        else:
            out.append(char)
    return "".join(out)


def remote_key(url: str, base: str) -> str | None:
    """The key of the remote at ``url``; a local path is taken relative to ``base``.  None for
    an address that names no repository (empty, holding spaces or control characters, a URL
    without a host or a path)."""
    if not url or any(char.isspace() or ord(char) < 32 or char == "\x7f" for char in url):
        return None
    if "://" in url:
        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError:  # an unclosed IPv6 bracket
            return None
        if parts.scheme.lower() == "file":
            return _local(parts.path, base)
        host, path = parts.hostname, parts.path  # hostname: lowercased, without user or port
    else:
        scp = _SCP.fullmatch(url)
        if scp is None:
            return _local(url, base)
        host, path = scp.group(1).lower().strip("[]"), scp.group(2)
    path = _repository(path)
    # What is left is a host and a path.  A path holding a token's shape (one pasted into
    # the address by mistake) makes no key either: the token would be stored with it.
    if not host or not path or token_secrets(path, path.lower()):
        return None
    return f"{host}/{path}"


def _repository(path: str) -> str:
    """A repository's path without empty segments, ``.git`` or slashes at its ends."""
    path = "/".join(segment for segment in path.split("/") if segment)
    return path.removesuffix(".git").rstrip("/")


def _local(path: str, base: str) -> str | None:
    """``file:`` and the absolute path of a repository on this file system."""
    path = _repository(os.path.normpath(os.path.join(base, path)))
    return f"file:/{path}" if path else None


def parse_key(text: str) -> str:
    """A key as people type it (``memctl project link``): ``path:/abs/path``, a remote URL in
    any of the forms above, or a key itself (``github.com/acme/api``, ``file:/srv/git/api``).
    ``ValueError`` for anything else; its message never repeats the text, which may hold a
    token."""
    if text.startswith("path:"):
        if not os.path.isabs(text[5:]):
            raise ValueError("a path: key names an absolute path (path:/home/me/notes)")
        return "path:" + os.path.normpath(text[5:])
    if text.startswith("file:/"):
        key = _local(text[5:], "/")
    elif "://" in text or _SCP.fullmatch(text):
        key = remote_key(text, "/")
    else:  # host/path: read as the https URL it abbreviates
        key = remote_key(f"https://{text}", "/")
    if key is None:
        raise ValueError("not a repository key: give a remote URL, host/path (github.com/acme/api) or path:/dir")
    return key
