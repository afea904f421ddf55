"""A crash leaves nothing running and loses no job: the forkserver and the workers it forked die
with the process that started them (real SIGKILL, checked in /proc), what an earlier crash left
is reaped at the next start (and nothing else), and after a `kill -9` of the upload API in the
middle of a parse its restart brings every job to `done` and the namespace to `complete`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest

from corpus_pipeline.orchestration.runs import REPO_ROOT
from corpus_pipeline.pipeline import processes
from corpus_pipeline.publish.publisher import read_pointer

from .http_service import CORPUS_CLI, child_pids
from .services import free_port
from .support import DOCS

# A process that starts the forkserver (as the upload API does), records it, has it fork one
# worker, prints the server's and the worker's pids and waits to be killed. "unguarded" starts
# the server as it was before it died with its starter (or where prctl is missing).
STARTER = """
import sys, threading, time
from multiprocessing import forkserver
from pathlib import Path
from corpus_pipeline.pipeline import processes
from corpus_pipeline_tests.test_crash_cleanup import _worker
mode, records = sys.argv[1], Path(sys.argv[2])
if mode == "unguarded":
    processes.CONTEXT.set_forkserver_preload([])
if mode == "thread":
    starter = threading.Thread(target=processes.start_forkserver)
    starter.start()
    starter.join()
else:
    processes.start_forkserver()
processes.record_forkserver(records)
worker = processes.CONTEXT.Process(target=_worker, args=(mode == "unguarded",))
worker.start()
print(forkserver._forkserver._forkserver_pid, worker.pid, flush=True)
time.sleep(600)
"""


def _worker(with_program: bool) -> None:
    """A forked worker, with a program of its own below it when asked (as tesseract runs
    below a parse)."""
    if with_program:
        subprocess.Popen(["sleep", "600"])
    time.sleep(600)


@contextmanager
def _starter(mode: str, records: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, int]]:
    """The starter process, its forkserver's pid and its worker's pid; all killed after."""
    process = subprocess.Popen(
        [sys.executable, "-c", STARTER, mode, str(records)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    left: dict[int, int | None] = {}
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line, f"the starter exited ({process.wait()})"
        server, worker = (int(pid) for pid in line.split())
        left = {server: processes.start_time(server), worker: processes.start_time(worker)}
        left |= _descendants(server)
        yield process, server, worker
    finally:
        process.kill()
        process.wait()
        for pid, start in {**left, **_descendants_now(left)}.items():
            if start is not None and processes.start_time(pid) == start:
                os.kill(pid, signal.SIGKILL)


def _descendants(root: int) -> dict[int, int | None]:
    """pid → start time of every process below `root` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, IndexError, ValueError):
            parents[int(stat.parent.name)] = int(stat.read_bytes().rsplit(b")", 1)[1].split()[1])
    below: dict[int, int | None] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in below:
                below[pid] = processes.start_time(pid)
                frontier.append(pid)
    return below


def _descendants_now(known: dict[int, int | None]) -> dict[int, int | None]:
    found: dict[int, int | None] = {}
    for pid in known:
        found |= _descendants(pid)
    return found


def _running(pid: int, start: int | None) -> bool:
    """Still the same process, and not a zombie."""
    return start is not None and processes.start_time(pid) == start


def _all_gone(snapshot: dict[int, int | None], timeout: float = 10) -> list[int]:
    """Wait for every process of `snapshot` to be gone; those still running after `timeout`."""
    deadline = time.monotonic() + timeout
    while (left := [p for p, s in snapshot.items() if _running(p, s)]) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("mode", ["main", "thread"])
def test_a_killed_process_takes_its_forkserver_and_its_workers_with_it(tmp_path: Path, mode: str):
    # "thread": a server started by a thread that has ended lives on until its process dies.
    with _starter(mode, tmp_path / "records") as (starter, server, worker):
        snapshot = {pid: processes.start_time(pid) for pid in (server, worker)}
        assert all(_running(pid, start) for pid, start in snapshot.items())

        starter.send_signal(signal.SIGKILL)

        assert _all_gone(snapshot) == []


