"""A short soak in CI: query and upload clients against the real services while a parse worker
and the upload API are killed with SIGKILL and a key is revoked (`benchmarks/soak.py`; the
ten-minute run with 30 + 10 clients is the benchmark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.soak import SoakConfig, run_soak

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def soak(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    config = SoakConfig(
        seconds=40, query_clients=4, upload_clients=2, job_lease_seconds=10, job_heartbeat_seconds=2
    )
    home: Path = tmp_path_factory.mktemp("soak")
    return run_soak(config, home)


def test_every_fault_was_injected(soak: dict[str, Any]) -> None:
    assert set(soak["events_s"]) == {
        "parse_worker_killed",
        "upload_api_killed",
        "upload_api_restarted",
        "key_revoked",
    }


def test_no_query_fails_while_the_upload_side_is_killed(soak: dict[str, Any]) -> None:
    assert soak["queries"] > 1000
    assert soak["queries_failed"] == 0, soak["query_failures"]


def test_every_accepted_upload_ends_done_or_error_after_the_restart(soak: dict[str, Any]) -> None:
    assert soak["uploads_accepted_before_api_killed"] >= 1
    assert soak["uploads_accepted_after_api_restarted"] >= 1, "the restarted API accepts uploads"
    assert soak["jobs_unfinished"] == 0
    assert soak["jobs_done"] + soak["jobs_error"] == soak["uploads_accepted"]
    assert soak["namespace_state"] == "complete"


def test_the_revoked_key_is_refused_within_five_seconds(soak: dict[str, Any]) -> None:
    assert soak["revoked_key_refused_after_s"] is not None
    assert soak["revoked_key_refused_after_s"] <= 5
    assert soak["revoked_key_served_after_refusal"] == 0, "never served once it was refused"


def test_the_killed_upload_api_leaves_no_process(soak: dict[str, Any]) -> None:
    assert soak["processes_left_by_killed_api"] == []
