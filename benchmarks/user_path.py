"""The user's path into a benchmark: `corpus ingest` of a folder into a fresh CORPUS_HOME
(Dagster assets and their contract checks included), then one published revision. Every quality
benchmark builds its documents here, so a document that fails is a failure of the benchmark's
subject, never a smaller denominator."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.orchestration.ingest import (
    EmbedOutcome,
    IngestResult,
    PublishOutcome,
    collect_files,
    ingest,
    publish_batch,
)

NAMESPACE = "default"


@dataclass
class Ingested:
    """What `corpus ingest` did to a folder: one result per file and the published revision."""

    settings: CorpusSettings
    namespace: str
    results: list[IngestResult]
    published: PublishOutcome | None
    dense: EmbedOutcome | None = None  # with CORPUS_DENSE set: the vectors of the batch

    @property
    def ok(self) -> dict[str, str]:
        """File name → document id of the documents that were ingested."""
        return {
            r.source_file_name: r.document_id
            for r in self.results
            if r.status == "ok" and r.document_id
        }

    @property
    def failed(self) -> dict[str, str]:
        """File name → the error the user saw."""
        return {r.source_file_name: r.error or "failed" for r in self.results if r.status != "ok"}


def ingest_folder(
    docs_dir: Path,
    home: Path,
    passwords: dict[str, str] | None = None,
    namespace: str = NAMESPACE,
    on_progress: Callable[[IngestResult], None] | None = None,
) -> Ingested:
    """`corpus ingest` of a flat folder into a fresh CORPUS_HOME, then its publish (and, with
    the dense channel on, its vectors and a second publish, as the command does). `ingest`
    takes one password per call, as `--password` does: the files without one go in one call,
    each password's files in another. Results come back in file order."""
    settings = load_settings(home=home, object_store_url="", namespace=namespace)
    found = collect_files([docs_dir])
    passwords = passwords or {}
    groups: dict[str | None, list[Path]] = {}
    for path, name in found:
        groups.setdefault(passwords.get(name), []).append(path)
    by_path: dict[Path, IngestResult] = {}
    for password, paths in groups.items():
        for r in ingest(paths, settings, namespace, on_progress=on_progress, password=password):
            by_path[r.path] = r
    results = [by_path[path] for path, _ in found if path in by_path]
    published, dense = publish_batch(settings, namespace, results)
    return Ingested(settings, namespace, results, published, dense)


def load_script(path: Path) -> ModuleType:
    """A shared set's own scorer script (`score_search.py`, `score_pages.py`), imported as a
    module so a benchmark scores exactly as the set does."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
