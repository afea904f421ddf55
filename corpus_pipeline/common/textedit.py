"""Planned text edits: collect all mutations first, then apply them in reverse order.

Applying from the end keeps every not-yet-applied offset valid; the final spans of the
replacements are computed separately by a forward pass over the cumulative length change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] with `replacement` (start == end inserts)."""

    start: int
    end: int
    replacement: str


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, list[tuple[int, int]]]:
    """Apply non-overlapping edits; return the new text and each edit's final span (input order).

    Raises ValueError for overlapping or out-of-range edits rather than guessing.
    """
    indexed = sorted(enumerate(edits), key=lambda item: (item[1].start, item[1].end, item[0]))
    prev_end = 0
    for _, edit in indexed:
        if not 0 <= edit.start <= edit.end <= len(text):
            raise ValueError(f"edit {edit} is outside the text (length {len(text)})")
        if edit.start < prev_end:
            raise ValueError(f"edit {edit} overlaps an earlier edit")
        prev_end = max(prev_end, edit.end)
    result = text
    for _, edit in reversed(indexed):
        result = result[: edit.start] + edit.replacement + result[edit.end :]
    spans: list[tuple[int, int]] = [(0, 0)] * len(edits)
    shift = 0
    for index, edit in indexed:
        start = edit.start + shift
        spans[index] = (start, start + len(edit.replacement))
        shift += len(edit.replacement) - (edit.end - edit.start)
    return result, spans


def shift_offset(offset: int, edits: list[Edit]) -> int:
    """Where an offset of the original text lands after `edits` (insertions at it push it right)."""
    shift = 0
    for edit in edits:
        if edit.end <= offset:
            shift += len(edit.replacement) - (edit.end - edit.start)
    return offset + shift
