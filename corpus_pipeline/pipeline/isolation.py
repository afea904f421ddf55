"""Each document's parse in a worker process under a wall-time and a memory limit.

A pathological file (a decompression bomb, a parser stuck in a loop) then fails only itself,
with an error that names the limit ("parse exceeded 300 s", "parse exceeded 4 GiB"), and the
batch goes on. The parent enforces both limits, because a stuck child cannot: it polls the
worker's resident memory and kills the worker's process group when a limit is passed.

Workers are forked from a `forkserver` that has already imported the pipeline (`processes`): the
start costs milliseconds, and no worker inherits the threads of Dagster or of the caller. The password of
an encrypted document travels to the worker inside the pickled job over the launch pipe (memory
only, never the environment or a file). A `CorpusError` raised in the worker is raised again in
the caller as the same class with the same message; anything else becomes a `ParseFailedError`
in words, with the traceback in the log. A worker dies with its server (a parent-death signal)
and with the process that asked for the parse (a pipe only that process holds, which the kernel
closes when it dies): a killed job leaves no parse running beside its next attempt.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import multiprocessing
import os
import resource
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from multiprocessing import spawn
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import NoReturn

from corpus_pipeline.common.errors import (
    CorpusError,
    ParseFailedError,
    ParseLimitError,
    unexpected_error_message,
)
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.pipeline import processes
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.profiling import Profiled

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05
# Other processes of the worker's group (such as tesseract) are summed less often: a /proc scan.
GROUP_SCAN_SECONDS = 1.0
# RLIMIT_AS backstop in the worker: address space is far larger than resident memory (thread
# stacks, allocator arenas, mapped libraries), so it only catches what polling cannot see in time.
ADDRESS_SPACE_FACTOR = 2
ADDRESS_SPACE_MARGIN = 1 << 30
_PAGE = os.sysconf("SC_PAGE_SIZE")

_NAME_PREFIX = "corpus-parse-"
_CONTEXT = processes.CONTEXT


_stdlib_preparation_data = spawn.get_preparation_data


def _preparation_data(name: str) -> dict[str, object]:
    """What a new process prepares before running its target, without re-running the caller's
    `__main__` for parse workers: everything they unpickle lives in this package, and that
    re-run costs 0.3 s under `corpus` or pytest and 2.4 s under a Dagster code server, per
    document (Python 3.11's forkserver never preloads `__main__`, whatever its preload list)."""
    data: dict[str, object] = _stdlib_preparation_data(name)
    if name.startswith(_NAME_PREFIX):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


spawn.get_preparation_data = _preparation_data

Attribute = str | int | float | bool | None


@dataclass(frozen=True)
class CarriedError:
    """A `CorpusError` crossing the process boundary. The exception itself does not pickle
    (its subclasses take other constructor arguments than the message), so it travels as its
    class's import path, its message and its plain attributes."""

    module: str
    qualname: str
    message: str
    attributes: dict[str, Attribute] = field(default_factory=dict)

    @classmethod
    def of(cls, exc: CorpusError) -> CarriedError:
        plain = {
            k: v
            for k, v in vars(exc).items()
            if isinstance(v, str | int | float | bool | type(None))
        }
        return cls(type(exc).__module__, type(exc).__qualname__, str(exc), plain)

    def rebuild(self) -> CorpusError:
        """The same class with the same message and attributes (ParseFailedError if the class
        cannot be found, which only happens when the two sides run different code)."""
        try:
            target = functools.reduce(
                getattr, self.qualname.split("."), importlib.import_module(self.module)
            )
        except (ImportError, AttributeError):
            target = None
        if not (isinstance(target, type) and issubclass(target, CorpusError)):
            return ParseFailedError(self.message)
        exc = target.__new__(target)
        Exception.__init__(exc, self.message)
        vars(exc).update(self.attributes)
        return exc


@dataclass(frozen=True)
class Crash:
    """An unexpected exception in the worker: what the message needs, plus the traceback."""

    cls_name: str
    bases: tuple[str, ...]
    detail: str
    traceback: str


@dataclass(frozen=True)
class Outcome:
    """What the worker sends back: exactly one of the fields is set."""

    output: pipeline.ParseOutput | None = None
    error: CarriedError | None = None
    crash: Crash | None = None
    out_of_memory: bool = False


@dataclass(frozen=True)
class Job:
    """Everything the worker needs, absolute paths only (its working directory is the
    forkserver's). The source carries the password (memory only, out of its repr) and the
    profile's text reads of its sampled pages (`parsing.pdf.reads`), not read again."""

    document_id: str
    source: Profiled
    out_dir: Path
    settings: CorpusSettings
    address_space_bytes: int = 0


@dataclass(frozen=True)
class Limits:
    seconds: float
    megabytes: int

    @classmethod
    def of(cls, settings: CorpusSettings) -> Limits:
        return cls(settings.parse_timeout_seconds, settings.parse_max_memory_mb)


def run_parse_isolated(
    document_id: str, source: Profiled, out_dir: Path, settings: CorpusSettings
) -> pipeline.ParseOutput:
    """`pipeline.run_parse` in a worker process under the settings' time and memory limits.

    Raises the worker's `CorpusError` as is, `ParseLimitError` past a limit, and
    `ParseFailedError` for anything unexpected. With `parse_in_process` set, runs in-process.
    """
    if settings.parse_in_process:
        return pipeline.run_parse(document_id, source, out_dir, settings)
    limits = Limits.of(settings)
    job = Job(
        document_id=document_id,
        source=replace(source, source_path=Path(source.source_path).resolve()),
        out_dir=Path(out_dir).resolve(),
        settings=settings,
        address_space_bytes=_address_space_limit(limits.megabytes),
    )
    reader, writer = _CONTEXT.Pipe(duplex=False)
    # The worker's tie to this process (the job's owner), which is not its parent (the
    # forkserver is): only this process holds `owner`, so when it exits or is killed the kernel
    # closes it and the worker, watching `alive`, kills itself and its programs at once.
    alive, owner = _CONTEXT.Pipe(duplex=False)
    worker = _CONTEXT.Process(
        target=_work, args=(job, writer, alive), name=f"{_NAME_PREFIX}{document_id}", daemon=True
    )
    outcome: Outcome | None = None
    try:
        worker.start()
        writer.close()
        alive.close()
        assert worker.pid is not None
        logger.debug("parse worker %d started for %s", worker.pid, document_id)
        outcome = _supervise(worker, reader, limits)
    finally:
        # Without an outcome (a limit, an interrupt, an error here) the worker is killed now.
        _stop(worker, finished=outcome is not None)
        reader.close()
        writer.close()
        alive.close()
        owner.close()
    return _unwrap(outcome, document_id, limits)


def _supervise(
    worker: multiprocessing.process.BaseProcess, reader: Connection, limits: Limits
) -> Outcome:
    """Wait for the worker's outcome while enforcing the limits (the caller kills it)."""
    assert worker.pid is not None
    pid = worker.pid
    started = time.monotonic()
    deadline = started + limits.seconds if limits.seconds > 0 else float("inf")
    max_bytes = limits.megabytes * (1 << 20)
    next_group_scan = started + GROUP_SCAN_SECONDS
    others = 0
    # A new worker already maps the forkserver's resident pages (the preloaded libraries, about
    # 160 MiB, shared by every worker and paid once); the limit is on what the parse adds.
    # Copy-on-write keeps that baseline stable: a copied page replaces a counted shared one.
    baseline = _rss(pid)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill(worker)
            raise ParseLimitError.time(limits.seconds)
        ready = wait([reader, worker.sentinel], timeout=min(POLL_SECONDS, remaining))
        if reader in ready or (ready and reader.poll()):
            try:
                received = reader.recv()
            except EOFError:
                _died(worker)
            assert isinstance(received, Outcome)
            return received
        if ready:
            _died(worker)
        if max_bytes:
            used = max(0, _rss(pid) - baseline)
            now = time.monotonic()
            if now >= next_group_scan:
                others = _others_rss(pid)
                next_group_scan = now + GROUP_SCAN_SECONDS
            used += others
            if used > max_bytes:
                _kill(worker)
                raise ParseLimitError.memory(limits.megabytes)


def _died(worker: multiprocessing.process.BaseProcess) -> NoReturn:
    """The worker ended without an outcome: a signal (the kernel's OOM killer, a crash in a
    C library) or an exit status."""
    worker.join()
    code = worker.exitcode
    if code is not None and code < 0:
        raise ParseFailedError(f"parse worker died (signal {-code})")
    raise ParseFailedError(f"parse worker exited with status {code} without a result")


def _unwrap(outcome: Outcome, document_id: str, limits: Limits) -> pipeline.ParseOutput:
    if outcome.output is not None:
        return outcome.output
    if outcome.error is not None:
        raise outcome.error.rebuild()
    if outcome.out_of_memory:
        raise ParseLimitError.memory(limits.megabytes)
    crash = outcome.crash
    assert crash is not None
    logger.error("parse of %s failed in its worker:\n%s", document_id, crash.traceback)
    raise ParseFailedError(
        unexpected_error_message("parse", crash.cls_name, crash.detail, crash.bases),
        details=crash.traceback,
    )


def _kill(worker: multiprocessing.process.BaseProcess) -> None:
    """SIGKILL the worker's process group (it and anything it started), then the worker
    itself in case it had not yet made its own group."""
    if worker.pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.pid, signal.SIGKILL)
    worker.kill()


