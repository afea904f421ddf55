"""`corpus ingest`: store each file durably, register its partition, materialise its assets.

Runs the Dagster assets in-process against the instance under `<CORPUS_HOME>/dagster`
(SQLite by default), so the UI of `make dev` shows the same runs and partitions. Each file's
outcome says in words what failed; tracebacks stay in the Dagster run and the log.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster._core.storage.tags import (  # the tags Dagster's own range backfills use
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)
from dagster_shared.error import SerializableErrorInfo

from corpus_pipeline.common.errors import CorpusError, InvalidInputError, unexpected_error_message
from corpus_pipeline.common.secrets import document_password
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import Manifest, SourceKind, SourceRecord
from corpus_pipeline.defs.checks import CHECK_LABELS, describe_problems
from corpus_pipeline.defs.documents import FAILED_DOCUMENTS, STEP, document_pipeline
from corpus_pipeline.defs.jobs import STAGE_TAG
from corpus_pipeline.defs.partitions import DOCUMENTS_PARTITION, add_partitions, partition_ranges
from corpus_pipeline.defs.publish import corpus_revision
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
)
from corpus_pipeline.intake.door import deliveries
from corpus_pipeline.pipeline import processes
from corpus_pipeline.pipeline.stages import document_dir
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_DAGSTER_YAML = "telemetry:\n  enabled: false\n"
# The per-file line says what failed; Dagster's step failures (with tracebacks) stay in the
# run's event log instead of flooding the terminal.
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# A batch is cut into at least this many range runs per worker (see `_tasks`).
TASKS_PER_WORKER = 4
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
        "models": ModelSettingsResource(
            dense=settings.dense, embeddings_model=settings.embeddings.model
        ),
    }


def _stage_of(step_key: str) -> str:
    return _STAGES.get(step_key, "pipeline")


def _failed_checks(result: dg.ExecuteInProcessResult, document_id: str | None = None) -> list[str]:
    """Failed asset checks in words, e.g. 'section tree invalid: …' (the check's description,
    else its label and the first problems of its metadata); of one document's partition when
    given (a batch run checks many)."""
    messages: list[str] = []
    for evaluation in result.get_asset_check_evaluations():
        if evaluation.passed or (document_id and evaluation.partition != document_id):
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
                    tags=_run_tags(namespace),
                    run_config=_QUIET,
                )
            checks = _failed_checks(run) if run.success else []
            if run.success and not checks:
                self._succeeded(outcome, record)
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

    def run_range(self, jobs: list[_Job], namespace: str, password: str | None) -> None:
        """Documents whose partitions are contiguous, in one run over their range: one run's
        bookkeeping for all of them (`document_pipeline` records each under its partition).
        A failed document fails alone: its message is in the run failure's metadata."""
        started = time.perf_counter()
        ids = [job.record.document_id for job in jobs]
        try:
            with contextlib.ExitStack() as stack:
                for document_id in ids:
                    stack.enter_context(document_password(document_id, password))
                run = dg.materialize(
                    _ASSETS,
                    instance=self.instance,
                    resources=self.resources,
                    raise_on_error=False,
                    tags={
                        **_run_tags(namespace),
                        ASSET_PARTITION_RANGE_START_TAG: ids[0],
                        ASSET_PARTITION_RANGE_END_TAG: ids[-1],
                        "corpus/documents": str(len(ids)),
                    },
                    run_config=_QUIET,
                )
        except CorpusError as exc:
            for job in jobs:
                job.result.error = str(exc)
            return
        failed = _failed_documents(run)
        committed = _document_seconds(run)
        share = (time.perf_counter() - started) / len(jobs)
        for job in jobs:
            outcome, document_id = job.result, job.record.document_id
            outcome.seconds = committed.get(document_id, share)
            checks = _failed_checks(run, document_id)
            if checks:
                outcome.error = checks[0]
            elif document_id in committed:
                self._succeeded(outcome, job.record)
            else:
                outcome.error = failed.get(document_id) or _failure_message(run)
                shutil.rmtree(self.settings.work_dir / document_id, ignore_errors=True)

    def run_task(
        self, groups: list[list[_Job]], namespace: str, password: str | None
    ) -> list[tuple[int, IngestResult]]:
        """One task of a batch: the first file of each document (one range run, or a plain run
        when alone), then any further copies of the same content one by one."""
        firsts = [group[0] for group in groups]
        if len(firsts) == 1:
            self.run(firsts[0], namespace, password)
        else:
            self.run_range(firsts, namespace, password)
        for job in (job for group in groups for job in group[1:]):
            self.run(job, namespace, password)
        return [(job.index, job.result) for group in groups for job in group]

    def _succeeded(self, outcome: IngestResult, record: SourceRecord) -> None:
        directory = document_dir(self.settings, record.document_id)
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


