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

The routes are in `routes` (one module per resource), their dependencies in `deps`, what they
share in `state`, their refusals in `errors` and the examples the OpenAPI document shows in
`examples`; admitting an upload is `admission` (with `door_pool`, `gate` and `scratch`);
`create_ingest_app` assembles them with the key handling, the worker threads (`worker`) and
the readiness check (`readiness`).
"""

from __future__ import annotations

import gc
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from corpus_pipeline.access.guard import RequestGuard
from corpus_pipeline.access.keys import KeyResolver, install
from corpus_pipeline.access.openapi import SWAGGER_UI, amend_openapi
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.intake.jobs import JobStore
from corpus_pipeline.upload_api.errors import install_error_handlers
from corpus_pipeline.upload_api.routes import ROUTERS
from corpus_pipeline.upload_api.state import IngestState
from corpus_pipeline.upload_api.worker import work

logger = logging.getLogger(__name__)

DESCRIPTION = (
    "Upload documents into a namespace; each is processed asynchronously as a job, then "
    "published.\n\nEvery `/v1` route needs an API key with write access to the namespace "
    "(`corpus keys create NAME --write NAMESPACE`), sent as `Authorization: Bearer <key>` or "
    "`X-API-Key: <key>`: use **Authorize** to send it from this page. Refusals answer "
    '`{"detail", "field"}`: what is wrong, and the field it concerns where there is one '
    "(`files` at the door, `authorization` for the key)."
)


def create_ingest_app(settings: CorpusSettings, *, worker: bool = True) -> FastAPI:
    """The app; `worker=False` leaves jobs queued (for tests of the door alone)."""
    state = IngestState.open(settings)
    app = FastAPI(
        title="corpus ingest API",
        description=DESCRIPTION,
        lifespan=_lifespan(state, worker),
        swagger_ui_parameters=SWAGGER_UI,
    )
    app.state.ingest = state
    # The query service's resolver (`access`): same key file, reloaded when it changes.
    keys = KeyResolver(settings.keys_file, open_access=settings.open_access, home=settings.home)
    install(app, keys)
    # The key before any route reads a body (the upload route streams its files with limits of
    # its own, so the body is left to it).
    app.add_middleware(RequestGuard, resolver=keys, max_body=None)
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    amend_openapi(app, _without_unreachable_422)
    return app


def _without_unreachable_422(schema: dict[str, Any]) -> None:
    """FastAPI documents its 422 (a list of validation errors) for every route with parameters;
    a route whose only parameters are plain strings (the ids in its path) can never answer it,
    so it is left out of the OpenAPI document, and so are its schemas once nothing uses them."""
    for operation in (op for ops in schema["paths"].values() for op in ops.values()):
        if _plain_strings(operation) and _validation_list(operation):
            del operation["responses"]["422"]
    if "HTTPValidationError" not in json.dumps(schema["paths"]):
        for name in ("HTTPValidationError", "ValidationError"):
            schema["components"]["schemas"].pop(name, None)


def _plain_strings(operation: dict[str, Any]) -> bool:
    return "requestBody" not in operation and all(
        set(p["schema"]) <= {"type", "title"} and p["schema"]["type"] == "string"
        for p in operation.get("parameters", [])
    )


def _validation_list(operation: dict[str, Any]) -> bool:
    answer = operation["responses"].get("422", {})
    schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
    return bool(schema.get("$ref", "").endswith("/HTTPValidationError"))


def _lifespan(
    state: IngestState, worker: bool
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """`ingest_workers` workers, each a thread with its own ingest process: documents are
    processed side by side (publishing stays serialised by the namespace's lock). What a
    crashed predecessor left is cleared first; the worker threads, the pools and the door
    processes stop after the last request."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        server_record = _take_over(state.settings, state.jobs) if worker else None
        threads = _start_workers(state, state.settings.ingest_workers if worker else 0)
        state.readiness.start()
        # What start-up loaded (Dagster, pydantic models: millions of objects) is never garbage:
        # out of the collector's sight, a full collection no longer stalls the loop for 100+ ms.
        gc.freeze()
        yield
        state.stop.set()
        state.upload_pool.shutdown(wait=True, cancel_futures=True)
        state.door.shutdown()
        for thread in threads:
            thread.join(timeout=60)
        if server_record is not None:
            server_record.unlink(missing_ok=True)

    return lifespan


def _take_over(settings: CorpusSettings, jobs: JobStore) -> Path | None:
    """Clear what a crashed predecessor left and start this process's forkserver; the record
    of it (removed at shutdown), or None.

    The Dagster instance is created here first: worker processes creating a fresh SQLite
    instance at the same time would leave it with two migration heads."""
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
    return server_record


def _start_workers(state: IngestState, count: int) -> list[threading.Thread]:
    """`count` worker threads, started, each taking queued jobs (`worker.work`)."""
    threads = [
        threading.Thread(
            target=work,
            args=(state.settings, state.jobs, state.stop, state.passwords),
            name=f"corpus-ingest-{n}",
            daemon=True,
        )
        for n in range(count)
    ]
    for thread in threads:
        thread.start()
    return threads
