"""What every command module shares: the consoles, settings as a usage error, failing exits."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import click
from rich.console import Console

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.settings import CorpusSettings, load_settings

console = Console(soft_wrap=True)
err_console = Console(stderr=True)


def read_settings(namespace: str | None = None) -> CorpusSettings:
    """The settings (for `namespace` when given); an invalid setting is a usage error."""
    try:
        return load_settings(**({"namespace": namespace} if namespace else {}))
    except ValueError as exc:
        raise click.UsageError(f"invalid setting: {exc}") from exc


@contextmanager
def corpus_errors_as_usage() -> Iterator[None]:
    """A `CorpusError` (a wrong path, an unknown document) as a usage error, exit code 2."""
    try:
        yield
    except CorpusError as exc:
        raise click.UsageError(str(exc)) from exc


def fail(label: str, detail: object, code: int = 1) -> NoReturn:
    """'label: detail' in red on stderr, then exit with `code`."""
    err_console.print(f"[red]{label}:[/] {detail}")
    sys.exit(code)
