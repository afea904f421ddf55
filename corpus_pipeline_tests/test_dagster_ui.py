"""Reprocessing started in the Dagster UI reaches search: a real `dagster-webserver` and
`dagster-daemon` over the project's workspace, backfills launched through the GraphQL API the
UI itself calls, and the namespace's revision published by the daemon's sensor — with no run
tag saying which namespace (the registry knows it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.defs.partitions import add_partitions
from corpus_pipeline.orchestration.runs import dagster_instance
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import NamespaceNotFound, open_revision

from .services import free_port
from .support import DOCUMENT_ASSETS

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NAMESPACE = "birds"
LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on PartitionKeysNotFoundError { message }
    ... on PartitionSetNotFoundError { message }
  }
}
"""
FILES = {
    "diving.md": "# Diving ducks\n\nTufted ducks dive for freshwater mussels.\n",
    "dabbling.md": "# Dabbling ducks\n\nMallards upend to graze on pondweed.\n",
}


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """The process and its children (the daemon's code server, run processes)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two documents stored and registered in namespace "birds" (as a sensor or the upload API
    leaves them) but never processed, and the UI's servers over that home."""
    home = tmp_path_factory.mktemp("ui-home")
    settings = load_settings(home=home)
    instance = dagster_instance(settings)
    registry = SourceRegistry(ObjectStore(settings.object_store))
    ids = {
        name: registry.register(text.encode(), name, NAMESPACE, SourceKind.UPLOAD).document_id
        for name, text in FILES.items()
    }
    add_partitions(instance, list(ids.values()))
    env = {
        **os.environ,
        "CORPUS_HOME": str(home),
        "DAGSTER_HOME": str(settings.dagster_home),
        "CORPUS_NAMESPACE": "default",  # the documents' own namespace must win over this
    }
    port = free_port()
    web = _start(
        [
            str(BIN / "dagster-webserver"),
            "-w",
            "workspace.yaml",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        env,
        home / "webserver.log",
    )
    daemon = _start(
        [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], env, home / "daemon.log"
    )
    url = f"http://127.0.0.1:{port}/graphql"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.post(url, json={"query": "{ version }"}, timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert web.poll() is None, (home / "webserver.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "dagster-webserver did not answer in 120 s"
            time.sleep(0.5)
        yield {"url": url, "settings": settings, "ids": ids, "home": home}
    finally:
        _stop(daemon)
        _stop(web)


def _launch(url: str, params: dict[str, Any]) -> str:
    response = httpx.post(url, json={"query": LAUNCH, "variables": {"params": params}}, timeout=60)
    result = response.json()["data"]["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", result
    return str(result["backfillId"])


def _searchable(ui: dict[str, Any], query: str, name: str, timeout: float = 240.0) -> list[str]:
    """The file names classic search returns for `query` once the namespace's published
    revision holds `name` (waiting for the daemon: backfill, run queue, publish sensor)."""
    settings = ui["settings"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            revision = open_revision(settings.published_dir, NAMESPACE)
        except NamespaceNotFound:
            revision = None
        if revision is not None:
            results = classic_search(revision, SearchRequest(query=query, namespace=NAMESPACE))
            names = [r.source_file_name for r in results.results]
            if name in names:
                return names
        time.sleep(2)
    log = (ui["home"] / "daemon.log").read_text()[-3000:]
    raise AssertionError(f"'{query}' not searchable within {timeout} s; daemon log:\n{log}")


def test_an_asset_graph_backfill_from_the_ui_is_published_to_the_documents_namespace(ui):
    with pytest.raises(NamespaceNotFound):
        open_revision(ui["settings"].published_dir, NAMESPACE)
    _launch(
        ui["url"],
        {
            "partitionNames": [ui["ids"]["diving.md"]],
            "assetSelection": [{"path": [name]} for name in DOCUMENT_ASSETS],
            "fromFailure": False,
        },
    )
    assert _searchable(ui, "freshwater mussels", "diving.md") == ["diving.md"]
    assert not (ui["settings"].published_dir / "default").exists(), "not the run's default"


def test_a_job_backfill_from_the_ui_is_published_to_the_documents_namespace(ui):
    _launch(
        ui["url"],
        {
            "selector": {
                "partitionSetName": "reprocess_documents_partition_set",
                "repositorySelector": {
                    "repositoryLocationName": "corpus_pipeline",
                    "repositoryName": "__repository__",
                },
            },
            "partitionNames": [ui["ids"]["dabbling.md"]],
            "fromFailure": False,
        },
    )
    assert _searchable(ui, "pondweed", "dabbling.md")[0] == "dabbling.md"
    instance = dagster_instance(ui["settings"])
    revisions = instance.fetch_materializations(dg.AssetKey("corpus_revision"), limit=10).records
    assert {r.partition_key for r in revisions} == {NAMESPACE}, "the namespace's own partition"
