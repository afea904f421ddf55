"""`corpus ingest`: store each file durably, register its partition, materialise its assets.

Runs the Dagster assets in-process against the instance under `<CORPUS_HOME>/dagster`
(SQLite by default), so the UI of `make dev` shows the same runs and partitions. Each file's
outcome says in words what failed; tracebacks stay in the Dagster run and the log.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster_shared.error import SerializableErrorInfo

from corpus_pipeline.contracts import Manifest, SourceKind, SourceRecord
from corpus_pipeline.defs.checks import CHECK_LABELS, describe_problems
from corpus_pipeline.defs.documents import STEP, document_pipeline
from corpus_pipeline.defs.jobs import STAGE_TAG
from corpus_pipeline.defs.partitions import DOCUMENTS_PARTITION
from corpus_pipeline.defs.publish import corpus_revision
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
)
from corpus_pipeline.door import deliveries
from corpus_pipeline.errors import CorpusError, InvalidInputError, unexpected_error_message
from corpus_pipeline.pipeline import document_dir
from corpus_pipeline.secrets import document_password
from corpus_pipeline.settings import CorpusSettings
from corpus_pipeline.storage import ObjectStore, SourceRegistry

REPO_ROOT = Path(__file__).resolve().parent.parent
_DEFAULT_DAGSTER_YAML = "telemetry:\n  enabled: false\n"
# The per-file line says what failed; Dagster's step failures (with tracebacks) stay in the
# run's event log instead of flooding the terminal.
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
logger = logging.getLogger(__name__)

# Step key → the stage named in messages (a stage's own errors name their stage themselves).
_STAGES = {STEP: "document", "corpus_revision": "publish"}


@dataclass
class PublishOutcome:
    namespace: str
    revision: int | None
    documents: int
    chunks: int
    error: str | None = None


@dataclass
class IngestResult:
    path: Path
    source_file_name: str
    document_id: str | None = None
    status: str = "failed"
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    # Parts the document lost (diagnostics with `lost`), e.g. {"image": 2}.
    skipped: dict[str, int] = field(default_factory=dict)


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


def dagster_instance(settings: CorpusSettings) -> dg.DagsterInstance:
    """The persistent instance under <CORPUS_HOME>/dagster, seeded with the repo's dagster.yaml."""
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists():
        source = REPO_ROOT / "dagster.yaml"
        if source.exists():
            shutil.copyfile(source, target)
        else:
            target.write_text(_DEFAULT_DAGSTER_YAML, encoding="utf-8")
    return dg.DagsterInstance.from_config(str(home))


def resources_for(settings: CorpusSettings) -> dict[str, object]:
    return {
        "corpus": CorpusRootResource(home=str(settings.home)),
        "object_store": ObjectStoreResource(url=settings.object_store),
        "models": ModelSettingsResource(),
    }


def _stage_of(step_key: str) -> str:
    return _STAGES.get(step_key, "pipeline")


def _failed_checks(result: dg.ExecuteInProcessResult) -> list[str]:
    """Failed asset checks in words, e.g. 'section tree invalid: …' (the check's description,
    else its label and the first problems of its metadata)."""
    messages: list[str] = []
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.passed:
            continue
        if evaluation.description:
            messages.append(evaluation.description)
            continue
        label = CHECK_LABELS.get(evaluation.check_name, evaluation.check_name.replace("_", " "))
        first = evaluation.metadata.get("first_problems")
        text = str(getattr(first, "value", first or "")).strip()
        messages.append(describe_problems(label, text.splitlines() or ["no details"]))
    return messages


def _root_cause(error: SerializableErrorInfo) -> SerializableErrorInfo:
    """The user code's exception under Dagster's wrappers (the end of the `cause` chain)."""
    while error.cause is not None:
        error = error.cause
    return error


