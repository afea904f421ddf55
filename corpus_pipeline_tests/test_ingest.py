"""End to end through Dagster: a file goes in, the fixed document directory comes out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import jsonschema
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.export_schemas import ARTIFACT_MODELS, schema_file
from corpus_pipeline.orchestration.ingest import collect_files, ingest
from corpus_pipeline.orchestration.runs import IngestResult, dagster_instance
from corpus_pipeline.quality.artifacts import check_manifest

from .support import DOCS, DOCUMENT_ASSETS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> tuple[CorpusSettings, dict[str, IngestResult], Path]:
    """One ingest of a few real files plus a renamed copy (shared by the read-only tests)."""
    root = tmp_path_factory.mktemp("batch")
    inbox = root / "inbox"
    inbox.mkdir()
    for name in ("word_sample.docx", "word_tables.docx"):
        shutil.copy(DOCS / name, inbox / name)
    shutil.copy(DOCS / "word_sample.docx", inbox / "copy of word sample.docx")
    settings = load_settings(home=root / "home")
    results = {r.source_file_name: r for r in ingest([inbox], settings)}
    return settings, results, inbox


def _dir(settings: CorpusSettings, result: IngestResult) -> Path:
    assert result.document_id
    return settings.artifacts_dir / result.document_id


def test_every_file_of_the_batch_is_ingested(batch):
    _, results, _ = batch
    assert {n: r.status for n, r in results.items()} == {
        "word_sample.docx": "ok",
        "word_tables.docx": "ok",
        "copy of word sample.docx": "ok",
    }
    assert results["word_tables.docx"].counts["table"] == 7


def test_the_document_directory_has_the_fixed_layout(batch):
    settings, results, _ = batch
    directory = _dir(settings, results["word_sample.docx"])
    names = {p.relative_to(directory).as_posix() for p in directory.rglob("*")}
    assert {
        "chunks.json",
        "doc_nav.json",
        "manifest.json",
        "headings.json",
        "diagnostics.json",
        "parsed.parquet",
        "tables",
        "images",
        "source/word_sample.docx",
    } <= names
    assert any(n.startswith("images/") for n in names)


@pytest.mark.parametrize("artifact", sorted(ARTIFACT_MODELS))
def test_artifacts_validate_against_the_checked_in_schemas(batch, artifact):
    settings, results, _ = batch
    schema = json.loads(schema_file(artifact).read_text(encoding="utf-8"))
    for result in results.values():
        data = json.loads((_dir(settings, result) / artifact).read_text(encoding="utf-8"))
        jsonschema.validate(data, schema)


def test_directories_match_their_manifests(batch):
    settings, results, _ = batch
    for result in results.values():
        assert check_manifest(_dir(settings, result)) == []


def test_manifest_names_the_source_and_nests_the_hierarchy(batch):
    settings, results, _ = batch
    manifest = json.loads(
        (_dir(settings, results["word_sample.docx"]) / "manifest.json").read_text()
    )
    assert manifest["source_file_name"] == "word_sample.docx"
    assert manifest["source"]["format"] == "docx"
    top = manifest["HIERARCHY"][0]
    assert top["title"] == "Swimming in the lake"
    assert top["children"][0]["title"] == "Let’s swim!"
    assert top["children"][0]["children"][0]["title"] == "Let’s eat"
    assert manifest["statistics"]["chunks"] > 0
    assert set(manifest["timings"]) >= {"parse", "chunks", "nav"}


def test_chunk_ids_are_the_same_for_two_copies_under_different_names(batch):
    settings, results, _ = batch
    original, copy = results["word_sample.docx"], results["copy of word sample.docx"]
    assert original.document_id != copy.document_id

    def ids(result: IngestResult) -> list[str]:
        data = json.loads((_dir(settings, result) / "chunks.json").read_text())
        return [c["chunk_id"] for c in data["chunks"]]

    assert ids(original) == ids(copy)


def test_ingesting_the_same_file_again_gives_byte_identical_chunks(batch, tmp_path):
    settings, results, inbox = batch
    first = (_dir(settings, results["word_tables.docx"]) / "chunks.json").read_bytes()
    nav = (_dir(settings, results["word_tables.docx"]) / "doc_nav.json").read_bytes()
    (again,) = ingest([inbox / "word_tables.docx"], settings, force=True)
    assert again.status == "ok"
    assert again.document_id == results["word_tables.docx"].document_id
    assert (_dir(settings, again) / "chunks.json").read_bytes() == first
    assert (_dir(settings, again) / "doc_nav.json").read_bytes() == nav


def test_a_truncated_docx_is_refused_at_the_door_and_nothing_is_stored(settings, tmp_path):
    broken = tmp_path / "broken.docx"
    broken.write_bytes((DOCS / "word_sample.docx").read_bytes()[:700])
    (result,) = ingest([broken], settings)
    assert result.status == "failed" and result.document_id is None
    assert result.error == "corrupt docx document: truncated or damaged (BadZipFile)"
    assert not list(settings.artifacts_dir.glob("*broken*"))
    assert not list(settings.artifacts_dir.glob(".staging-*"))


def test_an_unknown_binary_is_refused_with_an_error_naming_the_format(settings, tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 64)
    (result,) = ingest([blob], settings)
    assert result.status == "failed"
    assert result.error and "unsupported format 'unknown'" in result.error
    assert not (settings.artifacts_dir / (result.document_id or "x")).exists()


def test_a_failed_reingest_keeps_the_previous_artifacts(settings, tmp_path):
    doc = tmp_path / "notes.docx"
    doc.write_bytes((DOCS / "word_sample.docx").read_bytes())
    (good,) = ingest([doc], settings)
    before = (settings.artifacts_dir / (good.document_id or "") / "chunks.json").read_bytes()
    import zipfile

    with zipfile.ZipFile(doc, "w") as archive:  # opens at the door, fails in the parser
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document> not xml")
    (bad,) = ingest([doc], settings)
    assert bad.status == "failed" and bad.document_id == good.document_id
    assert bad.error == "corrupt docx document: malformed package part (AttributeError)"
    assert (
        settings.artifacts_dir / (good.document_id or "") / "chunks.json"
    ).read_bytes() == before
    doc.write_bytes(b"PK\x03\x04 definitely not a zip")  # refused at the door: never stored
    (refused,) = ingest([doc], settings)
    assert refused.status == "failed" and refused.document_id is None
    assert (
        settings.artifacts_dir / (good.document_id or "") / "chunks.json"
    ).read_bytes() == before


def test_a_batch_on_two_workers_gives_the_artifacts_of_one_worker(batch, tmp_path):
    settings, results, inbox = batch
    assert settings.ingest_workers == 2  # the batch above ran side by side
    alone = load_settings(home=tmp_path / "home", ingest_workers=1)
    again = {r.source_file_name: r for r in ingest([inbox], alone)}
    assert again.keys() == results.keys()
    for name, result in results.items():
        for artifact in ("chunks.json", "doc_nav.json", "headings.json"):
            mine = (_dir(settings, result) / artifact).read_bytes()
            assert (_dir(alone, again[name]) / artifact).read_bytes() == mine, (name, artifact)


def test_batch_results_come_back_in_file_order_with_every_partition_materialised(batch):
    settings, results, inbox = batch
    assert list(results) == [name for _, name in collect_files([inbox])]
    instance = dagster_instance(settings)
    done = instance.get_materialized_partitions(dg.AssetKey("document_manifest"))
    assert {r.document_id for r in results.values()} <= done


def test_each_document_is_one_step_that_still_shows_every_asset_and_check(batch):
    settings, results, _ = batch
    instance = dagster_instance(settings)
    document_id = next(iter(results.values())).document_id
    assert document_id is not None
    for stage in DOCUMENT_ASSETS:
        assert document_id in instance.get_materialized_partitions(dg.AssetKey(stage)), stage
    parsed = instance.get_latest_materialization_event(dg.AssetKey("parsed_document"))
    assert parsed is not None and parsed.asset_materialization is not None
    rows = parsed.asset_materialization.metadata["rows"].value
    assert isinstance(rows, int) and rows > 0
    run = instance.get_run_by_id(parsed.run_id)
    assert run is not None
    steps = {e.step_key for e in instance.all_logs(run.run_id) if e.step_key}
    assert steps == {"document_pipeline"}
    checks = [
        e.dagster_event.asset_check_evaluation_data
        for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        if e.dagster_event is not None
    ]
    assert sorted((c.check_name, c.passed) for c in checks) == [
        ("chunks_honour_contract", True),
        ("document_directory_honours_contract", True),
        ("nav_honours_contract", True),
    ]


def test_a_failing_file_fails_alone_when_documents_run_side_by_side(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    shutil.copy(DOCS / "word_sample.docx", inbox / "a.docx")
    (inbox / "b.docx").write_bytes((DOCS / "word_sample.docx").read_bytes()[:700])
    shutil.copy(DOCS / "word_tables.docx", inbox / "c.docx")
    results = ingest([inbox], load_settings(home=tmp_path / "home", ingest_workers=2))
    assert [(r.source_file_name, r.status) for r in results] == [
        ("a.docx", "ok"),
        ("b.docx", "failed"),
        ("c.docx", "ok"),
    ]
    assert results[1].error and "corrupt docx" in results[1].error


def test_the_same_file_twice_in_one_batch_is_one_partition_run_twice_in_turn(tmp_path):
    doc = tmp_path / "notes.docx"
    doc.write_bytes((DOCS / "word_sample.docx").read_bytes())
    settings = load_settings(home=tmp_path / "home", ingest_workers=2)
    first, second = ingest([doc, doc], settings)
    assert first.status == second.status == "ok"
    assert first.document_id == second.document_id


def _zip_of(path: Path, entries: dict[str, bytes]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def test_an_archive_becomes_one_document_per_document_member_under_its_name(tmp_path):
    archive = _zip_of(
        tmp_path / "batch.zip",
        {
            "reports/word.docx": (DOCS / "word_sample.docx").read_bytes(),
            "notes.md": b"# Notes\n\nTufted ducks dive for mussels.\n",
            "tool.bin": bytes(range(256)) * 4,
        },
    )
    results = ingest([archive], load_settings(home=tmp_path / "home", ingest_workers=1))
    assert [(r.source_file_name, r.status) for r in results] == [
        ("batch.zip/reports/word.docx", "ok"),
        ("batch.zip/notes.md", "ok"),
        ("batch.zip/tool.bin", "skipped"),
    ]
    assert results[2].error and "unsupported format 'unknown'" in results[2].error


def test_a_refused_archive_stores_nothing(tmp_path):
    archive = _zip_of(
        tmp_path / "evil.zip", {"ok.md": b"# fine\n", "../../etc/passwd": b"root:x:0:0"}
    )
    settings = load_settings(home=tmp_path / "home", ingest_workers=1)
    [result] = ingest([archive], settings)
    assert result.status == "failed" and result.document_id is None
    assert result.error == (
        "archive: member '../../etc/passwd' escapes the archive's folder; nothing was stored"
    )
    stored = [p for p in settings.home.rglob("*") if p.is_file() and "dagster" not in p.parts]
    assert stored == []
