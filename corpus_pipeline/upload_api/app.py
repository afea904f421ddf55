"""The upload API (`corpus ingest-api`): documents in over HTTP, processed asynchronously.

`POST /v1/documents` checks the key from the headers before it reads a byte of the body, then
reads the body as a stream into a scratch folder (`uploads`: each file up to
`CORPUS_MAX_UPLOAD_MB`, the request up to `CORPUS_MAX_REQUEST_MB`, enforced while reading,
chunked requests included; at most `CORPUS_MAX_UPLOADS_PER_KEY` in flight per key, else 429),
admits each file at the door in door processes (`door.admit`; an archive is read and checked
whole, `archives.read_archive`, its members written to the scratch folder) and only when all
pass stores them from disk, records one queued job per document and answers 202 — it never
waits for parsing. A refused request writes nothing and leaves no scratch file: 400/413/415/422
with a message that names the file (or field) and the reason. One worker
thread takes queued jobs in order and runs each document through the Dagster assets in a
separate process (`tasks`), then publishes its namespace; `GET /v1/jobs/{id}` reports
`queued | processing | done | error`, timings, the published revision, or the error in words
(naming the file). A document's id derives from its name as sent, so names that sanitise alike
stay apart; a name already registered is refused (409) unless `replace_document_id` names it.
A `password` opens encrypted PDFs; it stays in this process's memory until its job takes it.
Jobs are leased and the lease renewed while they run (`jobs`), so a `kill -9` of this process
or of a worker loses none: once the lease runs out the job is queued again.
Writing needs a key with write access to the namespace (`write_namespaces` in the key file the
query service reads); a key that cannot read the namespace is told it does not exist.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import shutil
import tempfile
import threading
import time
import unicodedata
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from corpus_pipeline.access.keys import (
    KeyResolver,
    install,
    may_read,
    may_write,
    may_write_somewhere,
    require_principal,
)
from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.ids import document_id_for
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import SourceKind, SourceRecord
from corpus_pipeline.contracts.api import Health
from corpus_pipeline.contracts.jobs import (
    IngestionStatus,
    Job,
    QueuedFile,
    UploadFields,
    UploadResponse,
    upload_form_schema,
)
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.intake.door import Refused, safe_name
from corpus_pipeline.intake.jobs import JobStore, open_job_store
from corpus_pipeline.intake.uploads import (
    Checked,
    ReceivedForm,
    UploadLimits,
    check_file,
    receive_form,
)
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
from corpus_pipeline.upload_api.worker import Passwords, work

MIB = 1024 * 1024
logger = logging.getLogger(__name__)


# The query service's resolver (`access`): same key file, reloaded when it changes.
PrincipalDep = Annotated[Principal, Depends(require_principal)]


def create_ingest_app(settings: CorpusSettings, *, worker: bool = True) -> FastAPI:
    """The app; `worker=False` leaves jobs queued (for tests of the door alone)."""
    jobs = open_job_store(settings)
    registry = SourceRegistry(ObjectStore(settings.object_store))
    passwords = Passwords()
    stop = threading.Event()
    readiness = _Readiness(jobs, stop)
    # Storing uploads and waiting for their door checks: blocking work, never on the request
    # loop; the checks themselves run in door processes.
    upload_pool = ThreadPoolExecutor(settings.upload_workers, thread_name_prefix="corpus-upload")
    door = _DoorPool(settings.upload_workers)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # `ingest_workers` workers, each a thread with its own ingest process: documents are
        # processed side by side (publishing stays serialised by the namespace's lock). The
        # Dagster instance is created here first: worker processes creating a fresh SQLite
        # instance at the same time would leave it with two migration heads.
        server_record = None
        if worker:
            from corpus_pipeline.orchestration.runs import dagster_instance, fail_orphaned_runs
            from corpus_pipeline.pipeline import processes

            # What a crashed predecessor left is reaped first (`processes`), and its jobs,
            # their leases run out, are queued again (or fail after `job_max_attempts`).
            records = settings.home / "service" / "processes"
            if reaped := processes.reap_orphans(records):
                logger.warning("killed %d processes left by a crashed upload API", len(reaped))
            processes.start_forkserver()
            server_record = processes.record_forkserver(records)
            jobs.expire()
            # Runs of its killed workers would hold the publish slot for ever.
            fail_orphaned_runs(dagster_instance(settings))
        threads = [
            threading.Thread(
                target=work,
                args=(settings, jobs, stop, passwords),
                name=f"corpus-ingest-{n}",
                daemon=True,
            )
            for n in range(settings.ingest_workers if worker else 0)
        ]
        for thread in threads:
            thread.start()
        readiness.start()
        # What start-up loaded (Dagster, pydantic models: millions of objects) is never garbage:
        # out of the collector's sight, a full collection no longer stalls the loop for 100+ ms.
        gc.freeze()
        yield
        stop.set()
        upload_pool.shutdown(wait=True, cancel_futures=True)
        door.shutdown()
        for thread in threads:
            thread.join(timeout=60)
        if server_record is not None:
            server_record.unlink(missing_ok=True)

    app = FastAPI(title="corpus ingest API", lifespan=lifespan)
    install(
        app, KeyResolver(settings.keys_file, open_access=settings.open_access, home=settings.home)
    )

    def writable(who: Principal, namespace: str) -> None:
        if may_write(who, namespace):  # a refusal is logged
            return
        if not who.may_read(namespace):
            raise HTTPException(404, f"namespace '{namespace}' does not exist")
        raise HTTPException(403, f"this key may not write to namespace '{namespace}'")

    @app.get("/healthz", response_model=Health)
    async def healthz() -> Health:
        """Ok or not, to anyone (jobs and namespaces are for keys)."""
        return Health(status="ok")

    @app.get("/readyz", response_model=Health, responses={503: {"model": Health}})
    async def readyz() -> Response:
        """Ready while the job store answered its last check (a query every second, in a
        thread of its own): a probe never waits for the store, however busy uploads keep it.
        The job and document routes are plain functions, run in FastAPI's thread pool, so
        their SQLite and object-store calls never stall the loop either."""
        ready = readiness.ready()
        body = Health(status="ok" if ready else "loading").model_dump_json()
        return Response(body, status_code=200 if ready else 503, media_type="application/json")

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"detail": str(exc), "field": "files"})

    limits = UploadLimits(settings.max_upload_mb * MIB, settings.max_request_mb * MIB)
    scratch_root = settings.home / "service" / "uploads"
    scratch_root.mkdir(parents=True, exist_ok=True)
    _remove_orphaned_scratch(scratch_root)
    gate = _UploadGate(settings.max_uploads_per_key)

    @app.post(
        "/v1/documents",
        status_code=202,
        response_model=UploadResponse,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"multipart/form-data": {"schema": upload_form_schema()}},
            }
        },
    )
    async def upload(request: Request, who: PrincipalDep) -> UploadResponse:
        """Store the files of a multipart form and queue one job per document.

        The key is checked from the headers before a byte of the body is read; the body is then
        read as a stream, its files written to a scratch folder, each limit enforced while
        reading (413 at the limit, for Content-Length and chunked requests alike). The door
        checks, archive expansion and storing run in the upload pool, off this loop; the
        scratch folder is removed whatever the outcome."""
        if not may_write_somewhere(who):  # a refusal is logged
            raise HTTPException(403, "this key may not write to any namespace")
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > limits.request_bytes:
            raise Refused(
                413, f"request of {int(length):,} bytes is above {settings.max_request_mb} MiB"
            )
        with gate.slot(who.name):
            scratch = Path(
                await asyncio.to_thread(
                    tempfile.mkdtemp, prefix=f"{os.getpid()}-", dir=scratch_root
                )
            )
            try:
                form = await receive_form(
                    request.headers.get("content-type"), request.stream(), limits, scratch
                )
                fields = _upload_fields(form.fields)
                writable(who, fields.namespace)
                if not form.files:
                    raise Refused(400, "no files: send one or more 'files' parts")
                accept = functools.partial(
                    _accept, form, fields, who, settings, registry, jobs, passwords, door, scratch
                )
                return await asyncio.get_running_loop().run_in_executor(upload_pool, accept)
            finally:
                await asyncio.to_thread(shutil.rmtree, scratch, True)

    @app.get("/v1/jobs/{job_id}", response_model=Job)
    def job_status(job_id: str, who: PrincipalDep) -> Job:
        job = jobs.get(job_id)
        if job is None or not may_read(who, job.namespace):
            raise HTTPException(404, f"no job '{job_id}'")
        return job

    @app.post("/v1/jobs/{job_id}/retry", status_code=202, response_model=Job)
    def retry(job_id: str, who: PrincipalDep) -> Job:
        job = jobs.get(job_id)
        if job is None or not may_read(who, job.namespace):
            raise HTTPException(404, f"no job '{job_id}'")
        writable(who, job.namespace)
        if job.status != "error":
            raise HTTPException(400, f"job '{job_id}' did not fail (it is {job.status})")
        if job.kind == "document" and not _original_kept(registry, job.document_id):
            raise HTTPException(400, f"the original of job '{job_id}' is gone")
        again = jobs.requeue(job_id)
        if again is None:
            raise HTTPException(400, f"job '{job_id}' did not fail")
        return again

    @app.delete("/v1/documents/{document_id}", status_code=202, response_model=Job)
    def delete(document_id: str, who: PrincipalDep) -> Job:
        """Queue the removal: the record, the artifacts, then a revision without it."""
        try:
            record = registry.get(document_id)
        except CorpusError:
            raise HTTPException(404, f"no document '{document_id}'") from None
        if not may_read(who, record.namespace):
            raise HTTPException(404, f"no document '{document_id}'")
        writable(who, record.namespace)
        return jobs.create(document_id, record.namespace, record.source_file_name, "delete")

    @app.get("/v1/namespaces/{namespace}/ingestion", response_model=IngestionStatus)
    def ingestion(namespace: str, who: PrincipalDep) -> IngestionStatus:
        if not may_read(who, namespace):
            raise HTTPException(404, f"namespace '{namespace}' does not exist")
        counts = jobs.counts(namespace)
        busy = counts.get("queued", 0) + counts.get("processing", 0)
        return IngestionStatus(
            namespace=namespace, state="indexing" if busy else "complete", counts=counts
        )

    return app


# A door process is replaced after this many files: what a large file's parse left in its heap
# goes back to the system with it.
DOOR_TASKS_PER_PROCESS = 16


class _Readiness:
    """The job store checked once a second in a thread: `/readyz` reads the last result."""

    CHECK_SECONDS = 1.0
    FRESH_SECONDS = 5.0

    def __init__(self, jobs: JobStore, stop: threading.Event) -> None:
        self.jobs = jobs
        self.stop = stop
        self._ok_at = float("-inf")

    def start(self) -> None:
        self._check()  # ready from the first request on, when the store answers
        threading.Thread(target=self._loop, name="corpus-readiness", daemon=True).start()

    def _loop(self) -> None:
        while not self.stop.wait(self.CHECK_SECONDS):
            self._check()

    def _check(self) -> None:
        try:
            self.jobs.counts("default")
        except Exception:  # not ready while it fails; the reason goes to the log
            logger.warning("job store check failed", exc_info=True)
            return
        self._ok_at = time.monotonic()

    def ready(self) -> bool:
        return time.monotonic() - self._ok_at < self.FRESH_SECONDS


class _DoorPool:
    """The door processes: `workers` forked from the parse forkserver on first use. A check
    that kills its process (a parser crash on hostile bytes) refuses that file and the pool
    is replaced."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def _current(self) -> ProcessPoolExecutor:
        from corpus_pipeline.pipeline import processes

        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    processes.start_forkserver(),
                    max_tasks_per_child=DOOR_TASKS_PER_PROCESS,
                )
            return self._pool

    def check(
        self, form: ReceivedForm, scratch: Path, max_bytes: int, has_password: bool
    ) -> list[list[Checked]]:
        """Each received file's verdicts, in order (all files checked side by side)."""
        pool = self._current()
        futures = [
            pool.submit(check_file, str(f.path), f.sent, str(scratch), n, max_bytes, has_password)
            for n, f in enumerate(form.files)
        ]
        out: list[list[Checked]] = []
        for received, future in zip(form.files, futures, strict=True):
            try:
                out.append(future.result())
            except BrokenProcessPool:
                self._replace(pool)
                name = safe_name(received.sent)
                raise Refused(
                    400, f"'{name}' cannot be read: checking it stopped its process"
                ) from None
        return out

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = None
        broken.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _remove_orphaned_scratch(root: Path) -> None:
    """Scratch folders of upload-API processes that are gone (killed mid-upload): each folder
    is named after the process that made it, so a live process's uploads are never touched."""
    for folder in root.iterdir():
        pid = folder.name.split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue  # alive, another user's