def _stop(worker: multiprocessing.process.BaseProcess, *, finished: bool) -> None:
    """Leave no worker behind: a worker that sent its outcome gets a moment to exit, any other
    is killed at once; joined, so the forkserver has reaped it (no zombie) before we return."""
    if worker.pid is None:
        return
    worker.join(timeout=5 if finished else 0)
    if worker.exitcode is None:
        _kill(worker)
        worker.join()
    worker.close()


def _rss(pid: int) -> int:
    """Resident memory of one process in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _others_rss(pgid: int) -> int:
    """Resident memory of the other processes in the worker's process group (programs it
    started, such as tesseract)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == pgid:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, ...; rss (pages) is field 24 overall.
        if len(fields) > 21 and int(fields[2]) == pgid:
            total += int(fields[21]) * _PAGE
    return total


def _address_space_limit(megabytes: int) -> int:
    if megabytes <= 0:
        return 0
    return megabytes * (1 << 20) * ADDRESS_SPACE_FACTOR + ADDRESS_SPACE_MARGIN


def _work(job: Job, conn: Connection, alive: Connection) -> None:
    """The worker's body: its own process group, gone with its parent and with the job's
    owner, then `run_parse`."""
    os.setpgid(0, 0)
    _die_with_parent()
    threading.Thread(target=_die_with_owner, args=(alive,), daemon=True).start()
    if job.address_space_bytes:
        _limit_address_space(job.address_space_bytes)
    outcome: Outcome
    try:
        output = pipeline.run_parse(job.document_id, job.source, job.out_dir, job.settings)
        outcome = Outcome(output=output)
    except CorpusError as exc:
        outcome = Outcome(error=CarriedError.of(exc))
    except MemoryError:
        outcome = Outcome(out_of_memory=True)
    except Exception as exc:  # any bug in a parser becomes a ParseFailedError
        outcome = Outcome(crash=_crash(exc))
    try:
        conn.send(outcome)
    except Exception as exc:  # an unpicklable result is a bug to report
        conn.send(Outcome(crash=_crash(exc)))
    conn.close()


