"""Operations as frames: stage timings and run outcomes from the Dagster instance under the home
(its public API: asset materialisation records and run records), the agentic run records, the
upload API's jobs (SQLite, or the deployment's PostgreSQL), the access statistics the query
service persists, and its answer cache, which lives in a service process's memory only and is
therefore asked over HTTP (`GET /v1/cache`)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import polars as pl

from corpus_pipeline.analysis.frames import UTC_TIME, Home, from_arrow, settings_of, typed_frame
from corpus_pipeline.analysis.snapshot import namespaces
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.api import CacheStats
from corpus_pipeline.contracts.jobs import Job
from corpus_pipeline.defs.tags import DOCUMENTS_TAG, NAMESPACE_TAG, STAGE_TAG, TRIGGER_TAG
from corpus_pipeline.intake.jobs_postgres import postgres_connection
from query_service.snapshot.records import read_runs

if TYPE_CHECKING:
    import dagster as dg

# The timed stages in the Dagster event log: asset → (its metadata entry, the stage's name), as
# `corpus_pipeline/defs` records them (`document_seconds` is a document's whole step).
TIMED_ASSETS: dict[str, tuple[str, str]] = {
    "document_profile": ("seconds", "profile"),
    "parsed_document": ("seconds", "parse"),
    "document_chunks": ("seconds", "chunks"),
    "document_nav": ("seconds", "nav"),
    "document_manifest": ("document_seconds", "document"),
    "document_embeddings": ("seconds", "embeddings"),
    "corpus_revision": ("seconds", "publish"),
}
ACCESS_STATS_FILE = "access_stats.sqlite"  # what `query_service.snapshot.stats` persists


def _instance(home: Home) -> dg.DagsterInstance | None:
    """The home's Dagster instance (a context manager), or None where no run ever happened."""
    dagster_home = settings_of(home).dagster_home
    if not (dagster_home / "dagster.yaml").is_file():
        return None
    import dagster as dg  # seconds to import: only where there is an instance to read

    return dg.DagsterInstance.from_config(str(dagster_home))


def _materializations(instance: dg.DagsterInstance, asset: str) -> Iterator[dg.EventLogRecord]:
    """Every materialisation record of an asset, oldest first, page by page."""
    import dagster as dg

    records_filter = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset))
    cursor = None
    while True:
        page = instance.fetch_materializations(
            records_filter, limit=1000, cursor=cursor, ascending=True
        )
        yield from page.records
        if not page.has_more:
            return
        cursor = page.cursor


def _timed(record: Any, asset: str) -> dict[str, Any] | None:
    entry, stage = TIMED_ASSETS[asset]
    value = record.asset_materialization.metadata.get(entry)
    if value is None:
        return None
    return {
        "stage": stage,
        "asset": asset,
        "partition": record.partition_key,
        "seconds": float(value.value),
        "run_id": record.run_id,
        "timestamp": datetime.fromtimestamp(record.timestamp, UTC),
    }


def stage_timings(home: Home) -> pl.DataFrame:
    """Seconds per stage and partition from Dagster's event log, one row per materialisation:
    `partition` is the document id (the namespace for `publish`); `document` is a document's
    whole step, fetch to commit. A document processed twice has a row per run."""
    rows: list[dict[str, Any]] = []
    instance = _instance(home)
    if instance is not None:
        with instance:
            for asset in TIMED_ASSETS:
                rows += filter(None, (_timed(r, asset) for r in _materializations(instance, asset)))
    schema = {
        "stage": pl.String,
        "asset": pl.String,
        "partition": pl.String,
        "seconds": pl.Float64,
        "run_id": pl.String,
        "timestamp": UTC_TIME,
    }
    return typed_frame(rows, schema).sort("timestamp")


def _moment(epoch: float | None) -> datetime | None:
    return datetime.fromtimestamp(epoch, UTC) if epoch is not None else None


