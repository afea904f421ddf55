"""One document run: the only way documents are processed and a namespace is published.

Every document is processed by a Dagster run of `document_pipeline` over its partition (or a
range run over contiguous partitions) and every revision is published by a run of
`corpus_revision` on its namespace's partition; the tags come from `defs.tags.run_tags`. The CLI's
batches (`orchestration.ingest`), the upload API's jobs (`upload_api.tasks`) and the tests go
through `DocumentRuns` in their own process; the sensors and the jobs launched from the UI
start the same assets through the daemon with the same tags. Each outcome says in words what
failed; tracebacks stay in the Dagster run and the log.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster_shared.error import SerializableErrorInfo

from corpus_pipeline.common.errors import CorpusError, unexpected_error_message
from corpus_pipeline.common.secrets import document_password
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import Manifest, SourceRecord
from corpus_pipeline.defs.checks import CHECK_LABELS, describe_problems
from corpus_pipeline.defs.documents import ASSET_DEPS, FAILED_DOCUMENTS, STEP, document_pipeline
from corpus_pipeline.defs.partitions import DOCUMENTS_PARTITION, add_partitions, partition_ranges
from corpus_pipeline.defs.publish import corpus_revision
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
)
from corpus_pipeline.defs.tags import PROCESS_TAG, Stage, run_tags
from corpus_pipeline.defs.versions import code_version
from corpus_pipeline.pipeline import processes
from corpus_pipeline.pipeline.stages import document_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
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
    # What the revision changed: documents published anew, removed, left as they were.
    published: int = 0
    removed: int = 0
    unchanged: int = 0
    seconds: float = 0.0


@dataclass
class EmbedOutcome:
    documents: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class IngestResult:
    path: Path
    source_file_name: str
    document_id: str | None = None
    # "ok" (processed now), "unchanged" (these bytes were committed by the current code
    # already: not run again), "skipped" (an archive member that is no document) or "failed".
    status: str = "failed"
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    # Parts the document lost (diagnostics with `lost`), e.g. {"image": 2}.
    skipped: dict[str, int] = field(default_factory=dict)
    pages: int | None = None  # None for formats without pages


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
class DocumentRuns:
    """Runs documents and publishes namespaces in this process: built once per process,
    because the instance and the definitions cost far more than one small document's run."""

    settings: CorpusSettings
    instance: dg.DagsterInstance
    resources: dict[str, object]
    trigger: str = "cli"

    @classmethod
    def of(cls, settings: CorpusSettings, trigger: str = "cli") -> DocumentRuns:
        return cls(settings, dagster_instance(settings), resources_for(settings), trigger)

    def process(
        self,
        records: Sequence[SourceRecord],
        namespace: str,
        passwords: Mapping[str, str] | None = None,
    ) -> list[IngestResult]:
        """Registered documents, their partitions added if new, in runs over contiguous
        partitions (one run each when alone); outcomes in the order of `records`. `passwords`
        (document id → password, in memory only) open encrypted PDFs."""
        ids = [record.document_id for record in records]
        add_partitions(self.instance, ids, [namespace])
        outcomes = {
            record.document_id: IngestResult(
                path=Path(record.source_file_name),
                source_file_name=record.source_file_name,
                document_id=record.document_id,
            )
            for record in records
        }
        by_id = {record.document_id: record for record in records}
        order = list(self.instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
        position = {key: i for i, key in enumerate(order)}
        for first, _, count in partition_ranges(order, list(by_id), runs=1):
            members = order[position[first] : position[first] + count]
            pairs = [(by_id[d], outcomes[d]) for d in members]
            with contextlib.ExitStack() as stack:
                for document_id in members:
                    password = (passwords or {}).get(document_id)
                    stack.enter_context(document_password(document_id, password))
                if len(pairs) == 1:
                    self.run(*pairs[0], namespace)
                else:
                    self.run_range(pairs, namespace)
        return [outcomes[document_id] for document_id in ids]

    def run(self, record: SourceRecord, outcome: IngestResult, namespace: str) -> IngestResult:
        """One document in a run on its partition (its password, if any, already held)."""
        started = time.perf_counter()  # this document's own time, not its wait in a batch
        try:
            run = dg.materialize(
                [document_pipeline],
                partition_key=record.document_id,
                instance=self.instance,
                resources=self.resources,
                raise_on_error=False,
                tags=self._tags("document", namespace),
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
                shutil.rmtree(self.settings.work_dir / record.document_id, ignore_errors=True)
        except CorpusError as exc:
            outcome.error = str(exc)
        outcome.seconds = time.perf_counter() - started
        return outcome

    def run_range(self, pairs: Sequence[tuple[SourceRecord, IngestResult]], namespace: str) -> None:
        """Documents whose partitions are contiguous, in one run over their range: one run's
        bookkeeping for all of them (`document_pipeline` records each under its partition).
        A failed document fails alone: its message is in the run failure's metadata."""
        started = time.perf_counter()
        ids = [record.document_id for record, _ in pairs]
        try:
            run = dg.materialize(
                [document_pipeline],
                instance=self.instance,
                resources=self.resources,
                raise_on_error=False,
                tags=self._tags("document", namespace, (ids[0], ids[-1], len(ids))),
                run_config=_QUIET,
            )
        except CorpusError as exc:
            for _, outcome in pairs:
                outcome.error = str(exc)
            return
        failed = _failed_documents(run)
        committed = _document_seconds(run)
        share = (time.perf_counter() - started) / len(pairs)
        for record, outcome in pairs:
            document_id = record.document_id
            outcome.seconds = committed.get(document_id, share)
            checks = _failed_checks(run, document_id)
            if checks:
                outcome.error = checks[0]
            elif document_id in committed:
                self._succeeded(outcome, record)
            else:
                outcome.error = failed.get(document_id) or _failure_message(run)
                shutil.rmtree(self.settings.work_dir / document_id, ignore_errors=True)

    def publish(self, namespace: str) -> PublishOutcome:
        """The namespace's revision, published by a run of `corpus_revision` on its partition
        (one revision for a whole batch)."""
        add_partitions(self.instance, namespaces=[namespace])
        run = dg.materialize(
            [corpus_revision],
            instance=self.instance,
            resources=self.resources,
            partition_key=namespace,
            raise_on_error=False,
            tags=self._tags("publish", namespace),
            run_config=_QUIET,
        )
        if not run.success:
            return PublishOutcome(namespace, None, 0, 0, _failure_message(run))
        [event] = run.get_asset_materialization_events()
        metadata = event.step_materialization_data.materialization.metadata

        def number(key: str) -> int:
            value = metadata[key].value
            assert isinstance(value, int | float), key
            return int(value)

        seconds = metadata["seconds"].value
        return PublishOutcome(
            namespace,
            number("revision"),
            number("documents"),
            number("chunks"),
            published=number("published"),
            removed=number("removed"),
            unchanged=number("unchanged"),
            seconds=float(seconds) if isinstance(seconds, int | float) else 0.0,
        )

    def embed(self, document_ids: Sequence[str]) -> EmbedOutcome:
        """`document_embeddings` of committed documents (runs over ranges of their partitions),
        after their lexical revision is published; the caller publishes again."""
        from corpus_pipeline.defs.embeddings import document_embeddings

        started = time.perf_counter()
        outcome = EmbedOutcome()
        order = list(self.instance.get_dynamic_partitions(DOCUMENTS_PARTITION))
        for first, last, count in partition_ranges(order, list(document_ids), runs=1):
            run = dg.materialize(
                [document_embeddings],
                instance=self.instance,
                resources=self.resources,
                partition_key=first if count == 1 else None,
                raise_on_error=False,
                tags=self._tags("embedding", None, (first, last, count)),
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

    def publish_processed(
        self, namespace: str, results: Sequence[IngestResult]
    ) -> tuple[PublishOutcome | None, EmbedOutcome | None]:
        """Publish a batch's namespace once (searchable lexically now); with the dense channel
        on, then embed the documents it processed and publish again, so the vectors follow in
        the next revision. Nothing when no document was processed or unchanged."""
        ok = list(
            dict.fromkeys(r.document_id for r in results if r.status == "ok" and r.document_id)
        )
        if not ok and not any(r.status == "unchanged" for r in results):
            return None, None
        # Unchanged documents publish too (no new revision when nothing changed): an earlier
        # batch whose publish failed is published now.
        published = self.publish(namespace)
        if not ok:
            return published, None
        if self.settings.dense == "off" or published.error is not None:
            return published, None
        dense = self.embed(ok)
        return self.publish(namespace), dense

    def _tags(
        self, stage: Stage, namespace: str | None, span: tuple[str, str, int] | None = None
    ) -> dict[str, str]:
        return run_tags(
            stage, self.trigger, namespace=namespace, span=span, process=processes.identity()
        )

    def _succeeded(self, outcome: IngestResult, record: SourceRecord) -> None:
        directory = document_dir(self.settings, record.document_id)
        manifest = Manifest.model_validate_json(
            (directory / "manifest.json").read_text(encoding="utf-8")
        )
        _describe(outcome, "ok", directory, manifest)


def _describe(outcome: IngestResult, status: str, directory: Path, manifest: Manifest) -> None:
    """A committed document's outcome: its status, chunk counts, pages and lost parts."""
    stats = manifest.statistics
    outcome.status = status
    outcome.counts = {
        "text": stats.text_chunks,
        "table": stats.table_chunks,
        "image": stats.image_chunks,
        "sections": stats.sections,
    }
    outcome.pages = stats.pages
    outcome.skipped = _skipped_parts(directory)


def unchanged_outcome(
    settings: CorpusSettings,
    instance: dg.DagsterInstance,
    previous: SourceRecord,
    candidate: SourceRecord,
    path: Path,
) -> IngestResult | None:
    """The outcome of a delivery that changes nothing, or None when it must run: `previous`
    (the registered record of the same document) equals `candidate` (the record the delivery
    would register) but for when it was received, its committed manifest was made from those
    bytes, and the newest materialisation of each of its six assets carries the current code
    version (after a code change it runs again)."""
    ignored = {"received_at"}
    if previous.model_dump(exclude=ignored) != candidate.model_dump(exclude=ignored):
        return None
    directory = document_dir(settings, previous.document_id)
    try:
        manifest = Manifest.model_validate_json(
            (directory / "manifest.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError):
        return None
    if manifest.source.sha256 != previous.sha256:
        return None
    for asset in ASSET_DEPS:
        page = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(asset), asset_partitions=[previous.document_id]
            ),
            limit=1,
            ascending=False,
        )
        materialization = page.records[0].asset_materialization if page.records else None
        provenance = (
            dg.DataProvenance.from_tags(materialization.tags or {}) if materialization else None
        )
        if provenance is None or provenance.code_version != code_version(asset):
            return None
    outcome = IngestResult(path, candidate.source_file_name, previous.document_id)
    _describe(outcome, "unchanged", directory, manifest)
    return outcome


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
