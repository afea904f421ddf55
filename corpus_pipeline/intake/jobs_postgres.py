"""The job store on PostgreSQL (`jobs.JobStore`), for deployments whose Dagster storage is
PostgreSQL: upload-API processes on several machines share one queue and never run the same job
(`SELECT … FOR UPDATE SKIP LOCKED`, an advisory lock per document)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from corpus_pipeline.contracts.jobs import Job
from corpus_pipeline.intake.jobs import _ADDED_COLUMNS, _COLUMNS, JobStore, _iso, _now

# Advisory lock keys (class, object) of the PostgreSQL store: its schema changes, and a claim's
# hold on one document (the object is the document id's hash).
_PG_LOCK_CLASS = 0x636F7270  # "corp"
_PG_SCHEMA_LOCK = 0


class PostgresJobStore(JobStore):
    """Jobs in the table `corpus_jobs` of a PostgreSQL database (the deployment's Dagster
    database): upload-API processes on any machine share it. Leases run on the database's
    clock, so the machines' clocks need not agree."""

    _table = "corpus_jobs"
    _mark = "%s"

    def __init__(
        self, connection: Mapping[str, Any], lease_seconds: float = 60.0, max_attempts: int = 3
    ) -> None:
        super().__init__(lease_seconds, max_attempts)
        self._connection = dict(connection)
        with self._cursor() as cur:  # two processes creating the table at once: one does it
            cur.execute("select pg_advisory_xact_lock(%s, %s)", (_PG_LOCK_CLASS, _PG_SCHEMA_LOCK))
            cur.execute(
                "create table if not exists corpus_jobs (seq bigserial not null,"
                f" {_COLUMNS.format(timestamp='timestamptz')})"
            )
            for column, declaration in _ADDED_COLUMNS.items():
                cur.execute(
                    f"alter table corpus_jobs add column if not exists {column}"
                    f" {declaration.format(timestamp='timestamptz')}"
                )
            cur.execute(
                "create index if not exists corpus_jobs_queue"
                " on corpus_jobs (status, created_at, seq)"
            )
            cur.execute(
                "create index if not exists corpus_jobs_group"
                " on corpus_jobs (namespace, principal, served)"
            )

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor in one transaction (committed when the block ends, rolled back on an
        error) on a connection of its own, closed after."""
        import psycopg2  # type: ignore[import-untyped]
        from psycopg2.extras import RealDictCursor  # type: ignore[import-untyped]

        with (
            closing(psycopg2.connect(connect_timeout=10, **self._connection)) as conn,
            conn,
            conn.cursor(cursor_factory=RealDictCursor) as cur,
        ):
            yield cur

    @staticmethod
    def _job(row: Mapping[str, Any] | None) -> Job | None:
        if row is None:
            return None
        values = {k: v for k, v in row.items() if k not in ("seq", "principal", "served")}
        if isinstance(values["lease_expires_at"], datetime):
            values["lease_expires_at"] = _iso(values["lease_expires_at"])
        return Job(**values)

    def get(self, job_id: str) -> Job | None:
        with self._cursor() as cur:
            cur.execute("select * from corpus_jobs where job_id = %s", (job_id,))
            return self._job(cur.fetchone())

    def claim(self, owner: str | None = None) -> Job | None:
        """Concurrent claimers each lock a different queued row (`FOR UPDATE SKIP LOCKED`).
        The one-document rule needs more than row locks: two claimers could each lock a job
        of one document. So a claim also takes its document's advisory lock and, holding it,
        checks again (a new statement sees every claim committed before) that no job of the
        document is processing; a document held by another claimer is passed over."""
        owner = owner or uuid.uuid4().hex
        passed: list[str] = []
        while True:
            with self._cursor() as cur:
                cur.execute(
                    "select job_id, document_id from corpus_jobs q where status = 'queued'"
                    " and document_id not in"
                    " (select document_id from corpus_jobs where status = 'processing')"
                    " and not (document_id = any(%s))"
                    " order by (select max(s.served) from corpus_jobs s"
                    " where s.namespace = q.namespace"
                    " and s.principal is not distinct from q.principal) nulls first,"
                    " created_at, seq limit 1 for update skip locked",
                    (passed,),
                )
                candidate = cur.fetchone()
                if candidate is None:
                    return None
                document_id = candidate["document_id"]
                cur.execute(
                    "select pg_try_advisory_xact_lock(%s, hashtext(%s)) as held",
                    (_PG_LOCK_CLASS, document_id),
                )
                held = cur.fetchone()["held"]
                if held:
                    cur.execute(
                        "select 1 from corpus_jobs where document_id = %s"
                        " and status = 'processing' limit 1",
                        (document_id,),
                    )
                    if cur.fetchone() is None:
                        cur.execute(
                            "update corpus_jobs set status = 'processing', started_at = %s,"
                            " attempts = attempts + 1, lease_owner = %s,"
                            " served = (select coalesce(max(served), 0) + 1 from corpus_jobs),"
                            " lease_expires_at = clock_timestamp() + make_interval(secs => %s)"
                            " where job_id = %s returning *",
                            (_now(), owner, self.lease_seconds, candidate["job_id"]),
                        )
                        return self._job(cur.fetchone())
            passed.append(document_id)

    def renew(self, job_id: str, owner: str) -> bool:
        with self._cursor() as cur:
            cur.execute(
                "update corpus_jobs set"
                " lease_expires_at = clock_timestamp() + make_interval(secs => %s)"
                " where job_id = %s and lease_owner = %s and status = 'processing'",
                (self.lease_seconds, job_id, owner),
            )
            return bool(cur.rowcount == 1)

    def release(self, job_id: str, owner: str) -> Job | None:
        with self._cursor() as cur:
            cur.execute(
                "select * from corpus_jobs where job_id = %s and lease_owner = %s"
                " and status = 'processing' for update",
                (job_id, owner),
            )
            row = cur.fetchone()
            return self._interrupt(cur, row) if row else None

    def expire(self) -> list[Job]:
        """Rows another process is recovering right now are skipped (it counts them)."""
        with self._cursor() as cur:
            cur.execute(
                "select * from corpus_jobs where status = 'processing'"
                " and (lease_expires_at is null or lease_expires_at < clock_timestamp())"
                " for update skip locked"
            )
            return [self._interrupt(cur, row) for row in cur.fetchall()]

    def _interrupt(self, cur: Any, row: Mapping[str, Any]) -> Job:
        status, message = self._after_interruption(row["attempts"], row["source_file_name"])
        cur.execute(
            "update corpus_jobs set status = %s, error_message = %s,"
            " started_at = case when %s = 'queued' then null else started_at end,"
            " finished_at = case when %s = 'error' then %s else null end,"
            " lease_owner = null, lease_expires_at = null where job_id = %s returning *",
            (status, message, status, status, _now(), row["job_id"]),
        )
        job = self._job(cur.fetchone())
        assert job is not None
        return job

    def _changed(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._cursor() as cur:
            cur.execute(sql, params)
            return int(cur.rowcount)

    def _returned(self, sql: str, params: tuple[Any, ...]) -> Job | None:
        with self._cursor() as cur:
            cur.execute(sql, params)
            return self._job(cur.fetchone())

    def _count(self, sql: str, params: tuple[Any, ...]) -> int:
        with self._cursor() as cur:
            cur.execute(sql, params)
            return int(next(iter(cur.fetchone().values())))

    def counts(self, namespace: str) -> dict[str, int]:
        with self._cursor() as cur:
            cur.execute(
                "select status, count(*) as n from corpus_jobs where namespace = %s"
                " group by status",
                (namespace,),
            )
            return {str(row["status"]): int(row["n"]) for row in cur.fetchall()}


def postgres_connection(dagster_yaml: Path) -> dict[str, Any] | None:
    """psycopg2 connection parameters of a Dagster instance's PostgreSQL storage (its
    `storage: postgres:` block, `env:` values read from the environment), or None when the
    instance's storage is not PostgreSQL."""
    import yaml  # type: ignore[import-untyped]

    if not dagster_yaml.is_file():
        return None
    config = yaml.safe_load(dagster_yaml.read_text(encoding="utf-8"))
    storage = config.get("storage") if isinstance(config, dict) else None
    postgres = storage.get("postgres") if isinstance(storage, dict) else None
    if not isinstance(postgres, dict):
        return None
    if "postgres_url" in postgres:  # libpq takes no SQLAlchemy driver suffix ("+psycopg2")
        return {
            "dsn": re.sub(r"^(postgres(?:ql)?)\+\w+://", r"\1://", _value(postgres["postgres_url"]))
        }
    database = postgres.get("postgres_db") or {}
    names = {"username": "user", "password": "password", "hostname": "host", "db_name": "dbname"}
    connection = {key: _value(database[name]) for name, key in names.items() if name in database}
    connection["port"] = _value(database.get("port", 5432))
    connection.update({k: _value(v) for k, v in (database.get("params") or {}).items()})
    return connection


def _value(value: object) -> str:
    """A Dagster config value: `{env: NAME}` is read from the environment."""
    if isinstance(value, dict) and "env" in value:
        return os.environ.get(str(value["env"]), "")
    return str(value)
