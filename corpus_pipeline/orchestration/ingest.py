"""`corpus ingest`: a batch of files stored durably, registered, and run side by side.

The files of a batch are checked at the door and stored first, here; then their documents run
through `runs.DocumentRuns` (the one way a document is run) in up to `ingest_workers`
processes, contiguous partitions per task, against the instance under `<CORPUS_HOME>/dagster`
(SQLite by default), so the UI shows the same runs and partitions. Publishing stays with the
caller, once for the batch.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from corpus_pipeline.common.errors import CorpusError, InvalidInputError
from corpus_pipeline.common.ids import document_id_for, sha256_bytes
from corpus_pipeline.common.secrets import document_password
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import SourceKind, SourceRecord
from corpus_pipeline.defs.partitions import DOCUMENTS_PARTITION, add_partitions, partition_ranges
from corpus_pipeline.intake.door import deliveries
from corpus_pipeline.orchestration.runs import (
    DocumentRuns,
    IngestResult,
    dagster_instance,
    fail_orphaned_runs,
    resources_for,
    unchanged_outcome,
)
from corpus_pipeline.parsing.legacy import libreoffice_available
from corpus_pipeline.pipeline import processes
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry, blob_key

# A batch is cut into at least this many range runs per worker (see `_tasks`).
TASKS_PER_WORKER = 4
logger = logging.getLogger(__name__)

log = logging.getLogger("corpus.ingest")


def collect_files(paths: Iterable[Path]) -> list[tuple[Path, str]]:
    """Files named directly keep their base name; files found in a folder keep their path
    relative to that folder (so two `README.md` in different subfolders stay distinct)."""
    found: list[tuple[Path, str]] = []
    for raw in paths:
        path = raw.expanduser()
        if path.is_file():
            found.append((path, path.name))
        elif path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                rel = child.relative_to(path)
                if not any(part.startswith(".") for part in rel.parts):
                    found.append((child, rel.as_posix()))
        else:
            raise InvalidInputError("path", f"'{raw}' is neither a file nor a folder")
    return found


@dataclass
class _Job:
    """One file to materialise, registered (stored durably) by the caller."""

    index: int
    result: IngestResult
    record: SourceRecord


# The batch pool's worker process: its runner, built once by the pool's initializer.
_RUNS: DocumentRuns | None = None


def _start_worker(settings: CorpusSettings, environ: dict[str, str]) -> None:
    global _RUNS
    processes.adopt_environment(environ)
    if not processes.use_parent_forkserver():
        processes.start_forkserver()  # preloads the parsers while the Dagster handles are built
    _RUNS = DocumentRuns.of(settings)


def _ready() -> None:
    """A pool worker's first task: nothing; its initializer has run by then."""


def _run_in_worker(
    groups: list[list[_Job]], namespace: str, password: str | None
) -> list[tuple[int, IngestResult]]:
    """A pool worker's task: documents in one range run (identical content shares a
    partition, so further copies run after it, never side by side)."""
    assert _RUNS is not None, "worker not initialised"
    return _run_task(_RUNS, groups, namespace, password)


def _run_task(
    runs: DocumentRuns, groups: list[list[_Job]], namespace: str, password: str | None
) -> list[tuple[int, IngestResult]]:
    """One task of a batch: the first file of each document (one range run, or a plain run
    when alone), then any further copies of the same content one by one."""
    firsts = [group[0] for group in groups]
    with contextlib.ExitStack() as stack:
        for job in firsts:
            stack.enter_context(document_password(job.record.document_id, password))
        if len(firsts) == 1:
            runs.run(firsts[0].record, firsts[0].result, namespace)
        else:
            runs.run_range([(job.record, job.result) for job in firsts], namespace)
    for job in (job for group in groups for job in group[1:]):
        with document_password(job.record.document_id, password):
            runs.run(job.record, job.result, namespace)
    return [(job.index, job.result) for group in groups for job in group]


def _tasks(groups: list[list[_Job]], order: list[str], workers: int) -> list[list[list[_Job]]]:
    """The batch as tasks: documents contiguous in the partition order, `TASKS_PER_WORKER`
    tasks per worker at least (small tasks keep both workers busy to the end and progress
    moving), largest documents first."""
    by_id = {group[0].record.document_id: group for group in groups}
    ranges = partition_ranges(order, list(by_id), runs=workers * TASKS_PER_WORKER)
    tasks = []
    for first, _, count in ranges:
        start = order.index(first)
        tasks.append([by_id[key] for key in order[start : start + count]])
    tasks.sort(key=lambda task: -max(group[0].record.size_bytes for group in task))
    return tasks


