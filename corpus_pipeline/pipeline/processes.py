"""The processes a batch runs in: one forkserver, started early, forks them all.

Parse workers (`worker.run_parse_isolated`) and a batch's pool workers (`ingest`) are forked by
the same `forkserver`, which imports the parsers once (its preload, ~2.5 s): no process
inherits the threads of Dagster or of the caller, and none imports the parsers again. A pool
worker asks that same server for its parse workers (`use_parent_forkserver`) instead of
starting a server of its own (measured on the 20 10-Qs with two workers: ~28 s a batch against
~31 s when each spawned worker imported everything and ran its own server).

This module imports nothing heavy, so `corpus ingest` can start the server before it imports
the pipeline itself (the two imports then overlap).

Every one of these processes dies with the process that started it: the server leaves when its
starter is gone, and what it forked (pool and parse workers) gets SIGKILL when the server goes
(both set up by `forkserver_init`, through `die_with_parent`), so a `kill -9` of the upload API
or of `corpus ingest` leaves nothing running. Where the parent-death signal is not available (or a server started before it was),
the upload API records its server under the home and the next start reaps a dead owner's
server and everything below it (`record_forkserver`, `reap_orphans`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing
import os
import signal
import socket
import sys
from multiprocessing import forkserver, resource_tracker
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

CONTEXT: ForkServerContext = multiprocessing.get_context("forkserver")
# Imported once by the forkserver, so a worker starts with them: the parser strategies and the
# libraries they import on first use (a missing optional one is skipped by the forkserver).
# First: the server's own tie to its parent, before the seconds of the others.
PRELOAD = [
    "corpus_pipeline.pipeline.forkserver_init",
    "corpus_pipeline.pipeline.isolation",
    "corpus_pipeline.enrich.tokenizer_preload",
    *(
        f"corpus_pipeline.parsing.{name}"
        for name in ("docx", "html", "markdown", "text", "pdf", "xlsx", "pptx", "image", "segments")
    ),
    "PIL.Image",
    *(f"PIL.{fmt}ImagePlugin" for fmt in ("Bmp", "Gif", "Jpeg", "Ppm", "Png", "Tiff", "WebP")),
    "imagehash",
    "scipy.fftpack",
    "pymupdf",
    "pytesseract",
    "docx",
    "openpyxl",
    "xlrd",
    "pptx",
    "lxml.etree",
    "py3langid",
    "mdit_py_plugins.front_matter",
]
CONTEXT.set_forkserver_preload(PRELOAD)


def start_forkserver() -> ForkServerContext:
    """Start the forkserver (and its preload) now rather than at the first fork; returns the
    context to fork from. A no-op when it runs (or, in a pool worker, its parent's is used)."""
    forkserver.ensure_running()
    return CONTEXT


def use_parent_forkserver() -> bool:
    """In a process the forkserver forked (a batch's pool worker): fork from that same server
    too. Its address and alive pipe came with the fork; only its pid is unknown here, and
    `ensure_running` would check that pid with `waitpid` (which only its parent may), find
    none and start another server. So the check is skipped: the server outlives this process,
    which holds its alive pipe (were it killed, the pool it forked would break as it does when a
    worker dies: each worker's liveness is read through the server). False, with nothing
    changed, in any other process."""
    server: Any = forkserver._forkserver  # the module's one server (private: no stub)
    if (
        server._forkserver_pid is not None
        or server._forkserver_address is None
        or server._forkserver_alive_fd is None
    ):
        return False
    server.ensure_running = resource_tracker.ensure_running
    return True


def adopt_environment(environ: dict[str, str]) -> None:
    """A forked process has the environment of the forkserver, as it was when the server
    started; a worker takes its caller's (`dict(os.environ)` when the pool started) instead,
    as a spawned process would have (its settings are read from there)."""
    os.environ.clear()
    os.environ.update(environ)


_PR_SET_PDEATHSIG = 1
# How the forkserver's command line starts (`python -c "from multiprocessing.forkserver …"`);
# the processes it forks share it.
FORKSERVER_COMMAND = b"from multiprocessing.forkserver import main"


def die_with_parent(signum: int = signal.SIGKILL) -> bool:
    """Have Linux send `signum` to this process when its parent goes (prctl
    PR_SET_PDEATHSIG, through ctypes); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, pgrp, …), None
    when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot): with the pid, its identity, since
    a pid is reused once its process is gone. None for no process or a zombie."""
    fields = _stat(pid)
    if fields is None or fields[0] == b"Z" or len(fields) < 20:
        return None
    return int(fields[19])


def cmdline(pid: int) -> bytes:
    """The process's command line as /proc has it (NUL-separated; empty when gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def record_forkserver(directory: Path) -> Path | None:
    """Write `<directory>/<pid>.json`: this process and its forkserver, each with its start
    time, for `reap_orphans` after a crash; None when no server runs."""
    server_pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    if server_pid is None or (server_start := start_time(server_pid)) is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{os.getpid()}.json"
    record = {
        "owner": [os.getpid(), start_time(os.getpid())],
        "forkserver": [server_pid, server_start],
    }
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(record), encoding="utf-8")
    partial.replace(path)
    return path


def reap_orphans(directory: Path) -> list[int]:
    """Kill what a dead owner's forkserver left running (the server, the pool and parse
    workers below it), from the records of `record_forkserver`; the pids killed. A record
    whose owner still runs is left alone, and a pid is only killed when it is still the
    recorded server (same start time, a forkserver's command line) or a process below it, so
    an unrelated process that reused a pid is never touched."""
    killed: list[int] = []
    for path in sorted(directory.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            (owner, owner_start), (server, server_start) = record["owner"], record["forkserver"]
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if start_time(owner) == owner_start:
            continue
        if start_time(server) == server_start and FORKSERVER_COMMAND in cmdline(server):
            killed += _kill_tree(server)
        path.unlink(missing_ok=True)
    return killed


def _kill_tree(root: int) -> list[int]:
    """SIGKILL `root` and every process below it: each is stopped (SIGSTOP) as it is found,
    so none forks another while the tree is collected, then all are killed."""
    tree = {root}
    stopped: set[int] = set()
    while fresh := tree - stopped:
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= fresh
        for entry in os.listdir("/proc"):
            fields = _stat(int(entry)) if entry.isdigit() else None
            if fields is not None and int(fields[1]) in tree:
                tree.add(int(entry))
    for pid in tree:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return sorted(tree)


def identity(pid: int | None = None) -> str:
    """`host:pid:start time` of a process (this one by default): names it across a pid's
    reuse, and says on which machine it can be checked."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{start_time(pid)}"


def is_gone(identity_value: str) -> bool:
    """Whether the process an `identity` names is known to have ended: on this machine only
    (another host's process cannot be checked from here, so it is never called gone)."""
    host, _, rest = identity_value.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return str(start_time(int(pid))) != started
