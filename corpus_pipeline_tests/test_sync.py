"""Source sync plans: new, changed, unchanged and removed addresses per sync mode, deletions only
after a complete listing; the folder scan hashes only what changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus_pipeline.intake.sync import SyncMode, plan_sync, scan_folder

KNOWN = {"a.pdf": "h1", "b.pdf": "h2", "gone.pdf": "h3"}
LISTING = {"a.pdf": "h1", "b.pdf": "h2-changed", "c.pdf": "h4"}


@pytest.mark.parametrize(
    ("mode", "new", "updated", "removed", "ignored"),
    [
        (SyncMode.FULL, ["c.pdf"], ["b.pdf"], ["gone.pdf"], []),
        (SyncMode.NEW_ONLY, ["c.pdf"], [], [], ["b.pdf"]),
        (SyncMode.UPDATE_ONLY, [], ["b.pdf"], [], ["c.pdf"]),
    ],
)
def test_a_plan_follows_its_mode(mode, new, updated, removed, ignored) -> None:
    plan = plan_sync(LISTING, KNOWN, mode, complete=True)
    assert (plan.new, plan.updated, plan.removed, plan.ignored) == (new, updated, removed, ignored)
    assert plan.unchanged == ["a.pdf"]


def test_nothing_is_removed_after_an_incomplete_listing() -> None:
    assert plan_sync(LISTING, KNOWN, SyncMode.FULL, complete=False).removed == []


def test_the_scan_lists_paths_not_base_names_and_skips_hidden_and_partial_files(
    tmp_path: Path,
) -> None:
    for rel in ("q1/README.md", "q2/README.md", ".hidden.md", "part.pdf.part", ".git/x.md"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    entries, complete = scan_folder(tmp_path, {})
    assert complete and sorted(entries) == ["q1/README.md", "q2/README.md"]
    assert entries["q1/README.md"].sha256 != entries["q2/README.md"].sha256


def test_an_unchanged_file_keeps_its_hash_without_being_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_text("one")
    (tmp_path / "b.md").write_text("two")
    first, _ = scan_folder(tmp_path, {})
    (tmp_path / "b.md").write_text("two, edited")
    reads: list[str] = []
    original = Path.read_bytes

    def counted(self: Path) -> bytes:
        reads.append(self.name)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    again, complete = scan_folder(tmp_path, first)
    assert complete and reads == ["b.md"]
    assert again["a.md"].sha256 == first["a.md"].sha256
    assert again["b.md"].sha256 != first["b.md"].sha256


def test_a_missing_folder_is_an_incomplete_listing(tmp_path: Path) -> None:
    assert scan_folder(tmp_path / "nope", {}) == ({}, False)
