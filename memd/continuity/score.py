"""The continuity score: is a new session carrying on with the project's last one?  Pure.

    score = 0.3·J(topics) + 0.2·J(files) + 0.3·exp(-Δt / 48 h) + 0.2·J(entities)

    seamless     >= 0.7   give the agent the last session's working state
    topic_shift  >= 0.4   a line on what came before, and the standard block
    break        below    the standard block

Two choices make the seed's formula work on real input:

- **Equal-size salience.**  J is the Jaccard index of the two sides' *top k* items, k the
  smaller side's count (at most 8): a one-line prompt names three topics, a session has
  dozens, and the raw Jaccard of the two is bounded by their ratio (3/30 = 0.1) however
  much the prompt is about that session.
- **No evidence is not counter-evidence.**  A term whose new side is empty (a prompt that
  names no file) drops out and the other weights are scaled up to sum to 1.  When the new
  session has nothing at all yet (at SessionStart), its content terms count as 0: the score
  is then the time term alone, at most 0.3, and the first prompt decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = ["BREAK", "SEAMLESS", "TOPIC_SHIFT", "Continuity", "continuity", "jaccard"]

SEAMLESS: Final = 0.7
TOPIC_SHIFT: Final = 0.4
DECAY_HOURS: Final = 48.0
TOP_K: Final = 8
WEIGHTS: Final = {"topics": 0.3, "files": 0.2, "entities": 0.2}
TIME_WEIGHT: Final = 0.3
BREAK: Final = "break"


class Continuity(NamedTuple):
    score: float
    mode: str
    """``seamless`` | ``topic_shift`` | ``break``."""
    parts: dict[str, float]
    """Each term's value before weighting: topics, files, entities (J), time (decay)."""

    @property
    def reason(self) -> str:
        shown = ", ".join(f"{name} {value:.2f}" for name, value in self.parts.items())
        return f"continuity {self.score:.2f} ({shown})"


def jaccard(a: Sequence[str], b: Sequence[str], k: int = TOP_K) -> float:
    """Jaccard of the top ``min(len(a), len(b), k)`` items of each (most salient first)."""
    size = min(len(a), len(b), k)
    if size == 0:
        return 0.0
    x, y = set(a[:size]), set(b[:size])
    return len(x & y) / len(x | y)


def continuity(new: dict[str, Sequence[str]], old: dict[str, Sequence[str]], hours: float) -> Continuity:
    """The score of a new session (``new``: topics, files, entities) against a snapshot
    ``old`` taken ``hours`` ago."""
    decay = math.exp(-max(0.0, hours) / DECAY_HOURS)
    parts = {name: jaccard(new.get(name, ()), old.get(name, ())) for name in WEIGHTS}
    present = [name for name in WEIGHTS if new.get(name)]
    if present:
        total = TIME_WEIGHT + sum(WEIGHTS[name] for name in present)
        score = (TIME_WEIGHT * decay + sum(WEIGHTS[name] * parts[name] for name in present)) / total
    else:
        score = TIME_WEIGHT * decay
    mode = "seamless" if score >= SEAMLESS else "topic_shift" if score >= TOPIC_SHIFT else BREAK
    return Continuity(round(score, 4), mode, {**parts, "time": round(decay, 4)})
