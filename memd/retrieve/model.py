"""Ranking and confidence as fitted models of what a hit's evidence says about it.

Each candidate is described by a few numbers (``FEATURES``):

    keyword, context,      where each lane ranked it, as 10 / (9 + rank): 1 for the first, 0.5 for
    vector, cjk, entity    the eleventh, 0 when the lane did not find it (cjk: the trigram and
                           substring lanes' better rank)
    similarity             cosine similarity of query and event (0 when the vector lane did not find it)
    coverage               the share of the query's concepts in the event's own words, a speaker's
                           ``Name:`` aside (``rank.Matcher``)
    around                 the share of the query's concepts it holds together with its neighbours (the
                           turns before and after it, the prompt that led to it): a reply is about what
                           it was asked
    complete               1 when it holds every concept, or the query as a phrase
    said_by                1 when a person the query names said it (``memd.store.entities``)
    names                  1 when it names another entity the query names (a file, an error...)
    substance              how much it says by itself: its content words (``hits.content_words``) / 8,
                           at most 1 ("ok", "Cool! What did it look like?" say nothing)

**Order**: ``score = sum(WEIGHTS[f] * x[f])``, higher first.  While the vector lane cannot run
(the model is loading, or embeddings are off) the lexical model orders and calibrates instead
(``LEXICAL_WEIGHTS``, ``LEXICAL_CALIBRATION``): fitted the same way on the same candidates,
without the vector lane's.  **Confidence**: the probability that a hit is the query's
evidence, read off ``CALIBRATION`` (``probability``): one increasing function of the score, so
it never reorders what the score ordered.

Neither is chosen by hand: ``bench/fit.py`` fits the weights (a listwise softmax model: each
question's evidence against the other candidates its search shortlisted, L2-regularized) and
then the calibration (isotonic regression of evidence on the score over each question's first
ten, where confidences are read, no-match traps included: a logistic curve was 0.13 optimistic
at 0.45 and pessimistic above 0.7; ``read`` says how it is read) on the tuning parts of memd's
three evaluation sets (``bench/eval_set.py``: coding memories, conversations between people,
long chats).  So a stated confidence is the share of such hits
that were evidence there; ``bench/fit.py`` prints that reliability table for the untouched
parts too, and the injection threshold (``[retrieval] min_confidence``) is read from it.
``cjk`` is the one weight not fitted: no evaluation set has Korean, Chinese or Japanese text,
so it is set equal to the context lane's (the golden sets' Korean questions check it).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Final

__all__ = [
    "CALIBRATION",
    "FEATURES",
    "LEXICAL_CALIBRATION",
    "LEXICAL_WEIGHTS",
    "WEIGHTS",
    "lane_score",
    "probability",
    "read",
    "score",
    "substance",
    "unread",
]

FEATURES: Final = (
    "keyword", "context", "vector", "cjk", "entity", "similarity", "coverage", "around", "complete", "said_by",
    "names", "substance",
)  # fmt: skip

# fitted: begin (bench/fit.py writes this block)
WEIGHTS: Final[Mapping[str, float]] = {
    "keyword": -0.822, "context": 2.354, "vector": 2.407, "cjk": 2.354, "entity": 0.0,
    "similarity": 5.27, "coverage": 0.168, "around": 1.655, "complete": 0.907, "said_by": 1.265,
    "names": -0.052, "substance": 2.115,
}  # fmt: skip
CALIBRATION: Final[tuple[tuple[float, float], ...]] = (
    (4.053, 0.0061), (4.698, 0.0121), (4.854, 0.0161), (5.328, 0.0165), (5.85, 0.0204),
    (6.185, 0.0213), (6.397, 0.0216), (6.465, 0.0278), (6.836, 0.0391), (7.256, 0.041),
    (7.304, 0.0469), (7.338, 0.0484), (7.523, 0.061), (7.808, 0.0763), (8.031, 0.0786),
    (8.5, 0.1268), (8.979, 0.1907), (9.207, 0.2248), (9.391, 0.2297), (9.492, 0.2841),
    (9.688, 0.2848), (9.97, 0.3313), (10.227, 0.3796), (10.525, 0.4135), (10.831, 0.5147),
    (11.027, 0.6935), (12.279, 0.9398),
)  # fmt: skip
LEXICAL_WEIGHTS: Final[Mapping[str, float]] = {
    "keyword": 0.831, "context": 2.396, "vector": 0.0, "cjk": 2.396, "entity": 0.0,
    "similarity": 0.0, "coverage": 1.196, "around": 2.119, "complete": 1.314, "said_by": 2.839,
    "names": 0.384, "substance": 1.773,
}  # fmt: skip
LEXICAL_CALIBRATION: Final[tuple[tuple[float, float], ...]] = (
    (2.233, 0.0097), (3.939, 0.0106), (4.467, 0.0134), (4.6, 0.0161), (4.73, 0.0203),
    (5.191, 0.0207), (5.535, 0.0278), (5.65, 0.0392), (5.876, 0.0513), (6.078, 0.0521),
    (6.364, 0.0658), (6.606, 0.0696), (6.935, 0.0883), (7.212, 0.1383), (7.504, 0.1812),
    (7.871, 0.2643), (8.073, 0.2976), (8.34, 0.375), (8.604, 0.5), (8.83, 0.6719),
    (9.698, 0.9252),
)  # fmt: skip
# fitted: end

SUBSTANCE_WORDS: Final = 8
"""Content words at which an event says enough by itself (``substance`` = 1)."""


def lane_score(rank: int | None) -> float:
    """A lane's rank as a feature: 1 for the first, 0.5 for the eleventh, 0 when not found."""
    return 10.0 / (9 + rank) if rank else 0.0


