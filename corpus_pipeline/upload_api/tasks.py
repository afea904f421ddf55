"""What the upload API's ingest process does for a job: a document run, a forget, a publish.

The upload API's worker thread hands each job to one process of its own (forked by the parse
forkserver, so no Dagster or server threads are inherited); these are the tasks it submits.
The process builds its `DocumentRuns` once, in the pool's initializer.
"""

from __future__ import annotations

import os

from corpus_pipeline.common.memory import trim_heap
from corpus_pipeline.common.secrets import document_password
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.orchestration.runs import DocumentRuns, IngestResult, PublishOutcome
from corpus_pipeline.pipeline import processes
from corpus_pipeline.storage.gc import forget_document
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

# This process's runner (a pool worker process runs one task at a time).
_RUNS: DocumentRuns | None = None


def start(settings: CorpusSettings, environ: dict[str, str]) -> None:
    """The pool's initializer: the environment of the API, the Dagster handles, once."""
    global _RUNS
    processes.adopt_environment(environ)
    if not processes.use_parent_forkserver():
        processes.start_forkserver()
    _RUNS = DocumentRuns.of(settings, trigger="upload_api")


def ready() -> None:
    """A first task: nothing; its initializer has run by then."""


def release_memory() -> int:
    """Free what is unreachable and hand the allocator's free pages back to the system
    (`trim_heap`); this process's resident bytes after."""
    trim_heap(collect=True)
    with open("/proc/self/statm", "rb") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _runs() -> DocumentRuns:
    assert _RUNS is not None, "worker not initialised"
    return _RUNS


def run_document(document_id: str, namespace: str, password: str | None = None) -> IngestResult:
    """One stored and registered document, run like a batch file (`password`, in memory only,
    opens an encrypted PDF the way `corpus ingest --password` does)."""
    runs = _runs()
    record = SourceRegistry(ObjectStore(runs.settings.object_store)).get(document_id)
    with document_password(document_id, password):
        [outcome] = runs.process([record], namespace)
    release_memory()  # an idle process does not keep a large document's heap
    return outcome


def delete_document(document_id: str) -> None:
    """Forget a document (the upload API's DELETE); the publish that follows leaves it out."""
    forget_document(_runs().settings, document_id)


def publish(namespace: str) -> PublishOutcome:
    """Publish one namespace (after its jobs that followed each other in the queue)."""
    published = _runs().publish(namespace)
    release_memory()
    return published
