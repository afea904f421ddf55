"""Document passwords, kept only in this process's memory.

A password given on the command line must never reach records, run config, tags, logs or
diagnostics, so it travels through this registry (keyed by document id) instead of any
pipeline argument that Dagster would persist. Entries are removed when the document is done.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_passwords: dict[str, str] = {}


def set_password(document_id: str, password: str) -> None:
    """Remember the password of one document until `clear_password`."""
    with _lock:
        _passwords[document_id] = password


def get_password(document_id: str | None) -> str | None:
    """The password registered for a document, if any."""
    if document_id is None:
        return None
    with _lock:
        return _passwords.get(document_id)


def clear_password(document_id: str) -> None:
    with _lock:
        _passwords.pop(document_id, None)


@contextmanager
def document_password(document_id: str, password: str | None) -> Iterator[None]:
    """Register a password for the duration of one document's processing (no-op for None)."""
    if password is None:
        yield
        return
    set_password(document_id, password)
    try:
        yield
    finally:
        clear_password(document_id)
