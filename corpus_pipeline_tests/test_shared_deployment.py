"""The shared deployment end to end: the upload API with its objects in S3 (a local
`moto_server`) and its Dagster runs in PostgreSQL (a throwaway database), against real servers."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
import s3fs

from corpus_pipeline.ingest import REPO_ROOT
from corpus_pipeline.settings import load_settings

from .http_service import served
from .services import (
    PG_HOST,
    PG_USER,
    moto_server,
    postgres_database,
    query,
    use_moto,
)

pytestmark = pytest.mark.slow


def test_an_upload_lands_in_s3_runs_in_postgres_and_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with moto_server() as endpoint, postgres_database() as database:
        use_moto(endpoint, tmp_path, monkeypatch)
        monkeypatch.setenv("CORPUS_DAGSTER_PG_USER", PG_USER)
        monkeypatch.setenv("CORPUS_DAGSTER_PG_PASSWORD", "")
        monkeypatch.setenv("CORPUS_DAGSTER_PG_HOST", PG_HOST)
        monkeypatch.setenv("CORPUS_DAGSTER_PG_DB", database)
        bucket = f"corpus-deploy-{uuid.uuid4().hex[:8]}"
        s3: Any = boto3.client("s3")
        s3.create_bucket(Bucket=bucket)
        settings = load_settings(home=tmp_path / "home", object_store_url=f"s3://{bucket}/corpus")
        settings.dagster_home.mkdir(parents=True)
        shutil.copyfile(
            REPO_ROOT / "deploy" / "dagster.postgres.yaml", settings.dagster_home / "dagster.yaml"
        )
        with served(settings) as client:
            response = client.post(
                "/v1/documents",
                files={"files": ("ducks.md", b"# Ducks\n\nTufted ducks dive for mussels.\n")},
            )
            assert response.status_code == 202
            [queued] = response.json()["files"]
            deadline = time.monotonic() + 180
            while (job := client.get(f"/v1/jobs/{queued['job_id']}").json())["status"] not in (
                "done",
                "error",
            ):
                assert time.monotonic() < deadline, job
                time.sleep(0.5)
        assert job["status"] == "done" and job["revision"] == 1, job
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert any(k.startswith("corpus/sources/sha256/") for k in keys), keys
        runs = query(database, "select count(*) from runs")
        assert runs[0][0] >= 2, "the document run and the publish run are in PostgreSQL"
        assert (settings.published_dir / "default").is_dir()
        s3fs.S3FileSystem.clear_instance_cache()
