"""The shared deployment end to end: the upload API with its objects in S3 (a local
`moto_server`) and its Dagster runs in PostgreSQL (a throwaway database), against real servers."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import httpx
import pytest
import s3fs

from corpus_pipeline.cli.doctor import revision_mirror
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.orchestration.runs import REPO_ROOT

from .http_service import served, served_by_cli
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
        settings = load_settings(
            home=tmp_path / "home", object_store_url=f"s3://{bucket}/corpus", open_access=True
        )
        settings.dagster_home.mkdir(parents=True)
        shutil.copyfile(
            REPO_ROOT / "deploy" / "dagster.postgres.yaml", settings.dagster_home / "dagster.yaml"
        )
        with served(settings) as client:
            first = _upload_and_wait(
                client, "ducks.md", b"# Ducks\n\nTufted ducks dive for mussels.\n"
            )
            assert first["status"] == "done" and first["revision"] == 1, first
            keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
            assert any(k.startswith("corpus/sources/sha256/") for k in keys), keys
            assert "corpus/published/default/CURRENT.json" in keys, keys
            runs = query(database, "select count(*) from runs")
            assert runs[0][0] >= 2, "the document run and the publish run are in PostgreSQL"

            # A query replica on its own disk, fed only by the bucket.
            replica_env = {
                "CORPUS_OBJECT_STORE_URL": f"s3://{bucket}/corpus",
                "CORPUS_MIRROR_POLL_SECONDS": "0.3",
                "CORPUS_OPEN_ACCESS": "true",  # the local user, on loopback: no key file here
            }
            with served_by_cli(tmp_path / "replica", workers=1, env=replica_env) as (url, _):
                answer = _search(url, "tufted ducks mussels")
                assert answer["revision"] == 1
                assert answer["results"][0]["source_file_name"] == "ducks.md"

                second = _upload_and_wait(
                    client, "geese.md", b"# Geese\n\nGreylag geese graze on wet meadows.\n"
                )
                assert second["status"] == "done" and second["revision"] == 2, second
                deadline = time.monotonic() + 60
                while (answer := _search(url, "greylag geese meadows"))["revision"] < 2:
                    assert time.monotonic() < deadline, "the replica never loaded revision 2"
                    time.sleep(0.3)
                assert answer["results"][0]["source_file_name"] == "geese.md"
            mirror = revision_mirror(settings)
            assert mirror.ok and mirror.detail == "default r2 in the store", mirror
        assert (tmp_path / "replica" / "published" / "default" / "CURRENT.json").is_file()
        s3fs.S3FileSystem.clear_instance_cache()


def _upload_and_wait(client: httpx.Client, name: str, data: bytes) -> dict[str, Any]:
    response = client.post("/v1/documents", files={"files": (name, data)})
    assert response.status_code == 202, response.text
    [queued] = response.json()["files"]
    deadline = time.monotonic() + 180
    while (job := client.get(f"/v1/jobs/{queued['job_id']}").json())["status"] not in (
        "done",
        "error",
    ):
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    return dict(job)


def _search(url: str, text: str) -> dict[str, Any]:
    response = httpx.post(f"{url}/v1/search", json={"query": text, "top_k": 1}, timeout=30)
    assert response.status_code == 200, response.text
    return dict(response.json())
