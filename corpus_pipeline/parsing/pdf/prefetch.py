"""A second process that reads some of a long PDF's pages ahead of the parse.

A batch keeps both cores busy with a document each; a PDF parsed alone (`corpus debug`, a
one-file `corpus ingest`, a single partition in the UI) used one. Reading a page's text and
finding its tables is most of a parse and depends on nothing but the page, so a forked helper
reads every other page (in order) while the parse reads the rest and does everything that
carries state across pages (image deduplication, the parse budget, OCR, headings) itself, in
page order, with the helper's reads in place of its own: the artifacts are the same as without
it (tested byte for byte). The helper is forked, so it starts with the parse's profile reads and
settings; it opens the file again (a forked document would share the parse's file offset). It
belongs to the parse worker's process group (the worker's memory and time limits cover it) and
dies with the parse (PDEATHSIG). Anything the helper cannot deliver (it failed, or was killed)
the parse reads itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

_PR_SET_PDEATHSIG = 1


class PagePrefetch:
    """Results of `produce(n)` for the given page numbers, computed in a forked process and
    handed out in increasing page order."""

    def __init__(
        self,
        produce: Callable[[int], Any],
        numbers: Iterable[int],
        start: Callable[[], object] | None = None,
    ) -> None:
        """`start` runs first in the helper (e.g. to drop state the fork copied)."""
        self.numbers = sorted(set(numbers))
        self._wanted = set(self.numbers)
        self._ready: dict[int, Any] = {}
        self._pid = 0
        self._pipe: IO[bytes] | None = None
        read_fd, write_fd = os.pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        if pid == 0:  # the helper: never returns into the caller's code
            code = 0
            try:
                os.close(read_fd)
                _die_with(parent)
                if start is not None:
                    start()
                with os.fdopen(write_fd, "wb") as out:
                    for number in self.numbers:
                        pickle.dump((number, produce(number)), out, pickle.HIGHEST_PROTOCOL)
                        out.flush()
            except BaseException:  # the parse reads what is missing itself
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        self._pid = pid
        self._pipe = os.fdopen(read_fd, "rb")

    def covers(self, number: int) -> bool:
        return number in self._wanted

    def take(self, number: int) -> Any | None:
        """The helper's result for page `number`, once (None if it has none: read it yourself).
        The helper reads in increasing order; results that arrive first wait to be asked for."""
        if number not in self._wanted:
            return None
        self._wanted.discard(number)
        while number not in self._ready and self._pipe is not None:
            try:
                got, result = pickle.load(self._pipe)
            except (EOFError, OSError, pickle.UnpicklingError):
                self.close()
                break
            if got in self._wanted or got == number:
                self._ready[got] = result
        return self._ready.pop(number, None)

    def close(self) -> None:
        """Stop the helper (if still reading) and reap it."""
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self._pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = 0
        self._ready.clear()


def can_fork() -> bool:
    """Forking copies only the calling thread: a process with other Python threads (a server,
    Dagster's in-process runs) could hand the helper a lock another thread holds."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _die_with(parent: int) -> None:
    """The helper is killed when the parse that forked it ends (Linux), and exits at once if
    that already happened."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
