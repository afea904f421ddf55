"""Weighted reciprocal rank fusion: exact arithmetic on a hand-built case."""

from __future__ import annotations

import pytest

from query_service.retrieval.fusion import unique_ranks, weighted_rrf


def test_fused_scores_follow_weight_over_k_plus_rank_plus_one():
    fused = weighted_rrf(
        {"path": ["a", "b"], "content": ["b", "c", "b"], "term": ["c"]},
        {"path": 1.0, "content": 2.0, "term": 1.5},
        k=60,
    )
    scores = {f.key: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 2 / 61)
    assert scores["c"] == pytest.approx(2 / 62 + 1.5 / 61)
    assert [f.key for f in fused] == ["c", "b", "a"]


def test_a_chunk_ranked_by_two_channels_sums_both_contributions():
    (only,) = weighted_rrf({"content": ["x"], "term": ["x"]})
    assert only.score == pytest.approx(2.0 / 61 + 1.5 / 61)
    assert only.ranks == {"content": 0, "term": 0}


def test_duplicate_ids_in_one_channel_count_once_and_do_not_shift_later_ranks():
    assert unique_ranks(["b", "b", "c", "b", "d"]) == {"b": 0, "c": 1, "d": 2}
    fused = {f.key: f for f in weighted_rrf({"content": ["b", "b", "c"]})}
    assert fused["c"].ranks["content"] == 1
    assert fused["c"].score == pytest.approx(2.0 / 62)


def test_default_weights_are_path_1_content_2_term_1_5():
    fused = {f.key: f.score for f in weighted_rrf({"path": ["p"], "content": ["c"], "term": ["t"]})}
    assert fused["p"] == pytest.approx(1.0 / 61)
    assert fused["c"] == pytest.approx(2.0 / 61)
    assert fused["t"] == pytest.approx(1.5 / 61)


def test_ties_break_deterministically_by_best_rank_then_id():
    fused = weighted_rrf({"content": ["b", "a"], "term": ["a", "b"]}, {"content": 1.0, "term": 1.0})
    assert [f.key for f in fused] == ["a", "b"]


def test_a_channel_with_weight_zero_contributes_nothing():
    fused = {
        f.key: f.score
        for f in weighted_rrf({"path": ["a"], "term": ["a"]}, {"path": 0.0, "term": 1.0})
    }
    assert fused["a"] == pytest.approx(1 / 61)


def test_equal_channel_scores_share_a_rank():
    assert unique_ranks(["a", "b", "c", "d"], [3.0, 2.0, 2.0, 1.0]) == {
        "a": 0,
        "b": 1,
        "c": 1,
        "d": 3,
    }
    fused = {
        f.key: f.score
        for f in weighted_rrf({"path": ["x", "y"]}, {"path": 1.0}, scores={"path": [0.5, 0.5]})
    }
    assert fused["x"] == fused["y"] == pytest.approx(1 / 61)