# The process a run executes in (`processes.identity`): a run whose process died is failed and
# its concurrency slot freed (`fail_orphaned_runs`), never left holding the publish pool.
PROCESS_TAG = "corpus/process"


def _run_tags(namespace: str) -> dict[str, str]:
    return {
        "corpus/namespace": namespace,
        "corpus/trigger": "cli",
        STAGE_TAG: "document",
        PROCESS_TAG: processes.identity(),
    }


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the in-process runs whose process has died (killed, out of memory) and free the
    concurrency slots they held; their ids.

    A run this project executes in its own process (`dg.materialize`) has no run monitor: were
    its process killed while publishing, its run stayed STARTED and kept the `index_writer`
    slot, and every later publish waited for that slot forever (found by the soak test,
    `benchmarks/soak.py`)."""
    active = dg.RunsFilter(
        statuses=[
            dg.DagsterRunStatus.STARTED,
            dg.DagsterRunStatus.STARTING,
            dg.DagsterRunStatus.NOT_STARTED,
            dg.DagsterRunStatus.CANCELING,
        ]
    )
    failed = []
    for run in instance.get_runs(active, limit=1000):
        owner = run.tags.get(PROCESS_TAG)
        if owner is None or not processes.is_gone(owner):
            continue
        instance.report_run_failed(run, "its process stopped (killed or out of memory)")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        failed.append(run.run_id)
    if failed:
        logger.warning("failed %d runs whose process had died; their slots are free", len(failed))
    return failed


def _failed_documents(result: dg.ExecuteInProcessResult) -> dict[str, str]:
    """{document id: message} of the documents a range run reports failed."""
    for event in result.all_events:
        data = event.step_failure_data if event.is_step_failure else None
        if data is None or data.user_failure_data is None:
            continue
        entry = data.user_failure_data.metadata.get(FAILED_DOCUMENTS)
        if entry is not None and isinstance(entry.value, dict):
            return {str(k): str(v) for k, v in entry.value.items()}
    return {}


def _document_seconds(result: dg.ExecuteInProcessResult) -> dict[str, float]:
    """Seconds of each document whose directory the run committed (its manifest's
    materialisation, partition by partition)."""
    seconds: dict[str, float] = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key.to_user_string() != "document_manifest":
            continue
        value = materialization.metadata.get("document_seconds")
        if materialization.partition is not None:
            seconds[materialization.partition] = float(value.value) if value else 0.0  # type: ignore[arg-type]
    return seconds


_ASSETS = [document_pipeline]
_WORKER: _Runner | None = None


def _start_worker(settings: CorpusSettings, environ: dict[str, str]) -> None:
    global _WORKER
    processes.adopt_environment(environ)
    if not processes.use_parent_forkserver():
        processes.start_forkserver()  # preloads the parsers while the Dagster handles are built
    _WORKER = _Runner.of(settings)


def run_registered(
    document_id: str, namespace: str, password: str | None = None
) -> list[tuple[int, IngestResult]]:
    """A pool worker's task for the upload API: one stored and registered document, its
    partition added if new, materialised like a batch file (`password`, in memory only, opens
    an encrypted PDF the way `corpus ingest --password` does)."""
    assert _WORKER is not None, "worker not initialised"
    runner = _WORKER
    record = SourceRegistry(ObjectStore(runner.settings.object_store)).get(document_id)
    add_partitions(runner.instance, [document_id], [namespace])
    outcome = IngestResult(
        path=Path(record.source_file_name),
        source_file_name=record.source_file_name,
        document_id=document_id,
    )
    return [(0, runner.run(_Job(0, outcome, record), namespace, password))]


def forget_document(settings: CorpusSettings, document_id: str) -> SourceRecord:
    """Forget a document: its record, its stored bytes (unless another document holds the same
    content), artifacts, vectors and working files; the next publish of its namespace leaves it
    out."""
    record = SourceRegistry(ObjectStore(settings.object_store)).delete(document_id)
    shutil.rmtree(settings.artifacts_dir / document_id, ignore_errors=True)
    shutil.rmtree(settings.work_dir / document_id, ignore_errors=True)
    shutil.rmtree(settings.embeddings_dir / document_id, ignore_errors=True)
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
    groups: list[list[_Job]], namespace: str, password: str | None
) -> list[tuple[int, IngestResult]]:
    """A pool worker's task: documents in one range run (identical content shares a
    partition, so further copies run after it, never side by side)."""
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.run_task(groups, namespace, password)


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
) -> list[IngestResult]:
    """Ingest files; `password` opens encrypted PDFs and lives only in process memory.

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
            files, instance, settings, ns, organizational_unit, on_progress, password
        )
        order = list(instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
        tasks = _tasks(groups, order, workers)
        if pool is None:
            runner = _Runner(settings, instance, resources_for(settings))
            for task in tasks:
                for index, outcome in runner.run_task(task, ns, password):
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
    # New partitions are added largest document first, so a range of them is a task whose
    # documents are alike in size and the batch starts with the longest ones.
    new = [d for d in by_document if not instance.has_dynamic_partition(DOCUMENTS_PARTITION, d)]
    new.sort(key=lambda d: -by_document[d][0].record.size_bytes)
    if new:
        instance.add_dynamic_partitions(DOCUMENTS_PARTITION, new)
        add_partitions(instance, namespaces=[ns])
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
    add_partitions(instance, namespaces=[namespace])
    run = dg.materialize(
        [corpus_revision],
        instance=instance,
        resources=resources_for(settings),
        partition_key=namespace,
        raise_on_error=False,
        tags={
            "corpus/namespace": namespace,
            "corpus/trigger": "cli",
            STAGE_TAG: "publish",
            PROCESS_TAG: processes.identity(),
        },
        run_config=_QUIET,
    )
    if not run.success:
        return PublishOutcome(namespace, None, 0, 0, _failure_message(run))
    from corpus_pipeline.publish.publisher import read_pointer

    pointer = read_pointer(settings.published_dir / namespace)
    if pointer is None:
        return PublishOutcome(namespace, None, 0, 0, None)
    return PublishOutcome(namespace, pointer.revision, pointer.documents, pointer.chunks)


@dataclass
class EmbedOutcome:
    documents: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    errors: dict[str, str] = field(default_factory=dict)


def embed_documents_run(settings: CorpusSettings, document_ids: list[str]) -> EmbedOutcome:
    """Materialise `document_embeddings` for committed documents (ranges of their partitions,
    in this process), after their lexical revision is published; the caller publishes again."""
    from corpus_pipeline.defs.embeddings import document_embeddings

    started = time.perf_counter()
    outcome = EmbedOutcome()
    instance = dagster_instance(settings)
    order = list(instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
    for first, last, _ in partition_ranges(order, document_ids, runs=1):
        run = dg.materialize(
            [document_embeddings],
            instance=instance,
            resources=resources_for(settings),
            raise_on_error=False,
            tags={
                ASSET_PARTITION_RANGE_START_TAG: first,
                ASSET_PARTITION_RANGE_END_TAG: last,
                "corpus/trigger": "cli",
                STAGE_TAG: "embedding",
                PROCESS_TAG: processes.identity(),
            },
            run_config=_QUIET,
        )
        for event in run.get_asset_materialization_events():
            metadata = event.step_materialization_data.materialization.metadata
            outcome.documents += 1
            outcome.chunks += int(metadata["chunks"].value)  # type: ignore[arg-type]
            outcome.embedded += int(metadata["embedded"].value)  # type: ignore[arg-type]
        if not run.success:
            failed = _failed_documents(run)
            outcome.errors.update(failed or {f"{first}..{last}": _failure_message(run)})
    outcome.seconds = time.perf_counter() - started
    return outcome


def publish_batch(
    settings: CorpusSettings, namespace: str, results: list[IngestResult]
) -> tuple[PublishOutcome | None, EmbedOutcome | None]:
    """Publish a batch's namespace once (searchable lexically now); with the dense channel on,
    then embed its documents and publish again, so the vectors follow in the next revision."""
    ok = list(dict.fromkeys(r.document_id for r in results if r.status == "ok" and r.document_id))
    if not ok:
        return None, None
    published = publish_namespace_run(settings, namespace)
    if settings.dense == "off" or published.error is not None:
        return published, None
    dense = embed_documents_run(settings, ok)
    return publish_namespace_run(settings, namespace), dense
