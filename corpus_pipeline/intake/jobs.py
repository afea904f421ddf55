"""Ingestion jobs of the upload API: one row per delivered file, leased to the worker running it.

A job row is written, as `queued`, after its bytes are stored and before anything can pick it
up. A worker claims the oldest queued job (never one whose document another job is processing)
and holds a lease on it: `lease_owner` (a token of this claim), `lease_expires_at` and
`attempts` (claims so far). It renews the lease while it works (`keep_leased`, a heartbeat
thread) and finishes the job as `done` (with the published revision) or `error` (with a message
in words: no URL, host or traceback). Nobody renews the lease of a worker whose process died
(`kill -9`, the OOM killer, a crash): `expire` queues its job again, or after `max_attempts`
interrupted attempts fails it naming the file, so a crash loses no job and leaves no namespace
"indexing" for ever. Timestamps are UTC ISO 8601.

The queue is fair: a claim takes the oldest queued job of the (key, namespace) served least
recently, so one upload's thousand documents and another key's one file take turns instead of
the one file waiting behind the thousand. A job records the key that queued it (`principal`, not
part of the `Job` contract) for that, and for the limit on the jobs a key may have queued.

One interface, two backends: SQLite under the home (one machine; the claim is one atomic
statement) and PostgreSQL when the deployment's Dagster storage is PostgreSQL
(`deploy/dagster.postgres.yaml`; `jobs_postgres`), so upload-API processes on several machines share one queue
and never run the same job (`SELECT … FOR UPDATE SKIP LOCKED`).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from corpus_pipeline.contracts.jobs import Job, JobKind

logger = logging.getLogger(__name__)

_COLUMNS = """
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
    finished_at text,
    attempts integer not null default 0,
    lease_owner text,
    lease_expires_at {timestamp}
