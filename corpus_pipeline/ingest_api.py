"""The upload API (`corpus ingest-api`): documents in over HTTP, processed asynchronously.

`POST /v1/documents` reads every file of the request (each up to `CORPUS_MAX_UPLOAD_MB`, the
request up to `CORPUS_MAX_REQUEST_MB`), admits each at the door (`door.admit`; an archive is
read and checked whole, `archives.read_archive`) and only when all pass stores them, records
one queued job per document and answers 202 — it never waits for parsing. A refused request
writes nothing: 400/413/415 with a message that names the file and the reason. One worker
thread takes queued jobs in order and runs each document through the Dagster assets in a
separate process (`ingest`'s worker), then publishes its namespace; `GET /v1/jobs/{id}` reports
`queued | processing | done | error`, timings, the published revision, or the error in words.
Writing needs a key with write access to the namespace (`write_namespaces` in the key file the
query service reads); a key that cannot read the namespace is told it does not exist.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from datetime import date
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Header, HTTPException, Request, UploadFile
from fastapi.responses import JSONResponse

from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.contracts.jobs import IngestionStatus, Job, QueuedFile, UploadResponse
from corpus_pipeline.contracts.keys import KeyRing, Principal, api_key_from
from corpus_pipeline.door import Refused, deliveries, safe_name
from corpus_pipeline.errors import CorpusError
from corpus_pipeline.jobs import JobStore
from corpus_pipeline.settings import CorpusSettings
from corpus_pipeline.storage import ObjectStore, SourceRegistry

MIB = 1024 * 1024
logger = logging.getLogger(__name__)
_CHUNK = 1024 * 1024


def _principal(
    request: Request,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> Principal:
    """The key's principal (the key file is read per request: keys change without a restart)."""
    key = api_key_from(authorization, x_api_key)
    found = KeyRing.load(request.app.state.keys_file).principal_for(key)
    if found is None:
        raise HTTPException(401, "missing or unknown API key")
    return found


PrincipalDep = Annotated[Principal, Depends(_principal)]


