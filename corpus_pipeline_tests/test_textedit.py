"""Planned edits applied in reverse order: content and final spans agree."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corpus_pipeline.common.textedit import Edit, apply_edits, shift_offset


def test_insertions_keep_their_order_and_report_final_spans():
    text, spans = apply_edits("AB", [Edit(1, 1, "[x]"), Edit(1, 1, "[y]"), Edit(0, 0, "<")])
    assert text == "<A[x][y]B"
    assert [text[s:e] for s, e in spans] == ["[x]", "[y]", "<"]


def test_replacement_spans_point_at_the_new_text():
    text, spans = apply_edits("hello world", [Edit(6, 11, "there"), Edit(0, 5, "hi")])
    assert text == "hi there"
    assert [text[s:e] for s, e in spans] == ["there", "hi"]


def test_overlapping_edits_are_refused():
    with pytest.raises(ValueError, match="overlaps"):
        apply_edits("abcdef", [Edit(0, 3, "x"), Edit(2, 4, "y")])


def test_shift_offset_follows_insertions_before_it():
    edits = [Edit(2, 2, "--"), Edit(10, 10, "++")]
    assert shift_offset(5, edits) == 7


@given(
    text=st.text(max_size=40),
    raw=st.lists(st.tuples(st.integers(0, 40), st.text(max_size=5)), max_size=6),
)
def test_insertions_at_any_offsets_land_where_planned(text, raw):
    edits = [Edit(min(pos, len(text)), min(pos, len(text)), rep) for pos, rep in raw]
    result, spans = apply_edits(text, edits)
    assert len(result) == len(text) + sum(len(e.replacement) for e in edits)
    for edit, (start, end) in zip(edits, spans, strict=True):
        assert result[start:end] == edit.replacement
    # Removing the inserted spans restores the original text.
    keep = [True] * len(result)
    for start, end in spans:
        for i in range(start, end):
            keep[i] = False
    assert "".join(ch for ch, k in zip(result, keep, strict=True) if k) == text
