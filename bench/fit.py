"""Fit memd's ranking and confidence (``memd/retrieve/model.py``) on the tuning parts of the evaluation sets.

    .venv/bin/python bench/eval_set.py --runs fused --dump /tmp/tuning.json --dump-untouched /tmp/untouched.json
    .venv/bin/python bench/fit.py /tmp/tuning.json --check /tmp/untouched.json [--write]

Every candidate a search shortlisted for a tuning question (``bench/eval_set.py --dump``) comes
with its features (``Hit.features``) and whether it is the question's evidence.  Two fits:

1. **the order**: a listwise softmax model (each question's evidence against the other
   candidates of its list), L2-regularized, by Newton's method with a line search; each set
   weighs the same in all (its questions equally), so the larger coding set does not decide alone;
2. **the confidence**: an isotonic regression of "is evidence" on that score over each question's
   first ten candidates (where confidences are read), no-match traps included, as (score, share)
   knots of 30 hits or more (``fit_calibration``; ``memd.retrieve.model.read`` reads them).

It prints the weights, each set's recall@5 in the fitted order against the order the dump was
made with, the reliability table (confidence bin, hits, mean confidence, share that were
evidence: a calibrated model's two columns agree) and where the traps' best hits fall, for the
tuning parts and, apart, the untouched ones.  ``--write`` replaces the fitted block of
``memd/retrieve/model.py``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from memd.retrieve import model
from memd.retrieve.model import FEATURES

MODEL = Path(__file__).resolve().parent.parent / "memd" / "retrieve" / "model.py"
L2_GRID = (0.0005, 0.002, 0.01, 0.05)
"""Ridge penalties tried (against each set's total weight of 1); 5-fold cross-validation on the
tuning parts picks one (``choose_l2``)."""
UNFITTED = {"cjk": "context"}
"""Features no set exercises, and the fitted weight each takes (``model.py`` says why)."""
BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)
FITTED = [name for name in FEATURES if name not in UNFITTED]

Question = tuple[np.ndarray, np.ndarray, str, bool]
"""A question's candidates' features (FITTED columns), their labels, its set, whether it is a trap."""


def questions(dump: list[dict[str, Any]]) -> list[Question]:
    found = []
    for q in dump:
        expected = set(q["expected"])
        x = np.array([[h["features"].get(name, 0.0) for name in FITTED] for h in q["hits"]]).reshape(-1, len(FITTED))
        y = np.array([float(h["memory"] in expected) for h in q["hits"]])
        found.append((x, y, q["set"], q["expectation"] == "no_match"))
    return found


def choose_l2(data: list[Question], dump: list[dict[str, Any]], folds: int = 5) -> float:
    """The penalty of ``L2_GRID`` whose fits, each on four fifths of the tuning questions, rank the
    fifth left out best (mean recall@5 over the sets)."""
    best, chosen = -1.0, L2_GRID[0]
    for l2 in L2_GRID:
        found = []
        for fold in range(folds):
            train = [q for i, q in enumerate(data) if i % folds != fold]
            held = [(q, d) for i, (q, d) in enumerate(zip(data, dump, strict=True)) if i % folds == fold]
            w = fit_order(train, l2)
            per_set = recall_at([q for q, _ in held], [d for _, d in held], w)
            found.append(sum(per_set.values()) / len(per_set))
        if (mean := sum(found) / len(found)) > best:
            best, chosen = mean, l2
    return chosen


def fit_order(data: list[Question], l2: float) -> np.ndarray:
    """Listwise softmax weights: maximize each question's probability mass on its evidence."""
    per_set: dict[str, int] = defaultdict(int)
    for _, y, name, _ in data:
        per_set[name] += int(y.sum() > 0)
    lists = [(x, y / y.sum(), 1.0 / per_set[name]) for x, y, name, _ in data if y.sum() > 0]
    w = np.zeros(len(FITTED))

    def loss(w: np.ndarray) -> float:
        total = l2 * float(w @ w) / 2
        for x, target, weight in lists:
            s = x @ w
            top = s.max()
            total -= weight * float(target @ (s - top - np.log(np.exp(s - top).sum())))
        return total

    current = loss(w)
    for _ in range(100):
        gradient, hessian = l2 * w, l2 * np.eye(len(w))
        for x, target, weight in lists:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            gradient += weight * x.T @ (p - target)
            hessian += weight * x.T @ (np.diag(p) - np.outer(p, p)) @ x
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while size > 1e-4 and (candidate := loss(w - size * step)) >= current:
            size /= 2
        if size <= 1e-4:
            break
        w, current = w - size * step, candidate
        if np.max(np.abs(size * step)) < 1e-7:
            break
    return w


CALIBRATION_TOP = 10
"""Each question's first candidates the calibration is fitted on: where confidences are read."""
LEAST_PER_KNOT = 30
"""Hits behind each knot of the calibration at least: fewer say more about the sample than the score."""


def scored_top(data: list[Question], w: np.ndarray, top: int = CALIBRATION_TOP) -> tuple[np.ndarray, np.ndarray]:
    """The scores and labels of each question's first ``top`` candidates by ``w``."""
    scores, labels = [], []
    for x, y, _, _ in data:
        s = x @ w
        first = np.argsort(-s, kind="stable")[:top]
        scores.append(s[first])
        labels.append(y[first])
    return np.concatenate(scores), np.concatenate(labels)


def fit_calibration(data: list[Question], w: np.ndarray) -> tuple[tuple[float, float], ...]:
    """Isotonic regression of "is evidence" on the score (pool adjacent violators) over each
    question's first ``CALIBRATION_TOP``, blocks of ``LEAST_PER_KNOT`` hits at least, each a
    knot: (its mean score, its share of evidence, smoothed by half a hit each way)."""
    scores, labels = scored_top(data, w)
    order = np.argsort(scores, kind="stable")
    blocks: list[list[float]] = []  # [evidence, hits, score sum]

    def share(block: list[float]) -> float:  # rounded as written, so that written knots still rise
        return round((block[0] + 0.5) / (block[1] + 1), 4)

    def merge_last(blocks: list[list[float]]) -> bool:
        before, last = blocks[-2], blocks[-1]
        small = before[1] < LEAST_PER_KNOT
        return small or share(before) >= share(last) or round(before[2] / before[1], 3) >= round(last[2] / last[1], 3)

    for s, y in zip(scores[order].tolist(), labels[order].tolist(), strict=True):
        blocks.append([y, 1.0, s])
        while len(blocks) > 1 and merge_last(blocks):
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    while len(blocks) > 1 and blocks[-1][1] < LEAST_PER_KNOT:  # the top block too
        last = blocks.pop()
        blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    return tuple((round(block[2] / block[1], 3), share(block)) for block in blocks)


def confidences(scores: np.ndarray, calibration: tuple[tuple[float, float], ...]) -> np.ndarray:
    return np.array([model.read(calibration, float(s)) for s in scores])


def recall_at(
    data: list[Question], dump: list[dict[str, Any]], order: np.ndarray | None, k: int = 5
) -> dict[str, float]:
    """Mean recall@k per set with the candidates ordered by ``order``'s weights (None: as dumped;
    a candidate left out of ``data`` counts as not found)."""
    found: dict[str, list[float]] = defaultdict(list)
    for (x, y, name, trap), q in zip(data, dump, strict=True):
        if trap:
            continue
        ranked = np.argsort(-(x @ order), kind="stable") if order is not None else np.arange(len(y))
        found[name].append(float(y[ranked[:k]].sum()) / len(q["expected"]))
    return {name: round(sum(v) / len(v), 3) for name, v in sorted(found.items())}


def reliability(
    data: list[Question], w: np.ndarray, calibration: tuple[tuple[float, float], ...], top: int = 10
) -> list[list[object]]:
    """Per bin of confidence: hits (each question's first ``top``), mean confidence, share that were evidence."""
    bins: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for x, y, _, _ in data:
        p = confidences(x @ w, calibration)
        for i in np.argsort(-p, kind="stable")[:top]:
            index = next(b for b in range(len(BINS) - 1) if BINS[b] <= p[i] < BINS[b + 1])
            bins[index].append((float(p[i]), float(y[i])))
    return [
        [f"{BINS[i]:.1f}-{min(BINS[i + 1], 1.0):.1f}", len(v), round(sum(p for p, _ in v) / len(v), 3),
         round(sum(e for _, e in v) / len(v), 3)]
        for i, v in sorted(bins.items())
    ]  # fmt: skip


def traps(data: list[Question], w: np.ndarray, calibration: tuple[tuple[float, float], ...]) -> list[float]:
    """Each no-match trap's best confidence, lowest first."""
    best = [float(np.max(x @ w, initial=-1e9)) for x, _, _, trap in data if trap]
    return sorted(round(model.read(calibration, s), 3) for s in best)


VECTOR_FEATURES = ("vector", "similarity")


def lexical(data: list[Question]) -> list[Question]:
    """The same questions as the keyword lanes alone would shortlist them: candidates that only the
    vector lane found left out, the vector lane's features zeroed."""
    columns = [FITTED.index(name) for name in VECTOR_FEATURES]
    lexical_columns = [i for i, name in enumerate(FITTED) if name not in VECTOR_FEATURES]
    found = []
    for x, y, name, trap in data:
        keep = (x[:, lexical_columns] > 0).any(axis=1) if len(x) else np.zeros(0, dtype=bool)
        kept = x[keep].copy()
        kept[:, columns] = 0.0
        found.append((kept, y[keep], name, trap))
    return found


THRESHOLDS = (0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70)
INJECT_PRECISION = 0.75
INJECT_TRAPS = 0.10
"""The injection threshold is the lowest of ``THRESHOLDS`` at which at least three in four of the
hits a prompt would be given are evidence and at most one trap in ten gives anything."""


def thresholds(data: list[Question], w: np.ndarray, calibration: tuple[tuple[float, float], ...]) -> list[list[object]]:
    """Per threshold: the share of evidence among each question's first 10 hits at or above it, the
    hits per question, the questions whose evidence is among them, the traps with any."""
    table = []
    for t in THRESHOLDS:
        hits = evidence = answered = questions = traps = trap_questions = 0
        for x, y, _, trap in data:
            p = confidences(x @ w, calibration)
            chosen = [i for i in np.argsort(-p, kind="stable")[:10] if p[i] >= t]
            hits, evidence = hits + len(chosen), evidence + int(sum(y[i] for i in chosen))
            if trap:
                trap_questions, traps = trap_questions + 1, traps + bool(chosen)
            else:
                questions, answered = questions + 1, answered + any(y[i] for i in chosen)
        table.append([t, round(evidence / max(1, hits), 3), round(hits / len(data), 2),
                      round(answered / max(1, questions), 3), f"{traps}/{trap_questions}"])  # fmt: skip
    return table


def injection_threshold(table: list[list[object]]) -> float | None:
    for t, precision, _, _, traps in table:
        caught, total = (int(n) for n in str(traps).split("/"))
        if float(str(precision)) >= INJECT_PRECISION and caught <= INJECT_TRAPS * max(1, total):
            return float(str(t))
    return None


def weights_of(w: np.ndarray) -> dict[str, float]:
    fitted = dict(zip(FITTED, (round(float(v), 3) for v in w), strict=True))
    return {name: fitted[UNFITTED.get(name, name)] for name in FEATURES}


def _block(prefix: str, weights: dict[str, float], calibration: tuple[tuple[float, float], ...]) -> str:
    pairs = [f'"{name}": {value}' for name, value in weights.items()]
    lines = "".join(f"    {', '.join(pairs[i : i + 5])},\n" for i in range(0, len(pairs), 5))
    return (
        f"{prefix}WEIGHTS: Final[Mapping[str, float]] = {{\n{lines}}}  # fmt: skip\n"
        f"{prefix}CALIBRATION: Final[tuple[tuple[float, float], ...]] = (\n"
        + "".join(f"    {', '.join(map(str, calibration[i : i + 5]))},\n" for i in range(0, len(calibration), 5))
        + ")  # fmt: skip\n"
    )


def write(fits: dict[str, tuple[dict[str, float], tuple[tuple[float, float], ...]]]) -> None:
    block = (
        "# fitted: begin (bench/fit.py writes this block)\n"
        + "".join(_block(prefix, *fit) for prefix, fit in fits.items())
        + "# fitted: end"
    )
    text = MODEL.read_text()
    MODEL.write_text(re.sub(r"# fitted: begin.*?# fitted: end", lambda _: block, text, flags=re.S))


def report(name: str, part_dump: list[dict[str, Any]], part: list[Question], w: np.ndarray,
           calibration: tuple[tuple[float, float], ...]) -> None:  # fmt: skip
    print(f"\n{name}: recall@5 fitted {recall_at(part, part_dump, w)}; as dumped {recall_at(part, part_dump, None)}")
    print(f"{name}: reliability (confidence bin, hits, mean confidence, share that were evidence)")
    for row in reliability(part, w, calibration):
        print("   ", row)
    print(f"{name}: the traps' best confidences: {traps(part, w, calibration)}")
    table = thresholds(part, w, calibration)
    print(f"{name}: thresholds (t, share of evidence at or above, hits per question, questions answered, traps)")
    for row in table:
        print("   ", row)
    print(f"{name}: injection threshold by the rule (evidence >= {INJECT_PRECISION}, traps <= {INJECT_TRAPS}):"
          f" {injection_threshold(table)}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump", type=Path, help="bench/eval_set.py --dump's file (tuning parts)")
    parser.add_argument("--check", type=Path, help="a dump of the untouched parts, reported apart")
    parser.add_argument("--l2", type=float, help="the ridge penalty (default: chosen by cross-validation)")
    parser.add_argument("--write", action="store_true", help="write the fit into memd/retrieve/model.py")
    parser.add_argument("--shipped", action="store_true", help="report the model memd ships instead of fitting one")
    args = parser.parse_args()
    dump = json.loads(args.dump.read_text())
    check = json.loads(args.check.read_text()) if args.check else None
    fits: dict[str, tuple[dict[str, float], tuple[tuple[float, float], ...]]] = {}
    for prefix, shape in (("", lambda d: d), ("LEXICAL_", lexical)):
        data = shape(questions(dump))
        if args.shipped:
            weights, calibration = getattr(model, f"{prefix}WEIGHTS"), getattr(model, f"{prefix}CALIBRATION")
            w, l2 = np.array([weights[name] for name in FITTED]), "shipped"
        else:
            l2 = args.l2 if args.l2 is not None else choose_l2(data, dump)
            w = fit_order(data, l2)
            calibration = fit_calibration(data, w)
        fits[prefix] = (weights_of(w), calibration)
        print(f"\n== {'hybrid (every lane)' if not prefix else 'lexical (no vector lane)'}: {len(dump)} questions,"
              f" ridge penalty {l2}")  # fmt: skip
        print("weights: " + ", ".join(f"{n} {v:+.3f}" for n, v in fits[prefix][0].items()))
        print(f"calibration (score, confidence): {calibration}")
        report("tuning", dump, data, w, calibration)
        if check is not None:
            report("untouched", check, shape(questions(check)), w, calibration)
    if args.write and not args.shipped:
        write(fits)
        print(f"\nwritten to {MODEL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
