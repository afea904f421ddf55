"""Leased jobs: a claim holds a job only while its worker renews the lease; a lease that runs out
(the worker's process died) puts the job back in the queue, counted, and fails it after the
last allowed attempt, naming the file. The same behaviour on both backends (SQLite under the
home; PostgreSQL, a throwaway database per test run), plus what only PostgreSQL must show: two
processes claiming from one shared store never take the same job."""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.intake.job_store import open_job_store
from corpus_pipeline.intake.jobs import JobStore, SQLiteJobStore
from corpus_pipeline.intake.jobs_postgres import PostgresJobStore
from corpus_pipeline.orchestration.runs import REPO_ROOT

from .services import PG_HOST, PG_PORT, PG_USER, database_exists, postgres_database, query

LEASE = 0.5  # seconds: short, so an expiry is waited for in a test


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    with postgres_database("corpus_jobs_test") as name:
        yield name
    assert not database_exists(name), f"database {name} was left behind"


def _pg(database: str) -> dict[str, Any]:
    return {"host": PG_HOST, "port": PG_PORT, "user": PG_USER, "dbname": database}


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> JobStore:
    """An empty store of each backend, leases of `LEASE` seconds, three attempts."""
    if request.param == "sqlite":
        return SQLiteJobStore(tmp_path / "jobs.db", lease_seconds=LEASE, max_attempts=3)
    database = request.getfixturevalue("pg_database")
    pg = PostgresJobStore(_pg(database), lease_seconds=LEASE, max_attempts=3)
    with pg._cursor() as cur:
        cur.execute("delete from corpus_jobs")
    return pg


def _expires(at: str | None) -> float:
    assert at is not None
    return (datetime.fromisoformat(at) - datetime.now(UTC)).total_seconds()


def test_a_claim_leases_the_job_and_counts_the_attempt(store: JobStore):
    created = store.create("doc-a", "default", "a.md")

    job = store.claim()

    assert job is not None and job.job_id == created.job_id
    assert (job.status, job.attempts) == ("processing", 1)
    assert job.lease_owner
    assert 0 < _expires(job.lease_expires_at) <= LEASE + 0.1


def test_an_expired_lease_returns_the_job_to_the_queue_and_counts_the_attempt(store: JobStore):
    created = store.create("doc-a", "default", "a.md")
    store.claim()
    time.sleep(LEASE + 0.3)  # nobody renews: its worker died

    [expired] = store.expire()

    assert (expired.job_id, expired.status, expired.attempts) == (created.job_id, "queued", 1)
    assert (expired.lease_owner, expired.lease_expires_at, expired.started_at) == (None, None, None)
    again = store.claim()
    assert again is not None and (again.job_id, again.attempts) == (created.job_id, 2)


def test_a_job_interrupted_on_every_attempt_fails_naming_the_file(store: JobStore):
    created = store.create("doc-a", "default", "q3 report.pdf")
    for _ in range(3):
        assert store.claim() is not None
        time.sleep(LEASE + 0.3)
        store.expire()

    job = store.get(created.job_id)

    assert job is not None and (job.status, job.attempts) == ("error", 3)
    assert job.error_message == "'q3 report.pdf': processing was interrupted 3 times"
    assert job.finished_at is not None
    assert store.claim() is None, "a failed job is not claimed again"


def test_a_lease_not_yet_run_out_is_left_alone(store: JobStore):
    store.create("doc-a", "default", "a.md")
    claimed = store.claim()
    assert claimed is not None

    assert store.expire() == []
    held = store.get(claimed.job_id)
    assert held is not None and (held.status, held.attempts) == ("processing", 1)