def ingest(
    paths: Iterable[Path],
    settings: CorpusSettings,
    namespace: str | None = None,
    organizational_unit: str | None = None,
    on_progress: Callable[[IngestResult], None] | None = None,
    password: str | None = None,
    force: bool = False,
) -> list[IngestResult]:
    """Ingest files; `password` opens encrypted PDFs and lives only in process memory.

    A file whose document is committed from the same bytes by the current code comes back
    `unchanged` without a run (`force` runs it again, e.g. after a change of settings).

    Every file is stored and its partition registered first, here; then documents are
    materialised by up to `settings.ingest_workers` processes side by side (each with its own
    Dagster instance handle on the same storage), results reported as they finish and returned
    in the order of the files. Publishing stays with the caller, once for the batch."""
    ns = namespace or settings.namespace
    files = collect_files(paths)
    workers = min(settings.ingest_workers, len(files))
    if workers >= (os.cpu_count() or 1):
        # Every core parses a document of its own: a page helper would only take turns with them.
        settings = settings.model_copy(update={"pdf_page_helper": False})
    if workers > 1 or not settings.parse_in_process:
        processes.start_forkserver()  # its preload (~2.5 s) overlaps what follows
    # Opened (and on a fresh home created) before any worker opens it: two processes creating
    # one SQLite instance at once leave its schema with two migration heads.
    instance = dagster_instance(settings)
    fail_orphaned_runs(instance)  # an earlier batch killed while publishing holds its slot
    with contextlib.ExitStack() as stack:
        pool = None
        if workers > 1:
            # Started before the files are stored, so the workers import and build their
            # Dagster handles meanwhile (seconds that would otherwise open every batch); forked
            # by the parse forkserver (no Dagster threads inherited), which forks their parse
            # workers too.
            pool = stack.enter_context(
                ProcessPoolExecutor(
                    workers, processes.CONTEXT, _start_worker, (settings, dict(os.environ))
                )
            )
            for _ in range(workers):
                pool.submit(_ready)
        results, groups = _register(
            files, instance, settings, ns, organizational_unit, on_progress, password, force
        )
        order = list(instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
        tasks = _tasks(groups, order, workers)
        if pool is None:
            runs = DocumentRuns(settings, instance, resources_for(settings))
            for task in tasks:
                for index, outcome in _run_task(runs, task, ns, password):
                    results[index] = outcome
                    if on_progress is not None:
                        on_progress(outcome)
            return results
        pending = {pool.submit(_run_in_worker, task, ns, password): task for task in tasks}
        warmed = False
        for finished, future in enumerate(as_completed(pending), start=1):
            try:
                done = future.result()
            except Exception as exc:  # a pool worker died (killed, out of memory): its files fail
                logger.exception("ingest worker failed")
                done = [(job.index, job.result) for group in pending[future] for job in group]
                for _, outcome in done:
                    outcome.error = f"ingest worker failed ({type(exc).__name__})"
            for index, outcome in done:
                results[index] = outcome
                if on_progress is not None:
                    on_progress(outcome)
            if not warmed and 0 < len(pending) - finished < workers:
                warmed = True  # a core is free from now on; the publish that follows is not
                _warm_publish()
    return results


def _warm_publish() -> None:
    """Import what publishing needs (LanceDB, ~1 s of imports) while the batch's last
    documents still run on the other cores, so the serial publish after it starts at once."""
    importlib.import_module("lancedb")


def _register(
    files: list[tuple[Path, str]],
    instance: dg.DagsterInstance,
    settings: CorpusSettings,
    ns: str,
    unit: str | None,
    on_progress: Callable[[IngestResult], None] | None,
    password: str | None,
    force: bool,
) -> tuple[list[IngestResult], list[list[_Job]]]:
    """Store every file durably and register its document's partition; files with the same
    content form one group (one partition, materialised once per copy, in order). An archive
    is read and checked whole first (`archives.read_archive`): refused, nothing of it is
    stored; accepted, each member in a document format becomes a document named
    `<archive>/<member path>`, the others are reported and skipped. A document whose bytes
    are committed already (`runs.unchanged_outcome`) is reported unchanged and not run again,
    unless `force`."""
    registry = SourceRegistry(ObjectStore(settings.object_store))
    results: list[IngestResult] = []
    by_document: dict[str, list[_Job]] = {}
    for path, name in files:
        started = time.perf_counter()
        for delivered, data, parent in _deliveries(path, name, settings, password):
            outcome, record = delivered, None
            # An e-mail's attachment is recorded as attached to it (`door.Delivery.parent`).
            attached = document_id_for(ns, parent) if parent is not None else None
            if data is not None:
                try:
                    same = (
                        None
                        if force
                        else _unchanged(
                            registry, instance, settings, delivered, data, ns, unit, attached
                        )
                    )
                    if same is not None:
                        outcome = same
                    else:
                        label = delivered.source_file_name
                        record = registry.register(
                            data, label, ns, SourceKind.CLI, unit, attached_to=attached
                        )
                except CorpusError as exc:
                    outcome.error = str(exc)
            results.append(outcome)
            if record is not None:
                outcome.document_id = record.document_id
                job = _Job(len(results) - 1, outcome, record)
                by_document.setdefault(record.document_id, []).append(job)
                continue
            outcome.seconds = time.perf_counter() - started
            if on_progress is not None:
                on_progress(outcome)
    # New partitions are added largest document first, so a range of them is a task whose
    # documents are alike in size and the batch starts with the longest ones.
    new = [d for d in by_document if not instance.has_dynamic_partition(DOCUMENTS_PARTITION, d)]
    new.sort(key=lambda d: -by_document[d][0].record.size_bytes)
    if new:
        instance.add_dynamic_partitions(DOCUMENTS_PARTITION, new)
        add_partitions(instance, namespaces=[ns])
    return results, list(by_document.values())


def _unchanged(
    registry: SourceRegistry,
    instance: dg.DagsterInstance,
    settings: CorpusSettings,
    outcome: IngestResult,
    data: bytes,
    namespace: str,
    unit: str | None,
    attached_to: str | None = None,
) -> IngestResult | None:
    """The outcome of an admitted delivery whose registered record and committed artifacts it
    would leave as they are (the record it would register is built, not stored), else None."""
    name = outcome.source_file_name
    document_id = document_id_for(namespace, name)
    previous = registry.find(document_id)
    if previous is None:
        return None
    sha = sha256_bytes(data)
    candidate = SourceRecord(
        document_id=document_id,
        namespace=namespace,
        source_file_name=name,
        object_key=blob_key(sha),
        sha256=sha,
        size_bytes=len(data),
        source_kind=SourceKind.CLI,
        organizational_unit=unit,
        received_at=previous.received_at,
        attached_to=attached_to,
    )
    return unchanged_outcome(settings, instance, previous, candidate, outcome.path)


def _deliveries(
    path: Path, name: str, settings: CorpusSettings, password: str | None
) -> Iterator[tuple[IngestResult, bytes | None, str | None]]:
    """The documents one file delivers (`door.deliveries`), each with its bytes once admitted
    (None: refused, or a member that is no document and is skipped; the reason in `error`)
    and the label of the e-mail it is attached to."""
    try:
        found = deliveries(
            name,
            path.read_bytes(),
            max_bytes=settings.max_file_bytes,
            has_password=bool(password),
            libreoffice=libreoffice_available(settings),
        )
    except CorpusError as exc:
        yield IngestResult(path=path, source_file_name=name, error=str(exc)), None, None
        return
    except OSError as exc:
        error = f"cannot read file: {exc.strerror}"
        yield IngestResult(path=path, source_file_name=name, error=error), None, None
        return
    except Exception as exc:  # a reader failing on hostile bytes must not end the whole batch
        log.warning("door check of %s failed", name, exc_info=True)
        error = f"cannot be read ({type(exc).__name__} while checking it); nothing was stored"
        yield IngestResult(path=path, source_file_name=name, error=error), None, None
        return
    for item in found:
        outcome = IngestResult(path=path, source_file_name=item.label)
        if item.refused is None:
            yield outcome, item.data, item.parent
            continue
        outcome.error = str(item.refused)
        # Not a document (or not what its name says), or an e-mail's attachment the door
        # refused (its message goes on): left out.
        if item.refused.status == 415 or item.parent is not None:
            outcome.status = "skipped"
        yield outcome, None, item.parent
