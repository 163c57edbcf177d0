"""The layers for secrets no rule names: the shape layer (``randomness.py``) and the neighbours
(``neighbours.py``), through the whole filter.

Keys without a name or a known prefix are caught by their random look, or by what stands beside
them; what only looks random by design (the agents' ids, UUIDs, digests, lockfile hashes,
public keys, base64 blocks, identifiers and paths) is left whole.
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest
from conftest import SHARED

from memd.capture.privacy import Privacy
from memd.capture.privacy.randomness import features, random_tokens, score
from memd.config import PrivacyConfig

FILTER = Privacy(PrivacyConfig())
ALNUM = string.ascii_letters + string.digits


def token(seed: int, n: int = 40, alphabet: str = ALNUM) -> str:
    rng = random.Random(seed)
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if sum(c.isdigit() for c in value) >= 2 and any(c.isupper() for c in value) and any(c.islower() for c in value):
            return value


KEYLESS = [
    'client = Client("{t}")',
    "const stripe = require('stripe')('{t}');",
    "export KEY={t}",
    "here is the key for the staging box: {t}",
    "Unseal Key 1: {t}=",
    '{{"kty": "EC", "crv": "P-256", "d": "{t}"}}',
    "$ cat config/master.key\n{t}",
    "sdk.init(apiKey: '{t}', region: 'eu')",
    "Authorization header was {t} in the failing request",
]


@pytest.mark.parametrize("template", KEYLESS)
@pytest.mark.parametrize("seed", range(5))
def test_a_random_key_without_a_name_is_caught(template: str, seed: int) -> None:
    secret = token(seed, n=random.Random(seed).randint(24, 64))
    filtered, found = FILTER.text(template.format(t=secret))
    assert secret not in filtered, filtered
    assert found.secrets >= 1


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('const client = algoliasearch("L8XK2M4PQZ", "5f3c9a1b7e2d4f6a8b0c1d2e3f4a5b6c");',
         "5f3c9a1b7e2d4f6a8b0c1d2e3f4a5b6c"),
        ("client = Client('AC8c3f1d2e4b5a69788796a5b4c3d2e1f0', '9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b')",
         "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"),
        ("the staging password is Tr0ub4dor&3x.", "Tr0ub4dor&3x"),
        ("login is admin@acme.io / hunter2!now", "hunter2!now"),
        ("creds: deploy / N0tS0S3cret", "N0tS0S3cret"),
        ("curl 'https://api.openweathermap.org/data/2.5/weather?q=Paris&appid=8f14e45fceea167a5a36dedd4bea2543'",
         "8f14e45fceea167a5a36dedd4bea2543"),
        ("gem push --key rubygems_da61043146c05fb5adcbf7d49b533414fd15266712da86fa",
         "da61043146c05fb5adcbf7d49b533414"),
    ],
)  # fmt: skip
def test_a_value_is_caught_by_what_stands_beside_it(text: str, secret: str) -> None:
    filtered, _ = FILTER.text(text)
    assert secret not in filtered, filtered


LOOKS_RANDOM_BY_DESIGN = [
    '{"type":"assistant","message":{"id":"msg_01LvWnndr3MWQW8w3xEieBJx"},"requestId":"req_011CY18gLpbFQrSgEbGovLeU"}',
    '{"tool_use_id":"toolu_01UBumkyGa4vv7EbMVke2AiH","parentUuid":"cc2c7130-8a1e-4f3c-8f99-b54aa375b7a7"}',
    "commit 7bd2d722f10cdc5713736ca286b97bf84cdaac0a",
    '"integrity": "sha512-QJTDDUhzx2Wtnoone+TULvhtxqX9KhUpgt4S96Y2eyohtZK41LWXwe7fWXcR1JnT0Ujs3AfpPTk5BZgwCyZ8pw=="',
    "charset_normalizer-3.4.4.dist-info/RECORD,sha256=zuuue4knoyJ-UwPPXg8fezS7VCrXJQrAP7zeNuwvFQg,1234",
    "github.com/stretchr/testify v1.9.0 h1:HtqpIVDClZ4nwg75+f6Lvsy/wHu+3BoSGCbBAcpTsTg=",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
    "see PytestRemovedIn10Warning, VERIFY_X509_PARTIAL_CHAIN and cp311-cp311-manylinux_2_28_x86_64",
    "/home/marco/.cache/huggingface/hub/models--Xenova--ms-marco-MiniLM-L-6-v2/snapshots/a2d1",
    "rollout-2026-11-28T00-19-45-01a21f85-b3c3-7ca0-a788-03d8ea83c62a.jsonl",
    "getUserAccountSettingsForOrganization2 and XN--W4R85EL8FHU5DNRA",
    'img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"',
    "the password is stored in vault, the token is expired, the secret is rotated",
]


@pytest.mark.parametrize("text", LOOKS_RANDOM_BY_DESIGN)
def test_what_is_random_by_design_is_left_whole(text: str) -> None:
    assert FILTER.text(text)[0] == text


def test_a_base64_block_is_data_not_a_key() -> None:
    rng = random.Random(5)
    block = "\n".join(
        "".join(rng.choice(ALNUM + "+/") for _ in range(64)) for _ in range(6)
    )  # a certificate's body, an attachment
    text = f"-----BEGIN CERTIFICATE-----\n{block}\n-----END CERTIFICATE-----"
    assert FILTER.text(text)[0] == text
    lone = block.splitlines()[0]
    assert lone not in FILTER.text(f"key: {lone}")[0]  # the same line alone is a key


def test_ids_named_as_ids_keep_their_value_in_a_payload() -> None:
    payload = {
        "session_id": "c0f1f108-78c1-4053-93f3-711bf573db68",
        "tool_use_id": "toolu_01FqWwvYWkHZHuD78wSmgc6r",
        "tool_response": {"stdout": f"deployed with {token(3)}", "sha256": token(4)},
    }
    filtered, found = FILTER.value(payload)
    assert filtered["tool_use_id"] == payload["tool_use_id"]
    assert filtered["tool_response"]["sha256"] == payload["tool_response"]["sha256"]
    assert filtered["tool_response"]["stdout"] == "deployed with [REDACTED:random-token]"
    assert found.kinds == {"random-token": 1}


def test_real_transcripts_and_hook_payloads_come_through_whole() -> None:
    """Claude Code's own records (thinking signatures, message and request ids, UUIDs) and the
    Codex and Gemini CLI hook payloads, as ``value`` sees them on import and capture."""
    fixtures = SHARED / "fixtures"
    files = [*(fixtures / "claude-code" / "transcripts").rglob("*.jsonl"), *(fixtures / "agents").glob("*.jsonl")]
    records = [json.loads(line) for path in sorted(files) for line in path.read_text().splitlines() if line.strip()]
    records += [json.loads(path.read_text()) for path in sorted((fixtures / "claude-code" / "hooks").glob("*.json"))]
    assert len(records) > 150
    changed = [record for record in records if FILTER.value(record)[1].secrets]
    assert changed == []


def test_the_layer_is_idempotent_and_scores_by_shape() -> None:
    text = json.dumps({"note": f"use {token(9)} and {token(10, 28)}"})
    once, _ = FILTER.text(text)
    again, found = FILTER.text(once)
    assert again == once and found.secrets == 0
    assert not random_tokens(once)
    random_score = score(features(token(11)) or ())
    word_score = score(features("getUserAccountSettings2024") or ())
    assert random_score > word_score


MASTER_KEY = "5f3c9a1b7e2d4f6a8b0c1d2e3f4a5b6c"


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_name": "Bash", "tool_input": {"command": "cat config/master.key"},
         "tool_response": {"stdout": MASTER_KEY + "\n", "stderr": ""}},
        {"tool_name": "Read", "tool_input": {"file_path": "/srv/app/config/credentials/api_token.txt"},
         "tool_response": {"file": {"content": f"{MASTER_KEY}\n"}}},
        {"tool_name": "Bash", "tool_input": {"command": "head -n 3 ~/.ssh/deploy.pem; less secrets/stripe.key"},
         "tool_response": {"stdout": f"{MASTER_KEY}\n"}},
    ],
)  # fmt: skip
def test_what_a_key_file_holds_is_its_key(payload: dict[str, object]) -> None:
    filtered, found = FILTER.value(payload)
    assert MASTER_KEY not in json.dumps(filtered) and found.kinds == {"key-file": 1}
    said = f"$ cat config/master.key\n{MASTER_KEY}\n"
    assert FILTER.text(said)[0] == "$ cat config/master.key\n[REDACTED:key-file]\n"


def test_a_certificate_read_from_a_pem_file_is_no_secret() -> None:
    rng = random.Random(8)
    body = "\n".join("".join(rng.choice(ALNUM + "+/") for _ in range(64)) for _ in range(4))
    cert = f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    payload = {"tool_input": {"file_path": "/etc/ssl/certs/api.pem"}, "tool_response": {"file": {"content": cert}}}
    assert FILTER.value(payload)[0] == payload


def test_a_lone_hex_line_elsewhere_is_a_commit_not_a_key() -> None:
    sha = "7bd2d722f10cdc5713736ca286b97bf84cdaac0a"
    payload = {"tool_input": {"command": "git rev-parse HEAD"}, "tool_response": {"stdout": sha + "\n"}}
    assert FILTER.value(payload)[0] == payload
    tokenizer = {"tool_input": {"file_path": "/srv/models/tokenizer_config.json"},
                 "tool_response": {"file": {"content": '{\n  "model_max_length": 512\n}'}}}  # fmt: skip
    assert FILTER.value(tokenizer)[0] == tokenizer


@pytest.mark.timeout(30)
def test_no_input_makes_the_layer_backtrack() -> None:
    """Pieces that almost read as words (60 lower-case letters and a capital: a nested
    quantifier would try every way to cut them, ~10^4 s each) and runs of every length cost
    what their size does."""
    for text in (
        ("a" * 60 + "B.com/") * 200,
        ("ab" * 40 + "-") * 300,
        "=" * 50_000 + "a" * 50_000,
        ("x1" * 30 + "/") * 500,
        "é" + "Zz9" * 20_000,
    ):
        filtered, _ = FILTER.text(text)
        assert len(filtered) <= len(text) + 64


PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx8d7a9Ks2mVd3Lq1Zp0Wc4Nt8Y5Hg2Jf6Bv1Xe9Rk3Mu7Tq2\n"
    "-----END RSA PRIVATE KEY-----\n"
)


@pytest.mark.parametrize(
    "template",
    ["    client-key-data: {b}", "  tls.key: {b}", "echo {b} | base64 -d > key.pem"],
)
def test_a_private_key_in_base64_is_a_secret_not_text(template: str) -> None:
    """Base64 of text is data (a patch, a file's content), unless the text is a private key:
    kubeconfig's ``client-key-data``, a Kubernetes TLS secret, a key piped through ``base64``."""
    encoded = base64.b64encode(PEM.encode()).decode()
    assert encoded[:40] not in FILTER.text(template.format(b=encoded))[0]


def test_a_key_named_for_a_file_keeps_its_path() -> None:
    text = 'client_key = "/etc/ssl/private/client.key"'
    assert FILTER.text(text)[0] == text