def _unexpected_step_error(step_key: str, error: SerializableErrorInfo | None, run_id: str) -> str:
    """A step failure that was not turned into a message: the stage, the kind of problem and
    the exception class in words; the traceback goes to the log."""
    stage = _stage_of(step_key)
    if error is None:
        return f"{stage} failed (details in Dagster run {run_id})"
    logger.error("step %s of run %s failed:\n%s", step_key, run_id, error.to_string())
    cause = _root_cause(error)
    cls_name = cause.cls_name or "error"
    # The message is `traceback.format_exception_only`: "[module.]Class: detail".
    first_line = next(iter(cause.message.strip().splitlines()), "")
    head, _, detail = first_line.partition(": ")
    if not head.endswith(cls_name):
        detail = first_line
    message = unexpected_error_message(stage, cls_name, detail)
    return f"{message}; details in Dagster run {run_id}"


def _failure_message(result: dg.ExecuteInProcessResult) -> str:
    """What failed in a run, in words: a step's own message (a failed blocking check's
    problems among them), a failed check's problems, or the stage and kind of an unexpected
    error."""
    checks = _failed_checks(result)
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        data = event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            return data.user_failure_data.description
        return _unexpected_step_error(event.step_key or "", data.error, result.run_id)
    if checks:
        return checks[0]
    return f"run {result.run_id} did not succeed"


