"""The upload API's job worker: a thread that takes queued jobs in order and runs each in a
process of its own (`tasks`), then publishes the job's namespace.

Blocking work never runs on the request loop: the worker is its own thread, and the Dagster run
is in a separate process (forked by the parse forkserver), like a `corpus ingest` batch's. A
job is leased and its lease renewed while it runs, so a killed process loses none.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.jobs import Job
from corpus_pipeline.intake.jobs import JobStore

logger = logging.getLogger(__name__)


class Passwords:
    """Passwords sent with uploads, held in this process's memory for their jobs only (never in
    a job row, a log or on disk): recorded with the job under one lock, so a worker that
    claims the job finds it, and taken once. A job run elsewhere (another process, after a
    restart, a retry) has none and fails asking for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_job: dict[str, str] = {}

    @contextmanager
    def recording(self) -> Iterator[dict[str, str]]:
        with self._lock:
            yield self._by_job

    def take(self, job_id: str) -> str | None:
        with self._lock:
            return self._by_job.pop(job_id, None)


def _about(name: str, message: str) -> str:
    """A job's error message naming its file."""
    return message if f"'{name}'" in message else f"'{name}': {message}"


def work(
    settings: CorpusSettings, jobs: JobStore, stop: threading.Event, passwords: Passwords
) -> None:
    """Jobs in order, each document in this worker's ingest process, then its namespace
    published (one of `ingest_workers` such workers).

    Blocking work never runs on the request loop: this is its own thread, and the Dagster run
    is in a separate process (forked by the parse forkserver), like a `corpus ingest` batch's."""
    from corpus_pipeline.orchestration.runs import dagster_instance, fail_orphaned_runs
    from corpus_pipeline.pipeline import processes
    from corpus_pipeline.upload_api import tasks

    context = processes.start_forkserver()
    first = True
    while not stop.is_set():  # a worker process that died (killed, out of memory) is replaced
        if not first:  # its run would hold the publish slot for ever
            fail_orphaned_runs(dagster_instance(settings))
        first = False
        with ProcessPoolExecutor(1, context, tasks.start, (settings, dict(os.environ))) as pool:
            while not stop.is_set():
                try:  # a process that died while idle is replaced before it is given a job
                    pool.submit(tasks.ready).result()
                except BrokenProcessPool:
                    break
                try:
                    jobs.expire()  # jobs of a dead worker, here or in another process
                    job = jobs.claim()
                except Exception:  # the store out of reach for a while: the worker waits
                    logger.exception("job store unavailable")
                    stop.wait(5)
                    continue
                if job is None:
                    stop.wait(0.5)
                    continue
                with jobs.keep_leased(job, settings.job_heartbeat_seconds):
                    alive = _process(job, jobs, pool.submit, passwords.take(job.job_id))
                if not alive:
                    break


def _process(
    job: Job, jobs: JobStore, submit: Callable[..., Any], password: str | None = None
) -> bool:
    """Run one job to `done` or `error` (its message names the file); False when the worker
    process died doing it. `password` goes to the parse only, as `corpus ingest --password`."""
    from corpus_pipeline.upload_api import tasks

    def fail(message: str) -> None:
        jobs.finish(
            job.job_id, error_message=_about(job.source_file_name, message), owner=job.lease_owner
        )

    try:
        if job.kind == "delete":
            submit(tasks.delete_document, job.document_id).result()
        else:
            result = submit(tasks.run_document, job.document_id, job.namespace, password).result()
            if result.status != "ok":
                fail(result.error or "processing failed")
                return True
        published = submit(tasks.publish, job.namespace).result()
    except BrokenProcessPool:  # killed (or out of memory): an interrupted attempt, run again
        logger.warning("job %s: ingest worker stopped (killed or out of memory)", job.job_id)
        jobs.release(job.job_id, job.lease_owner or "")
        return False
    except Exception as exc:  # the job fails in words, not a traceback (that goes to the log)
        logger.exception("job %s failed", job.job_id)
        fail(f"ingest worker failed ({type(exc).__name__})")
        return True
    if published.error:
        fail(f"publish failed: {published.error}")
    else:
        jobs.finish(job.job_id, revision=published.revision, owner=job.lease_owner)
    return True
