"""The privacy filter (memd/capture/privacy/): pure unit tests, no daemon.

Most behaviour is pinned by the data-driven corpus ``privacy_corpus.json``: each case is
a text, its exact output with the default config (or the case's ``config`` overrides),
and the substrings that must not survive.  The tests below cover what a corpus cannot:
counts, ``value()`` on structures, config errors, and properties over arbitrary text.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memd.capture.privacy import Privacy, Redactions, is_sensitive_key, redacted, secret_kind
from memd.capture.privacy import filter as privacy_filter
from memd.config import ConfigError, PrivacyConfig, load

CORPUS_FILE = Path(__file__).with_name("privacy_corpus.json")
CORPUS: list[dict[str, Any]] = json.loads(CORPUS_FILE.read_text(encoding="utf-8"))
FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "claude-code" / "hooks"

DEFAULT = Privacy(PrivacyConfig())


def make(**overrides: Any) -> Privacy:
    return Privacy(msgspec.convert(overrides, PrivacyConfig))


def test_corpus_is_large_and_well_formed() -> None:
    assert len(CORPUS) >= 70
    ids = [case["id"] for case in CORPUS]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for case in CORPUS:
        assert set(case) <= {"id", "text", "expected", "config", "secrets"}, case["id"]


@pytest.mark.parametrize("case", CORPUS, ids=[case["id"] for case in CORPUS])
def test_corpus(case: dict[str, Any]) -> None:
    filter_ = make(**case.get("config", {}))
    out, _ = filter_.text(case["text"])
    assert out == case["expected"]
    for secret in case.get("secrets", []):
        assert secret not in out
    assert filter_.text(out)[0] == out, "filtering twice changes the text"


# --- Redactions ---------------------------------------------------------------------------


def test_redactions_count_spans_and_secrets_never_content() -> None:
    text = "a <private>one</private> b [private]two[/private] password = 'hunter2' c"
    out, found = DEFAULT.text(text)
    assert out == "a [PRIVATE] b [PRIVATE] password = '[REDACTED:password]' c"
    removed = len("<private>one</private>") + len("[private]two[/private]") + len("hunter2")
    assert found == Redactions(
        private_spans=2, secrets=1, unclosed=False, chars_removed=removed, kinds={"password": 1}
    )  # the kind of each secret: a rule's name, never content
    tokens = DEFAULT.text("ghp_" + "a1" * 18 + " and glpat-" + "b2" * 10 + " and ghp_" + "c3" * 18)[1]
    assert tokens.kinds == {"github-token": 2, "gitlab-token": 1} and tokens.secrets == 3
    assert "hunter2" not in repr(found) and "one" not in msgspec.json.encode(found).decode()


def test_redactions_flag_unclosed_in_both_modes() -> None:
    assert DEFAULT.text("x <private>y")[1] == Redactions(private_spans=1, unclosed=True, chars_removed=10)
    assert make(unclosed="keep").text("x <private>y") == ("x <private>y", Redactions(unclosed=True))


def test_redactions_add() -> None:
    total = Redactions(private_spans=1, chars_removed=5, kinds={"jwt": 1}) + Redactions(
        secrets=2, unclosed=True, chars_removed=7, kinds={"jwt": 1, "custom": 1}
    )
    assert total == Redactions(
        private_spans=1, secrets=2, unclosed=True, chars_removed=12, kinds={"jwt": 2, "custom": 1}
    )
    assert sum([Redactions(secrets=1)] * 3, Redactions()) == Redactions(secrets=3)


def test_nothing_to_remove_is_returned_as_is() -> None:
    text = "def f(x):\n    return x + 1  # 안녕 🙂\n"
    assert DEFAULT.text(text) == (text, Redactions())
    assert DEFAULT.text("") == ("", Redactions())


# --- markers and preserve_lines -----------------------------------------------------------


@pytest.mark.parametrize("marker", ["[PRIVATE]", "[REDACTED]", ""])
def test_marker_replaces_spans_but_never_secrets(marker: str) -> None:
    out, _ = make(marker=marker).text("<private>a</private> token = 'abc'")
    assert out == f"{marker} token = '[REDACTED:token]'"


@pytest.mark.parametrize("marker", ["[PRIVATE]", ""])
def test_preserve_lines_keeps_the_line_count(marker: str) -> None:
    text = "1\n2 <private>three\nfour\nfive</private> 5\n6 <private>x</private>\n7"
    out, _ = make(preserve_lines=True, marker=marker).text(text)
    assert out.count("\n") == text.count("\n")
    assert out.splitlines()[-1] == "7" and out.splitlines()[4] == f"6 {marker}"
    assert out.splitlines()[1] == f"2 {marker}"


def test_without_preserve_lines_a_span_collapses_to_its_marker() -> None:
    assert DEFAULT.text("1\n<private>2\n3</private>\n4")[0] == "1\n[PRIVATE]\n4"


# --- code and re-scans ----------------------------------------------------------------------


def test_a_literal_tag_exposed_by_a_removal_is_caught_by_the_next_round() -> None:
    # Removing the first span merges its two lines; the backtick before it then pairs with
    # the one after, so the second <private>, literal before, is live: redacted to the end.
    text = "`a <private>x\ny</private> `<private>` b"
    out, found = DEFAULT.text(text)
    assert out == "`a [PRIVATE] `[PRIVATE]"
    assert found.private_spans == 2 and found.unclosed
    assert DEFAULT.text(out)[0] == out


def test_rounds_are_bounded_then_the_rest_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(privacy_filter, "_MAX_ROUNDS", 1)
    text = "`a <private>x\ny</private> `<private>z</private>` b"
    out, found = DEFAULT.text(text)
    assert out == "`a [PRIVATE] `[PRIVATE]"
    assert found.private_spans == 2 and "z" not in out


# --- value() -------------------------------------------------------------------------------


def test_value_filters_every_string_and_redacts_sensitive_keys() -> None:
    payload = {
        "prompt": "deploy <private>with my home IP 10.0.0.7</private> now",
        "tool_input": {"command": "psql postgres://app:s3cret@db/app", "timeout": 30},
        "env": {"DB_PASSWORD": "hunter2", "api_key": "", "max_tokens": 5, "PWD": "/home/me"},
        "credentials": {"user": "bob", "scopes": ["read", "write"], "expires": 3600, "refresh": None},
        "headers": [{"Authorization": "Bearer abc"}, {"accept": "json"}],
        "usage": {"input_tokens": 1200, "token_count": 3, "auth_method": "oauth", "ok": True, "ratio": 0.5},
    }
    before = copy.deepcopy(payload)
    out, found = DEFAULT.value(payload)
    assert payload == before, "the input was modified"
    assert out == {
        "prompt": "deploy [PRIVATE] now",
        "tool_input": {"command": "psql postgres://app:[REDACTED:url-password]@db/app", "timeout": 30},
        "env": {"DB_PASSWORD": redacted("password"), "api_key": "", "max_tokens": 5, "PWD": "/home/me"},
        "credentials": {
            "user": redacted("credential"),
            "scopes": [redacted("credential")] * 2,
            "expires": 3600,
            "refresh": None,
        },
        "headers": [{"Authorization": redacted("auth")}, {"accept": "json"}],
        "usage": {"input_tokens": 1200, "token_count": 3, "auth_method": "oauth", "ok": True, "ratio": 0.5},
    }
    assert list(out) == list(payload) and list(out["env"]) == list(payload["env"])
    assert found.private_spans == 1 and found.secrets == 6
    assert found.kinds == {"url-password": 1, "password": 1, "credential": 3, "auth": 1}
    assert DEFAULT.value(out) == (out, Redactions()), "already redacted values are not counted again"


def test_value_returns_scalars_and_other_types_untouched() -> None:
    for scalar in (None, True, 0, 12.5, "plain"):
        assert DEFAULT.value(scalar) == (scalar, Redactions())
    assert DEFAULT.value([]) == ([], Redactions()) and DEFAULT.value({}) == ({}, Redactions())
    odd = {1: "int key", "t": (1, 2)}
    assert DEFAULT.value(odd) == (odd, Redactions())


def test_value_handles_depth_without_recursion() -> None:
    deep: Any = "token = 'abc'"
    for _ in range(5000):
        deep = {"x": [deep]}
    out, found = DEFAULT.value(deep)
    assert found.secrets == 1
    for _ in range(5000):
        out = out["x"][0]
    assert out == "token = '[REDACTED:token]'"


def test_value_of_a_real_hook_payload_is_unchanged() -> None:
    payload = json.loads((FIXTURES / "hook_UserPromptSubmit.json").read_text())
    assert DEFAULT.value(payload) == (payload, Redactions())


# --- sensitive keys ----------------------------------------------------------------------------

SENSITIVE = [
    "password", "PASSWORD", "db_password", "DB_PASSWORD", "passwd", "passphrase", "user_pwd", "secret",
    "client_secret", "clientSecret", "secrets", "token", "access_token", "accessToken", "refresh_token", "authtoken",
    "auth", "Authorization", "credentials", "api_key", "apiKey", "APIKey", "x-api-key", "apikey", "private_key",
    "privateKey", "aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "secret_key_base", "password2", "--password",
    "spring.datasource.password", "password_confirmation", "token_b64", "apiKey2", "password_value_2",
    "mypassword",
]  # fmt: skip
NOT_SENSITIVE = [
    "max_tokens", "maxTokens", "input_tokens", "tokens", "token_count", "tokenCount", "token_type", "tokenizer",
    "password_field", "password_hash", "auth_method", "auth_url", "author", "authority", "private_key_id",
    "private_key_path", "key", "keys", "primary_key", "PWD", "OLDPWD", "secretName", "secret_ref", "api_key_env",
    "passwordless", "bypass", "session_id", "oauth2", "sha256", "", "_",
]  # fmt: skip


@pytest.mark.parametrize("name", SENSITIVE)
def test_sensitive_keys(name: str) -> None:
    assert is_sensitive_key(name)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("DB_PASSWORD", "password"), ("dbpasswd", "password"), ("passphrase2", "password"), ("clientSecret", "secret"),
        ("authToken", "token"), ("credentials", "credential"), ("Authorization", "auth"), ("apiKey", "api-key"),
        ("x-api-key", "api-key"), ("secret_key_base", "secret-key"), ("privateKeys", "private-key"),
        ("max_tokens", None), ("PWD", None),
    ],
)  # fmt: skip
def test_secret_kind_names_what_a_key_holds(name: str, kind: str | None) -> None:
    assert secret_kind(name) == kind


@pytest.mark.parametrize("name", NOT_SENSITIVE)
def test_keys_that_are_not_sensitive(name: str) -> None:
    assert not is_sensitive_key(name)


# --- config ---------------------------------------------------------------------------------


def test_extra_patterns_are_redacted_and_stable() -> None:
    filter_ = make(extra_patterns=[r"EMP-\d{6}", r"[A-Z]{5,}", r"x*"])
    out, found = filter_.text("EMP-123456 ok <private>a</private> SHOUTING")
    assert out == "[REDACTED:custom] ok [PRIVATE] [REDACTED:custom]"  # the markers themselves are left alone
    assert found.secrets == 2 and found.kinds == {"custom": 2}
    assert filter_.text(out)[0] == out


def test_invalid_extra_pattern_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"privacy\.extra_patterns\[1\] = '\(unclosed' is not a valid regular exp"):
        PrivacyConfig(extra_patterns=["ok", "(unclosed"])
    path = tmp_path / "config.toml"
    path.write_text('[privacy]\nextra_patterns = ["(unclosed"]\n')
    with pytest.raises(ConfigError, match=r"config\.toml: privacy\.extra_patterns\[0\] .* not a valid regular"):
        load(str(path))


def test_privacy_config_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[privacy]\ntags = ["xml"]\nmarker = ""\npreserve_lines = true\nunclosed = "keep"\nsecrets = false\n'
        'extra_patterns = ["EMP-[0-9]+"]\n'
    )
    config = load(str(path)).privacy
    assert config == PrivacyConfig(
        tags=["xml"], marker="", preserve_lines=True, unclosed="keep", secrets=False, extra_patterns=["EMP-[0-9]+"]
    )
    out, _ = Privacy(config).text("[private]a[/private] <private>b</private> password = 'x' EMP-1")
    assert out == "[private]a[/private]  password = 'x' [REDACTED:custom]"


def test_privacy_config_defaults_and_unknown_keys(tmp_path: Path) -> None:
    assert load(str(tmp_path / "missing.toml")).privacy == PrivacyConfig(
        tags=["xml", "bracket", "comment"], marker="[PRIVATE]", preserve_lines=False, unclosed="redact"
    )
    path = tmp_path / "config.toml"
    for body in ('[privacy]\nmarker = "***"\n', "[privacy]\nenabled = true\n", '[privacy]\ntags = ["html"]\n'):
        path.write_text(body)
        with pytest.raises(ConfigError, match=r"privacy"):
            load(str(path))


def test_secrets_can_be_turned_off() -> None:
    assert make(secrets=False).text("password = 'x' <private>y</private>")[0] == "password = 'x' [PRIVATE]"


# --- properties over arbitrary text -------------------------------------------------------------

FRAGMENTS = [
    "<private>", "</private>", "<PRIVATE>", "[private]", "[/private]", "[PRIVATE]", "<!-- private -->",
    "<!--/private-->", "`", "``", "```", "~~~", "\n", "\n```\n", " ", "    ", "a", "비밀", "🤫", "password=",
    "password: ", "token = ", "DB_PASSWORD=", "--password=", '"', "'", "hunter2", "ghp_" + "a1" * 18,
    "sk-" + "Ab3" * 8, "AKIA" + "A1B2" * 4, "xoxb-12345-abcdef", "eyJhbGciOi.eyJzdWIi.abc", "://u:p@h",
    "Authorization: Bearer ", "abc123def456ghi789", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "MIIEabc==", "[REDACTED]", "[REDACTED:github-token]", "[REDACTED:password]", "<", ">", "[", "]", "-", "=", ":",
    "\\", "#", "export ", "mysql -uroot -p", " --token ", "curl -u bob:", "hf_", "AIza", "sk_live_", "?", "@",
]  # fmt: skip
TEXTS = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=40).map("".join)
CONFIGS = st.builds(
    PrivacyConfig,
    tags=st.sampled_from([["xml", "bracket", "comment"], ["xml"], ["bracket"], ["comment"], []]),
    marker=st.sampled_from(["[PRIVATE]", "[REDACTED]", ""]),
    preserve_lines=st.booleans(),
    unclosed=st.sampled_from(["redact", "keep"]),
)


@settings(max_examples=1000, deadline=None)
@given(TEXTS, CONFIGS)
def test_filtering_is_idempotent(text: str, config: PrivacyConfig) -> None:
    filter_ = Privacy(config)
    once, _ = filter_.text(text)
    twice, found = filter_.text(once)
    assert twice == once
    assert found.secrets == 0, "a marker is no secret: a second pass (memctl scan) finds nothing"


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises_and_is_idempotent(text: str) -> None:
    once, found = DEFAULT.text(text)
    assert DEFAULT.text(once) == (once, Redactions())
    assert found.chars_removed <= len(text)


KEYS = st.sampled_from(["password", "token", "max_tokens", "credentials", "x"]) | st.text(max_size=5)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXTS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_value_never_raises_and_is_idempotent(value: Any) -> None:
    once, _ = DEFAULT.value(value)
    assert DEFAULT.value(once)[0] == once
