"""`ingest` against the shared-deployment Dagster instance (`deploy/dagster.postgres.yaml`):
runs and dynamic partitions land in PostgreSQL, in a throwaway database per test run."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator

import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.defs.partitions import DOCUMENTS_PARTITION
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import REPO_ROOT, IngestResult

from .services import PG_HOST, PG_USER, database_exists, postgres_database, query
from .support import DOCS

pytestmark = pytest.mark.slow

DEPLOY_YAML = REPO_ROOT / "deploy" / "dagster.postgres.yaml"


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    with postgres_database() as name:
        yield name
    assert not database_exists(name), f"database {name} was left behind"


@pytest.fixture(scope="module")
def pg_settings(
    pg_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CorpusSettings]:
    """Settings whose Dagster instance is the deployment's PostgreSQL config."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("CORPUS_OBJECT_STORE_URL", raising=False)
        mp.setenv("CORPUS_DAGSTER_PG_USER", PG_USER)
        mp.setenv("CORPUS_DAGSTER_PG_PASSWORD", "")  # trust auth on the test server
        mp.setenv("CORPUS_DAGSTER_PG_HOST", PG_HOST)
        mp.setenv("CORPUS_DAGSTER_PG_DB", pg_database)
        settings = load_settings(home=tmp_path_factory.mktemp("pg") / "home")
        settings.dagster_home.mkdir(parents=True)
        shutil.copyfile(DEPLOY_YAML, settings.dagster_home / "dagster.yaml")
        yield settings


@pytest.fixture(scope="module")
def ingested(pg_settings: CorpusSettings) -> IngestResult:
    """One ingest of a small file, shared by the read-only tests below."""
    [result] = ingest([DOCS / "wiki.md"], pg_settings)
    return result


def test_ingest_succeeds_against_the_postgres_instance(ingested, pg_settings):
    assert (ingested.status, ingested.error) == ("ok", None)
    assert ingested.document_id
    assert (pg_settings.artifacts_dir / ingested.document_id / "manifest.json").is_file()
    # Nothing of the run went to a local SQLite instance.
    assert not list(pg_settings.dagster_home.glob("**/*.db"))


def test_the_run_is_recorded_in_postgres(ingested, pg_database):
    rows = query(pg_database, "SELECT status, partition FROM runs")

    assert rows == [("SUCCESS", ingested.document_id)]


def test_the_dynamic_partition_is_recorded_in_postgres(ingested, pg_database):
    rows = query(pg_database, "SELECT partitions_def_name, partition FROM dynamic_partitions")

    assert sorted(rows) == [(DOCUMENTS_PARTITION, ingested.document_id), ("namespaces", "default")]


def test_materialisations_are_recorded_in_the_postgres_event_log(ingested, pg_database):
    rows = query(
        pg_database,
        "SELECT DISTINCT partition FROM event_logs WHERE dagster_event_type = %s",
        ("ASSET_MATERIALIZATION",),
    )

    assert rows == [(ingested.document_id,)]


def test_no_connection_to_the_database_outlives_ingest(ingested, pg_database):
    # A server backend leaves pg_stat_activity a moment after its client disconnects (seen on
    # a loaded machine), so a lingering count gets a few seconds to reach zero.
    deadline = time.monotonic() + 5
    while True:
        rows = query(
            "postgres",
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
            (pg_database,),
        )
        if rows == [(0,)] or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    assert rows == [(0,)]
