"""Ingestion jobs of the upload API: one row per delivered file, in SQLite under the home.

A job row is written, as `queued`, after its bytes are stored and before anything can pick it
up; the worker claims jobs one at a time (`claim` flips the oldest `queued` row to
`processing` in one statement, so two workers never take the same job) and finishes each as
`done` (with the published revision) or `error` (with a message in words: no URL, host or
traceback). Timestamps are UTC ISO 8601.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from corpus_pipeline.contracts.jobs import Job, JobKind

_SCHEMA = """
create table if not exists jobs (
    job_id text primary key,
    kind text not null default 'document',
    document_id text not null,
    namespace text not null,
    source_file_name text not null,
    status text not null,
    error_message text,
    revision integer,
    created_at text not null,
    started_at text,
    finished_at text
)
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class JobStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("pragma journal_mode=wal")
            db.execute(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            yield db
        finally:
            db.close()

    def create(
        self, document_id: str, namespace: str, source_file_name: str, kind: JobKind = "document"
    ) -> Job:
        job = Job(
            job_id=uuid.uuid4().hex,
            kind=kind,
            document_id=document_id,
            namespace=namespace,
            source_file_name=source_file_name,
            status="queued",
            created_at=_now(),
        )
        with self._connect() as db:
            db.execute(
                "insert into jobs (job_id, kind, document_id, namespace, source_file_name, status,"
                " created_at) values (?, ?, ?, ?, ?, ?, ?)",
                (
                    job.job_id,
                    kind,
                    document_id,
                    namespace,
                    source_file_name,
                    "queued",
                    job.created_at,
                ),
            )
        return job

    def get(self, job_id: str) -> Job | None:
        with self._connect() as db:
            row = db.execute("select * from jobs where job_id = ?", (job_id,)).fetchone()
        return Job(**dict(row)) if row else None

    def claim(self) -> Job | None:
        """The oldest queued job, now `processing`; None when nothing is queued. A job whose
        document another worker is processing waits (one document's partition is never run
        twice side by side). Atomic: workers in any thread or process never claim one job twice."""
        with self._connect() as db:
            row = db.execute(
                "update jobs set status = 'processing', started_at = ? where job_id = ("
                " select job_id from jobs where status = 'queued' and document_id not in"
                " (select document_id from jobs where status = 'processing')"
                " order by created_at, rowid limit 1) returning *",  # rowid: insertion order
                (_now(),),
            ).fetchone()
        return Job(**dict(row)) if row else None

    def finish(
        self, job_id: str, error_message: str | None = None, revision: int | None = None
    ) -> None:
        status = "error" if error_message else "done"
        with self._connect() as db:
            db.execute(
                "update jobs set status = ?, error_message = ?, revision = ?, finished_at = ?"
                " where job_id = ?",
                (status, error_message, revision, _now(), job_id),
            )

    def requeue(self, job_id: str) -> Job | None:
        """A failed job queued again (None when it is not in `error`)."""
        with self._connect() as db:
            row = db.execute(
                "update jobs set status = 'queued', error_message = null, revision = null,"
                " started_at = null, finished_at = null where job_id = ? and status = 'error'"
                " returning *",
                (job_id,),
            ).fetchone()
        return Job(**dict(row)) if row else None

    def counts(self, namespace: str) -> dict[str, int]:
        with self._connect() as db:
            rows = db.execute(
                "select status, count(*) from jobs where namespace = ? group by status",
                (namespace,),
            ).fetchall()
        return {str(status): int(n) for status, n in rows}
