"""Which job store a deployment uses: PostgreSQL where its Dagster storage is, else SQLite."""

from __future__ import annotations

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.intake.jobs import JobStore, SQLiteJobStore
from corpus_pipeline.intake.jobs_postgres import PostgresJobStore, postgres_connection


def open_job_store(settings: CorpusSettings) -> JobStore:
    """The upload API's job store: in the Dagster instance's PostgreSQL database when the
    deployment is configured for it, else SQLite under the home."""
    lease, attempts = settings.job_lease_seconds, settings.job_max_attempts
    connection = postgres_connection(settings.dagster_home / "dagster.yaml")
    if connection is not None:
        return PostgresJobStore(connection, lease, attempts)
    return SQLiteJobStore(settings.home / "service" / "jobs.db", lease, attempts)
