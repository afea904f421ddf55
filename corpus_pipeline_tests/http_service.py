"""Run the real query service (uvicorn on a free loopback port) for HTTP tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import uvicorn

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.keys import hash_key
from corpus_pipeline.upload_api.app import create_ingest_app
from query_service.api.app import create_app
from query_service.config import ServiceSettings

from .services import free_port

CORPUS_CLI = Path(sys.executable).with_name("corpus")


def write_api_keys(
    home: Path,
    keys: dict[str, tuple[str, list[str]]],
    writes: dict[str, list[str]] | None = None,
) -> Path:
    """The service's key file under <home>/service: key → (principal, readable namespaces),
    and key → namespaces it may write to, stored hashed as the services expect."""
    path = home / "service" / "api_keys.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {
            "key_sha256": hash_key(k),
            "principal": p,
            "namespaces": ns,
            **({"write_namespaces": (writes or {})[k]} if k in (writes or {}) else {}),
        }
        for k, (p, ns) in keys.items()
    ]
    path.write_text(json.dumps({"keys": entries}))
    return path


@contextmanager
def running_service(settings: ServiceSettings) -> Iterator[str]:
    """Start the app in a background thread; yield its base URL; stop it on exit."""
    app = create_app(settings)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("query service did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


@contextmanager
def served_by_cli(
    home: Path, workers: int, timeout: float = 60.0, env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    """`corpus serve --workers N` as its own process group on a free loopback port (`env` on
    top of this process's); yields the base URL and the supervisor's pid once /readyz answers
    200; stops the group after."""
    port = free_port()
    process = subprocess.Popen(
        [str(CORPUS_CLI), "serve", "--port", str(port), "--workers", str(workers)],
        env={
            **os.environ,
            "CORPUS_HOME": str(home),
            "CORPUS_RELOAD_SECONDS": "0.2",
            **(env or {}),
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"corpus serve exited with code {process.returncode}")
            with suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"corpus serve was not ready within {timeout} s")
            time.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def child_pids(pid: int) -> set[int]:
    """Direct children of a process (from /proc)."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.add(int(stat.parent.name))
    return children


@contextmanager
def served(settings: CorpusSettings, worker: bool = True) -> Iterator[httpx.Client]:
    """The upload API (`create_ingest_app`) on a free loopback port; yields a client on it."""
    server = uvicorn.Server(
        uvicorn.Config(
            create_ingest_app(settings, worker=worker),
            host="127.0.0.1",
            port=free_port(),
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.02)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.config.port}", timeout=60) as c:
            yield c
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def finished_job(client: httpx.Client, job_id: str, timeout: float = 180) -> dict[str, object]:
    """Poll the upload API until a job is `done` or `error`; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, object] = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "error"):
            return job
        time.sleep(0.3)
    raise TimeoutError(f"job {job_id} did not finish within {timeout} s")
