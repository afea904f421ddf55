"""Graph edge rule at its thresholds, and sections built top-down with missing ancestors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_pipeline.publish.graph import (
    document_keywords,
    overlap_score,
    related_edge,
    related_edges,
)


def test_overlap_score_is_symmetric():
    a, b = ["x", "y", "z", "w"], ["x", "y", "z", "q", "r"]
    assert overlap_score(a, b) == overlap_score(b, a)
    assert overlap_score(a, b)[0] == pytest.approx(3 / 4)


def test_edge_needs_three_shared_keywords_even_at_full_overlap():
    assert related_edge("d1", ["a", "b"], "d2", ["a", "b", "c"]) is None  # score 1.0, only 2 shared
    edge = related_edge("d1", ["a", "b", "c"], "d2", ["a", "b", "c", "d"])
    assert edge is not None and edge.shared == ("a", "b", "c") and edge.score == 1.0


def test_edge_needs_a_score_of_at_least_point_eight():
    five = ["a", "b", "c", "d", "e"]
    assert related_edge("d1", five, "d2", ["a", "b", "c", "d", "x", "y"]) is not None  # 4/5 = 0.8
    assert related_edge("d1", five, "d2", ["a", "b", "c", "x", "y"]) is None  # 3/5 = 0.6


def test_edge_is_the_same_whichever_document_comes_first():
    one = related_edge("b-doc", ["k1", "k2", "k3"], "a-doc", ["k1", "k2", "k3"])
    two = related_edge("a-doc", ["k1", "k2", "k3"], "b-doc", ["k1", "k2", "k3"])
    assert one == two and one is not None and (one.source, one.target) == ("a-doc", "b-doc")


def test_no_self_edges():
    assert related_edge("d", ["a", "b", "c"], "d", ["a", "b", "c"]) is None


def test_document_keywords_weigh_occurrences_and_break_ties_alphabetically():
    kws = document_keywords([(["duck", "lake"], 1), (["duck", "reed"], 2), (["bird"], 1)], limit=3)
    assert kws == ["duck", "reed", "bird"]


@given(
    st.dictionaries(
        st.sampled_from([f"doc{i}" for i in range(8)]),
        st.lists(st.sampled_from("abcdefgh"), min_size=0, max_size=6, unique=True),
        max_size=8,
    ),
    st.data(),
)
def test_related_edges_from_the_keyword_index_equal_comparing_every_pair(nodes, data):
    changed_ids = data.draw(
        st.sets(st.sampled_from(sorted(nodes)), max_size=len(nodes)) if nodes else st.just(set())
    )
    changed = {d: nodes[d] for d in sorted(changed_ids)}
    expected = {}
    for doc, keywords in changed.items():
        for other, other_keywords in nodes.items():
            edge = related_edge(doc, keywords, other, other_keywords)
            if edge is not None:
                expected[(edge.source, edge.target)] = edge
    assert related_edges(changed, nodes.items()) == [expected[k] for k in sorted(expected)]