def substance(content_words: int) -> float:
    return min(1.0, content_words / SUBSTANCE_WORDS)


def score(features: Mapping[str, float], hybrid: bool = True) -> float:
    """The order of candidates: higher first.  ``hybrid``: the vector lane ran; else the
    lexical model, fitted without it, orders them."""
    weights = WEIGHTS if hybrid else LEXICAL_WEIGHTS
    return sum(weight * features.get(name, 0.0) for name, weight in weights.items())


def probability(score: float, hybrid: bool = True) -> float:
    """The confidence a score stands for: the share of such hits that were evidence."""
    return read(CALIBRATION if hybrid else LEXICAL_CALIBRATION, score)


def read(knots: Sequence[tuple[float, float]], score: float) -> float:
    """A calibration's share at ``score``: straight between its (score, share) knots, both
    increasing; beyond the first and the last it tends to 0 and to 1, each unit of score
    halving the distance, so a higher score is always a higher confidence."""
    at = bisect.bisect_left(knots, (score,))
    if at == 0:
        first_score, first = knots[0]
        return first * math.pow(2.0, max(-1000.0, score - first_score))
    if at == len(knots):
        last_score, last = knots[-1]
        return 1.0 - (1.0 - last) * math.pow(2.0, max(-1000.0, last_score - score))
    (s0, p0), (s1, p1) = knots[at - 1], knots[at]
    return p0 + (p1 - p0) * (score - s0) / (s1 - s0)


def unread(knots: Sequence[tuple[float, float]], share: float) -> float:
    """The score at which ``read(knots, score)`` is ``share`` (its inverse)."""
    (first_score, first), (last_score, last) = knots[0], knots[-1]
    if share <= first:
        return first_score + math.log2(share / first) if share > 0 else first_score - 1000.0
    if share >= last:
        return last_score - math.log2((1.0 - share) / (1.0 - last)) if share < 1 else last_score + 1000.0
    at = bisect.bisect_left([p for _, p in knots], share)
    (s0, p0), (s1, p1) = knots[at - 1], knots[at]
    return s0 + (s1 - s0) * (share - p0) / (p1 - p0)