def _run_row(record: Any) -> dict[str, Any]:
    run, tags = record.dagster_run, record.dagster_run.tags
    started, ended = record.start_time, record.end_time
    documents = tags.get(DOCUMENTS_TAG) or ("1" if tags.get(STAGE_TAG) == "document" else None)
    return {
        "run_id": run.run_id,
        "job_name": run.job_name,
        "status": run.status.value,
        "stage": tags.get(STAGE_TAG),
        "trigger": tags.get(TRIGGER_TAG),
        "namespace": tags.get(NAMESPACE_TAG),
        "documents": int(documents) if documents else None,
        "created_at": record.create_timestamp.astimezone(UTC),
        "started_at": _moment(started),
        "ended_at": _moment(ended),
        "seconds": ended - started if started is not None and ended is not None else None,
    }


def pipeline_runs(home: Home) -> pl.DataFrame:
    """One row per Dagster run: its status (`SUCCESS`, `FAILURE`, …), the project's tags (stage,
    trigger, namespace, documents in the run) and its start, end and seconds."""
    rows = []
    instance = _instance(home)
    if instance is not None:
        with instance:
            rows = [_run_row(r) for r in instance.get_run_records()]
    schema = {
        "run_id": pl.String,
        "job_name": pl.String,
        "status": pl.String,
        "stage": pl.String,
        "trigger": pl.String,
        "namespace": pl.String,
        "documents": pl.Int64,
        "created_at": UTC_TIME,
        "started_at": UTC_TIME,
        "ended_at": UTC_TIME,
        "seconds": pl.Float64,
    }
    return typed_frame(rows, schema).sort("created_at")


# -- operations: records of the services --------------------------------------------------------


def _runs_of(runs_dir: Path, namespace: str) -> pl.DataFrame:
    records = from_arrow(read_runs(runs_dir, namespace)).with_columns(namespace=pl.lit(namespace))
    steps = (
        records.filter(pl.col("action") == "retrieve")
        .group_by("run_id")
        .agg(steps=pl.len(), failed_steps=pl.col("error").is_not_null().sum().cast(pl.Int64))
    )
    return (
        records.filter(pl.col("record_type") == "run")
        .select(
            "namespace",
            "run_id",
            "created_at",
            query=pl.col("inputs").str.json_path_match("$.query"),
            budget=pl.col("inputs").str.json_path_match("$.token_budget").cast(pl.Int64),
            tokens="tokens",
            latency_ms="latency_ms",
            results=pl.col("outputs").str.json_path_match("$.results").cast(pl.Int64),
            stop_reason=pl.col("outputs").str.json_path_match("$.stop_reason"),
            planner="model",
        )
        .join(steps, on="run_id", how="left")
    )


def search_runs(home: Home, namespace: str | None = None) -> pl.DataFrame:
    """One row per recorded agentic search: the question, its token budget and the tokens it
    used, latency, results, why it stopped (`completed`, `budget_exhausted`), the planner, and
    its retrieval steps (how many, how many failed)."""
    runs_dir = settings_of(home).home / "runs"
    folders = (
        [namespace]
        if namespace
        else sorted(p.name for p in runs_dir.iterdir() if p.is_dir())
        if runs_dir.is_dir()
        else []
    )
    schema: dict[str, Any] = {
        "namespace": pl.String,
        "run_id": pl.String,
        "created_at": UTC_TIME,
        "query": pl.String,
        "budget": pl.Int64,
        "tokens": pl.Int64,
        "latency_ms": pl.Float64,
        "results": pl.Int64,
        "stop_reason": pl.String,
        "planner": pl.String,
        "steps": pl.Int64,
        "failed_steps": pl.Int64,
    }
    frames = [_runs_of(runs_dir, name) for name in folders]
    empty = pl.DataFrame(schema=schema)
    return pl.concat([empty, *frames], how="vertical_relaxed").sort("created_at")


def _job_rows(settings: CorpusSettings) -> list[dict[str, Any]]:
    """The job table's rows, from the deployment's PostgreSQL or the home's SQLite file."""
    connection = postgres_connection(settings.dagster_home / "dagster.yaml")
    if connection is not None:
        import psycopg2  # type: ignore[import-untyped]
        from psycopg2.extras import RealDictCursor  # type: ignore[import-untyped]

        with (
            closing(psycopg2.connect(connect_timeout=10, **connection)) as conn,
            conn.cursor(cursor_factory=RealDictCursor) as cur,
        ):
            cur.execute("select * from corpus_jobs order by created_at")
            return [dict(row) for row in cur.fetchall()]
    path = settings.home / "service" / "jobs.db"
    if not path.is_file():
        return []
    with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("select * from jobs order by created_at")]