def create_ingest_app(settings: CorpusSettings, *, worker: bool = True) -> FastAPI:
    """The app; `worker=False` leaves jobs queued (for tests of the door alone)."""
    jobs = JobStore(settings.home / "service" / "jobs.db")
    keys_file = settings.home / "service" / "api_keys.json"
    registry = SourceRegistry(ObjectStore(settings.object_store))
    stop = threading.Event()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # `ingest_workers` workers, each a thread with its own ingest process: documents are
        # processed side by side (publishing stays serialised by the namespace's lock). The
        # Dagster instance is created here first: worker processes creating a fresh SQLite
        # instance at the same time would leave it with two migration heads.
        if worker:
            from corpus_pipeline.ingest import dagster_instance

            dagster_instance(settings)
        threads = [
            threading.Thread(
                target=_work, args=(settings, jobs, stop), name=f"corpus-ingest-{n}", daemon=True
            )
            for n in range(settings.ingest_workers if worker else 0)
        ]
        for thread in threads:
            thread.start()
        yield
        stop.set()
        for thread in threads:
            thread.join(timeout=60)

    app = FastAPI(title="corpus ingest API", lifespan=lifespan)
    app.state.keys_file = keys_file

    def writable(who: Principal, namespace: str) -> None:
        if not who.may_read(namespace):
            raise HTTPException(404, f"namespace '{namespace}' does not exist")
        if not who.may_write(namespace):
            raise HTTPException(403, f"this key may not write to namespace '{namespace}'")

    @app.get("/readyz")
    async def readyz() -> dict[str, str]:
        """Ready once the job store opens (a query on it)."""
        jobs.counts("default")
        return {"status": "ready"}

    @app.exception_handler(Refused)
    async def _refused(_: Request, exc: Refused) -> JSONResponse:
        return JSONResponse(status_code=exc.status, content={"detail": str(exc), "field": "files"})

    @app.post("/v1/documents", status_code=202, response_model=UploadResponse)
    async def upload(
        request: Request,
        who: PrincipalDep,
        files: Annotated[list[UploadFile], File(description="One or more documents or archives")],
        namespace: Annotated[str, Form(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")] = "default",
        organizational_unit: Annotated[str | None, Form()] = None,
        document_date: Annotated[date | None, Form(description="ISO date, e.g. 2023-07-01")] = None,
        replace_document_id: Annotated[str | None, Form()] = None,
    ) -> UploadResponse:
        writable(who, namespace)
        replaced = _replaced(registry, who, replace_document_id, namespace, len(files))
        length = int(request.headers.get("content-length") or 0)
        if length > settings.max_request_mb * MIB:
            raise Refused(
                413, f"request of {length:,} bytes is above {settings.max_request_mb} MiB"
            )
        admitted: list[tuple[str, bytes]] = []
        skipped: list[QueuedFile] = []
        for upload_file in files:
            name = safe_name(upload_file.filename or "file")
            data = await _read_capped(upload_file, name, settings.max_upload_mb * MIB)
            try:
                found = deliveries(name, data, max_bytes=settings.max_upload_mb * MIB)
            except Refused:
                raise
            except CorpusError as exc:  # an archive refused whole
                raise Refused(400, f"'{name}': {exc}") from None
            for item in found:
                if item.refused is None:
                    admitted.append((item.label, item.data))
                elif item.refused.status == 415:  # an archive member that is no document
                    skipped.append(
                        QueuedFile(
                            source_file_name=item.label, status="skipped", detail=str(item.refused)
                        )
                    )
                else:
                    raise item.refused
        if replaced is not None:
            if len(admitted) != 1:
                raise Refused(400, "replace_document_id takes exactly one document")
            admitted = [(replaced, admitted[0][1])]  # its name is its identity: same document
        queued = []
        for name, data in admitted:  # all passed the door: now store, then record the job
            record = registry.register(
                data, name, namespace, SourceKind.UPLOAD, organizational_unit, document_date
            )
            job = jobs.create(record.document_id, namespace, name)
            queued.append(
                QueuedFile(
                    source_file_name=name,
                    job_id=job.job_id,
                    document_id=record.document_id,
                    status="queued",
                )
            )
        return UploadResponse(namespace=namespace, files=queued + skipped)

    @app.get("/v1/jobs/{job_id}", response_model=Job)
    async def job_status(job_id: str, who: PrincipalDep) -> Job:
        job = jobs.get(job_id)
        if job is None or not who.may_read(job.namespace):
            raise HTTPException(404, f"no job '{job_id}'")
        return job

    @app.post("/v1/jobs/{job_id}/retry", status_code=202, response_model=Job)
    async def retry(job_id: str, who: PrincipalDep) -> Job:
        job = jobs.get(job_id)
        if job is None or not who.may_read(job.namespace):
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
    async def delete(document_id: str, who: PrincipalDep) -> Job:
        """Queue the removal: the record, the artifacts, then a revision without it."""
        try:
            record = registry.get(document_id)
        except CorpusError:
            raise HTTPException(404, f"no document '{document_id}'") from None
        if not who.may_read(record.namespace):
            raise HTTPException(404, f"no document '{document_id}'")
        writable(who, record.namespace)
        return jobs.create(document_id, record.namespace, record.source_file_name, "delete")

    @app.get("/v1/namespaces/{namespace}/ingestion", response_model=IngestionStatus)
    async def ingestion(namespace: str, who: PrincipalDep) -> IngestionStatus:
        if not who.may_read(namespace):
            raise HTTPException(404, f"namespace '{namespace}' does not exist")
        counts = jobs.counts(namespace)
        busy = counts.get("queued", 0) + counts.get("processing", 0)
        return IngestionStatus(
            namespace=namespace, state="indexing" if busy else "complete", counts=counts
        )

    return app


async def _read_capped(upload: UploadFile, name: str, limit: int) -> bytes:
    """The upload's bytes, read in chunks and refused (413) as soon as they pass `limit`."""
    parts: list[bytes] = []
    size = 0
    while chunk := await upload.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"'{name}' is above the limit of {limit // MIB} MiB")
        parts.append(chunk)
    return b"".join(parts)


def _work(settings: CorpusSettings, jobs: JobStore, stop: threading.Event) -> None:
    """Jobs in order, each document in this worker's ingest process, then its namespace
    published (one of `ingest_workers` such workers).

    Blocking work never runs on the request loop: this is its own thread, and the Dagster run
    is in a separate process (forked by the parse forkserver), like a `corpus ingest` batch's."""
    from corpus_pipeline import ingest, processes

    context = processes.start_forkserver()
    while not stop.is_set():  # a worker process that died (killed, out of memory) is replaced
        with ProcessPoolExecutor(
            1, context, ingest._start_worker, (settings, dict(os.environ))
        ) as pool:
            while not stop.is_set():
                try:  # a process that died while idle is replaced before it is given a job
                    pool.submit(ingest._ready).result()
                except BrokenProcessPool:
                    break
                job = jobs.claim()
                if job is None:
                    stop.wait(0.5)
                    continue
                if not _process(job, jobs, pool.submit):
                    break


def _replaced(
    registry: SourceRegistry, who: Principal, document_id: str | None, namespace: str, files: int
) -> str | None:
    """The name under which a replacement is stored (the replaced document's), or None."""
    if document_id is None:
        return None
    if files != 1:
        raise Refused(400, "replace_document_id takes exactly one file")
    try:
        record = registry.get(document_id)
    except CorpusError:
        raise HTTPException(404, f"no document '{document_id}'") from None
    if record.namespace != namespace or not who.may_read(record.namespace):
        raise HTTPException(404, f"no document '{document_id}' in namespace '{namespace}'")
    return record.source_file_name


def _original_kept(registry: SourceRegistry, document_id: str) -> bool:
    try:
        return registry.store.exists(registry.get(document_id).object_key)
    except CorpusError:
        return False


def _process(job: Job, jobs: JobStore, submit: Callable[..., Any]) -> bool:
    """Run one job to `done` or `error`; False when the worker process died doing it."""
    from corpus_pipeline import ingest

    try:
        if job.kind == "delete":
            submit(ingest.delete_registered, job.document_id).result()
        else:
            [(_, result)] = submit(ingest.run_registered, job.document_id, job.namespace).result()
            if result.status != "ok":
                jobs.finish(job.job_id, error_message=result.error or "processing failed")
                return True
        published = submit(ingest.publish_registered, job.namespace).result()
    except BrokenProcessPool:
        jobs.finish(job.job_id, error_message="ingest worker stopped (killed or out of memory)")
        return False
    except Exception as exc:  # the job fails in words, not a traceback (that goes to the log)
        logger.exception("job %s failed", job.job_id)
        jobs.finish(job.job_id, error_message=f"ingest worker failed ({type(exc).__name__})")
        return True
    if published.error:
        jobs.finish(job.job_id, error_message=f"publish failed: {published.error}")
    else:
        jobs.finish(job.job_id, revision=published.revision)
    return True
