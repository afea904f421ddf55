"""The door processes of the upload API: each received file is admitted (`door.admit`, by
`intake.uploads.check_file`) in a process forked from the parse forkserver, never in the API's
own process, so a parser crash on hostile bytes refuses that file and nothing else."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from corpus_pipeline.intake.door import Refused, safe_name
from corpus_pipeline.intake.uploads import Checked, ReceivedForm, check_file

# `check_file`'s arguments: path, name as sent, scratch folder, index, max bytes, password
# given, LibreOffice available.
CheckArgs = tuple[str, str, str, int, int, bool, bool | None]
# A door process is replaced after this many files: what a large file's parse left in its heap
# goes back to the system with it.
DOOR_TASKS_PER_PROCESS = 16


class DoorPool:
    """The door processes: `workers` forked from the parse forkserver on first use. A check
    that kills its process (a parser crash on hostile bytes) refuses that file and the pool
    is replaced."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def _current(self) -> ProcessPoolExecutor:
        from corpus_pipeline.pipeline import processes

        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    processes.start_forkserver(),
                    max_tasks_per_child=DOOR_TASKS_PER_PROCESS,
                )
            return self._pool

    def broken(self) -> bool:
        """A door process died (killed while idle, as the OOM killer would): the pool refuses
        work until the next check replaces it (`/readyz` says so meanwhile)."""
        with self._lock:
            pool = self._pool
        return pool is not None and bool(getattr(pool, "_broken", False))

    def check(
        self,
        form: ReceivedForm,
        scratch: Path,
        max_bytes: int,
        has_password: bool,
        libreoffice: bool | None = None,
    ) -> list[list[Checked]]:
        """Each received file's verdicts, in order (all files checked side by side).
        `libreoffice`: whether the API's deployment has it (the door processes were forked
        before any request, so they are told rather than left to look it up).

        A pool found broken is replaced first. A check whose process dies is tried once more
        alone in a new pool (the process may have died of something else: a kill, another
        file); a file that stops its process again is refused."""
        args: list[CheckArgs] = [
            (str(f.path), f.sent, str(scratch), n, max_bytes, has_password, libreoffice)
            for n, f in enumerate(form.files)
        ]
        futures = self._submit(args)
        out: list[list[Checked]] = []
        for received, arguments, future in zip(form.files, args, futures, strict=True):
            try:
                out.append(future.result())
                continue
            except BrokenProcessPool:
                pass
            try:
                [again] = self._submit([arguments])
                out.append(again.result())
            except BrokenProcessPool:
                self._replace(self._current())
                name = safe_name(received.sent)
                raise Refused(
                    400, f"'{name}' cannot be read: checking it stopped its process"
                ) from None
        return out

    def _submit(self, args: list[CheckArgs]) -> list[Future[list[Checked]]]:
        """The checks submitted to a pool that is not broken (a broken one is replaced)."""
        pool = self._current()
        if getattr(pool, "_broken", False):
            self._replace(pool)
            pool = self._current()
        try:
            return [pool.submit(check_file, *a) for a in args]
        except BrokenProcessPool:  # it broke just now: one new pool, once
            self._replace(pool)
            pool = self._current()
            return [pool.submit(check_file, *a) for a in args]

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = None
        broken.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
