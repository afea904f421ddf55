"""The processes a batch runs in: one forkserver, started early, forks them all.

Parse workers (`worker.run_parse_isolated`) and a batch's pool workers (`ingest`) are forked by
the same `forkserver`, which imports the parsers once (its preload, ~2.5 s): no process
inherits the threads of Dagster or of the caller, and none imports the parsers again. A pool
worker asks that same server for its parse workers (`use_parent_forkserver`) instead of
starting a server of its own (measured on the 20 10-Qs with two workers: ~28 s a batch against
~31 s when each spawned worker imported everything and ran its own server).

This module imports nothing heavy, so `corpus ingest` can start the server before it imports
the pipeline itself (the two imports then overlap).
"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing import forkserver, resource_tracker
from multiprocessing.context import ForkServerContext
from typing import Any

CONTEXT: ForkServerContext = multiprocessing.get_context("forkserver")
# Imported once by the forkserver, so a worker starts with them: the parser strategies and the
# libraries they import on first use (a missing optional one is skipped by the forkserver).
PRELOAD = [
    "corpus_pipeline.worker",
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
