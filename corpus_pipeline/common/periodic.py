"""A background thread that runs one piece of work at a fixed interval until it is stopped."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Periodic:
    """`work()` every `seconds` (the first run one interval after `start`) on a daemon thread
    named `name`, until `stop`. An exception `work` raises ends the thread: catch what may be
    retried at the next interval inside `work`."""

    def __init__(self, name: str, seconds: float, work: Callable[[], object]) -> None:
        self.name = name
        self.seconds = seconds
        self.work = work
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop, waiting up to `timeout` seconds for a run in progress to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        while not self._stop.wait(self.seconds):
            self.work()
