"""Every secret rule, tried on generated fakes: five per rule, each in a prompt, a shell command and
a JSON file a tool read; and ordinary developer text that must come out untouched.

Each rule of ``memd.capture.privacy.rules.TOKEN_RULES`` has a generator here, by the rule's name: a rule
added without one fails ``test_every_rule_has_examples``.  A generator returns the text a user
would write and the secret in it; the test checks that nothing of the secret survives the filter.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable

import pytest

from memd.capture.privacy import Privacy
from memd.capture.privacy.rules import TOKEN_RULES
from memd.config import PrivacyConfig

FILTER = Privacy(PrivacyConfig())
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64URL = ALNUM + "_-"
DIGITS = string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """``n`` characters of ``alphabet`` with at least one letter and one digit (as real keys have)."""
    while True:
        value = pick(rng, alphabet, n)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


GITLAB = [
    ("glpat-", 20), ("glrt-", 20), ("gldt-", 20), ("glft-", 20), ("glsoat-", 20), ("glcbt-", 20), ("glffct-", 20),
    ("glimt-", 25), ("glagent-", 50), ("gloas-", 64), ("GR1348941", 20),
]  # fmt: skip


def uuid(rng: random.Random) -> str:
    return "-".join(pick(rng, HEX, n) for n in (8, 4, 4, 4, 12))


Example = tuple[str, str]
"""(the text, the secret in it)"""


def token(make: Callable[[random.Random], str]) -> Callable[[random.Random], Example]:
    def example(rng: random.Random) -> Example:
        secret = make(rng)
        return f"use {secret} for now", secret

    return example


GENERATORS: dict[str, Callable[[random.Random], Example]] = {
    "private-key": lambda r: (
        (s := pick(r, ALNUM, 64))
        and f"-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n{pick(r, ALNUM, 40)}\n-----END OPENSSH PRIVATE KEY-----",
        s,
    ),
    "url-password": lambda r: ((s := mixed(r, ALNUM, 14)) and f"git clone https://deploy:{s}@git.example.com/x", s),
    "authorization": lambda r: ((s := mixed(r, B64URL, 30)) and f"Authorization: Basic {s}", s),
    "bearer-token": lambda r: ((s := mixed(r, B64URL, 32)) and f"curl -H 'X: Bearer {s}' https://api", s),
    "github-token": token(lambda r: r.choice(["ghp_", "gho_", "ghs_", "ghu_", "ghr_"]) + mixed(r, ALNUM, 36)),
    "openai-anthropic-key": token(lambda r: "sk-ant-api03-" + mixed(r, B64URL, 60)),
    "slack-token": token(
        lambda r: r.choice(
            [
                "xoxb-" + pick(r, "0123456789", 12) + "-" + mixed(r, ALNUM, 24),
                f"xapp-1-A{pick(r, UPPER_DIGITS, 10)}-{pick(r, DIGITS, 13)}-{pick(r, HEX, 64)}",
            ]
        )
    ),
    "jwt": token(
        lambda r: r.choice(
            [
                "eyJhbGciOiJIUzI1NiJ9." + pick(r, B64URL, 40) + "." + pick(r, B64URL, 43),
                "ZXlKaGJHY2lPaU" + pick(r, ALNUM + "+/", 120),
            ]
        )
    ),
    "aws-access-key": token(lambda r: r.choice(["AKIA", "ASIA"]) + pick(r, string.ascii_uppercase + "234567", 16)),
    "aws-secret-key": lambda r: (
        (s := mixed(r, ALNUM + "/+", 40)) and f"aws configure set aws_secret_access_key {s}",
        s,
    ),
    "google-api-key": token(lambda r: "AIza" + pick(r, B64URL, 35)),
    "huggingface-token": token(lambda r: r.choice(["hf_", "api_org_"]) + pick(r, string.ascii_letters, 34)),
    "pypi-token": token(lambda r: "pypi-AgEIcHlwaS5vcmc" + pick(r, B64URL, 70)),
    "stripe-key": token(lambda r: r.choice(["sk", "rk"]) + r.choice(["_live_", "_test_"]) + mixed(r, ALNUM, 24)),
    "sendgrid-key": token(lambda r: "SG." + pick(r, B64URL, 22) + "." + pick(r, B64URL, 43)),
    "slack-webhook": lambda r: (
        (s := f"T{pick(r, ALNUM, 8)}/B{pick(r, ALNUM, 8)}/{pick(r, ALNUM, 24)}")
        and f"POST https://hooks.slack.com/services/{s}",
        s,
    ),
    "telegram-bot-token": token(lambda r: pick(r, "123456789", 9) + ":AA" + pick(r, B64URL, 33)),
    "digitalocean-token": token(lambda r: r.choice(["dop", "doo", "dor"]) + "_v1_" + pick(r, HEX, 64)),
    "shopify-token": token(lambda r: r.choice(["shpat_", "shpca_", "shppa_", "shpss_"]) + pick(r, HEX, 32)),
    "gitlab-token": lambda r: r.choice(
        [
            token(lambda r: (p := r.choice(GITLAB))[0] + mixed(r, B64URL, p[1])),
            lambda r: ((s := pick(r, HEX, 32)) and f"Cookie: _gitlab_session={s}; path=/", s),
        ]
    )(r),
    "npm-token": token(lambda r: "npm_" + mixed(r, ALNUM, 36)),
    "twilio-key": token(lambda r: "SK" + mixed(r, HEX, 32)),
    "databricks-token": token(lambda r: "dapi" + pick(r, HEX, 32)),
    "square-token": token(lambda r: r.choice(["sq0atp-" + pick(r, B64URL, 22), "EAAA" + pick(r, B64URL, 60)])),
    "postman-key": token(lambda r: f"PMAK-{pick(r, HEX, 24)}-{pick(r, HEX, 34)}"),
    "vault-token": token(lambda r: r.choice(["hvs.", "hvb."]) + pick(r, B64URL, 90)),
    "age-secret-key": token(lambda r: "AGE-SECRET-KEY-1" + pick(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    "linear-key": token(lambda r: "lin_api_" + mixed(r, ALNUM, 40)),
    "newrelic-key": token(
        lambda r: r.choice(
            ["NRAK-" + mixed(r, UPPER_DIGITS, 27), "NRJS-" + pick(r, HEX, 19), "NRII-" + mixed(r, ALNUM + "-", 32)]
        )
    ),
    "doppler-token": token(lambda r: "dp.pt." + mixed(r, ALNUM, 43)),
    "atlassian-token": token(lambda r: "ATATT3" + pick(r, B64URL, 180)),
    "1password-token": token(lambda r: "ops_eyJ" + pick(r, ALNUM + "+/", 300)),
    "1password-secret-key": token(lambda r: "A3-" + "-".join(mixed(r, UPPER_DIGITS, n) for n in (6, 6, 5, 5, 5, 5))),
    "adobe-client-secret": token(lambda r: "p8e-" + mixed(r, ALNUM, 32)),
    "alibaba-access-key": token(lambda r: "LTAI" + mixed(r, ALNUM, 20)),
    "artifactory-key": token(lambda r: r.choice(["AKCp" + mixed(r, ALNUM, 69), "cmVmd" + mixed(r, ALNUM, 59)])),
    "azure-client-secret": lambda r: (
        (s := pick(r, ALNUM, 3) + r.choice(DIGITS) + "Q~" + mixed(r, ALNUM + "_~.-", 34))
        and f'AZURE_CLIENT_SECRET_VALUE_IS "{s}"',
        s,
    ),
    "clickhouse-key": token(lambda r: "4b1d" + mixed(r, ALNUM, 38)),
    "clojars-token": token(lambda r: "CLOJARS_" + mixed(r, ALNUM, 60)),
    "cloudflare-origin-key": token(lambda r: f"v1.0-{pick(r, HEX, 24)}-{pick(r, HEX, 146)}"),
    "duffel-token": token(lambda r: "duffel_" + r.choice(["test_", "live_"]) + mixed(r, B64URL, 43)),
    "dynatrace-token": token(lambda r: f"dt0c01.{mixed(r, UPPER_DIGITS, 24)}.{mixed(r, UPPER_DIGITS, 64)}"),
    "easypost-token": token(lambda r: r.choice(["EZAK", "EZTK"]) + mixed(r, ALNUM, 54)),
    "facebook-token": lambda r: r.choice(
        [
            token(lambda r: r.choice(["EAAM", "EAAC"]) + mixed(r, ALNUM, 160)),
            lambda r: ((s := pick(r, DIGITS, 15) + "|" + mixed(r, B64URL, 30)) and f"facebook app token {s}", s),
        ]
    )(r),
    "flutterwave-key": token(
        lambda r: r.choice(["FLWSECK_TEST-", "FLWPUBK_TEST-"]) + pick(r, "abcdefgh0123456789", 32) + "-X"
    ),
    "flyio-token": token(lambda r: r.choice(["fo1_" + mixed(r, B64URL, 43), "fm2_" + mixed(r, ALNUM + "+/", 140)])),
    "frameio-token": token(lambda r: "fio-u-" + mixed(r, B64URL, 64)),
    "grafana-token": token(
        lambda r: r.choice(
            [
                "eyJrIjoi" + mixed(r, ALNUM, 90),
                "glc_" + mixed(r, ALNUM + "+/", 60),
                "glsa_" + mixed(r, ALNUM, 32) + "_" + pick(r, HEX, 8),
            ]
        )
    ),
    "harness-token": token(
        lambda r: r.choice(["pat.", "sat."]) + f"{mixed(r, B64URL, 22)}.{mixed(r, ALNUM, 24)}.{mixed(r, ALNUM, 20)}"
    ),
    "terraform-token": token(lambda r: f"{mixed(r, ALNUM, 14)}.atlasv1.{mixed(r, B64URL, 67)}"),
    "heroku-key": token(lambda r: "HRKU-AA" + mixed(r, B64URL, 58)),
    "infracost-token": token(lambda r: "ico-" + mixed(r, ALNUM, 32)),
    "intra42-secret": token(lambda r: "s-s4t2" + r.choice(["ud-", "af-"]) + pick(r, HEX, 64)),
    "maxmind-key": token(lambda r: f"{mixed(r, ALNUM, 6)}_{mixed(r, ALNUM, 29)}_mmk"),
    "teams-webhook": lambda r: (
        (s := f"{uuid(r)}@{uuid(r)}/IncomingWebhook/{pick(r, HEX, 32)}/{uuid(r)}")
        and f"POST https://contoso.webhook.office.com/webhookb2/{s}",
        s,
    ),
    "notion-token": token(lambda r: "ntn_" + pick(r, DIGITS, 11) + mixed(r, ALNUM, 35)),
    "octopus-key": token(lambda r: "API-" + mixed(r, UPPER_DIGITS, 26)),
    "openshift-token": token(lambda r: "sha256~" + mixed(r, B64URL, 43)),
    "perplexity-key": token(lambda r: "pplx-" + mixed(r, ALNUM, 48)),
    "planetscale-token": token(
        lambda r: r.choice(["pscale_tkn_", "pscale_pw_", "pscale_oauth_"]) + mixed(r, ALNUM, 43)
    ),
    "prefect-token": token(lambda r: "pnu_" + mixed(r, ALNUM, 36)),
    "pulumi-token": token(lambda r: "pul-" + pick(r, HEX, 40)),
    "readme-token": token(lambda r: "rdme_" + mixed(r, string.ascii_lowercase + DIGITS, 70)),
    "rubygems-token": token(lambda r: "rubygems_" + pick(r, HEX, 48)),
    "scalingo-token": token(lambda r: "tk-us-" + mixed(r, B64URL, 48)),
    "sendinblue-key": token(lambda r: f"xkeysib-{pick(r, HEX, 64)}-{mixed(r, ALNUM, 16)}"),
    "sentry-token": token(
        lambda r: r.choice(["sntryu_" + pick(r, HEX, 64), "sntrys_eyJpYXQiO" + mixed(r, ALNUM, 120)])
    ),
    "settlemint-token": token(lambda r: "sm_" + r.choice(["aat_", "pat_", "sat_"]) + mixed(r, ALNUM, 16)),
    "shippo-token": token(lambda r: "shippo_" + r.choice(["live_", "test_"]) + pick(r, HEX, 40)),
    "sourcegraph-token": token(
        lambda r: r.choice(["sgp_" + pick(r, HEX, 40), f"sgp_{pick(r, HEX, 16)}_{pick(r, HEX, 40)}"])
    ),
    "defined-networking-key": token(
        lambda r: (
            f"dnkey-{mixed(r, string.ascii_lowercase + DIGITS, 26)}-{mixed(r, string.ascii_lowercase + DIGITS, 52)}"
        )
    ),
    "dropbox-token": token(lambda r: "sl." + mixed(r, B64URL, 140)),
    "mailchimp-key": token(lambda r: pick(r, HEX, 32) + "-us" + str(r.randint(1, 21))),
    "mailgun-key": lambda r: ((s := "key-" + pick(r, HEX, 32)) and f"MAILGUN: the api uses {s}", s),
    "plaid-token": token(lambda r: "access-" + r.choice(["sandbox", "development", "production"]) + "-" + uuid(r)),
    "typeform-token": token(lambda r: "tfp_" + mixed(r, B64URL, 59)),
    "yandex-token": token(
        lambda r: r.choice([f"t1.{mixed(r, ALNUM, 40)}.{mixed(r, B64URL, 86)}", "AQVN" + mixed(r, B64URL, 36)])
    ),
    "twitter-token": token(lambda r: "A" * 22 + mixed(r, ALNUM + "%", 90)),
    "lob-key": token(lambda r: r.choice(["test_pub_", "live_pub_"]) + pick(r, HEX, 31)),
    "google-oauth-secret": token(lambda r: "GOCSPX-" + mixed(r, B64URL, 28)),
    "xai-key": token(lambda r: "xai-" + mixed(r, ALNUM, 80)),
    "groq-key": token(lambda r: "gsk_" + mixed(r, ALNUM, 52)),
    "replicate-token": token(lambda r: "r8_" + mixed(r, ALNUM, 37)),
    "discord-bot-token": lambda r: (
        (s := r.choice("MNO") + mixed(r, B64URL, 23) + "." + pick(r, B64URL, 6) + "." + mixed(r, B64URL, 38))
        and f"the discord bot runs with {s}",
        s,
    ),
    "cli-password": lambda r: ((s := mixed(r, ALNUM, 12)) and f"mysql -uroot -p{s} -h db shop", s),
    "cli-user-password": lambda r: ((s := mixed(r, ALNUM, 12)) and f"curl -u admin:{s} https://ci.local/api", s),
    "cli-secret-flag": lambda r: ((s := mixed(r, ALNUM, 20)) and f"vault login --token {s}", s),
    "supabase-key": token(lambda r: "sb_secret_" + mixed(r, B64URL, 31)),
    "docker-token": token(lambda r: "dckr_pat_" + mixed(r, B64URL, 27)),
    "webhook-secret": token(lambda r: "whsec_" + mixed(r, ALNUM + "+/", 32)),
    "contentful-token": token(lambda r: "CFPAT-" + mixed(r, B64URL, 43)),
    "netlify-token": token(lambda r: "nfp_" + mixed(r, ALNUM, 36)),
    "tailscale-key": token(lambda r: "tskey-auth-" + mixed(r, ALNUM, 11) + "CNTRL-" + mixed(r, ALNUM, 33)),
    "launchdarkly-key": token(lambda r: "sdk-" + uuid(r)),
    "fcm-server-key": token(lambda r: "AAAA" + mixed(r, B64URL, 7) + ":APA91b" + mixed(r, B64URL, 134)),
    "discord-webhook": lambda r: (
        (s := mixed(r, B64URL, 68))
        and f"curl -X POST https://discord.com/api/webhooks/{pick(r, '0123456789', 18)}/{s}",
        s,
    ),
    "url-signature": lambda r: (
        (s := mixed(r, ALNUM + "%", 44))
        and f"curl 'https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&sp=r&sig={s}'",
        s,
    ),
    "netrc-password": lambda r: ((s := mixed(r, ALNUM, 24)) and f"machine api.example.com login me password {s}", s),
    "paired-key": lambda r: (
        (s := pick(r, HEX, 32)) and f'const client = algoliasearch("{pick(r, UPPER_DIGITS, 10)}", "{s}");',
        s,
    ),
    "password": lambda r: (
        (s := mixed(r, ALNUM + "!#%&", 14))
        and r.choice([f"the staging password is {s}", f"login is admin@acme.io / {s}", f"creds: deploy / {s}"]),
        s,
    ),
    "secret": lambda r: ((s := mixed(r, ALNUM, 24)) and f"the client secret is {s}, keep it", s),
    "token": lambda r: ((s := mixed(r, ALNUM + "._", 22)) and f"my access token is {s}.", s),
    "webhook-url": lambda r: (
        (s := mixed(r, B64URL, 32)) and f"curl -X POST https://events.example.dev/api/webhooks/{s} -d @event.json",
        s,
    ),
    "key-file": lambda r: (
        (s := pick(r, HEX, 32)) and r.choice(["$ cat config/master.key\n", "less ~/.secrets/api_token.txt\n"]) + s,
        s,
    ),
    "api-key": lambda r: (
        (s := pick(r, HEX, 32))
        and r.choice(
            [f"curl 'https://api.openweathermap.org/data/2.5/weather?q=Paris&appid={s}'", f"the api key is {s}"]
        ),
        s,
    ),
}


def test_every_rule_has_examples() -> None:
    assert {p.name for p in TOKEN_RULES} == set(GENERATORS)


CASES = [(name, seed) for name in sorted(GENERATORS) for seed in range(5)]


def contexts(text: str) -> list[str]:
    """The text as a prompt, inside a shell command, and as a JSON file's content."""
    return [text, f"bash -c '{text}'", json.dumps({"config": {"note": text}})]