def _crash(exc: Exception) -> Crash:
    return Crash(
        cls_name=type(exc).__name__,
        bases=tuple(c.__name__ for c in type(exc).__mro__[1:]),
        detail=str(exc),
        traceback="".join(traceback.format_exception(exc)),
    )


def _die_with_parent() -> None:
    """SIGKILL this worker when its parent (the forkserver, which exits with the caller) goes,
    so a killed caller leaves no orphan parse running."""
    processes.die_with_parent(signal.SIGKILL)


def _die_with_owner(alive: Connection) -> None:
    """Wait until the job's owner has closed its end of `alive` (it never writes: it finished,
    exited or was killed, and the kernel closed it), then SIGKILL this worker's process group:
    the worker and the programs it started (tesseract). A re-queued job then never races an
    orphan of its first attempt."""
    with contextlib.suppress(EOFError, OSError):
        alive.recv_bytes()
    os.killpg(0, signal.SIGKILL)


def _limit_address_space(limit: int) -> None:
    """Backstop for the memory limit; never below what the worker already maps."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            mapped = int(fh.read().split()[0]) * _PAGE
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        target = mapped + limit
        if hard != resource.RLIM_INFINITY:
            target = min(target, hard)
        resource.setrlimit(resource.RLIMIT_AS, (target, hard))
    except (OSError, ValueError):
        pass
