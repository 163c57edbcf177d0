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
without the vector lane's.  **Confidence**: the probability
that a hit is the query's evidence, ``1 / (1 + exp(-(CALIBRATION[0] + CALIBRATION[1] * score)))``:
one increasing function of the score, so it never reorders what the score ordered.

Neither is chosen by hand: ``bench/fit.py`` fits the weights (a listwise softmax model: each
question's evidence against the other candidates its search shortlisted, L2-regularized) and
then the calibration (logistic regression of evidence on the score, no-match traps included) on
the tuning parts of memd's three evaluation sets (``bench/eval_set.py``: coding memories,
conversations between people, long chats).  So a stated confidence is the share of such hits
that were evidence there; ``bench/fit.py`` prints that reliability table for the untouched
parts too, and the injection threshold (``[retrieval] min_confidence``) is read from it.
``cjk`` is the one weight not fitted: no evaluation set has Korean, Chinese or Japanese text,
so it is set equal to the context lane's (the golden sets' Korean questions check it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

__all__ = [
    "CALIBRATION",
    "FEATURES",
    "LEXICAL_CALIBRATION",
    "LEXICAL_WEIGHTS",
    "WEIGHTS",
    "lane_score",
    "probability",
    "score",
    "substance",
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
CALIBRATION: Final = (-10.685, 1.033)
LEXICAL_WEIGHTS: Final[Mapping[str, float]] = {
    "keyword": 0.831, "context": 2.396, "vector": 0.0, "cjk": 2.396, "entity": 0.0,
    "similarity": 0.0, "coverage": 1.196, "around": 2.119, "complete": 1.314, "said_by": 2.839,
    "names": 0.384, "substance": 1.773,
}  # fmt: skip
LEXICAL_CALIBRATION: Final = (-9.041, 1.039)
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
    a, b = CALIBRATION if hybrid else LEXICAL_CALIBRATION
    z = a + b * score
    return 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0
