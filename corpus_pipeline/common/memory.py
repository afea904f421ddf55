"""Giving freed memory back to the system, for long-lived processes that go idle between
large pieces of work (an ingest process between documents, a query process after a revision
swap)."""

from __future__ import annotations

import contextlib
import ctypes
import gc


def trim_heap(collect: bool = False) -> None:
    """Hand the heap's free pages back to the system (glibc `malloc_trim`): without it a
    fragmented heap keeps a large job's pages resident after they are freed. With `collect`,
    unreachable objects are collected first. Nothing where there is no glibc. (ctypes releases
    the GIL for the call: other threads go on meanwhile.)"""
    if collect:
        gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
