"""The shape layer's model, fitted and checked on data kept apart (``memd/capture/privacy/randomness.py``).

Secrets: the fakes of tests/test_secret_rules.py's generators, every provider kind (not the
structural rules, which find a value by its name), each inside a line of prose.  Ordinary
text: lines of code memd does not control (bench/secret_rules.py's ``third_party_lines``: the
installed packages' sources, metadata, JSON, configs, docs, stubs and Claude Code's lockfile),
real Claude Code transcripts and the Codex and Gemini CLI hook payloads
(``../shared/fixtures``), where ids abound.

Both are cut in two halves: secrets by kind (a kind is all in one half), lines by a hash of
the line.  ``--fit`` fits the logistic model (standardised features, balanced classes,
full-batch gradient descent: deterministic) on the first half and on random tokens over each
alphabet keys are drawn from (``ALPHABETS``, never measured), picks the threshold there (the
fewest misses plus five times the false alarms) and prints ``WEIGHTS``, ``BIAS`` and
``THRESHOLD`` for the module.  Every run reports, with the module's weights, recall on each
half's kinds and false alarms on each half's lines (a line is one when the layer changes
it); ``--rotate`` also fits on the second half and reports the first, to show the figures do
not hang on which half was seen.

    .venv/bin/python bench/secret_shapes.py [--fit] [--rotate] [--per-kind 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from secret_rules import STRUCTURE_RULES, third_party_lines  # noqa: E402
from test_secret_rules import GENERATORS  # noqa: E402

from memd.capture.privacy import randomness  # noqa: E402

FIXTURES = REPO.parent / "shared" / "fixtures"
FALSE_ALARM_WEIGHT = 5
Row = tuple[float, ...]


def half(name: str) -> int:
    return zlib.crc32(name.encode()) % 2


def rows(text: str) -> list[bool | Row]:
    """What the layer sees of ``text``: each candidate's shape, decided or to be scored."""
    judged: list[bool | Row] = []
    for start, token in randomness.candidates(text):
        if not randomness.excused(text, start, start + len(token)):
            judged.append(randomness.shape(token))
    return judged


def flagged(judged: Sequence[bool | Row], weights: np.ndarray, bias: float, threshold: float) -> bool:
    return any(item if isinstance(item, bool) else float(np.dot(weights, item)) + bias >= threshold for item in judged)


Judged = list[bool | Row]
ALPHABETS = {
    "base62": string.ascii_letters + string.digits,
    "letters": string.ascii_letters,
    "upper and digits": string.ascii_uppercase + string.digits,
    "lower and digits": string.ascii_lowercase + string.digits,
    "base64": string.ascii_letters + string.digits + "+/",
    "base64url": string.ascii_letters + string.digits + "-_",
}
"""Random tokens over each alphabet a key is drawn from, 20 to 64 long: taught to the model
with the tuning half's kinds (what any key of that alphabet looks like), never measured."""


def alphabet_tokens(per_kind: int) -> dict[str, list[Judged]]:
    found: dict[str, list[Judged]] = {}
    for name, alphabet in ALPHABETS.items():
        rng = random.Random(f"alphabet-{name}")
        for _ in range(per_kind * 3):
            secret = "".join(rng.choice(alphabet) for _ in range(rng.randint(20, 64)))
            found.setdefault(f"random {name}", []).append(rows(f"use {secret} for now"))
    return found


