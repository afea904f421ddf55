"""Each parse runs in a worker process under a wall-time and a memory limit: real worker
processes, generated inputs, and the errors a user reads."""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from corpus_pipeline.common.errors import (
    CorruptDocumentError,
    ParseFailedError,
    ParseLimitError,
    PasswordRequiredError,
)
from corpus_pipeline.common.secrets import document_password
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import DocumentProfile, FileFormat
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.pipeline.isolation import run_parse_isolated
from corpus_pipeline.profiling import Profiled
from corpus_pipeline_tests.support import DOCS, bare_profile

mu: Any = pymupdf  # PyMuPDF is only partly annotated

_STARTED = re.compile(r"parse worker (\d+) started")


def _pdf(path: Path, pages: int) -> Path:
    doc: Any = mu.open()
    for n in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((72, 90), f"Chapter {n}", fontsize=20)
        for line in range(8):
            page.insert_text(
                (72, 130 + 16 * line),
                f"Line {line} of chapter {n} says something about river ducks.",
                fontsize=10,
            )
    doc.save(path)
    return path


def _big_markdown(path: Path, sections: int) -> Path:
    """Parses for several seconds here (20 000 sections: about 7 s in-process)."""
    path.write_text(
        "".join(
            f"# Heading {i}\n\nParagraph {i} says something about ducks and geese.\n\n"
            for i in range(sections)
        ),
        encoding="utf-8",
    )
    return path


def _big_text(path: Path, paragraphs: int) -> Path:
    """100 000 paragraphs need about 300 MiB more than an empty parse."""
    path.write_text(
        "".join(
            f"Paragraph {i} says something about ducks and geese.\n\n" for i in range(paragraphs)
        ),
        encoding="utf-8",
    )
    return path


def _limited(settings: CorpusSettings, **limits: object) -> CorpusSettings:
    return settings.model_copy(update=limits)


def _isolated(
    settings: CorpusSettings, path: Path, profile: DocumentProfile, out: Path, doc: str = "d1"
) -> pipeline.ParseOutput:
    return run_parse_isolated(doc, Profiled(path, path.name, profile), out, settings)


def _worker_pids(caplog: pytest.LogCaptureFixture) -> list[int]:
    return [
        int(m.group(1))
        for r in caplog.records
        if r.name == "corpus_pipeline.pipeline.isolation" and (m := _STARTED.search(r.getMessage()))
    ]


def _gone(pid: int) -> bool:
    """Neither the worker nor anything left in its process group still exists."""
    if Path(f"/proc/{pid}").exists():
        return False
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(stat[2]) == pid:
                return False
    return True


def test_a_pdf_parses_in_a_worker_with_the_same_rows_as_in_process(settings, tmp_path):
    path = _pdf(tmp_path / "chapters.pdf", pages=3)
    profile = pipeline.run_profile(path, path.name, None, settings).profile
    isolated = _isolated(settings, path, profile, tmp_path / "worker")
    local = pipeline.run_parse(
        "d1", Profiled(path, path.name, profile), tmp_path / "local", settings
    )
    rows = pipeline.read_rows(isolated.rows_path)
    assert rows == pipeline.read_rows(local.rows_path)
    assert [r.text for r in rows if r.heading_level] == ["Chapter 1", "Chapter 2", "Chapter 3"]
    assert isolated.stage_dir == str(tmp_path / "worker")
    same = {"title", "rows", "headings", "tables", "images", "pages_parsed", "truncated"}
    assert isolated.model_dump(include=same) == local.model_dump(include=same)
    assert (tmp_path / "worker" / "headings.json").read_bytes() == (
        tmp_path / "local" / "headings.json"
    ).read_bytes()


def test_the_profiles_page_reads_reach_the_worker_and_change_nothing(settings, tmp_path):
    """The worker's job carries what profiling read (pickled with it); its rows are the rows
    of a worker that reads every page itself."""
    path = _pdf(tmp_path / "chapters.pdf", pages=3)
    profiled = pipeline.run_profile(path, path.name, None, settings)
    assert profiled.reads is not None and profiled.reads.blocks
    with_reads = run_parse_isolated("d1", profiled, tmp_path / "with", settings)
    without = _isolated(settings, path, profiled.profile, tmp_path / "without")
    assert pipeline.read_rows(with_reads.rows_path) == pipeline.read_rows(without.rows_path)
    assert with_reads.diagnostics == without.diagnostics


def test_the_password_reaches_the_worker_in_memory(settings, tmp_path):
    path = DOCS / "2206.01062_pg3.pdf"
    with document_password("locked", "1234"):
        profiled = pipeline.run_profile(path, path.name, "locked", settings)
    parsed = run_parse_isolated("locked", profiled, tmp_path / "open", settings)
    assert parsed.rows > 0
    with pytest.raises(PasswordRequiredError, match="password is needed"):
        _isolated(settings, path, profiled.profile, tmp_path / "closed", doc="locked")