def test_what_a_crashed_owner_left_is_reaped_at_the_next_start(tmp_path: Path):
    records = tmp_path / "records"
    with _starter("unguarded", records) as (starter, server, worker):
        deadline = time.monotonic() + 30
        while True:  # server, worker and the worker's program (not a passing helper process)
            below = _descendants(server)
            program = [p for p in below if processes.cmdline(p).startswith(b"sleep")]
            if worker in below and program:
                break
            assert time.monotonic() < deadline, "the worker never started its program"
            time.sleep(0.1)
        tree = {
            server: processes.start_time(server),
            worker: below[worker],
            program[0]: below[program[0]],
        }
        assert processes.reap_orphans(records) == [], "its owner still runs"
        assert all(_running(pid, start) for pid, start in tree.items())

        starter.send_signal(signal.SIGKILL)
        starter.wait()
        time.sleep(1)
        assert all(_running(pid, start) for pid, start in tree.items()), "orphans, as before"

        reaped = processes.reap_orphans(records)

        assert sorted(reaped) == sorted(tree)
        assert _all_gone(tree) == []
        assert list(records.iterdir()) == [], "the record is gone with them"


def test_a_recorded_pid_now_held_by_an_unrelated_process_is_never_killed(tmp_path: Path):
    unrelated = subprocess.Popen(["sleep", "600"])
    try:
        start = processes.start_time(unrelated.pid)
        records = tmp_path / "records"
        records.mkdir()
        record = {"owner": [os.getpid(), -1], "forkserver": [unrelated.pid, start]}  # owner gone
        (records / "1.json").write_text(json.dumps(record))

        assert processes.reap_orphans(records) == []

        assert unrelated.poll() is None and processes.start_time(unrelated.pid) == start
        assert list(records.iterdir()) == []
    finally:
        unrelated.kill()
        unrelated.wait()


# The upload API itself, as `corpus ingest-api`.