def corpus(per_kind: int) -> tuple[dict[str, list[Judged]], dict[str, list[tuple[int, Judged]]]]:
    """Secrets by kind and ordinary lines by source (each with its half), as the layer sees them."""
    secrets: dict[str, list[Judged]] = {}
    for name, generate in sorted(GENERATORS.items()):
        if name in STRUCTURE_RULES or name in {"url-signature", "private-key"}:
            continue
        for seed in range(per_kind):
            _, secret = generate(random.Random(f"shape-{name}-{seed}"))
            secrets.setdefault(name, []).append(rows(f"use {secret} for now"))
    lines = dict(third_party_lines())
    lines["Claude Code transcripts"] = [
        line for path in sorted((FIXTURES / "claude-code" / "transcripts").rglob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]  # fmt: skip
    lines["Codex and Gemini CLI hook payloads"] = [
        line for path in sorted((FIXTURES / "agents").glob("*.jsonl")) for line in path.read_text().splitlines()
    ]
    return secrets, {kind: [(half(line), rows(line)) for line in found] for kind, found in lines.items()}


def fit(positives: list[Row], negatives: list[Row]) -> tuple[np.ndarray, float]:
    """Logistic regression on standardised features, balanced classes; weights for raw features."""
    x = np.array(positives + negatives, dtype=float)
    y = np.array([1.0] * len(positives) + [0.0] * len(negatives))
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / spread
    balance = np.where(y == 1, len(y) / (2 * len(positives)), len(y) / (2 * len(negatives)))
    weights, bias = np.zeros(z.shape[1]), 0.0
    for _ in range(4000):
        p = 1 / (1 + np.exp(-(z @ weights + bias)))
        gradient = (p - y) * balance
        weights -= 0.1 * (z.T @ gradient / len(y) + 1e-3 * weights)
        bias -= 0.1 * float(gradient.mean())
    return weights / spread, bias - float((mean / spread) @ weights)


def measure(
    secrets: dict[str, list[Judged]], lines: dict[str, list[Judged]], model: tuple[np.ndarray, float, float]
) -> dict[str, object]:
    weights, bias, threshold = model
    missed = {
        name: sum(not flagged(judged, weights, bias, threshold) for judged in fakes) for name, fakes in secrets.items()
    }
    total = sum(len(fakes) for fakes in secrets.values())
    alarms = {kind: sum(flagged(judged, weights, bias, threshold) for judged in found) for kind, found in lines.items()}
    count = sum(len(found) for found in lines.values())
    return {
        "kinds": len(secrets),
        "recall": round(1 - sum(missed.values()) / total, 4),
        "kinds missed at least once": {name: n for name, n in missed.items() if n},
        "lines": count,
        "false alarms": sum(alarms.values()),
        "false alarm rate": round(sum(alarms.values()) / max(1, count), 5),
        "by source": {kind: f"{alarms[kind]} of {len(found)}" for kind, found in lines.items()},
    }


def model_from(secrets: dict[str, list[Judged]], lines: dict[str, list[Judged]]) -> tuple[np.ndarray, float, float]:
    """Fit on one half and choose its threshold there."""
    positives = [item for fakes in secrets.values() for judged in fakes for item in judged if isinstance(item, tuple)]
    negatives = [item for found in lines.values() for judged in found for item in judged if isinstance(item, tuple)]
    weights, bias = fit(positives, negatives)
    best: tuple[float, float] = (float("inf"), 0.0)
    for threshold in np.arange(-2.0, 4.01, 0.05):
        model = (weights, bias, float(threshold))
        result = measure(secrets, lines, model)
        misses = (1 - float(result["recall"])) * sum(len(f) for f in secrets.values())  # type: ignore[arg-type]
        cost = misses + FALSE_ALARM_WEIGHT * int(result["false alarms"])  # type: ignore[call-overload]
        best = min(best, (cost, round(float(threshold), 2)))
    return weights, bias, best[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="store_true", help="fit on the first half and print the constants")
    parser.add_argument("--rotate", action="store_true", help="also fit on the second half, report the first")
    parser.add_argument("--per-kind", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    secrets, ordinary = corpus(args.per_kind)
    halves = [
        (
            {kind: fakes for kind, fakes in secrets.items() if half(kind) == part},
            {kind: [judged for side, judged in found if side == part] for kind, found in ordinary.items()},
        )
        for part in (0, 1)
    ]
    shipped = (np.array(randomness.WEIGHTS), randomness.BIAS, randomness.THRESHOLD)
    result: dict[str, object] = {}
    if args.fit:
        weights, bias, threshold = model_from({**halves[0][0], **alphabet_tokens(args.per_kind)}, halves[0][1])
        result["fitted on the first half"] = {
            "WEIGHTS": [round(float(w), 3) for w in weights], "BIAS": round(bias, 3), "THRESHOLD": threshold,
        }  # fmt: skip
        shipped = (np.round(weights, 3), round(bias, 3), threshold)
    result["first half (tuning)"] = measure(*halves[0], shipped)
    result["second half (held out)"] = measure(*halves[1], shipped)
    if args.rotate:
        rotated = model_from({**halves[1][0], **alphabet_tokens(args.per_kind)}, halves[1][1])
        result["rotated: fitted on the second half, first half held out"] = measure(*halves[0], rotated)
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
