"""The secret rules measured: what they catch, what they wrongly hide, what they cost.

- recall: ``--per-rule`` fakes of every rule (the generators of tests/test_secret_rules.py,
  random but valid-looking), each alone in a line of prose, a shell command and a JSON
  file; a fake counts as caught when nothing of it is left in any of the three.
- false alarms: ordinary developer text that must pass untouched, line by line: memd's own
  source and docs (``memd/``, ``client/``, ``*.md``; not ``tests/``, whose fakes must be
  caught, nor ``memd/capture/privacy/``, which quotes token shapes), ``git log`` lines (SHAs,
  names, subjects), the pinned Claude Code's ``package-lock.json`` (sha512 integrity
  hashes, registry URLs) when it is installed, UUIDs, and Korean prose; a line counts as a
  false alarm when the filter changes it.
- cost: ``Privacy.text`` on the ordinary corpus, per MB, and on 50 KB of it.

``--against detect-secrets`` measures Yelp's detect-secrets (its default plugins and
filters, ``SecretsCollection.scan_file``, as its ``scan`` command runs) on the same fakes
and lines, for the choice issue 16 asks for.  It is a scanner, not a redactor: what it
reports is a line and a type, and its ``secret_value`` is often a part (``ghp`` for a
GitHub token), so a fake counts as caught when it flags every line holding it in all three contexts, as
memd's rules are counted (``recall_any_context``: in one of them at least), and a line of
the ordinary corpus as a false alarm when it flags it at all.  It is not a dependency of
memd: ``pip install detect-secrets`` first (the bench says so when it is missing).

- ``--held-out``: recall on kinds no rule names, leave-one-kind-out (``held_out``).
- ``--third-party``: false alarms, by file type, on code memd does not control: the installed
  Python packages and the pinned Claude Code's lockfile (``third_party_lines``).

    .venv/bin/python bench/secret_rules.py [--per-rule 20] [--json] [--against detect-secrets]
                                           [--third-party] [--held-out]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from test_secret_rules import GENERATORS, contexts  # noqa: E402

from memd.capture.privacy import Privacy  # noqa: E402
from memd.config import PrivacyConfig  # noqa: E402

KOREAN = [
    "검색을 위한 색인을 다시 만들었습니다.",
    "이 함수는 세션이 끝날 때 요약을 저장합니다.",
    "배포 스크립트가 실패하면 로그를 먼저 확인하세요.",
    "토큰 수가 예산을 넘으면 오래된 기억부터 줄입니다.",
]
TARGET_RECALL = 0.99
TARGET_FALSE_ALARMS = 0.005
TARGET_50KB_MS = 5.0


def ordinary_lines() -> list[str]:
    lines: list[str] = []
    sources = [*(REPO / "memd").rglob("*.py"), *(REPO / "client").rglob("*.py"), *REPO.glob("*.md")]
    for path in sorted(sources):
        if path.parent.name != "privacy":  # memd/capture/privacy/ quotes token shapes
            lines += path.read_text(encoding="utf-8").splitlines()
    log = subprocess.run(
        ["git", "-C", str(REPO), "log", "--format=%H %an <%ae> %s", "-n", "2000"], capture_output=True, text=True
    )
    lines += log.stdout.splitlines()
    lock = Path.home() / ".cache" / "memd-e2e" / "claude-code-2.1.328" / "package-lock.json"
    if lock.exists():
        lines += lock.read_text().splitlines()
    rng = random.Random(3)
    lines += [f"request {uuid.UUID(int=rng.getrandbits(128))} finished in {rng.randint(1, 900)} ms" for _ in range(500)]
    lines += KOREAN * 50
    return [line for line in lines if line.strip()]


THIRD_PARTY_LINES = 30_000
"""Lines of each file type taken from the installed third-party code (``third_party_lines``)."""
THIRD_PARTY_TYPES = {
    "python source": (".py",),
    "package metadata (METADATA, RECORD, entry points)": ("METADATA", "RECORD", "entry_points.txt", "WHEEL"),
    "json": (".json",),
    "config (toml, cfg, ini, yaml)": (".toml", ".cfg", ".ini", ".yaml", ".yml"),
    "docs (md, rst, txt)": (".md", ".rst", ".txt"),
    "type stubs (pyi)": (".pyi",),
}


def third_party_lines() -> dict[str, list[str]]:
    """Lines of code memd does not control, by file type: the installed Python packages (this
    interpreter's site-packages: sources, stubs, metadata with their sha256 RECORDs, configs, docs)
    and the pinned Claude Code's ``package-lock.json``.  Test folders are left out (their fakes
    are meant to look like secrets), and so is detect-secrets (its plugins quote token shapes).
    Files are taken in path order, spread over every package, until ``THIRD_PARTY_LINES`` lines
    of a type; a line is cut into 400-character pieces (minified code)."""
    import site

    roots = [Path(folder) for folder in site.getsitepackages()]
    files = sorted(
        path
        for root in roots
        for path in root.rglob("*")
        if path.is_file()
        and not {"tests", "test", "testing", "detect_secrets", "__pycache__"} & set(path.parts)
        and not path.name.startswith("test_")
    )
    found: dict[str, list[str]] = {}
    for kind, endings in THIRD_PARTY_TYPES.items():
        chosen = [path for path in files if path.name.endswith(endings)]
        step = max(1, len(chosen) // 400)  # about 400 files of each type, across all packages
        lines: list[str] = []
        for path in chosen[::step]:
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            lines += [line[i : i + 400] for line in text.splitlines() if line.strip() for i in range(0, len(line), 400)]
            if len(lines) >= THIRD_PARTY_LINES:
                break
        found[kind] = lines[:THIRD_PARTY_LINES]
    lock = Path.home() / ".cache" / "memd-e2e" / "claude-code-2.1.328" / "package-lock.json"
    if lock.exists():
        found["npm lockfile (Claude Code's)"] = [line for line in lock.read_text().splitlines() if line.strip()]
    return found


STRUCTURE_RULES = frozenset(
    {"url-password", "authorization", "bearer-token", "aws-secret-key", "cli-password", "cli-user-password",
     "cli-secret-flag", "netrc-password", "private-key", "paired-key", "password", "secret", "token", "api-key",
     "key-file", "webhook-url"}
)  # fmt: skip
"""Rules that find a secret by where it stands (a flag, a header, a URL's userinfo, a PEM block,
what stands beside it, the file it was read from), not by a provider's format: they are the
layers a held-out kind falls to, never held out."""


def held_out(generated: list[tuple[str, str, str]]) -> dict[str, object]:
    """Recall on kinds no rule names: for each provider kind in turn, its own rules are taken out
    of the table and its fakes filtered by everything else (the structural rules, ``key = value``,
    XML, placeholders, the shape layer), as the generator wrote them (mostly keyless: "use <token>
    for now": the shape layer's), named as people name them in config (``API_TOKEN=<token>``,
    ``{"api_key": "<token>"}``: the structure's) and passed bare to an SDK (``Client("<token>")``).
    This is how a kind memd has no rule for fares: leave-one-kind-out, over every kind."""
    from memd.capture.privacy import shapes

    everything = shapes.TOKEN_RULES
    privacy = Privacy(PrivacyConfig())
    kinds = sorted({name for name, _, _ in generated} - STRUCTURE_RULES)
    caught: dict[str, dict[str, int]] = {"as written": {}, "named": {}, "passed to a constructor": {}}
    try:
        for kind in kinds:
            shapes.TOKEN_RULES = tuple(rule for rule in everything if rule.name != kind)  # type: ignore[misc]
            for name, text, secret in generated:
                if name != kind:
                    continue
                named = [f"API_TOKEN={secret}", json.dumps({"service": {"api_key": secret}})]
                passed = [f'client = Client("{secret}")', f"const sdk = init('{secret}', {{ region: 'eu' }});"]
                for style, texts in (
                    ("as written", contexts(text)),
                    ("named", named),
                    ("passed to a constructor", passed),
                ):
                    if all(secret not in privacy.text(context)[0] for context in texts):
                        caught[style][kind] = caught[style].get(kind, 0) + 1
    finally:
        shapes.TOKEN_RULES = everything  # type: ignore[misc]
    per_kind = len(generated) // len({name for name, _, _ in generated})
    total = per_kind * len(kinds)
    return {
        "kinds": len(kinds),
        **{f"recall {style}": round(sum(found.values()) / total, 4) for style, found in caught.items()},
        "kinds caught as written": sorted(caught["as written"]),
    }


def detect_secrets_figures(fakes: list[tuple[str, str, str]], lines: list[str]) -> dict[str, object]:
    """detect-secrets on the same fakes (name, text, secret) and ordinary lines."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        sys.exit("--against detect-secrets needs it installed: .venv/bin/pip install detect-secrets==1.5.0")
    import tempfile

    def flagged(text: str) -> set[int]:
        """The 1-based numbers of the lines of ``text`` detect-secrets reports."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "sample.txt")
            path.write_text(text, encoding="utf-8")
            found = SecretsCollection()
            found.scan_file(str(path))
            return {secret.line_number for secrets in found.data.values() for secret in secrets}

    missed: dict[str, int] = {}
    seen_once = 0
    with default_settings():
        for name, text, secret in fakes:
            caught = []
            for context in contexts(text):
                numbers = flagged(context)
                holding = {number for number, line in enumerate(context.splitlines(), 1) if secret in line}
                caught.append(bool(holding) and holding <= numbers)
            if not all(caught):
                missed[name] = missed.get(name, 0) + 1
            seen_once += any(caught)
        numbers = flagged("\n".join(lines))
        chunk = "\n".join(lines)[:50_000]
        times = []
        for _ in range(10):
            started = time.perf_counter()
            flagged(chunk)
            times.append((time.perf_counter() - started) * 1000)
    return {
        "recall": round(1 - sum(missed.values()) / len(fakes), 4),
        "recall_any_context": round(seen_once / len(fakes), 4),
        "missed": missed,
        "false_alarm_lines": len(numbers),
        "false_alarm_rate": round(len(numbers) / len(lines), 5),
        "false_alarm_examples": [lines[number - 1][:160] for number in sorted(numbers)[:15]],
        "ms_50kb_p50": round(statistics.median(times), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-rule", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--against", choices=["detect-secrets"], help="measure that scanner on the same corpus too")
    parser.add_argument("--third-party", action="store_true", help="false alarms on installed third-party code too")
    parser.add_argument("--held-out", action="store_true", help="recall on each provider kind with its own rules out")
    args = parser.parse_args()
    privacy = Privacy(PrivacyConfig())

    missed: dict[str, int] = {}
    generated = [
        (name, *generate(random.Random(f"bench-{name}-{seed}")))
        for name, generate in sorted(GENERATORS.items())
        for seed in range(args.per_rule)
    ]
    fakes = len(generated)
    for name, text, secret in generated:
        if any(secret in privacy.text(context)[0] for context in contexts(text)):
            missed[name] = missed.get(name, 0) + 1

    lines = ordinary_lines()
    changed = [line for line in lines if privacy.text(line)[0] != line]
    corpus = "\n".join(lines)
    mb = len(corpus.encode()) / 1e6
    times = []
    for _ in range(5):
        started = time.perf_counter()
        privacy.text(corpus)
        times.append((time.perf_counter() - started) * 1000)
    chunk = corpus[:50_000]
    chunk_times = []
    for _ in range(50):
        started = time.perf_counter()
        privacy.text(chunk)
        chunk_times.append((time.perf_counter() - started) * 1000)

    result = {
        "rules": len(GENERATORS),
        "fakes": fakes,
        "recall": round(1 - sum(missed.values()) / fakes, 4),
        "missed": missed,
        "ordinary_lines": len(lines),
        "false_alarm_lines": len(changed),
        "false_alarm_rate": round(len(changed) / len(lines), 5),
        "false_alarm_examples": [line[:160] for line in changed[:15]],
        "corpus_mb": round(mb, 2),
        "ms_per_mb_p50": round(statistics.median(times) / mb, 1),
        "ms_50kb_p50": round(statistics.median(chunk_times), 2),
    }
    if args.against:
        result[args.against] = detect_secrets_figures(generated, lines)
    if args.held_out:
        result["held_out"] = held_out(generated)
    if args.third_party:
        by_type = {}
        for kind, type_lines in third_party_lines().items():
            alarms = [line for line in type_lines if privacy.text(line)[0] != line]
            by_type[kind] = {"lines": len(type_lines), "false_alarms": len(alarms),
                             "rate": round(len(alarms) / max(1, len(type_lines)), 5),
                             "examples": [line[:140] for line in alarms[:5]]}  # fmt: skip
        total = sum(item["lines"] for item in by_type.values())
        alarms_total = sum(item["false_alarms"] for item in by_type.values())
        result["third_party"] = {"lines": total, "false_alarms": alarms_total,
                                 "rate": round(alarms_total / max(1, total), 5), "by_type": by_type}  # fmt: skip
    met = (
        result["recall"] >= TARGET_RECALL
        and result["false_alarm_rate"] <= TARGET_FALSE_ALARMS
        and result["ms_50kb_p50"] <= TARGET_50KB_MS
        and (not args.third_party or result["third_party"]["rate"] <= TARGET_FALSE_ALARMS)  # type: ignore[index]
    )
    if args.json:
        print(json.dumps({**result, "met": met}))
    else:
        for key, value in result.items():
            if key not in ("false_alarm_examples", args.against, "third_party", "held_out"):
                print(f"{key:>20}: {value}")
        print("false alarms, first lines:")
        for line in result["false_alarm_examples"]:
            print(f"  {line}")
        if args.against:
            print(f"{args.against} on the same corpus:")
            for key, value in result[args.against].items():  # type: ignore[union-attr]
                print(f"{key:>20}: {value}")
        if args.held_out:
            print("kinds no rule names (each provider kind with its own rules taken out):")
            for key, value in result["held_out"].items():  # type: ignore[union-attr]
                print(f"{key:>28}: {value}")
        if args.third_party:
            third = result["third_party"]
            print(f"third-party code: {third['false_alarms']} of {third['lines']} lines ({third['rate']:.3%})")  # type: ignore[index]
            for kind, item in third["by_type"].items():  # type: ignore[index]
                print(f"  {kind}: {item['false_alarms']} of {item['lines']} ({item['rate']:.3%})")
                for line in item["examples"]:
                    print(f"      {line}")
        print(
            f"target: recall >= {TARGET_RECALL:.0%}, false alarms <= {TARGET_FALSE_ALARMS:.1%} of lines,"
            f" 50 KB <= {TARGET_50KB_MS:g} ms: {'met' if met else 'NOT met'}"
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