@pytest.mark.parametrize(("name", "seed"), CASES)
def test_a_secret_of_every_kind_is_removed(name: str, seed: int) -> None:
    text, secret = GENERATORS[name](random.Random(f"{name}-{seed}"))
    for context in contexts(text):
        filtered, found = FILTER.text(context)
        assert secret not in filtered, (name, filtered)
        assert found.secrets >= 1
        assert f"[REDACTED:{name}]" in filtered, (name, filtered)


def test_a_hook_payload_keeps_nothing_of_any_secret() -> None:
    rng = random.Random(7)
    secrets = [GENERATORS[name](rng) for name in sorted(GENERATORS)]
    payload = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/srv/app/.env"},
        "tool_response": {"file": {"content": "\n".join(text for text, _ in secrets)}},
    }
    filtered, found = FILTER.value(payload)
    dumped = json.dumps(filtered)
    assert not [secret for _, secret in secrets if secret in dumped]
    assert found.secrets >= len(secrets)


ORDINARY = [
    "def connect(self, host: str, port: int = 5432) -> Connection:",
    "commit 3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345 (HEAD -> main)",
    "request id 123e4567-e89b-12d3-a456-426614174000 took 35 ms",
    '"integrity": "sha512-Z3Jhc3Nob3BwZXIgZ3Jhc3Nob3BwZXIgZ3Jhc3Nob3BwZXIgZ3Jhc3Nob3BwZXI="',
    "resolved https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz#5b8a3a7765dfe0012ad8a3ba0f3c05d2d5a53f86",
    "img src=data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
    "AAAABJRU5ErkJggg==",
    "test_a_session_is_stored_event_for_event_even_when_replayed_twice passed",
    "see https://docs.python.org/3/library/re.html#re.compile and http://localhost:8080/health",
    "git push -u origin main && git checkout -b feature/skip-flaky-tests",
    "pip install --user requests; npm install --save-dev eslint",
    "검색을 위한 색인을 다시 만들었습니다: 12개의 세션, 340개의 이벤트",
    "ssh -p 2222 deploy@host; mysql --host db --port 3306 shop < dump.sql",
    "the skeleton key idea: SKIP_SLOW=1 pytest -k 'not slow' -x",
    "Glossary: glucose, glpk, glance; hvac; dapper; askia is a name",
    "curl -u user https://example.com  # asks for the password",
    "--token-file ~/.config/tok --password-stdin",
    "Accept-Language: en-us; docs/api-reference; see sat.example.com and pat.example.org for details",
    "route API-GATEWAYSERVICEENDPOINTPRIMARY to the t1.micro instance; ico-moon icons; v1.0-beta",
    "sha256 4b1d9c2e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcdef01 of model.onnx",
    "AAAAAAAAAAAAAAAAAAAAAAAAAA padding in a test vector; sm_aat_ is a prefix; sl.com is a domain",
    "export const INTERNAL_TEST_PUB_KEY_PATH = '/etc/keys'; ops_eyJ is 1Password's prefix",
]


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_developer_text_passes_untouched(line: str) -> None:
    filtered, found = FILTER.text(line)
    assert (filtered, found.secrets) == (line, 0)