def _skipped_parts(directory: Path) -> dict[str, int]:
    """What the committed document lost, from its diagnostics.json: {"image": 2, ...}."""
    try:
        data = json.loads((directory / "diagnostics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    lost = Counter(
        str(d["lost"])
        for d in data.get("diagnostics", [])
        if d.get("lost") and d.get("level") in ("warning", "error")
    )
    return dict(sorted(lost.items()))


@dataclass
class _Job:
    """One file to materialise, registered (stored durably) by the caller."""

    index: int
    result: IngestResult
    record: SourceRecord


@dataclass
class _Runner:
    """What a process needs to materialise documents: built once per process, because the
    instance and the definitions cost far more than one small document's run."""

    settings: CorpusSettings
    instance: dg.DagsterInstance
    resources: dict[str, object]

    @classmethod
    def of(cls, settings: CorpusSettings) -> _Runner:
        return cls(settings, dagster_instance(settings), resources_for(settings))

    def run(self, job: _Job, namespace: str, password: str | None) -> IngestResult:
        outcome, record, settings = job.result, job.record, self.settings
        started = time.perf_counter()  # this document's own time, not its wait in the batch
        try:
            with document_password(record.document_id, password):
                run = dg.materialize(
                    _ASSETS,
                    partition_key=record.document_id,
                    instance=self.instance,
                    resources=self.resources,
                    raise_on_error=False,
                    tags={
                        "corpus/namespace": namespace,
                        "corpus/trigger": "cli",
                        STAGE_TAG: "document",
                    },
                    run_config=_QUIET,
                )
            checks = _failed_checks(run) if run.success else []
            if run.success and not checks:
                directory = document_dir(settings, record.document_id)
                manifest = Manifest.model_validate_json(
                    (directory / "manifest.json").read_text(encoding="utf-8")
                )
                stats = manifest.statistics
                outcome.status = "ok"
                outcome.counts = {
                    "text": stats.text_chunks,
                    "table": stats.table_chunks,
                    "image": stats.image_chunks,
                    "sections": stats.sections,
                }
                outcome.skipped = _skipped_parts(directory)
            elif checks:
                # A non-blocking check (the committed directory) failed after the commit.
                outcome.error = checks[0]
            else:
                outcome.error = _failure_message(run)
                shutil.rmtree(settings.work_dir / record.document_id, ignore_errors=True)
        except CorpusError as exc:
            outcome.error = str(exc)
        outcome.seconds = time.perf_counter() - started
        return outcome


_ASSETS = [document_pipeline]
_WORKER: _Runner | None = None


def _start_worker(settings: CorpusSettings) -> None:
    global _WORKER
    from corpus_pipeline.worker import start_forkserver

    start_forkserver()  # preloads the parsers while the Dagster handles are built
    _WORKER = _Runner.of(settings)


def run_registered(document_id: str, namespace: str) -> list[tuple[int, IngestResult]]:
    """A pool worker's task for the upload API: one stored and registered document, its
    partition added if new, materialised like a batch file."""
    assert _WORKER is not None, "worker not initialised"
    runner = _WORKER
    record = SourceRegistry(ObjectStore(runner.settings.object_store)).get(document_id)
    if not runner.instance.has_dynamic_partition(DOCUMENTS_PARTITION, document_id):
        runner.instance.add_dynamic_partitions(DOCUMENTS_PARTITION, [document_id])
    outcome = IngestResult(
        path=Path(record.source_file_name),
        source_file_name=record.source_file_name,
        document_id=document_id,
    )
    return [(0, runner.run(_Job(0, outcome, record), namespace, None))]


def forget_document(settings: CorpusSettings, document_id: str) -> SourceRecord:
    """Forget a document: its record, artifacts and working files (the content-addressed bytes
    stay: another document may share them); the next publish of its namespace leaves it out."""
    record = SourceRegistry(ObjectStore(settings.object_store)).delete(document_id)
    shutil.rmtree(settings.artifacts_dir / document_id, ignore_errors=True)
    shutil.rmtree(settings.work_dir / document_id, ignore_errors=True)
    return record


def delete_registered(document_id: str) -> None:
    """A pool worker's task: forget a document (the upload API's DELETE)."""
    assert _WORKER is not None, "worker not initialised"
    forget_document(_WORKER.settings, document_id)


def publish_registered(namespace: str) -> PublishOutcome:
    """A pool worker's task: publish one namespace (the upload API, after each document)."""
    assert _WORKER is not None, "worker not initialised"
    return publish_namespace_run(_WORKER.settings, namespace)


def _run_in_worker(
    jobs: list[_Job], namespace: str, password: str | None
) -> list[tuple[int, IngestResult]]:
    """A pool worker's task: one document's files (identical content shares a partition, so
    its copies run one after the other, never side by side)."""
    assert _WORKER is not None, "worker not initialised"
    return [(job.index, _WORKER.run(job, namespace, password)) for job in jobs]


def ingest(
    paths: Iterable[Path],
    settings: CorpusSettings,
    namespace: str | None = None,
    organizational_unit: str | None = None,
    on_progress: Callable[[IngestResult], None] | None = None,
    password: str | None = None,
) -> list[IngestResult]:
    """Ingest files; `password` opens encrypted PDFs and lives only in process memory.

    Every file is stored and its partition registered first, here; then documents are
    materialised by up to `settings.ingest_workers` processes side by side (each with its own
    Dagster instance handle on the same storage), results reported as they finish and returned
    in the order of the files. Publishing stays with the caller, once for the batch."""
    ns = namespace or settings.namespace
    files = collect_files(paths)
    workers = min(settings.ingest_workers, len(files))
    with contextlib.ExitStack() as stack:
        pool = None
        if workers > 1:
            # Started first, so the workers import and build their Dagster handles while the
            # files are stored below (seconds that would otherwise open every batch).
            context = multiprocessing.get_context("spawn")  # no Dagster threads inherited
            pool = stack.enter_context(
                ProcessPoolExecutor(workers, context, _start_worker, (settings,))
            )
            for _ in range(workers):
                pool.submit(_ready)
        instance = dagster_instance(settings)
        results, groups = _register(
            files, instance, settings, ns, organizational_unit, on_progress, password
        )
        if pool is None:
            runner = _Runner(settings, instance, resources_for(settings))
            for group in groups:
                for job in group:
                    results[job.index] = runner.run(job, ns, password)
                    if on_progress is not None:
                        on_progress(results[job.index])
            return results
        # Largest documents first: the batch then ends on small ones, both workers busy.
        groups.sort(key=lambda group: -group[0].record.size_bytes)
        pending = {pool.submit(_run_in_worker, group, ns, password): group for group in groups}
        for future in as_completed(pending):
            try:
                done = future.result()
            except Exception as exc:  # a pool worker died (killed, out of memory): its files fail
                logger.exception("ingest worker failed")
                done = [(job.index, job.result) for job in pending[future]]
                for _, outcome in done:
                    outcome.error = f"ingest worker failed ({type(exc).__name__})"
            for index, outcome in done:
                results[index] = outcome
                if on_progress is not None:
                    on_progress(outcome)
    return results


def _ready() -> None:
    """A pool worker's first task: nothing; its initializer has run by then."""


def _register(
    files: list[tuple[Path, str]],
    instance: dg.DagsterInstance,
    settings: CorpusSettings,
    ns: str,
    organizational_unit: str | None,
    on_progress: Callable[[IngestResult], None] | None,
    password: str | None,
) -> tuple[list[IngestResult], list[list[_Job]]]:
    """Store every file durably and register its document's partition; files with the same
    content form one group (one partition, materialised once per copy, in order). An archive
    is read and checked whole first (`archives.read_archive`): refused, nothing of it is
    stored; accepted, each member in a document format becomes a document named
    `<archive>/<member path>`, the others are reported and skipped."""
    registry = SourceRegistry(ObjectStore(settings.object_store))
    results: list[IngestResult] = []
    by_document: dict[str, list[_Job]] = {}
    for path, name in files:
        started = time.perf_counter()
        for outcome, data in _deliveries(path, name, settings, password):
            results.append(outcome)
            if data is not None:
                try:
                    record = registry.register(
                        data, outcome.source_file_name, ns, SourceKind.CLI, organizational_unit
                    )
                except CorpusError as exc:
                    outcome.error = str(exc)
                else:
                    outcome.document_id = record.document_id
                    job = _Job(len(results) - 1, outcome, record)
                    by_document.setdefault(record.document_id, []).append(job)
                    continue
            outcome.seconds = time.perf_counter() - started
            if on_progress is not None:
                on_progress(outcome)
    new = [d for d in by_document if not instance.has_dynamic_partition(DOCUMENTS_PARTITION, d)]
    if new:
        instance.add_dynamic_partitions(DOCUMENTS_PARTITION, new)
    return results, list(by_document.values())


def _deliveries(
    path: Path, name: str, settings: CorpusSettings, password: str | None
) -> Iterator[tuple[IngestResult, bytes | None]]:
    """The documents one file delivers (`door.deliveries`), each with its bytes once admitted
    (None: refused, or a member that is no document and is skipped; the reason in `error`)."""
    try:
        found = deliveries(
            name, path.read_bytes(), max_bytes=settings.max_file_bytes, has_password=bool(password)
        )
    except CorpusError as exc:
        yield IngestResult(path=path, source_file_name=name, error=str(exc)), None
        return
    except OSError as exc:
        error = f"cannot read file: {exc.strerror}"
        yield IngestResult(path=path, source_file_name=name, error=error), None
        return
    for item in found:
        outcome = IngestResult(path=path, source_file_name=item.label)
        if item.refused is None:
            yield outcome, item.data
            continue
        outcome.error = str(item.refused)
        if item.refused.status == 415:  # not a document (or not what its name says): left out
            outcome.status = "skipped"
        yield outcome, None


def publish_namespace_run(settings: CorpusSettings, namespace: str) -> PublishOutcome:
    """Materialise the corpus revision for one namespace (one revision for the whole batch)."""
    instance = dagster_instance(settings)
    run = dg.materialize(
        [corpus_revision],
        instance=instance,
        resources=resources_for(settings),
        raise_on_error=False,
        tags={"corpus/namespace": namespace, "corpus/trigger": "cli", STAGE_TAG: "publish"},
        run_config={**_QUIET, "ops": {"corpus_revision": {"config": {"namespaces": [namespace]}}}},
    )
    if not run.success:
        return PublishOutcome(namespace, None, 0, 0, _failure_message(run))
    from corpus_pipeline.publish.publisher import read_pointer

    pointer = read_pointer(settings.published_dir / namespace)
    if pointer is None:
        return PublishOutcome(namespace, None, 0, 0, None)
    return PublishOutcome(namespace, pointer.revision, pointer.documents, pointer.chunks)
