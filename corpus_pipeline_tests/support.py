"""Shared test helpers: where the shared sample corpus lives, and its official scorers."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from corpus_pipeline.contracts import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.parsing.base import ParseContext, Parser

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_CORPUS = Path(os.environ.get("CORPUS_SAMPLES", REPO_ROOT.parent / "shared" / "corpus"))
DOCS = SHARED_CORPUS / "docs"
REALWORLD_DOCS = REPO_ROOT.parent / "shared" / "realworld" / "docs"
# The six assets every document materialises, in order.
DOCUMENT_ASSETS = (
    "source_document",
    "document_profile",
    "parsed_document",
    "document_chunks",
    "document_nav",
    "document_manifest",
)


def needs_shared(folder: Path) -> pytest.MarkDecorator:
    """Skip where a developer's checkout has no `../shared` beside it; never on CI (`CI` set),
    which always has it: there a missing folder fails the tests instead of hiding them."""
    return pytest.mark.skipif(
        not folder.is_dir() and not os.environ.get("CI"), reason=f"{folder} is missing"
    )


def _tesseract_missing() -> bool:
    from corpus_pipeline.parsing.pdf.ocr import tesseract_version

    return tesseract_version() is None


# OCR tests skip on a developer's machine without Tesseract; never on CI (`CI` set), where
# `make test` installs it (`make system-deps`): there a missing Tesseract fails them instead.
needs_tesseract = pytest.mark.skipif(
    _tesseract_missing() and not os.environ.get("CI"), reason="Tesseract is not installed"
)


@cache
def scorer() -> ModuleType:
    """The corpus's own `score_structure.py` (stdlib only), imported from shared/."""
    spec = importlib.util.spec_from_file_location(
        "score_structure", SHARED_CORPUS / "score_structure.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _jsonl(name: str) -> list[dict[str, Any]]:
    with (SHARED_CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def expected_headings(doc: str) -> dict[str, Any]:
    return next(r for r in _jsonl("headings.jsonl") if r["doc"] == doc)


def expected_tables(doc: str) -> list[dict[str, Any]]:
    return [r for r in _jsonl("tables.jsonl") if r["doc"] == doc]


def bare_profile(path: Path, fmt: FileFormat, strategy: str) -> DocumentProfile:
    """A minimal profile for exercising one parser in isolation."""
    data = path.read_bytes()
    return DocumentProfile(
        format=fmt,
        media_type="application/octet-stream",
        extension=path.suffix.lower().lstrip("."),
        size_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        routing=RoutingDecision(strategy=strategy, reason="test"),
    )


def run_parser(parser: Parser, path: Path, workdir: Path, fmt: FileFormat) -> ParseContext:
    """Run one parser strategy on a file and return its context (rows, resources, diagnostics)."""
    ctx = ParseContext(
        source_path=path,
        source_file_name=path.name,
        profile=bare_profile(path, fmt, fmt.value),
        workdir=workdir,
    )
    parser(ctx)
    return ctx


def headings_of(ctx: ParseContext) -> list[dict[str, Any]]:
    """Rows → the scorer's heading input."""
    return [
        {"text": r.text, "level": r.heading_level}
        for r in ctx.rows
        if r.row_type.value == "heading"
    ]


def tables_of(ctx: ParseContext) -> list[dict[str, Any]]:
    """Rows → the scorer's table input (HTML read back from the work dir)."""
    return [
        {"page": None, "html": (ctx.workdir / r.resource_path).read_text(encoding="utf-8")}
        for r in ctx.rows
        if r.row_type.value == "table" and r.resource_path
    ]


def build_documents(
    settings: Any,
    files: Mapping[str, bytes | str],
    namespace: str = "default",
    passwords: dict[str, str] | None = None,
    **record: Any,
) -> dict[str, Any]:
    """Register files and run them as every document runs (`DocumentRuns`, Dagster runs in
    this process): name → SourceRecord. A document that fails raises `AssertionError` with its
    message.

    For tests of what comes after the per-document artifacts (publishing, search). An encrypted
    file opens with `passwords[name]` (held in memory for its processing only).
    """
    from corpus_pipeline.orchestration.runs import DocumentRuns
    from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

    registry = SourceRegistry(ObjectStore(settings.object_store))
    records = {}
    for name, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        records[name] = registry.register(data, name, namespace, **record)
    by_id = {records[name].document_id: password for name, password in (passwords or {}).items()}
    outcomes = DocumentRuns.of(settings, trigger="test").process(
        list(records.values()), namespace, by_id
    )
    failed = [f"{o.source_file_name}: {o.error}" for o in outcomes if o.status != "ok"]
    assert not failed, failed
    return records


def publish_namespaces(settings: Any, *namespaces: str) -> None:
    """Publish each namespace (every known one when none is named) as every revision is
    published (`DocumentRuns.publish`, a Dagster run in this process)."""
    from corpus_pipeline.orchestration.runs import DocumentRuns
    from corpus_pipeline.publish.service import known_namespaces

    runs = DocumentRuns.of(settings, trigger="test")
    for namespace in namespaces or known_namespaces(settings):
        outcome = runs.publish(namespace)
        assert outcome.error is None, outcome.error


def published_home(home: Path, files: Mapping[str, bytes | str]) -> tuple[Any, dict[str, Any]]:
    """Settings over `home` with `files` built through every stage and published in one
    revision: (settings, name → SourceRecord)."""
    from corpus_pipeline.common.settings import load_settings

    settings = load_settings(home=home)
    records = build_documents(settings, dict(files))
    publish_namespaces(settings)
    return settings, records


def pdf_data(doc: Any) -> bytes:
    """The bytes of a PyMuPDF document built in a test; the document is closed."""
    data: bytes = doc.tobytes()
    doc.close()
    return data


def search_after_ingest(settings: Any, path: Path, query: str, top_k: int = 1) -> tuple[Any, Any]:
    """Ingest one file through every stage, publish, and run a classic search:
    (its SourceRecord, the SearchResponse)."""
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search
    from query_service.snapshot.revision import open_revision

    records = build_documents(settings, {path.name: path.read_bytes()})
    publish_namespaces(settings, "default")
    revision = open_revision(settings.published_dir, "default")
    return records[path.name], classic_search(revision, SearchRequest(query=query, top_k=top_k))


def truncated_copy(source: Path, tmp_path: Path, keep: int = 400) -> Path:
    """The first `keep` bytes of `source` under the same extension: a broken upload."""
    broken = tmp_path / f"broken{source.suffix}"
    broken.write_bytes(source.read_bytes()[:keep])
    return broken


class FakeTime:
    """A clock that only moves when the client sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