class _UploadGate:
    """Uploads in flight per key: a key past its share is told to come back (429), so one
    client cannot hold every upload thread and the disk's scratch space. Used on the event
    loop only (no lock)."""

    def __init__(self, per_key: int) -> None:
        self.per_key = per_key
        self._in_flight: dict[str, int] = {}

    @contextmanager
    def slot(self, name: str) -> Iterator[None]:
        if self._in_flight.get(name, 0) >= self.per_key:
            raise HTTPException(
                429,
                f"this key has {self.per_key} uploads in flight already; retry when one is done",
                headers={"Retry-After": "5"},
            )
        self._in_flight[name] = self._in_flight.get(name, 0) + 1
        try:
            yield
        finally:
            self._in_flight[name] -= 1
            if not self._in_flight[name]:
                del self._in_flight[name]


def _upload_fields(values: dict[str, str]) -> UploadFields:
    """The form's fields, or 422 naming the first bad one."""
    try:
        return UploadFields.model_validate({k: v for k, v in values.items() if k != "files"})
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"]) or "form"
        raise HTTPException(422, f"form field '{name}': {error['msg']}") from None


def _accept(
    form: ReceivedForm,
    fields: UploadFields,
    who: Principal,
    settings: CorpusSettings,
    registry: SourceRegistry,
    jobs: JobStore,
    passwords: Passwords,
    door: _DoorPool,
    scratch: Path,
) -> UploadResponse:
    """Admit every file at the door (door processes, side by side), then store each and queue
    its job (in an upload thread).

    A refused file refuses the request before anything is stored. This process never holds a
    document's bytes: the door processes read the files from the scratch folder and write an
    archive's admitted members there, and each document is hashed and stored from its file as a
    stream."""
    namespace = fields.namespace
    replaced = _replaced(registry, who, fields.replace_document_id, namespace, len(form.files))
    admitted: list[tuple[str, str, Path]] = []  # label, name as sent, bytes on disk
    skipped: list[QueuedFile] = []
    verdicts = door.check(form, scratch, settings.max_upload_mb * MIB, bool(fields.password))
    for received, checked in zip(form.files, verdicts, strict=True):
        name = safe_name(received.sent)
        for item in checked:
            if item.path is not None:
                sent = received.sent + item.label[len(name) :]
                admitted.append((item.label, sent, Path(item.path)))
            elif item.member and item.status == 415:  # an archive member that is no document
                skipped.append(
                    QueuedFile(source_file_name=item.label, status="skipped", detail=item.message)
                )
            else:
                raise _naming(Refused(item.status or 400, item.message or "refused"), item.label)
    if replaced is not None:
        if len(admitted) != 1:
            raise Refused(400, "replace_document_id takes exactly one document")
        # The replaced document's id and name: the same document, new bytes.
        documents = [(replaced.source_file_name, replaced.document_id, admitted[0][2])]
    else:
        documents = _new_documents(registry, namespace, admitted)
    queued = []
    for name, document_id, path in documents:  # all passed: now store, then record the job
        record = registry.register_file(
            path,
            name,
            namespace,
            SourceKind.UPLOAD,
            fields.organizational_unit,
            fields.document_date,
            document_id=document_id,
        )
        with passwords.recording() as pending:  # set before a worker can take the job
            job = jobs.create(record.document_id, namespace, name)
            if fields.password:
                pending[job.job_id] = fields.password
        queued.append(
            QueuedFile(
                source_file_name=name,
                job_id=job.job_id,
                document_id=record.document_id,
                status="queued",
            )
        )
    return UploadResponse(namespace=namespace, files=queued + skipped)