"""
# Added in place to a job table from before leases (its `processing` rows have no lease, so
# `expire` queues them again) and before keys were recorded (its jobs have no key: one group).
_ADDED_COLUMNS = {
    "attempts": "integer not null default 0",
    "lease_owner": "text",
    "lease_expires_at": "{timestamp}",
    "principal": "text",
    "served": "integer",  # the claim's place in the order of all claims (fair turns)
}


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def _now() -> str:
    return _iso(datetime.now(UTC))


def interrupted_message(source_file_name: str, attempts: int) -> str:
    """The error of a job whose every attempt was interrupted."""
    return f"'{source_file_name}': processing was interrupted {attempts} times"


class JobStore(ABC):
    """The job table; `lease_seconds` is how long a claim holds without a renewal,
    `max_attempts` how many interrupted attempts a job gets before it fails.

    A backend names its table and its SQL parameter mark, and runs one statement
    (`_changed`, `_returned`); the statements both dialects share are written once here."""

    _table: str
    _mark: str

    def __init__(self, lease_seconds: float = 60.0, max_attempts: int = 3) -> None:
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts

    def create(
        self,
        document_id: str,
        namespace: str,
        source_file_name: str,
        kind: JobKind = "document",
        principal: str | None = None,
    ) -> Job:
        """A new `queued` job, recorded with the key that queued it (`principal`)."""
        m = self._mark
        job = self._returned(
            f"insert into {self._table} (job_id, kind, document_id, namespace,"
            f" source_file_name, status, created_at, principal)"
            f" values ({m}, {m}, {m}, {m}, {m}, 'queued', {m}, {m}) returning *",
            (uuid.uuid4().hex, kind, document_id, namespace, source_file_name, _now(), principal),
        )
        assert job is not None
        return job

    @abstractmethod
    def get(self, job_id: str) -> Job | None: ...

    def queued(self, principal: str) -> int:
        """Jobs the key has queued and not yet started."""
        m = self._mark
        return self._count(
            f"select count(*) from {self._table} where status = 'queued' and principal = {m}",
            (principal,),
        )

    @abstractmethod
    def _count(self, sql: str, params: tuple[Any, ...]) -> int:
        """Run one counting query; its number."""

    @abstractmethod
    def claim(self, owner: str | None = None) -> Job | None:
        """The oldest queued job of the (key, namespace) served least recently, now
        `processing` and leased to `owner` (a fresh token when None; renew and finish with the
        returned job's `lease_owner`), its attempt counted; None when nothing can be claimed. A job whose document another job is processing
        waits (one document's partition is never run twice side by side). Claimers in any
        thread or process never claim one job twice."""

    @abstractmethod
    def renew(self, job_id: str, owner: str) -> bool:
        """Extend the lease by `lease_seconds`; False when `owner` no longer holds it."""

    def finish(
        self,
        job_id: str,
        error_message: str | None = None,
        revision: int | None = None,
        owner: str | None = None,
    ) -> bool:
        """`done` (or `error` with `error_message`); with `owner`, only while that claim still
        holds the job (a worker whose lease ran out and was taken over records nothing)."""
        m = self._mark
        held = "" if owner is None else f" and lease_owner = {m} and status = 'processing'"
        changed = self._changed(
            f"update {self._table} set status = {m}, error_message = {m}, revision = {m},"
            f" finished_at = {m}, lease_owner = null, lease_expires_at = null"
            f" where job_id = {m}{held}",
            (
                "error" if error_message else "done",
                error_message,
                revision,
                _now(),
                job_id,
                *([] if owner is None else [owner]),
            ),
        )
        return changed == 1

    @abstractmethod
    def release(self, job_id: str, owner: str) -> Job | None:
        """The holder gives an interrupted job back (its worker process died): queued again,
        or `error` after `max_attempts`. None when `owner` no longer holds it."""

    @abstractmethod
    def expire(self) -> list[Job]:
        """Every `processing` job whose lease ran out, queued again or failed after
        `max_attempts` (as `release`); the jobs as they are now."""

    def requeue(self, job_id: str) -> Job | None:
        """A failed job queued again with its attempts reset (None when it is not in `error`)."""
        return self._returned(
            f"update {self._table} set status = 'queued', error_message = null, revision = null,"
            " started_at = null, finished_at = null, attempts = 0, lease_owner = null,"
            f" lease_expires_at = null where job_id = {self._mark} and status = 'error'"
            " returning *",
            (job_id,),
        )

    @abstractmethod
    def counts(self, namespace: str) -> dict[str, int]: ...

    @abstractmethod
    def _changed(self, sql: str, params: tuple[Any, ...]) -> int:
        """Run one statement (committed on its own); how many rows it changed."""

    @abstractmethod
    def _returned(self, sql: str, params: tuple[Any, ...]) -> Job | None:
        """Run one statement (committed on its own); the job of the row it returns, if any."""

    def _after_interruption(self, attempts: int, source_file_name: str) -> tuple[str, str | None]:
        if attempts >= self.max_attempts:
            return "error", interrupted_message(source_file_name, attempts)
        return "queued", None

    @contextmanager
    def keep_leased(self, job: Job, every: float) -> Iterator[None]:
        """Renew `job`'s lease every `every` seconds while the block runs (a heartbeat thread):
        a long document keeps its lease, and a dead worker stops renewing it."""
        assert job.lease_owner is not None, "only a claimed job has a lease"
        owner = job.lease_owner
        done = threading.Event()

        def beat() -> None:
            while not done.wait(every):
                try:
                    if not self.renew(job.job_id, owner):
                        logger.warning("job %s: lease lost (taken over after expiry)", job.job_id)
                        return
                except Exception:  # a busy or unreachable store: try again at the next beat
                    logger.exception("job %s: lease not renewed", job.job_id)

        thread = threading.Thread(target=beat, name=f"corpus-lease-{job.job_id[:8]}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()


class SQLiteJobStore(JobStore):
    """Jobs in one SQLite file (WAL): every write is one transaction under SQLite's write
    lock, so claims in any thread or process of this machine are atomic."""

    _table = "jobs"
    _mark = "?"

    def __init__(self, path: Path, lease_seconds: float = 60.0, max_attempts: int = 3) -> None:
        super().__init__(lease_seconds, max_attempts)
        self.path = path
        self._local = threading.local()
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("pragma journal_mode=wal")
        with self._transaction() as db:  # two processes migrating at once: one does it
            db.execute(f"create table if not exists jobs ({_COLUMNS.format(timestamp='text')})")
            present = {row["name"] for row in db.execute("pragma table_info(jobs)")}
            for column, declaration in _ADDED_COLUMNS.items():
                if column not in present:
                    db.execute(
                        f"alter table jobs add column {column} {declaration.format(timestamp='text')}"
                    )
            db.execute(
                "create index if not exists jobs_group on jobs (namespace, principal, served)"
            )
            db.execute("create index if not exists jobs_status on jobs (status, principal)")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, opened once: closing the last connection to a WAL file
        checkpoints it (with an fsync), which made every `/readyz` and job lookup pay 10-100 ms
        while uploads were written (`benchmarks/upload_door.py`)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.row_factory = sqlite3.Row
            self._local.db = db
        yield db

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as db:
            db.execute("begin immediate")
            try:
                yield db
            except BaseException:
                db.execute("rollback")
                raise
            db.execute("commit")

    def _lease_end(self) -> str:
        return _iso(datetime.now(UTC) + timedelta(seconds=self.lease_seconds))

    def get(self, job_id: str) -> Job | None:
        with self._connect() as db:
            row = db.execute("select * from jobs where job_id = ?", (job_id,)).fetchone()
        return Job(**dict(row)) if row else None

    def claim(self, owner: str | None = None) -> Job | None:
        with self._connect() as db:
            row = db.execute(
                "update jobs set status = 'processing', started_at = ?, attempts = attempts + 1,"
                " lease_owner = ?, lease_expires_at = ?,"
                " served = (select coalesce(max(served), 0) + 1 from jobs) where job_id = ("
                " select job_id from jobs q where status = 'queued' and document_id not in"
                " (select document_id from jobs where status = 'processing')"
                # The group served least recently first (never served: null, first), then
                # the oldest of it; rowid: insertion order.
                " order by (select max(s.served) from jobs s where s.namespace = q.namespace"
                " and s.principal is q.principal), created_at, rowid limit 1) returning *",
                (_now(), owner or uuid.uuid4().hex, self._lease_end()),
            ).fetchone()
        return Job(**dict(row)) if row else None

    def renew(self, job_id: str, owner: str) -> bool:
        with self._connect() as db:
            cursor = db.execute(
                "update jobs set lease_expires_at = ? where job_id = ? and lease_owner = ?"
                " and status = 'processing'",
                (self._lease_end(), job_id, owner),
            )
        return cursor.rowcount == 1

    def release(self, job_id: str, owner: str) -> Job | None:
        with self._transaction() as db:
            row = db.execute(
                "select * from jobs where job_id = ? and lease_owner = ? and status = 'processing'",
                (job_id, owner),
            ).fetchone()
            return self._interrupt(db, row) if row else None

    def expire(self) -> list[Job]:
        due = (
            "select * from jobs where status = 'processing'"
            " and (lease_expires_at is null or lease_expires_at < ?)"
        )
        with self._connect() as db:  # a read first: the write lock only when something is due
            if db.execute(due + " limit 1", (_now(),)).fetchone() is None:
                return []
        with self._transaction() as db:
            return [self._interrupt(db, row) for row in db.execute(due, (_now(),)).fetchall()]

    def _interrupt(self, db: sqlite3.Connection, row: sqlite3.Row) -> Job:
        status, message = self._after_interruption(row["attempts"], row["source_file_name"])
        updated = db.execute(
            "update jobs set status = ?, error_message = ?,"
            " started_at = case when ? = 'queued' then null else started_at end,"
            " finished_at = case when ? = 'error' then ? else null end,"
            " lease_owner = null, lease_expires_at = null where job_id = ? returning *",
            (status, message, status, status, _now(), row["job_id"]),
        ).fetchone()
        return Job(**dict(updated))

    def _changed(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._connect() as db:
            cursor = db.execute(sql, params)
        return cursor.rowcount

    def _returned(self, sql: str, params: tuple[Any, ...]) -> Job | None:
        with self._connect() as db:
            row = db.execute(sql, params).fetchone()
        return Job(**dict(row)) if row else None

    def _count(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._connect() as db:
            return int(db.execute(sql, params).fetchone()[0])

    def counts(self, namespace: str) -> dict[str, int]:
        with self._connect() as db:
            rows = db.execute(
                "select status, count(*) from jobs where namespace = ? group by status",
                (namespace,),
            ).fetchall()
        return {str(status): int(n) for status, n in rows}
