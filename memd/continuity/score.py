"""The continuity score: is a new session carrying on with the project's last one?  Pure.

    score = 0.3·O(topics) + 0.2·O(files) + 0.3·exp(-Δt / 48 h) + 0.2·O(entities)

    seamless     >= 0.7   give the agent the last session's working state
    topic_shift  >= 0.4   a line on what came before, and the standard block
    break        below    the standard block

Two choices make the seed's formula work on real input:

- **Overlap, not Jaccard.**  The seed's J is the Jaccard index; O here is the overlap
  coefficient, |A ∩ B| / min(|A|, |B|), over the new side and the snapshot's 12 most
  salient items.  A one-line prompt names five topics and a session a dozen: their Jaccard
  is bounded by the ratio of the sizes (5/12) however much the prompt is about that
  session, while the overlap is 1 when everything the prompt names is what the session was
  about.  (Measured on the tests' working session: a prompt on its topic scored Jaccard
  0.09 on the top-6 of each side, overlap 0.83.)
- **No evidence is not counter-evidence.**  A content term whose new side is empty (a prompt
  that names no file) drops out, and the content weight (0.7) is shared by the terms that
  remain; time keeps its 0.3.  So a prompt on the same topics minutes later is seamless, an
  unrelated one is a break (time alone: at most 0.3), and one that shares half its topics
  is a topic shift.  At SessionStart the new session has no content at all: the score is
  the time term alone, and the first prompt decides.
- **A short prompt is weak evidence.**  Its topic overlap counts in proportion to how many
  topics it names, up to ``MIN_TOPICS``: a two-word prompt fully inside a months-old
  session's vocabulary is not a reason to hand that session's state back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, NamedTuple

__all__ = ["BREAK", "SEAMLESS", "TOPIC_SHIFT", "Continuity", "continuity", "overlap"]

SEAMLESS: Final = 0.7
TOPIC_SHIFT: Final = 0.4
DECAY_HOURS: Final = 48.0
WEIGHTS: Final = {"topics": 0.3, "files": 0.2, "entities": 0.2}
TIME_WEIGHT: Final = 0.3
MIN_TOPICS: Final = 3
"""Topics a prompt must name for its topic overlap to count in full: "fix it" matches
every session's vocabulary and says little about which one it carries on."""
BREAK: Final = "break"


class Continuity(NamedTuple):
    score: float
    mode: str
    """``seamless`` | ``topic_shift`` | ``break``."""
    parts: dict[str, float]
    """Each term's value before weighting: topics, files, entities (overlap), time (decay)."""

    @property
    def reason(self) -> str:
        shown = ", ".join(f"{name} {value:.2f}" for name, value in self.parts.items())
        return f"continuity {self.score:.2f} ({shown})"


def overlap(a: Sequence[str], b: Sequence[str]) -> float:
    """The overlap coefficient of two sets: |a ∩ b| / min(|a|, |b|); 0 when either is empty."""
    x, y = set(a), set(b)
    return len(x & y) / min(len(x), len(y)) if x and y else 0.0


def continuity(new: dict[str, Sequence[str]], old: dict[str, Sequence[str]], hours: float) -> Continuity:
    """The score of a new session (``new``: topics, files, entities) against a snapshot
    ``old`` taken ``hours`` ago."""
    decay = math.exp(-max(0.0, hours) / DECAY_HOURS)
    parts = {name: overlap(new.get(name, ()), old.get(name, ())) for name in WEIGHTS}
    parts["topics"] *= min(1.0, len(set(new.get("topics", ()))) / MIN_TOPICS)
    present = [name for name in WEIGHTS if new.get(name)]
    content = sum(WEIGHTS[name] * parts[name] for name in present) / sum(WEIGHTS[name] for name in present or WEIGHTS)
    score = TIME_WEIGHT * decay + (1 - TIME_WEIGHT) * content
    mode = "seamless" if score >= SEAMLESS else "topic_shift" if score >= TOPIC_SHIFT else BREAK
    return Continuity(round(score, 4), mode, {**parts, "time": round(decay, 4)})