def _naming(refused: Refused, label: str) -> Refused:
    """A refusal that names the file (the door names the reason; the API answers per file)."""
    return (
        refused
        if f"'{label}'" in str(refused)
        else Refused(refused.status, f"'{label}': {refused}")
    )


def _new_documents(
    registry: SourceRegistry, namespace: str, admitted: list[tuple[str, str, Path]]
) -> list[tuple[str, str, Path]]:
    """(label, document id, bytes on disk) of each admitted (label, name as sent, path).

    The id derives from the name as sent (NFC), never from its sanitised label, so two names
    that sanitise alike ("q3/report.pdf", "q3_report.pdf") are two documents. Replacing is only
    ever explicit: a name already registered in the namespace is refused (409, naming the
    document to pass as replace_document_id), and so is a name sent twice in one request."""
    out: list[tuple[str, str, Path]] = []
    for label, sent, path in admitted:
        document_id = document_id_for(namespace, unicodedata.normalize("NFC", sent))
        if any(document_id == known for _, known, _ in out):
            raise Refused(400, f"'{label}' is sent twice in this request")
        if registry.find(document_id) is not None:
            raise Refused(
                409,
                f"'{label}' is already document '{document_id}' in namespace '{namespace}': "
                f"send replace_document_id={document_id} to replace it, or upload it under "
                "another name",
            )
        out.append((label, document_id, path))
    return out


def _replaced(
    registry: SourceRegistry, who: Principal, document_id: str | None, namespace: str, files: int
) -> SourceRecord | None:
    """The document a replacement replaces (its id and name are kept), or None."""
    if document_id is None:
        return None
    if files != 1:
        raise Refused(400, "replace_document_id takes exactly one file")
    try:
        record = registry.get(document_id)
    except CorpusError:
        raise HTTPException(404, f"no document '{document_id}'") from None
    if record.namespace != namespace or not may_read(who, record.namespace):
        raise HTTPException(404, f"no document '{document_id}' in namespace '{namespace}'")
    return record


def _original_kept(registry: SourceRegistry, document_id: str) -> bool:
    try:
        return registry.store.exists(registry.get(document_id).object_key)
    except CorpusError:
        return False
