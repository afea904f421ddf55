"""The door processes of the upload API: each received file is admitted (`door.admit`, by
`intake.uploads.check_file`) in a process forked from the parse forkserver, never in the API's
own process, so a parser crash on hostile bytes refuses that file and nothing else."""

from __future__ import annotations

import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from corpus_pipeline.intake.door import Refused, safe_name
from corpus_pipeline.intake.uploads import Checked, ReceivedForm, check_file

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
        before any request, so they are told rather than left to look it up)."""
        pool = self._current()
        futures = [
            pool.submit(
                check_file,
                str(f.path),
                f.sent,
                str(scratch),
                n,
                max_bytes,
                has_password,
                libreoffice,
            )
            for n, f in enumerate(form.files)
        ]
        out: list[list[Checked]] = []
        for received, future in zip(form.files, futures, strict=True):
            try:
                out.append(future.result())
            except BrokenProcessPool:
                self._replace(pool)
                name = safe_name(received.sent)
                raise Refused(
                    400, f"'{name}' cannot be read: checking it stopped its process"
                ) from None
        return out

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