@contextmanager
def _ingest_api(home: Path, log: Path) -> Iterator[tuple[subprocess.Popen[bytes], httpx.Client]]:
    """`corpus ingest-api` on a free port with short leases; stopped (or killed) after."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "CORPUS_OBJECT_STORE_URL"}
    env |= {
        "CORPUS_HOME": str(home),
        "CORPUS_INGEST_WORKERS": "1",
        "CORPUS_JOB_LEASE_SECONDS": "2",
        "CORPUS_JOB_HEARTBEAT_SECONDS": "0.4",
        "CORPUS_OPEN_ACCESS": "true",  # the local user, on loopback: no key file here
    }
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(CORPUS_CLI), "ingest-api", "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text()
            with suppress(httpx.HTTPError):
                if client.get("/readyz").status_code == 200:
                    break
            assert time.monotonic() < deadline, "the upload API did not start"
            time.sleep(0.1)
        yield process, client
    finally:
        client.close()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _forkserver_of(api: int) -> int | None:
    for pid in _descendants(api):
        if processes.FORKSERVER_COMMAND in processes.cmdline(pid):
            return pid
    return None


def _parsing(api: int, before: set[int]) -> bool:
    """The API's forkserver has forked a process besides those it had when the uploads were
    answered (the pool worker, the door processes): the parse worker."""
    server = _forkserver_of(api)
    return server is not None and bool(child_pids(server) - before)


@pytest.mark.slow
def test_after_a_kill_9_mid_parse_a_restart_finishes_every_job_and_nothing_is_left(
    tmp_path: Path,
):
    home, log = tmp_path / "home", tmp_path / "ingest-api.log"
    with _ingest_api(home, log) as (api, client):
        files = [("files", ("redbook.pdf", (DOCS / "redp5110_sampled.pdf").read_bytes()))]
        files += [
            ("files", (f"note{n}.md", f"# Note {n}\n\nTufted ducks dive {n}.\n".encode()))
            for n in range(2)
        ]
        response = client.post("/v1/documents", files=files)
        assert response.status_code == 202, response.text
        pdf, *notes = [str(f["job_id"]) for f in response.json()["files"]]
        # The door processes that checked them are the forkserver's children now too.
        server = _forkserver_of(api.pid)
        before = child_pids(server) if server is not None else set()
        deadline = time.monotonic() + 120
        while not _parsing(api.pid, before):
            assert time.monotonic() < deadline, "no parse started"
            assert client.get(f"/v1/jobs/{pdf}").json()["status"] in ("queued", "processing")
            time.sleep(0.02)
        assert client.get(f"/v1/jobs/{pdf}").json()["status"] == "processing"
        left_behind = _descendants(api.pid)  # forkserver, pool worker, parse worker, …

        api.send_signal(signal.SIGKILL)
        api.wait()

        assert _all_gone(left_behind) == [], "processes of the killed API still run"

    with _ingest_api(home, log) as (_, client):
        deadline = time.monotonic() + 240
        while True:
            jobs: dict[str, dict[str, Any]] = {
                j: client.get(f"/v1/jobs/{j}").json() for j in [pdf, *notes]
            }
            if all(job["status"] in ("done", "error") for job in jobs.values()):
                break
            assert time.monotonic() < deadline, jobs
            time.sleep(0.3)
        status = client.get("/v1/namespaces/default/ingestion").json()

    assert {j: job["status"] for j, job in jobs.items()} == dict.fromkeys(jobs, "done"), jobs
    assert jobs[pdf]["attempts"] == 2, "the interrupted attempt was counted"
    assert [jobs[n]["attempts"] for n in notes] == [1, 1], "held by their heartbeat throughout"
    assert status == {"namespace": "default", "state": "complete", "counts": {"done": 3}}
    pointer = read_pointer(home / "published" / "default")
    assert pointer is not None and pointer.documents == 3, "each document once in the revision"
    assert pointer.revision <= 3, "nothing published twice: at most one revision per document"


# A process that starts the forkserver and a pool worker from it (as the upload API runs its
# jobs); the pool worker, the job's owner, parses a long file in a parse worker of its own.
OWNER = """
import sys, time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver
from corpus_pipeline.pipeline import processes
from corpus_pipeline_tests.test_crash_cleanup import _parse_long
context = processes.start_forkserver()
with ProcessPoolExecutor(1, context) as pool:
    pool.submit(_parse_long, sys.argv[1])
    print(forkserver._forkserver._forkserver_pid, flush=True)
    time.sleep(600)
"""


def _parse_long(folder: str) -> None:
    """The job: a parse that takes minutes (in its own worker, under the caller's server)."""
    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.contracts import FileFormat
    from corpus_pipeline.pipeline.isolation import run_parse_isolated
    from corpus_pipeline.profiling import Profiled
    from corpus_pipeline_tests.support import bare_profile

    processes.use_parent_forkserver()
    path = Path(folder) / "long.md"
    path.write_text("".join(f"# Part {i}\n\nDucks {i} dive.\n\n" for i in range(500_000)))
    settings = load_settings(home=Path(folder) / "home")
    profile = bare_profile(path, FileFormat.MARKDOWN, "markdown")
    run_parse_isolated("long", Profiled(path, path.name, profile), Path(folder) / "out", settings)


def test_a_parse_worker_dies_with_the_job_that_owns_it_not_only_with_its_server(tmp_path: Path):
    process = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    tree: dict[int, int | None] = {}
    try:
        assert process.stdout is not None
        server = int(process.stdout.readline().decode())
        deadline = time.monotonic() + 60
        while len(below := _descendants(server)) < 2:  # the job's owner and its parse worker
            assert time.monotonic() < deadline, f"no parse worker started: {below}"
            time.sleep(0.1)
        tree = dict(below)
        owner = min(below, key=lambda pid: below[pid] or 0)  # the pool worker started first
        parse = {pid: start for pid, start in below.items() if pid != owner}

        os.kill(owner, signal.SIGKILL)

        assert _all_gone(parse) == [], "the parse worker outlived the job's owner"
        assert _running(server, processes.start_time(server)), "the server itself lives on"
    finally:
        process.kill()
        process.wait()
        for pid, start in tree.items():
            if _running(pid, start):
                os.kill(pid, signal.SIGKILL)