def _job(row: dict[str, Any]) -> dict[str, Any]:
    values = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}
    job = Job.model_validate({k: v for k, v in values.items() if k in Job.model_fields})
    started, finished = job.started_at, job.finished_at
    seconds = (
        (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
        if started and finished
        else None
    )
    return job.model_dump(exclude={"lease_owner"}) | {"seconds": seconds}


def jobs(home: Home) -> pl.DataFrame:
    """One row per upload-API job: its file, document and namespace, `status` (`queued`,
    `processing`, `done`, `error`), the error in words, the revision it published, attempts,
    and the seconds from its last start to its end."""
    schema: dict[str, Any] = {
        name: pl.Int64 if name in ("revision", "attempts") else pl.String
        for name in Job.model_fields
        if name != "lease_owner"
    }
    schema["seconds"] = pl.Float64
    frame = typed_frame([_job(r) for r in _job_rows(settings_of(home))], schema)
    moments = ("created_at", "started_at", "finished_at", "lease_expires_at")
    return frame.with_columns(pl.col(m).str.to_datetime(time_zone="UTC") for m in moments)


def access_stats(home: Home, namespace: str | None = None) -> pl.DataFrame:
    """How often the query service returned each chunk (searches and reads), per namespace,
    and when last: the counts it flushes to disk about every second (a running service's
    last second may not be there yet). `document_id` is the document it was first returned
    from."""
    published = settings_of(home).published_dir
    rows = []
    for name in [namespace] if namespace else namespaces(home):
        path = published / name / ACCESS_STATS_FILE
        if not path.is_file():
            continue
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            query = "select chunk_id, document_id, hits, last_hit from chunk_hits"
            rows += [(name, *row) for row in db.execute(query)]
    schema = {
        "namespace": pl.String,
        "chunk_id": pl.String,
        "document_id": pl.String,
        "hits": pl.Int64,
        "last_hit": pl.String,
    }
    frame = typed_frame([dict(zip(schema, r, strict=True)) for r in rows], schema)
    return frame.with_columns(pl.col("last_hit").str.to_datetime(time_zone="UTC")).sort(
        "hits", descending=True
    )


class ServiceError(RuntimeError):
    """The query service could not be asked (not running, refused the key, or answered an
    error): the message says which, and never carries the key."""


def service_key(home: Home) -> str | None:
    """The key to ask the service with: `CORPUS_API_KEY`, else the local key `make run`
    created (`<home>/service/local_key.txt`), else None."""
    if key := os.environ.get("CORPUS_API_KEY", "").strip():
        return key
    path = settings_of(home).home / "service" / "local_key.txt"
    return path.read_text(encoding="utf-8").strip() or None if path.is_file() else None


def cache_stats(
    base_url: str, api_key: str | None, client: httpx.Client | None = None
) -> pl.DataFrame:
    """The answer cache of the service process that answers (each process keeps its own, in
    memory only): entries, bytes, hits, misses and `hit_rate` per namespace the key reads."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = f"{base_url.rstrip('/')}/v1/cache"
    try:
        if client is not None:
            response = client.get(url, headers=headers)
        else:
            with httpx.Client(timeout=10) as http:
                response = http.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ServiceError(
            f"no query service answers at {base_url} ({type(exc).__name__})"
        ) from exc
    if response.status_code != 200:
        raise ServiceError(f"the query service at {base_url} answered {response.status_code}")
    stats = CacheStats.model_validate_json(response.content)
    schema = {
        "namespace": pl.String,
        "entries": pl.Int64,
        "bytes": pl.Int64,
        "hits": pl.Int64,
        "misses": pl.Int64,
    }
    frame = typed_frame([n.model_dump() for n in stats.namespaces], schema)
    lookups = pl.col("hits") + pl.col("misses")
    return frame.with_columns(
        hit_rate=pl.when(lookups > 0).then(pl.col("hits") / lookups).otherwise(None)
    )