def test_a_corrupt_document_error_in_the_worker_arrives_as_the_same_class(settings, tmp_path):
    whole = _pdf(tmp_path / "whole.pdf", pages=2).read_bytes()
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(whole[: len(whole) // 3])
    profile = bare_profile(broken, FileFormat.PDF, "pdf")
    with pytest.raises(CorruptDocumentError) as in_process:
        pipeline.run_parse(
            "d1", Profiled(broken, broken.name, profile), tmp_path / "local", settings
        )
    with pytest.raises(CorruptDocumentError) as isolated:
        _isolated(settings, broken, profile, tmp_path / "worker")
    assert type(isolated.value) is type(in_process.value)
    assert str(isolated.value) == str(in_process.value)
    assert str(isolated.value).startswith("corrupt pdf document: ")
    assert isolated.value.format == "pdf"


def test_an_unexpected_error_in_the_worker_is_told_in_words_and_logged(settings, tmp_path, caplog):
    missing = tmp_path / "gone" / "report.docx"  # the docx library's own error, not ours
    profile = bare_profile(DOCS / "word_sample.docx", FileFormat.DOCX, "docx")
    with (
        caplog.at_level(logging.ERROR, logger="corpus_pipeline.pipeline.isolation"),
        pytest.raises(ParseFailedError) as failed,
    ):
        _isolated(settings, missing, profile, tmp_path / "worker")
    message = str(failed.value)
    assert message.startswith("parse failed: a file it needs is missing (FileNotFoundError")
    assert str(tmp_path) not in message and "<path>" in message
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Traceback (most recent call last)" in logged and str(missing) in logged


@pytest.mark.slow
def test_a_parse_past_its_time_limit_fails_and_leaves_no_worker(settings, tmp_path, caplog):
    path = _big_markdown(tmp_path / "long.md", sections=20_000)
    profile = bare_profile(path, FileFormat.MARKDOWN, "markdown")
    small = DOCS / "wiki.md"  # first start the forkserver (once per process, not limited)
    _isolated(settings, small, bare_profile(small, FileFormat.MARKDOWN, "markdown"), tmp_path / "s")
    started = time.monotonic()
    with (
        caplog.at_level(logging.DEBUG, logger="corpus_pipeline.pipeline.isolation"),
        pytest.raises(ParseLimitError) as failed,
    ):
        _isolated(_limited(settings, parse_timeout_seconds=1), path, profile, tmp_path / "w")
    assert str(failed.value) == "parse exceeded 1 s"
    assert time.monotonic() - started < 3
    pid = _worker_pids(caplog)[-1]
    assert _gone(pid)


@pytest.mark.slow
def test_a_parse_past_its_memory_limit_fails_naming_the_limit(settings, tmp_path, caplog):
    path = _big_text(tmp_path / "huge.txt", paragraphs=100_000)
    profile = bare_profile(path, FileFormat.TEXT, "text")
    limited = _limited(settings, parse_max_memory_mb=150)
    with (
        caplog.at_level(logging.DEBUG, logger="corpus_pipeline.pipeline.isolation"),
        pytest.raises(ParseLimitError) as failed,
    ):
        _isolated(limited, path, profile, tmp_path / "w")
    assert str(failed.value) == "parse exceeded 150 MiB"
    (pid,) = _worker_pids(caplog)
    assert _gone(pid)
    # The same limit leaves an ordinary document alone.
    small = DOCS / "wiki.md"
    parsed = _isolated(
        limited, small, pipeline.run_profile(small, small.name).profile, tmp_path / "s"
    )
    assert parsed.rows > 0


@pytest.mark.slow
def test_a_worker_killed_by_a_signal_is_reported_as_died(settings, tmp_path, caplog):
    path = _big_markdown(tmp_path / "long.md", sections=20_000)
    profile = bare_profile(path, FileFormat.MARKDOWN, "markdown")

    def kill_the_worker() -> None:
        for _ in range(200):
            pids = _worker_pids(caplog)
            if pids:
                time.sleep(0.3)
                os.kill(pids[0], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker)
    with caplog.at_level(logging.DEBUG, logger="corpus_pipeline.pipeline.isolation"):
        killer.start()
        with pytest.raises(ParseFailedError) as failed:
            _isolated(settings, path, profile, tmp_path / "w")
        killer.join()
    assert str(failed.value) == "parse worker died (signal 9)"


@pytest.mark.slow
def test_one_pathological_file_fails_alone_and_the_batch_goes_on(
    corpus_home, tmp_path, monkeypatch
):
    monkeypatch.setenv("CORPUS_PARSE_TIMEOUT_SECONDS", "1")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _big_markdown(inbox / "endless.md", sections=20_000)
    (inbox / "notes.md").write_text(
        "# Ducks\n\nMallards dabble.\n\n# Geese\n\nGeese graze.\n", encoding="utf-8"
    )
    from corpus_pipeline.common.settings import load_settings

    results = {r.source_file_name: r for r in ingest([inbox], load_settings())}
    assert results["notes.md"].status == "ok" and results["notes.md"].counts["sections"] == 2
    assert results["endless.md"].status == "failed"
    assert results["endless.md"].error == "parse exceeded 1 s"


def _tokenizer_loaded(conn: Any) -> None:
    from corpus_pipeline.enrich.tokens import encoding

    conn.send(encoding.cache_info().currsize)
    conn.close()


def test_a_parse_worker_starts_with_the_tokenizer_loaded():
    # Table rows are split by token count; a worker that loaded bpe_openai itself paid ~1.5 s.
    from corpus_pipeline.pipeline import isolation as worker

    reader, writer = worker._CONTEXT.Pipe(duplex=False)
    child = worker._CONTEXT.Process(
        target=_tokenizer_loaded, args=(writer,), name=f"{worker._NAME_PREFIX}tokenizer-check"
    )
    child.start()
    writer.close()
    try:
        assert reader.poll(60)
        assert reader.recv() == 1
    finally:
        child.join(30)
