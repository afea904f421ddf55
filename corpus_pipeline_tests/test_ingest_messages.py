"""What `corpus ingest` tells a user when a document fails: what failed, in words, never a
bare exception class, step name or path; the traceback goes to the log."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import dagster as dg
import pytest

from corpus_pipeline.cli.ingest_report import lost_note
from corpus_pipeline.common.errors import ParseLimitError, format_mebibytes, sanitize
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.defs import documents
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import _skipped_parts, dagster_instance
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.quality import artifacts as validation

NOTES = "# Ducks\n\nMallards dabble.\n\n# Geese\n\nGeese graze on grass.\n"


def _notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.md"
    path.write_text(NOTES, encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_failing_section_tree_check_is_named_with_its_problem(settings, tmp_path, monkeypatch):
    monkeypatch.setattr(
        validation,
        "check_nav",
        lambda nav, chunks: ["sections count 12 chunk placements but chunks.json has 10"],
    )
    (result,) = ingest([_notes(tmp_path)], settings)
    assert result.status == "failed"
    assert (
        result.error
        == "section tree invalid: sections count 12 chunk placements but chunks.json has 10"
    )
    assert not (settings.artifacts_dir / (result.document_id or "x")).exists()


@pytest.mark.slow
def test_a_failing_chunks_check_shows_its_first_problems_without_paths(
    settings, tmp_path, monkeypatch
):
    problems = [
        f"chunks.json invalid: cannot read {tmp_path}/work/chunks.json",
        "chunk c1: empty content",
        "chunk c2: embed marker not at its position",
        "chunk c3: empty content",
        "chunk c4: empty content",
    ]
    monkeypatch.setattr(validation, "check_chunks", lambda path, *rest: problems)
    (result,) = ingest([_notes(tmp_path)], settings)
    assert result.error == (
        "chunks invalid: chunks.json invalid: cannot read <path>; chunk c1: empty content; "
        "chunk c2: embed marker not at its position (+2 more)"
    )


@pytest.mark.slow
def test_an_unexpected_exception_in_a_stage_is_told_in_words_and_logged(
    settings, tmp_path, monkeypatch, caplog
):
    def broken_nav(*args: object, **kwargs: object) -> None:
        raise ValueError(
            f"cannot merge {tmp_path}/work/nav.json with https://user:secret@10.1.2.3:9000/b"
        )

    monkeypatch.setattr(pipeline, "run_nav", broken_nav)
    with caplog.at_level(logging.ERROR, logger="corpus_pipeline.defs.documents"):
        (result,) = ingest([_notes(tmp_path)], settings)
    assert result.error == (
        "nav failed: unexpected internal error (ValueError: cannot merge <path> with <url>)"
    )
    assert "secret" not in result.error and "10.1.2.3" not in result.error
    (record,) = [r for r in caplog.records if r.name == "corpus_pipeline.defs.documents"]
    assert record.exc_info is not None and record.exc_info[0] is ValueError
    assert "Traceback (most recent call last)" in caplog.text and "broken_nav" in caplog.text


@pytest.mark.slow
def test_unreadable_settings_name_the_first_stage_and_class(
    settings, tmp_path, monkeypatch, caplog
):
    def unreadable(*args: object) -> None:
        raise RuntimeError("settings file /etc/corpus/override.toml is unreadable")

    monkeypatch.setattr(documents, "resolve_settings", unreadable)
    with caplog.at_level(logging.ERROR, logger="corpus_pipeline.defs.documents"):
        (result,) = ingest([_notes(tmp_path)], settings)
    assert result.error == (
        "source failed: unexpected internal error (RuntimeError: settings file <path> is unreadable)"
    )
    assert "override.toml" in caplog.text  # the full error is in the log


@pytest.mark.slow
def test_an_error_outside_every_stage_names_the_step_and_class(
    settings, tmp_path, monkeypatch, caplog
):
    # Dagster itself refuses what a stage reported, after the stage's own error handling.
    real_source = documents._source

    def unstorable_metadata(*args: object) -> object:
        out, metadata = real_source(*args)  # type: ignore[arg-type]
        return out, {**metadata, "origin": object()}

    monkeypatch.setattr(documents, "_source", unstorable_metadata)
    with caplog.at_level(logging.ERROR, logger="corpus_pipeline.orchestration.ingest"):
        (result,) = ingest([_notes(tmp_path)], settings)
    assert result.error is not None
    assert result.error.startswith("document failed: unexpected internal error (CheckError: "), (
        result.error
    )
    assert "; details in Dagster run " in result.error
    assert "document_pipeline" not in result.error and "/tmp/" not in result.error
    assert "_check_mapping_entries" in caplog.text  # the stack is in the log


def test_library_messages_lose_paths_urls_hosts_and_credentials():
    assert sanitize("[Errno 2] No such file or directory: '/srv/in/a.pdf'") == (
        "[Errno 2] No such file or directory: '<path>'"
    )
    assert sanitize("GET https://k:s@api.example.com/v1?key=1 failed") == "GET <url> failed"
    assert (
        sanitize("connect to db.internal.example.com:5432 refused") == "connect to <host> refused"
    )
    assert sanitize("postgres user:hunter2@10.0.0.7 denied") == "postgres <credentials> denied"
    assert sanitize("page 3/12 of C:\\Users\\x\\a.pdf") == "page 3/12 of <path>"
    assert sanitize("x" * 500).endswith("…") and len(sanitize("x" * 500)) == 200


def test_limits_are_told_in_the_unit_a_person_reads():
    assert str(ParseLimitError.time(300)) == "parse exceeded 300 s"
    assert str(ParseLimitError.memory(4096)) == "parse exceeded 4 GiB"
    assert str(ParseLimitError.memory(150)) == "parse exceeded 150 MiB"
    assert format_mebibytes(1536) == "1.5 GiB"


def test_the_ingest_line_counts_the_parts_a_document_lost(tmp_path):
    diagnostics = [
        {"stage": "parse", "level": "warning", "code": "image.undecodable", "lost": "image"},
        {"stage": "parse", "level": "error", "code": "table.failed", "lost": "table"},
        {"stage": "parse", "level": "warning", "code": "image.undecodable", "lost": "image"},
        {"stage": "parse", "level": "info", "code": "ocr.used", "lost": "page text"},
        {"stage": "chunks", "level": "warning", "code": "summary.fallback"},
    ]
    (tmp_path / "diagnostics.json").write_text(
        json.dumps({"document_id": "d", "diagnostics": diagnostics}), encoding="utf-8"
    )
    skipped = _skipped_parts(tmp_path)
    assert skipped == {"image": 2, "table": 1}
    assert lost_note(skipped) == "; 3 parts lost: image ×2, table ×1"
    assert lost_note({}) == ""
    assert _skipped_parts(tmp_path / "missing") == {}


def _five_notes(tmp_path: Path) -> list[Path]:
    paths = []
    for name in "abcde":
        path = tmp_path / f"{name}.md"
        path.write_text(f"# Note {name}\n\nMallards dabble in pond {name}.\n", encoding="utf-8")
        paths.append(path)
    return paths


@pytest.mark.slow
def test_in_a_range_run_a_failing_document_fails_alone_with_its_own_message(tmp_path, monkeypatch):
    run_nav = pipeline.run_nav

    def nav_failing_on_c(document_id: str, *args: object, **kwargs: object) -> object:
        if document_id.startswith("c-md-"):
            raise ValueError("cannot place section 3")
        return run_nav(document_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "run_nav", nav_failing_on_c)
    settings = load_settings(home=tmp_path / "home", ingest_workers=1)
    results = ingest(_five_notes(tmp_path), settings)
    assert [r.status for r in results] == ["ok", "ok", "failed", "ok", "ok"]
    assert results[2].error == (
        "nav failed: unexpected internal error (ValueError: cannot place section 3)"
    )
    runs = dagster_instance(settings).get_runs(dg.RunsFilter(tags={"corpus/trigger": "cli"}))
    assert len(runs) < 5, "five documents in fewer runs (ranges of partitions)"
    assert all(r.seconds > 0 for r in results)


@pytest.mark.slow
def test_in_a_range_run_a_failed_directory_check_is_that_documents_error(tmp_path, monkeypatch):
    check = validation.check_manifest

    def check_failing_on_d(directory: Path) -> list[str]:
        return (
            ["manifest lists 3 files, found 2"]
            if directory.name.startswith("d-md-")
            else check(directory)
        )

    monkeypatch.setattr(validation, "check_manifest", check_failing_on_d)
    settings = load_settings(home=tmp_path / "home", ingest_workers=1)
    results = ingest(_five_notes(tmp_path), settings)
    assert [r.status for r in results] == ["ok", "ok", "ok", "failed", "ok"]
    assert results[3].error == "document directory invalid: manifest lists 3 files, found 2"
