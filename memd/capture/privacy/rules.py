"""The secret rules: one row per shape a secret has, data more than code.

Whatever tags say, these are replaced by a marker naming the rule that found them,
``[REDACTED:stripe-key]`` (``privacy.secrets = false`` turns them off), inside code too:

- PEM private-key blocks, ``-----BEGIN ... PRIVATE KEY-----`` through ``-----END ...``,
  whole; a block cut before its END loses its base64 lines.
- Tokens recognised by shape, one rule each in ``TOKEN_RULES`` (data: a name, a
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
  Google OAuth client secrets, xAI, Groq, Replicate, Supabase secret keys, Docker personal
  access tokens, webhook signing secrets (``whsec_``), Contentful, Netlify, Tailscale,
  LaunchDarkly SDK keys, Firebase Cloud Messaging server keys, Discord webhook URLs, PuTTY key
  files' private lines; a Telegram bot token in its API URL (``/bot<token>/``), a Twilio API
  secret passed beside its ``SK`` id; and three shapes without a prefix,
  taken only where the text names their service: Discord bot tokens, Facebook
  ``<app id>|<token>`` and Mailgun ``key-<hex>``.  A shape whose fixed part is not at its
  start (Mailchimp's ``-us12``, MaxMind's ``_mmk``) is found by that part and looks back
  in a lookbehind (``Rule.reach``).
- Credentials on a command line: ``mysql``/``mariadb`` ``-pPASSWORD``, ``-u``/``--user
  user:password`` (curl, httpie...), the short password flags of everyday tools after their
  tool (``docker login -p``, ``redis-cli -a``, ``sshpass -p``, ``ldapsearch -w``,
  ``ssh-keygen -N``, ``zip -P``, ``7z -pX``: ``_TOOL_FLAGS``), and any flag whose name says it
  takes a credential, in any tool, followed by a space and a value (``--password``,
  ``--management-token``, ``--access-key-secret``, ``--authkey``, ``-storepass``, ``-passout
  pass:X``: ``_FLAG_NAME``); not a metavar (``PASSWORD``), a plain word of prose, OpenSSL's
  ``env:``/``file:`` or a placeholder (``xxxx``).  ``--token=x`` is an assignment, below.
- ``Authorization: <scheme> <credentials>`` (the credentials; the scheme stays) and
  ``Bearer <token>`` anywhere when the token has 16+ characters and a digit.
- The password in a URL: ``scheme://user:password@host`` keeps scheme, user and host.

Each row (``Rule``) is a name, a literal that triggers it and a regex; ``shapes.py`` runs
the rows whose trigger the text holds.  tests/test_secret_rules.py generates fakes for
every rule by its name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from .command_line import COMMAND_LINE_RULES
from .key_files import KEY_FILE_RULES
from .markup import FORMAT_RULES
from .neighbours import NEIGHBOUR_RULES
from .rule import Rule, has_digit, has_letter_and_digit

__all__ = ["TOKEN_RULES", "Rule", "has_digit", "has_letter_and_digit"]


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
) -> tuple[Rule, ...]:
    """One rule per prefix (a fixed-width regex; a regex that starts with a literal is searched
    fast), all behind one ``trigger``."""
    return tuple(Rule(name, trigger, _token(prefix, body), check=check) for prefix in prefixes)


_B: Final = r"(?![A-Za-z0-9_-])"
"""The end of a token: no further character it could be made of."""

TOKEN_RULES: Final = (
    Rule(
        "private-key",
        "-----begin",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----BEGIN )){0,65536}?"
            r"-----END (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:[ \t]*(?:\r?\n|\\r?\\n)[A-Za-z0-9+/=]{8,128}){0,1024})"
        ),
    ),
    Rule("url-password", "://", re.compile(r"://[^\s/:@?#'\"`<>\[\]]{0,256}:([^\s/@?#'\"`<>\[\]]{1,256})@"), group=1),
    Rule(
        "authorization",
        "authorization",
        re.compile(
            r"authorization\\?[\"']?[ \t]{0,8}[:=][ \t]{0,8}\\?[\"']?"
            r"(?:bearer|basic|token|digest|bot|negotiate|ntlm|apikey)[ \t]{1,8}([a-z0-9._~+/=-]{1,4096})"
        ),
        group=1,
        lowered=True,
    ),
    Rule(
        "bearer-token",
        "bearer",
        re.compile(r"bearer(?<![a-z0-9_\]]bearer)[ \t]{1,8}([a-z0-9._~+/=-]{16,4096})"),
        group=1,
        lowered=True,
        check=has_digit,
    ),
    *_tokens("github-token", "gh", (r"gh[pousr]_",), r"[A-Za-z0-9]{20,255}"),
    *_tokens("github-token", "github_pat_", (r"github_pat_",), r"[A-Za-z0-9_]{22,255}"),
    *_tokens("openai-anthropic-key", "sk-", (r"sk-",), r"[A-Za-z0-9_-]{20,512}", check=has_letter_and_digit),
    *_tokens("slack-token", "xox", (r"xox[abposre]-",), r"[A-Za-z0-9-]{10,255}"),
    *_tokens("jwt", "eyj", (r"eyJ",), r"[A-Za-z0-9_-]{5,4096}\.[A-Za-z0-9_-]{5,8192}\.[A-Za-z0-9_-]{0,4096}"),
    *_tokens("aws-access-key", "ia", (r"A[KS]IA",), r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    Rule(
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
    Rule(
        "slack-webhook",
        "hooks.slack.com/",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{20,256})"),
        group=1,
    ),
    Rule(  # no prefix: searched only when ":AA" is in the text; in Telegram's API URLs after ``/bot``
        "telegram-bot-token",
        ":aa",
        re.compile(r"(?:(?<=/bot)|(?<![0-9A-Za-z_:-]))[0-9]{8,10}:AA[0-9A-Za-z_-]{33}(?![0-9A-Za-z_-])"),
    ),
    *_tokens("digitalocean-token", "_v1_", (r"do[por]_v1_",), rf"[a-f0-9]{{64}}{_B}"),
    *_tokens("shopify-token", "shp", (r"shp(?:at|ca|pa|ss)_",), rf"[a-fA-F0-9]{{32}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"gl(?:rt|dt|ft)-", r"gl(?:pat|cbt)-", r"glsoat-"), rf"[0-9A-Za-z_-]{{20,64}}{_B}"),
    *_tokens("gitlab-token", "gl", (r"glptt-",), rf"[0-9a-f]{{40}}{_B}"),
    *_tokens("npm-token", "npm_", (r"npm_",), rf"[A-Za-z0-9]{{36}}{_B}"),
    *_tokens("twilio-key", "sk", (r"SK",), rf"[0-9a-fA-F]{{32}}{_B}", check=has_letter_and_digit),
    Rule(  # the API key's secret, passed beside its ``SK`` id: ``Client("SK…", "<secret>", …)``
        "twilio-key",
        "sk",
        re.compile(r"SK[0-9a-fA-F]{32}[\"']?[ \t]*,[ \t]*(?:[A-Za-z_]{1,20}[ \t]*=[ \t]*)?[\"']([A-Za-z0-9]{32})[\"']"),
        group=1,
        check=has_letter_and_digit,
    ),
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
    *_tokens("alibaba-access-key", "ltai", (r"LTAI",), rf"[A-Za-z0-9]{{20}}{_B}", check=has_letter_and_digit),
    *_tokens("artifactory-key", "akcp", (r"AKCp",), rf"[A-Za-z0-9]{{69}}{_B}"),
    *_tokens("artifactory-key", "cmvmd", (r"cmVmd",), rf"[A-Za-z0-9]{{59}}{_B}"),
    Rule(  # ``Q~`` after 4 characters
        "azure-client-secret",
        "q~",
        re.compile(r"Q~(?<=(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
        reach=4,
    ),
    *_tokens("clickhouse-key", "4b1d", (r"4b1d",), rf"[A-Za-z0-9]{{38}}{_B}", check=has_letter_and_digit),
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
    Rule("gitlab-token", "_gitlab_session=", re.compile(r"_gitlab_session=([0-9a-z]{32})(?![0-9a-z])"), group=1),
    *_tokens("grafana-token", "eyjrijoi", (r"eyJrIjoi",), r"[A-Za-z0-9]{70,400}={0,3}"),
    *_tokens("grafana-token", "glc_", (r"glc_",), r"[A-Za-z0-9+/]{32,400}={0,3}"),
    *_tokens("grafana-token", "glsa_", (r"glsa_",), rf"[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}{_B}"),
    *_tokens(
        "harness-token", "at.", (r"pat\.", r"sat\."), rf"[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{20}}{_B}"
    ),
    Rule(  # ``.atlasv1.`` after 14 characters
        "terraform-token",
        ".atlasv1.",
        re.compile(
            r"\.atlasv1\.(?<=(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.)[A-Za-z0-9_=-]{60,70}(?![A-Za-z0-9_=-])"
        ),
        reach=14,
    ),
    *_tokens("heroku-key", "hrku-", (r"HRKU-AA",), rf"[0-9A-Za-z_-]{{58}}{_B}"),
    *_tokens("infracost-token", "ico-", (r"ico-",), rf"[A-Za-z0-9]{{32}}{_B}", check=has_letter_and_digit),
    *_tokens("intra42-secret", "s-s4t2", (r"s-s4t2(?:ud|af)-",), rf"[a-f0-9]{{64}}{_B}"),
    *_tokens("jwt", "zxlk", (r"ZXlK",), r"(?:aGJHY2lPaU|MGVYQWlPaUp|cmFXUWlP)[A-Za-z0-9/+_-]{40,8192}={0,2}"),
    Rule(  # a fixed suffix
        "maxmind-key",
        "_mmk",
        re.compile(r"_mmk(?<=(?<![A-Za-z0-9_])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?![A-Za-z0-9_])"),
        reach=36,
    ),
    Rule(
        "teams-webhook",
        "webhook.office.com/webhookb2/",
        re.compile(r"webhook\.office\.com/webhookb2/([A-Za-z0-9@/-]{60,400})"),
        group=1,
    ),
    *_tokens("notion-token", "ntn_", (r"ntn_",), rf"[0-9]{{11}}[A-Za-z0-9]{{35}}{_B}"),
    *_tokens("octopus-key", "api-", (r"API-",), rf"[A-Z0-9]{{26}}{_B}", check=has_letter_and_digit),
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
    Rule(  # a fixed suffix
        "mailchimp-key",
        "-us",
        re.compile(r"-us(?<=(?<![A-Za-z0-9])[a-f0-9]{32}-us)[0-9]{1,2}(?![A-Za-z0-9])"),
        reach=32,
    ),
    Rule(  # ``key-`` + 32 hex is a Mailgun key only where the text mentions Mailgun
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
    *_tokens("supabase-key", "sb_secret_", (r"sb_secret_",), rf"[A-Za-z0-9_-]{{20,128}}{_B}", check=has_digit),
    *_tokens("docker-token", "dckr_pat_", (r"dckr_pat_",), rf"[A-Za-z0-9_-]{{20,64}}{_B}", check=has_digit),
    *_tokens("webhook-secret", "whsec_", (r"whsec_",), r"[A-Za-z0-9+/]{24,128}={0,2}(?![A-Za-z0-9+/=_-])"),
    *_tokens("contentful-token", "cfpat-", (r"CFPAT-",), rf"[A-Za-z0-9_-]{{20,64}}{_B}", check=has_digit),
    *_tokens("netlify-token", "nfp_", (r"nfp_",), rf"[A-Za-z0-9]{{30,64}}{_B}", check=has_letter_and_digit),
    *_tokens(
        "tailscale-key",
        "tskey-",
        (r"tskey-auth-", r"tskey-api-", r"tskey-client-"),
        rf"[A-Za-z0-9-]{{20,128}}{_B}",
        check=has_digit,
    ),
    *_tokens("launchdarkly-key", "sdk-", (r"sdk-",), rf"[0-9a-f]{{8}}(?:-[0-9a-f]{{4}}){{3}}-[0-9a-f]{{12}}{_B}"),
    Rule(  # Firebase Cloud Messaging's legacy server key: ``AAAA<7>:APA91b<134>``
        "fcm-server-key",
        ":apa91b",
        re.compile(r"(?<![A-Za-z0-9_-])AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,200}(?![A-Za-z0-9_-])"),
    ),
    Rule(
        "discord-webhook",
        "/api/webhooks/",
        re.compile(r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,68})"),
        group=1,
    ),
    Rule(  # a PuTTY key file's private part: the base64 lines after ``Private-Lines: N``
        "private-key",
        "private-lines:",
        re.compile(
            r"Private-Lines:[ \t]*[0-9]{1,3}[ \t]*\r?\n"
            r"((?:[A-Za-z0-9+/=]{1,64}\r?\n){0,63}[A-Za-z0-9+/=]{1,64})(?![A-Za-z0-9+/=:-])"
        ),
        group=1,
    ),
    Rule(  # ``<id>|<token>``: no prefix, searched only in text that mentions Facebook
        "facebook-token",
        "facebook",
        re.compile(r"(?<![0-9A-Za-z])[0-9]{15,16}(?:\||%7[Cc])[0-9A-Za-z_-]{27,40}(?![0-9A-Za-z_-])"),
    ),
    Rule(  # no prefix: searched only in text that mentions Discord
        "discord-bot-token",
        "discord",
        re.compile(
            r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_.-])"
        ),
        check=has_letter_and_digit,
    ),
    Rule(  # the same, handed to a bot's ``run(...)`` in a file that never says Discord
        "discord-bot-token",
        ".run(",
        re.compile(
            r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_.-])"
        ),
        check=has_letter_and_digit,
    ),
    *COMMAND_LINE_RULES,
    *FORMAT_RULES,
    *NEIGHBOUR_RULES,
    *KEY_FILE_RULES,
)