def test_a_heartbeat_keeps_a_long_job_leased(store: JobStore):
    store.create("doc-a", "default", "a.md")
    job = store.claim()
    assert job is not None

    with store.keep_leased(job, every=LEASE / 5):
        time.sleep(LEASE * 4)  # a document that takes four leases to process
        assert store.expire() == []
        held = store.get(job.job_id)
        assert held is not None and (held.status, held.lease_owner) == (
            "processing",
            job.lease_owner,
        )

    time.sleep(LEASE + 0.3)  # the heartbeat stopped: now the lease runs out
    assert [j.job_id for j in store.expire()] == [job.job_id]


def test_a_worker_whose_lease_was_taken_over_records_nothing(store: JobStore):
    store.create("doc-a", "default", "a.md")
    stalled = store.claim()
    assert stalled is not None and stalled.lease_owner is not None
    time.sleep(LEASE + 0.3)
    store.expire()
    current = store.claim()
    assert current is not None and current.lease_owner != stalled.lease_owner

    assert store.renew(stalled.job_id, stalled.lease_owner) is False
    assert store.finish(stalled.job_id, revision=7, owner=stalled.lease_owner) is False
    job = store.get(stalled.job_id)
    assert job is not None and (job.status, job.revision) == ("processing", None)
    assert job.lease_owner == current.lease_owner


def test_a_job_released_by_its_holder_is_queued_again_with_the_attempt_counted(store: JobStore):
    created = store.create("doc-a", "default", "a.md")
    job = store.claim()
    assert job is not None and job.lease_owner is not None

    released = store.release(job.job_id, job.lease_owner)  # its worker process was killed

    assert released is not None and (released.status, released.attempts) == ("queued", 1)
    assert store.release(created.job_id, job.lease_owner) is None, "no longer held"


def test_a_retry_gives_a_failed_job_its_attempts_again(store: JobStore):
    created = store.create("doc-a", "default", "a.md")
    for _ in range(3):
        job = store.claim()
        assert job is not None and job.lease_owner is not None
        store.release(job.job_id, job.lease_owner)

    retried = store.requeue(created.job_id)

    assert retried is not None and (retried.status, retried.attempts) == ("queued", 0)
    assert retried.error_message is None


def test_a_job_database_from_before_leases_is_migrated_in_place(tmp_path: Path):
    path = tmp_path / "jobs.db"
    with sqlite3.connect(path) as db:  # the table as it was, with a job a kill -9 left stuck
        db.execute(
            "create table jobs (job_id text primary key, kind text not null default 'document',"
            " document_id text not null, namespace text not null, source_file_name text not null,"
            " status text not null, error_message text, revision integer,"
            " created_at text not null, started_at text, finished_at text)"
        )
        db.execute(
            "insert into jobs values ('j1', 'document', 'doc-a', 'default', 'a.md', 'processing',"
            " null, null, '2026-01-01T00:00:00.000+00:00', '2026-01-01T00:00:01.000+00:00', null)"
        )
    db.close()

    store = SQLiteJobStore(path, lease_seconds=LEASE)

    with sqlite3.connect(path) as db:
        columns = {row[1] for row in db.execute("pragma table_info(jobs)")}
    db.close()
    assert {"attempts", "lease_owner", "lease_expires_at"} <= columns
    [recovered] = store.expire()
    assert (recovered.job_id, recovered.status, recovered.attempts) == ("j1", "queued", 0)


# PostgreSQL only: one store shared by processes on any machine.


def _claim_all(database: str) -> list[tuple[str, str]]:
    """Claim until nothing is left (never finishing): (job id, document id) of each claim."""
    store = PostgresJobStore(_pg(database), lease_seconds=60)
    claimed = []
    while (job := store.claim()) is not None:
        claimed.append((job.job_id, job.document_id))
    return claimed


def _claim_in_two_processes(database: str) -> tuple[list[tuple[str, str]], ...]:
    # An executor, not a Pool: a worker process that dies fails the test instead of hanging it.
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_claim_all, database) for _ in range(2)]
        return tuple(future.result(timeout=120) for future in futures)


