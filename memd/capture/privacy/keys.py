"""Sensitive keys: which names (dict keys, variables, env vars, flags) name a secret.

``is_sensitive_key`` splits a name into words (``snake_case``, ``kebab-case``,
``dotted.names``, ``camelCase``) and finds the last word that names a secret: password,
passwd, passphrase, pwd, secret, token, credential, auth, authorization (plurals of
password, passphrase, secret and credential too, but not ``tokens``, a count), a word
ending in one of them (``dbpassword``, ``authtoken``), ``key`` after api, private, secret,
access, signing, encryption, master, account, auth, subscription, preshared, admin, app,
license, client, tls or ssl (``X-Auth-Key``, ``Ocp-Apim-Subscription-Key``, ``PresharedKey``,
``DD_APP_KEY``, kubeconfig's ``client-key-data``, a Kubernetes secret's ``tls.key``),
or ``pass`` after become, sudo, ssh, db, admin, root, store, key, vault, ftp, smtp, mail, user
or bind (``ansible_become_pass``, ``SMTP_PASS``; not ``bypass``); digits at a word's end are
ignored (``password2``).  The key is sensitive when only encodings or digits
follow it (``value``, ``base``, ``b64``, ``hex``, ``raw``, ``str``, ``string``,
``bytes``, ``data``, ``encoded``, ``confirmation``...): ``password``, ``DB_PASSWORD``,
``apiKey``, ``x-api-key``, ``secret_key_base``, ``password2`` are; ``max_tokens``,
``input_tokens``, ``token_count``, ``token_type``, ``tokenizer``, ``password_field``,
``auth_method``, ``private_key_id``, ``author`` are not.  ``PWD`` and ``OLDPWD`` are
directories, not passwords.  In ``value``, the whole value of a sensitive key is
redacted: a string becomes ``[REDACTED:<kind>]`` and so does every string inside a list
or object under it; numbers, booleans and null stay.
"""

from __future__ import annotations

import functools
import re
from typing import Final

__all__ = ["CREDENTIAL_NAME", "TRAILERS", "is_sensitive_key", "names_identifier", "secret_kind"]

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
_KEY_KINDS: Final = frozenset(
    {
        "api", "private", "secret", "access", "signing", "encryption", "master", "account", "auth", "subscription",
        "preshared", "admin", "app", "license", "client", "tls", "ssl",
    }
)  # fmt: skip
_KEY_COMPOUNDS: Final = tuple(kind + key for kind in sorted(_KEY_KINDS) for key in ("key", "keys"))
TRAILERS: Final = frozenset(
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
_PASS_QUALIFIERS: Final = frozenset(
    {"become", "sudo", "ssh", "db", "admin", "root", "store", "key", "vault", "ftp", "smtp", "mail", "user", "bind"}
)
"""Words after which ``pass`` is a password (``ansible_become_pass``, ``SMTP_PASS``, ``storepass``); alone,
or after others (``bypass``, ``first_pass``), it is not."""
_PASS_COMPOUNDS: Final = tuple(qualifier + "pass" for qualifier in sorted(_PASS_QUALIFIERS))
_DIRECTORIES: Final = frozenset({"PWD", "OLDPWD", "pwd", "oldpwd"})
"""The shell's working directories (``Pwd`` in a connection string is a password)."""
_WORDS: Final = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
"""Words of a key, digits kept on the word they end (``b64``, ``password2``)."""


CREDENTIAL_NAME: Final = (
    r"(?:pass(?:words?|wd|phrase|in|out)?|pwd|secrets?|tokens?|credentials?|auth(?:orization)?"
    r"|(?:api|access|secret|private|signing|encryption|master|account|auth|subscription|preshared|admin|app|license"
    r"|client|tls|ssl)"
    r"[-_.]?keys?|(?:store|key|become|sudo|vault|ssh|db|admin|root)[-_.]?pass(?:word|wd)?)"
)
"""The last word of a name that takes a credential, as a regex for the places ``secret_kind``
cannot be asked (a flag, an XML element): a word naming a secret (``--password``,
``--management-token``, ``--access-key-secret``, ``--auth``), a kind of key (``--authkey``,
``--api-key``), a ``pass`` of Java's and OpenSSL's tools (``-storepass``, ``-keypass``,
``-passout pass:...``) or of Ansible's (``--become-pass``).  Lower case: matched against
lower-cased text."""


def _is_trailer(word: str) -> bool:
    """An encoding or a number after the secret's name: ``value``, ``b64``, ``2``."""
    return word in TRAILERS or word.rstrip("0123456789") in TRAILERS or word.isdigit()


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
        a_pass = stem.endswith(_PASS_COMPOUNDS) or (
            stem == "pass" and index > 0 and stems[index - 1] in _PASS_QUALIFIERS
        )
        if compound or a_pass or _names_secret(stem):
            if not all(_is_trailer(word) for word in words[index + 1 :]):
                return None
            return f"{stems[index - 1]}-key" if compound else "password" if a_pass else _word_kind(stem)
    return None


def is_sensitive_key(name: str) -> bool:
    """Whether a key names a secret (``secret_kind`` says which)."""
    return secret_kind(name) is not None


_IDENTIFIER_WORDS: Final = frozenset(
    {"id", "ids", "uuid", "guid", "hash", "digest", "sha", "sha1", "sha256", "sha512", "md5", "checksum",
     "integrity", "etag", "nonce", "commit", "rev", "revision", "fingerprint", "signature"}
)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def names_identifier(name: str) -> bool:
    """Whether a key names an id, a digest or a signature (``tool_use_id``, ``parentUuid``,
    ``sha256``, ``integrity``, a thinking block's ``signature``): its value is random by design
    and no secret for that (``randomness``)."""
    words = _WORDS.findall(name)
    return bool(words) and words[-1].lower() in _IDENTIFIER_WORDS
