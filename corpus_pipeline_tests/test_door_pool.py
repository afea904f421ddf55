"""The door processes heal: a pool whose idle process was killed (as the OOM killer would) is
reported not ready and replaced by the next upload, which is checked as if nothing happened."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus_pipeline.intake.uploads import ReceivedFile, ReceivedForm
from corpus_pipeline.upload_api.door_pool import DoorPool

pytestmark = pytest.mark.slow


@pytest.fixture
def pool() -> Iterator[DoorPool]:
    door = DoorPool(2)
    yield door
    door.shutdown()


def _form(folder: Path, name: str, text: str) -> ReceivedForm:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "part-0"
    path.write_text(text)
    return ReceivedForm(files=[ReceivedFile(sent=name, path=path, size=len(text))])


def _until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_pool_whose_idle_process_died_is_replaced_by_the_next_check(pool, tmp_path):
    first = pool.check(_form(tmp_path / "a", "a.md", "# A\n\nOne.\n"), tmp_path / "a", 10**6, False)
    assert [c.label for c in first[0]] == ["a.md"]
    processes = pool._current()._processes  # the pool's live door processes
    os.kill(next(iter(processes)), signal.SIGKILL)
    assert _until(pool.broken), "the pool never noticed its dead process"

    second = pool.check(
        _form(tmp_path / "b", "b.md", "# B\n\nTwo.\n"), tmp_path / "b", 10**6, False
    )

    assert [(c.label, c.status) for c in second[0]] == [("b.md", None)]
    assert not pool.broken()


def test_readyz_says_not_ready_while_the_door_pool_is_broken(tmp_path):
    from fastapi.testclient import TestClient

    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.upload_api.app import create_ingest_app

    app = create_ingest_app(load_settings(home=tmp_path / "home", open_access=True), worker=False)
    with TestClient(app) as client:
        door: DoorPool = app.state.ingest.door
        uploaded = client.post("/v1/documents", files={"files": ("a.md", b"# A\n\nOne.\n")})
        assert uploaded.status_code == 202
        assert client.get("/readyz").status_code == 200
        os.kill(next(iter(door._current()._processes)), signal.SIGKILL)
        assert _until(door.broken)

        assert client.get("/readyz").status_code == 503

        again = client.post("/v1/documents", files={"files": ("b.md", b"# B\n\nTwo.\n")})
        assert again.status_code == 202
        assert client.get("/readyz").status_code == 200
