"""The upload API's job worker: a thread that takes queued jobs in turn and runs each in a
process of its own (`tasks`), then publishes the job's namespace: once for the jobs of one
namespace that follow each other in the queue (one upload's documents make one revision).

Blocking work never runs on the request loop: the worker is its own thread, and the Dagster run
is in a separate process (forked by the parse forkserver), like a `corpus ingest` batch's. A
job is leased and its lease renewed while it runs, so a killed process loses none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
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

    Publishes coalesce: while more jobs of the same namespace are queued, a processed job
    waits (still `processing`, its lease renewed) and one publish then serves them all, so
    one upload's documents make one revision rather than one each (at most COALESCE_JOBS jobs,
    or COALESCE_SECONDS, wait for one publish).

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
        with (
            ProcessPoolExecutor(1, context, tasks.start, (settings, dict(os.environ))) as pool,
            _Waiting(jobs, settings.job_heartbeat_seconds) as waiting,
        ):
            _serve(settings, jobs, stop, passwords, pool.submit, waiting)
            waiting.release_all()  # the process died: jobs waiting for a publish run again


def _serve(
    settings: CorpusSettings,
    jobs: JobStore,
    stop: threading.Event,
    passwords: Passwords,
    submit: Callable[..., Any],
    waiting: _Waiting,
) -> None:
    """Claim, run and publish until stopped, or until the worker process dies."""
    from corpus_pipeline.upload_api import tasks

    while not stop.is_set():
        try:  # a process that died while idle is replaced before it is given a job
            submit(tasks.ready).result()
        except BrokenProcessPool:
            return
        try:
            jobs.expire()  # jobs of a dead worker, here or in another process
            job = jobs.claim()
        except Exception:  # the store out of reach for a while: the worker waits
            logger.exception("job store unavailable")
            stop.wait(5)
            continue
        if job is None:
            if waiting.jobs and not _publish(waiting, jobs, submit):
                return
            stop.wait(0.5)
            continue
        if waiting.namespace not in (None, job.namespace) and not _publish(
            waiting, jobs, submit
        ):  # another namespace's turn: the waiting one is published first
            jobs.release(job.job_id, job.lease_owner or "")
            return
        with jobs.keep_leased(job, settings.job_heartbeat_seconds):
            done = _process(job, jobs, submit, passwords.take(job.job_id))
        if done is None:
            return
        if done:
            waiting.add(job)
        publish_now = waiting.jobs and not waiting.may_wait(_queued(jobs, job.namespace))
        if publish_now and not _publish(waiting, jobs, submit):
            return


COALESCE_JOBS = 50
COALESCE_SECONDS = 30.0


class _Waiting:
    """Processed jobs of one namespace waiting for its publish, their leases kept alive."""

    def __init__(self, jobs: JobStore, every: float) -> None:
        self._store = jobs
        self._every = every
        self._leases = contextlib.ExitStack()
        self.jobs: list[Job] = []
        self.since = 0.0

    def __enter__(self) -> _Waiting:
        return self

    def __exit__(self, *exc: object) -> None:
        self._leases.close()

    @property
    def namespace(self) -> str | None:
        return self.jobs[0].namespace if self.jobs else None

    def add(self, job: Job) -> None:
        if not self.jobs:
            self.since = time.monotonic()
        self._leases.enter_context(self._store.keep_leased(job, self._every))
        self.jobs.append(job)

    def may_wait(self, queued: int) -> bool:
        """More of the namespace is queued, and the wait is still short."""
        return (
            queued > 0
            and len(self.jobs) < COALESCE_JOBS
            and time.monotonic() - self.since < COALESCE_SECONDS
        )

    def taken(self) -> list[Job]:
        """The waiting jobs, their leases no longer renewed (they are finished next)."""
        out, self.jobs = self.jobs, []
        self._leases.close()
        self._leases = contextlib.ExitStack()
        return out

    def release_all(self) -> None:
        for job in self.taken():
            self._store.release(job.job_id, job.lease_owner or "")


def _queued(jobs: JobStore, namespace: str) -> int:
    try:
        return jobs.counts(namespace).get("queued", 0)
    except Exception:  # the store out of reach: publish now rather than wait on it
        logger.exception("job store unavailable")
        return 0


def _publish(waiting: _Waiting, jobs: JobStore, submit: Callable[..., Any]) -> bool:
    """One publish of the waiting jobs' namespace, each job finished with its revision (or the
    publish's error in words). False when the worker process died doing it (released: the
    jobs run again)."""
    from corpus_pipeline.upload_api import tasks

    namespace = waiting.namespace
    assert namespace is not None
    error: str | None = None
    try:
        published = submit(tasks.publish, namespace).result()
        if published.error:
            error = f"publish failed: {published.error}"
    except BrokenProcessPool:
        logger.warning("publish of %s: ingest worker stopped (killed or out of memory)", namespace)
        waiting.release_all()
        return False
    except Exception as exc:  # the jobs fail in words, not a traceback (that goes to the log)
        logger.exception("publish of %s failed", namespace)
        error = f"ingest worker failed ({type(exc).__name__})"
    for job in waiting.taken():
        if error is not None:
            message = _about(job.source_file_name, error)
            jobs.finish(job.job_id, error_message=message, owner=job.lease_owner)
        else:
            jobs.finish(job.job_id, revision=published.revision, owner=job.lease_owner)
    return True


def _process(
    job: Job, jobs: JobStore, submit: Callable[..., Any], password: str | None = None
) -> bool | None:
    """Run one job's document (or its removal): True when it then waits for its namespace's
    publish, False when it failed (finished as `error`, its message naming the file), None
    when the worker process died doing it (released: it runs again). `password` goes to the
    parse only, as `corpus ingest --password`."""
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
                return False
    except BrokenProcessPool:  # killed (or out of memory): an interrupted attempt, run again
        logger.warning("job %s: ingest worker stopped (killed or out of memory)", job.job_id)
        jobs.release(job.job_id, job.lease_owner or "")
        return None
    except Exception as exc:  # the job fails in words, not a traceback (that goes to the log)
        logger.exception("job %s failed", job.job_id)
        fail(f"ingest worker failed ({type(exc).__name__})")
        return False
    return True
