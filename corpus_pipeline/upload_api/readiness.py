"""The upload API's readiness: the job store checked once a second in a thread of its own, so
`/readyz` answers from the last check and never waits for the store, however busy uploads
keep it."""

from __future__ import annotations

import logging
import threading
import time

from corpus_pipeline.intake.jobs import JobStore

logger = logging.getLogger(__name__)


class Readiness:
    """The job store checked once a second in a thread: `/readyz` reads the last result."""

    CHECK_SECONDS = 1.0
    FRESH_SECONDS = 5.0

    def __init__(self, jobs: JobStore, stop: threading.Event) -> None:
        self.jobs = jobs
        self.stop = stop
        self._ok_at = float("-inf")

    def start(self) -> None:
        self._check()  # ready from the first request on, when the store answers
        threading.Thread(target=self._loop, name="corpus-readiness", daemon=True).start()

    def _loop(self) -> None:
        while not self.stop.wait(self.CHECK_SECONDS):
            self._check()

    def _check(self) -> None:
        try:
            self.jobs.counts("default")
        except Exception:  # not ready while it fails; the reason goes to the log
            logger.warning("job store check failed", exc_info=True)
            return
        self._ok_at = time.monotonic()

    def ready(self) -> bool:
        return time.monotonic() - self._ok_at < self.FRESH_SECONDS
