"""The process contexts: a batch's pool workers and their parse workers share one forkserver."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import forkserver
from multiprocessing.connection import Connection

from corpus_pipeline.pipeline import processes


def _parent_pid(conn: Connection) -> None:
    conn.send(os.getppid())
    conn.close()


def _fork_one_and_report() -> tuple[bool, int]:
    """In a pool worker: adopt the parent's forkserver, fork a process, report its parent."""
    adopted = processes.use_parent_forkserver()
    reader, writer = processes.CONTEXT.Pipe(duplex=False)
    child = processes.CONTEXT.Process(target=_parent_pid, args=(writer,))
    child.start()
    writer.close()
    parent = reader.recv()
    child.join(30)
    return adopted, parent


def _variable(name: str) -> str | None:
    return os.environ.get(name)


def test_a_pool_worker_forks_its_processes_from_the_callers_forkserver():
    context = processes.start_forkserver()
    server_pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    with ProcessPoolExecutor(1, context) as pool:
        adopted, parent = pool.submit(_fork_one_and_report).result(timeout=120)
    assert adopted
    assert parent == server_pid  # not a second server started by the worker


def test_the_caller_keeps_its_own_forkserver():
    processes.start_forkserver()
    assert processes.use_parent_forkserver() is False


def test_a_pool_worker_sees_the_environment_of_its_caller_not_of_the_forkserver(monkeypatch):
    context = processes.start_forkserver()  # started before the variable is set
    monkeypatch.setenv("CORPUS_TEST_POOL_VARIABLE", "set after the server started")
    initargs = (dict(os.environ),)
    with ProcessPoolExecutor(1, context, processes.adopt_environment, initargs) as pool:
        seen = pool.submit(_variable, "CORPUS_TEST_POOL_VARIABLE").result(timeout=120)
    assert seen == "set after the server started"