def test_two_processes_claiming_from_postgres_never_take_the_same_job(pg_database: str):
    store = PostgresJobStore(_pg(pg_database))
    with store._cursor() as cur:
        cur.execute("delete from corpus_jobs")
    created = {store.create(f"doc-{n}", "default", f"{n}.md").job_id for n in range(300)}

    first, second = _claim_in_two_processes(pg_database)

    assert first and second, "both processes claimed"
    assert not {j for j, _ in first} & {j for j, _ in second}
    assert {j for j, _ in first} | {j for j, _ in second} == created


def test_two_processes_never_hold_two_jobs_of_one_document_in_postgres(pg_database: str):
    store = PostgresJobStore(_pg(pg_database))
    with store._cursor() as cur:
        cur.execute("delete from corpus_jobs")
    for n in range(400):  # 100 documents, four jobs each
        store.create(f"doc-{n % 100}", "default", f"{n % 100}.md")

    first, second = _claim_in_two_processes(pg_database)

    documents = [d for _, d in first + second]
    assert sorted(documents) == sorted(f"doc-{n}" for n in range(100)), "each document once"


def test_the_upload_api_keeps_its_jobs_in_postgres_when_the_deployment_does(
    pg_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CORPUS_DAGSTER_PG_USER", PG_USER)
    monkeypatch.setenv("CORPUS_DAGSTER_PG_PASSWORD", "")
    monkeypatch.setenv("CORPUS_DAGSTER_PG_HOST", PG_HOST)
    monkeypatch.setenv("CORPUS_DAGSTER_PG_DB", pg_database)
    settings = load_settings(home=tmp_path / "home")
    settings.dagster_home.mkdir(parents=True)
    shutil.copyfile(
        REPO_ROOT / "deploy" / "dagster.postgres.yaml", settings.dagster_home / "dagster.yaml"
    )

    store = open_job_store(settings)
    job = store.create("doc-pg", "default", "shared.md")

    assert isinstance(store, PostgresJobStore)
    rows = query(
        pg_database, "select source_file_name from corpus_jobs where job_id = %s", (job.job_id,)
    )
    assert rows == [("shared.md",)]
    assert not (settings.home / "service" / "jobs.db").exists()


def test_the_upload_api_keeps_its_jobs_in_sqlite_on_the_embedded_instance(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home")

    store = open_job_store(settings)
    store.create("doc-a", "default", "a.md")

    assert isinstance(store, SQLiteJobStore)
    assert store.path == settings.home / "service" / "jobs.db" and store.path.is_file()


def test_keys_and_namespaces_take_turns_instead_of_first_come_first_served(store: JobStore):
    bulk = [store.create(f"mail-{i}", "archive", f"{i}.pdf", principal="bulk") for i in range(5)]
    single = store.create("memo", "team", "memo.md", principal="analyst")

    order = []
    while (job := store.claim()) is not None:
        order.append(job.job_id)
        store.finish(job.job_id)

    # The bulk upload's first job started before the memo was queued behind four more of it:
    # the memo is taken next, not last.
    assert order == [bulk[0].job_id, single.job_id, *(j.job_id for j in bulk[1:])]


def test_two_busy_groups_alternate(store: JobStore):
    a = [store.create(f"a-{i}", "default", f"a{i}.md", principal="alice") for i in range(3)]
    b = [store.create(f"b-{i}", "default", f"b{i}.md", principal="bob") for i in range(3)]
    order = []
    while (job := store.claim()) is not None:
        order.append(job.job_id)
        store.finish(job.job_id)
    assert order == [a[0].job_id, b[0].job_id, a[1].job_id, b[1].job_id, a[2].job_id, b[2].job_id]


def test_a_keys_queued_jobs_are_counted(store: JobStore):
    for i in range(3):
        store.create(f"d-{i}", "default", f"{i}.md", principal="alice")
    store.create("other", "default", "o.md", principal="bob")
    first = store.claim()
    assert first is not None
    assert (store.queued("alice"), store.queued("bob"), store.queued("carol")) == (2, 1, 0)
