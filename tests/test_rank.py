"""Rank fusion, evidence and confidence: the pure functions behind every search."""

from __future__ import annotations

import itertools

import pytest

from memd.query import compile_query
from memd.retrieve.model import CALIBRATION, FEATURES, WEIGHTS, lane_score, probability, score, substance, unread
from memd.retrieve.rank import (
    LANE_WEIGHTS,
    STALE_PENALTY,
    Matcher,
    boosted,
    fuse,
    one_digest_per_session,
    penalty,
    snippet,
)


def test_fusion_rewards_agreement_and_rank() -> None:
    fused = fuse({"keyword": [1, 2, 3], "vector": [2, 4]}, weights={})
    assert fused[2] == pytest.approx(max(fused.values())) and fused[2] < 1  # second and first
    assert fused[1] > fused[3] and fused[1] > fused[4]
    assert fuse({"keyword": [7], "vector": [7]}) == {7: pytest.approx(1.0)}  # first everywhere
    assert fuse({"keyword": []}) == {}


def test_the_vector_lane_counts_as_two_lexical_lanes() -> None:
    lanes = {"keyword": [1, 5], "trigram": [1, 5], "vector": [5, 1]}
    unweighted = fuse(lanes, weights={})
    assert unweighted[1] > unweighted[5]  # two lexical votes beat one semantic vote
    weighted = fuse(lanes)
    assert LANE_WEIGHTS["vector"] == 2 and weighted[1] == pytest.approx(weighted[5])  # now a tie
    assert fuse({"vector": [5], "keyword": [5]}) == {5: pytest.approx(1.0)}


def test_evidence_counts_concepts_stems_and_phrases() -> None:
    matcher = Matcher(compile_query("rebuild the vector index"))
    partial = matcher.evidence("Rebuilding indexes takes a while")
    assert partial.matched == ("rebuild", "index") and partial.coverage == pytest.approx(2 / 3)
    assert not partial.phrase
    exact = matcher.evidence("we had to rebuild the vector index twice")
    assert exact.phrase and exact.coverage == 1.0
    snake = Matcher(compile_query("upload timeout")).evidence("test_upload_resumes_after_timeout failed")
    assert snake.coverage == 1.0
    korean = Matcher(compile_query("설치해줘")).evidence("의존성을 설치했습니다")
    assert korean.matched == ("설치해줘",)


def test_confidence_is_a_probability_that_grows_with_the_score() -> None:
    assert set(WEIGHTS) == set(FEATURES)
    for (s0, p0), (s1, p1) in itertools.pairwise(CALIBRATION):  # knots rise in score and in share
        assert s0 < s1 and 0 < p0 < p1 < 1
        middle = probability((s0 + s1) / 2)
        assert p0 < middle < p1 and probability(s0) == pytest.approx(p0)
        assert unread(CALIBRATION, middle) == pytest.approx((s0 + s1) / 2)
    for far in (-30.0, 30.0):  # the tails too
        assert unread(CALIBRATION, probability(CALIBRATION[0][0] + far)) == pytest.approx(CALIBRATION[0][0] + far)
    nothing = probability(score({}))
    assert 0 <= nothing < 0.05  # no evidence: (almost) never the answer
    scores = [score({}), score({"coverage": 0.5}), score({"coverage": 1.0, "complete": 1.0})]
    assert scores == sorted(scores) and probability(scores[0]) < probability(scores[2]) <= 1
    assert probability(-1e9) < 1e-9 and probability(1e9) == pytest.approx(1.0)
    assert lane_score(1) == 1.0 and lane_score(11) == 0.5 and lane_score(None) == 0.0
    assert substance(0) == 0.0 and substance(100) == 1.0


def test_the_fitted_weights_say_what_the_evidence_said() -> None:
    """Signs a refit may not flip without someone noticing: holding the query's words, being
    close in meaning, being found with one's neighbours, being said by the person asked about
    and saying something by oneself all count for a hit."""
    for feature in ("coverage", "similarity", "vector", "context", "said_by", "substance", "complete"):
        assert WEIGHTS[feature] > 0, feature
    full = {"coverage": 1.0, "complete": 1.0, "similarity": 0.7, "vector": 1.0, "context": 1.0, "substance": 1.0}
    assert probability(score(full)) > 0.45 > probability(score({**full, "coverage": 0.0, "complete": 0.0,
                                                                  "similarity": 0.3, "vector": 0.5}))  # fmt: skip
    assert probability(score(full)) * STALE_PENALTY < 0.45  # stale text is never confident


@pytest.mark.parametrize(
    "text",
    [
        "Obsolete note: the PR was still open.",
        "Stale: this handoff predates the migration",
        "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted",
        "This session is being continued from a previous conversation that ran out of context.",
        "The token format described here is no longer valid after v2.",
    ],
)
def test_stale_and_compaction_text_is_penalized(text: str) -> None:
    assert penalty(text) == STALE_PENALTY


@pytest.mark.parametrize(
    "text",
    ["Fixed the stale lock file left by kill -9", "Removed the obsolete --fast flag from the CLI", "ok"],
)
def test_talking_about_staleness_is_not_stale(text: str) -> None:
    assert penalty(text) == 1.0


def test_boosts_break_ties_but_do_not_bury_better_evidence() -> None:
    fresh = boosted(9.0, age_days=0, importance=2, half_life_days=14)
    old = boosted(9.0, age_days=300, importance=2, half_life_days=14)
    better_but_old = boosted(9.2, age_days=300, importance=1, half_life_days=14)
    assert fresh > old and better_but_old > fresh


def test_snippets_show_the_matched_words() -> None:
    text = "intro " * 100 + "the writer retries the commit after SQLITE_BUSY " + "outro " * 100
    shown = snippet(text, ["writer", "retry"])
    assert "[writer] [retries]" in shown and shown.startswith("…") and shown.endswith("…")
    assert snippet("short text", []) == "short text"


def test_one_digest_per_session() -> None:
    hits = [
        ("snapshot", "s1"),
        ("prompt", "s1"),
        ("session_summary", "s1"),  # s1's second digest
        ("session_summary", "s2"),
        ("consolidated", None),
        ("snapshot", None),
        ("snapshot", None),  # no session: nothing to tell them apart by
        ("tool", "s2"),
        ("snapshot", "s2"),  # s2's second digest
    ]
    assert one_digest_per_session(hits) == [True, True, False, True, True, True, True, True, False]
