"""`corpus gc` (and its daily Dagster schedule) removes stored bytes and per-document folders
that no registry record references, older than the grace period; `--dry-run` only lists them.
Referenced bytes and folders and the published revision in use are never touched."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from click.testing import CliRunner

from corpus_pipeline.cli.main import main
from corpus_pipeline.common.ids import sha256_bytes
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.storage.gc import collect_garbage
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry, blob_key
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .support import build_documents, publish_namespaces

TWO_HOURS = 2 * 3600


@dataclass
class Home:
    """A published home holding one registered document and the leftovers of another."""

    settings: CorpusSettings
    kept: Any  # the registered document's SourceRecord
    orphan_blob: str  # bytes stored, record never written (a crash between the two)
    orphan_id: str  # folders of a document whose record is gone


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def _store(settings: CorpusSettings) -> ObjectStore:
    return ObjectStore(settings.object_store)


@pytest.fixture
def home(settings: CorpusSettings) -> Home:
    records = build_documents(
        settings,
        {
            "ducks.md": "# Ducks\n\nTufted ducks dive for mussels.\n",
            "geese.md": "# Geese\n\nGreylag geese graze on meadows.\n",
        },
    )
    publish_namespaces(settings)
    gone = records["geese.md"]
    SourceRegistry(_store(settings)).delete(gone.document_id)  # its folders stay behind
    stray = b"# Stray\n\nStored, never recorded.\n"
    key = blob_key(sha256_bytes(stray))
    _store(settings).put_bytes(key, stray)
    _age(settings.home / "objects" / key, TWO_HOURS)
    for root in (settings.artifacts_dir, settings.work_dir):
        _age(root / gone.document_id, TWO_HOURS)
    return Home(settings, records["ducks.md"], key, gone.document_id)


def _orphans(home: Home) -> set[tuple[str, str]]:
    return {
        ("blob", home.orphan_blob),
        ("artifacts", f"artifacts/{home.orphan_id}"),
        ("work", f"work/{home.orphan_id}"),
    }


def test_a_dry_run_lists_what_no_record_references_and_removes_nothing(home: Home) -> None:
    report = collect_garbage(home.settings, dry_run=True)
    assert {(g.kind, g.location) for g in report.removed} == _orphans(home)
    assert _store(home.settings).exists(home.orphan_blob)
    assert (home.settings.artifacts_dir / home.orphan_id).is_dir()


def test_gc_removes_the_unreferenced_and_keeps_every_referenced_thing(home: Home) -> None:
    settings = home.settings
    pointer = (settings.published_dir / "default" / "CURRENT.json").read_bytes()
    report = collect_garbage(settings)
    assert {(g.kind, g.location) for g in report.removed} == _orphans(home)
    assert report.removed_bytes > 0
    assert not _store(settings).exists(home.orphan_blob)
    assert not (settings.artifacts_dir / home.orphan_id).exists()
    assert not (settings.work_dir / home.orphan_id).exists()
    assert _store(settings).exists(home.kept.object_key), "a record points at it"
    assert (settings.artifacts_dir / home.kept.document_id / "manifest.json").is_file()
    assert (settings.published_dir / "default" / "CURRENT.json").read_bytes() == pointer
    revision = open_revision(settings.published_dir, "default")
    [hit] = classic_search(revision, SearchRequest(query="tufted ducks", top_k=1)).results
    assert hit.document_id == home.kept.document_id, "the revision in use still answers"


def test_unreferenced_things_younger_than_the_grace_period_are_kept(home: Home) -> None:
    report = collect_garbage(home.settings, min_age=timedelta(hours=3))
    assert report.removed == []
    assert {(g.kind, g.location) for g in report.kept_young} == _orphans(home)
    assert _store(home.settings).exists(home.orphan_blob)


def test_corpus_gc_lists_on_a_dry_run_then_removes(home: Home) -> None:
    runner = CliRunner()
    listed = runner.invoke(main, ["gc", "--dry-run"])
    assert listed.exit_code == 0, listed.output
    assert f"would remove blob {home.orphan_blob}" in listed.output
    assert f"would remove artifacts artifacts/{home.orphan_id}" in listed.output
    assert "gc: would remove 3" in listed.output
    assert (home.settings.artifacts_dir / home.orphan_id).is_dir()
    removed = runner.invoke(main, ["gc"])
    assert removed.exit_code == 0, removed.output
    assert f"removed artifacts artifacts/{home.orphan_id}" in removed.output
    assert not (home.settings.artifacts_dir / home.orphan_id).exists()
    assert "gc: removed 0" in runner.invoke(main, ["gc"]).output, "nothing left to remove"


def test_the_daily_schedule_runs_the_gc_job(home: Home) -> None:
    from corpus_pipeline.definitions import defs

    definitions = defs()
    [schedule] = definitions.get_repository_def().schedule_defs
    assert schedule.job_name == "collect_garbage"
    result = definitions.resolve_job_def("collect_garbage").execute_in_process(
        instance=dg.DagsterInstance.ephemeral()
    )
    assert result.success
    assert not _store(home.settings).exists(home.orphan_blob)
    assert not (home.settings.artifacts_dir / home.orphan_id).exists()
    assert _store(home.settings).exists(home.kept.object_key)


def test_a_symlinked_folder_under_artifacts_is_unlinked_never_followed(home: Home, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the corpus's to remove")
    link = home.settings.artifacts_dir / "linked-folder"
    link.symlink_to(outside, target_is_directory=True)
    os.utime(link, (time.time() - TWO_HOURS,) * 2, follow_symlinks=False)

    report = collect_garbage(home.settings)

    assert "artifacts/linked-folder" in {g.location for g in report.removed}
    assert not link.exists() and not link.is_symlink()
    assert (outside / "keep.txt").read_text() == "not the corpus's to remove"
