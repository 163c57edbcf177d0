"""``memctl scan PATH... | -``: files and pastes checked before they reach Claude Code, through the
real CLI (no daemon), and the line diff that places what the filter changed."""

from __future__ import annotations

import base64
import json
import os
import random
import string
import subprocess
from pathlib import Path

from conftest import Instance

from memd.capture.privacy import Privacy
from memd.capture.privacy.findings import PRIVATE, Finding, findings
from memd.config import PrivacyConfig

RANDOM = random.Random(29)


def _token(alphabet: str, n: int) -> str:
    return "".join(RANDOM.choice(alphabet) for _ in range(n))


GITHUB = "ghp_" + _token(string.ascii_letters + string.digits, 36)
PASSWORD = "Tr0ub4dor&3-" + _token(string.ascii_lowercase, 6)
PEM_BODY = base64.b64encode(RANDOM.randbytes(600)).decode()
PEM_LINES = [PEM_BODY[i : i + 64] for i in range(0, len(PEM_BODY), 64)]
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_LINES, "-----END RSA PRIVATE KEY-----"])


def scan(instance: Instance, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*instance.memctl_argv(), *args], input=stdin, capture_output=True, text=True, env=instance.env, timeout=60
    )


def test_a_file_is_reported_line_by_line_without_its_secrets(instance: Instance, tmp_path: Path) -> None:
    config = tmp_path / "deploy.env"
    config.write_text(
        f"# deploy settings\nexport DB_PASSWORD={PASSWORD}\nGH={GITHUB}\nplain line\n"
        "<private>my salary is 100</private>\n" + PEM + "\nlast line\n"
    )
    done = scan(instance, "scan", str(config))
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert f"{config}:2: password: export DB_PASSWORD=[REDACTED:password]" in out
    assert f"{config}:3: github-token: GH=[REDACTED:github-token]" in out
    assert f"{config}:5: private: [PRIVATE]" in out
    pem_lines = PEM.count("\n") + 1
    assert f"{config}:6-{5 + pem_lines}: private-key: [REDACTED:private-key]" in out
    assert "4 findings in 1 of 1 files checked" in out
    for secret in (PASSWORD, GITHUB, "100", PEM_BODY[:40]):
        assert secret not in out and secret not in done.stderr
    as_json = json.loads(scan(instance, "--json", "scan", str(config)).stdout)
    assert [(f["line"], f["end_line"], f["kinds"]) for f in as_json["findings"]] == [
        (2, 2, ["password"]),
        (3, 3, ["github-token"]),
        (5, 5, ["private"]),
        (6, 5 + pem_lines, ["private-key"]),
    ]
    assert as_json["kinds"] == {"password": 1, "github-token": 1, "private": 1, "private-key": 1}


def test_a_paste_on_standard_input(instance: Instance) -> None:
    leaked = scan(instance, "scan", "-", stdin=f"here is my token {GITHUB} can you check it\n")
    assert leaked.returncode == 1
    assert "<stdin>:1: github-token: here is my token [REDACTED:github-token] can you check it" in leaked.stdout
    clean = scan(instance, "scan", "-", stdin="a sha like 3f9c2a1 and a uuid 123e4567-e89b-12d3-a456-426614174000\n")
    assert clean.returncode == 0 and "no secret or private span found (1 file checked)" in clean.stdout


def test_the_users_own_patterns_apply(instance: Instance, tmp_path: Path) -> None:
    os.makedirs(os.path.dirname(instance.paths.config_file), exist_ok=True)
    Path(instance.paths.config_file).write_text('[privacy]\nextra_patterns = ["ACME-[0-9]{6}"]\n')
    done = scan(instance, "scan", "-", stdin="the badge is ACME-123456\n")
    assert done.returncode == 1 and "<stdin>:1: custom: the badge is [REDACTED:custom]" in done.stdout
    Path(instance.paths.config_file).write_text("[privacy\n")
    broken = scan(instance, "scan", "-", stdin="x\n")
    assert broken.returncode == 1 and "config.toml" in broken.stderr and "move it away" in broken.stderr


def test_unreadable_and_binary_files_are_said_and_the_exit_status_tells(instance: Instance, tmp_path: Path) -> None:
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01" + GITHUB.encode())
    clean = tmp_path / "notes.md"
    clean.write_text("nothing to hide\n")
    done = scan(instance, "scan", str(clean), str(binary), str(tmp_path / "missing.txt"))
    assert done.returncode == 2  # nothing found, and one file could not be read
    assert "missing.txt: No such file or directory" in done.stderr and "blob.bin: binary, not checked" in done.stderr
    assert "(1 file checked)" in done.stdout
    found = scan(instance, "scan", str(tmp_path / "missing.txt"), "-", stdin=GITHUB)
    assert found.returncode == 1  # a secret found says more than a file missing
    store_flags = scan(instance, "scan", "--yes", str(clean))
    assert (
        store_flags.returncode == 1 and "--yes and --dry-run are for the scan of what is stored" in store_flags.stderr
    )


def test_findings_place_what_the_filter_changed() -> None:
    privacy = Privacy(PrivacyConfig())

    def filtered(text: str) -> str:
        return privacy.text(text)[0]

    text = f"a\nDB_PASSWORD={PASSWORD}\nb\n<private>x\ny</private>\n{PEM}\nc"
    pem_end = 6 + PEM.count("\n")
    assert findings(text, filtered) == [
        Finding(2, 2, ("password",), "DB_PASSWORD=[REDACTED:password]"),
        Finding(4, 5, (PRIVATE,), "[PRIVATE]"),
        Finding(6, pem_end, ("private-key",), "[REDACTED:private-key]"),
    ]
    assert findings("same\ntext", filtered) == []
    assert findings("x [REDACTED] y", filtered) == []  # an old marker is no finding
    # a marker without a kind (an older store's) is a secret's
    assert findings("t=abc", lambda text: "t=[REDACTED]") == [Finding(1, 1, ("secret",), "t=[REDACTED]")]
