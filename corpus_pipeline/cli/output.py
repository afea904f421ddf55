"""What every command module shares: the consoles, settings, and the two ways a command fails.

Exit codes: 0 when everything worked; 1 when a document failed or the command met a runtime
error (`CommandError`, printed as one line `error: …` on stderr, without the usage banner);
2 only for bad usage (`click.UsageError`: an unknown option, a missing argument, an invalid
option value), which click prints with the usage line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any, NoReturn

import click
from pydantic import ValidationError
from rich.console import Console

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.settings import CorpusSettings, load_settings

console = Console(soft_wrap=True)
err_console = Console(stderr=True)
ERROR = click.style("error:", fg="red")  # click drops the colour when stderr is no terminal


class CommandError(click.ClickException):
    """A runtime error (a wrong path, an unknown document, a namespace never published): one
    line `error: …` on stderr and exit code 1, never the usage banner."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"{ERROR} {self.format_message()}", file=file, err=file is None)


def read_settings(namespace: str | None = None) -> CorpusSettings:
    """The settings (for `namespace` when given): an invalid `--namespace` is bad usage, an
    invalid setting of the environment a runtime error."""
    try:
        settings = load_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "__".join(str(part) for part in first["loc"]).upper()
        raise CommandError(f"invalid setting CORPUS_{name}: {first['msg']}") from exc
    except ValueError as exc:
        raise CommandError(f"invalid setting: {exc}") from exc
    if not namespace:
        return settings
    try:
        return load_settings(namespace=namespace)
    except ValueError as exc:
        raise click.BadParameter(
            f"'{namespace}' is not a namespace name", param_hint="'--namespace'"
        ) from exc


@contextmanager
def corpus_errors() -> Iterator[None]:
    """A `CorpusError` (it names the file or the problem) as a `CommandError`: exit code 1."""
    try:
        yield
    except CorpusError as exc:
        raise CommandError(str(exc)) from exc


def fail(label: str, detail: object, code: int = 1) -> NoReturn:
    """'error: label: detail' on stderr, then exit with `code`."""
    click.echo(f"{ERROR} {label}: {detail}", err=True)
    sys.exit(code)


def echo_json_line(payload: dict[str, Any]) -> None:
    """One JSON object on one line of stdout, flushed at once (a reader sees it as it comes)."""
    click.echo(json.dumps(payload, ensure_ascii=False, default=str))
    sys.stdout.flush()


def print_columns(rows: Sequence[Sequence[str]]) -> None:
    """Rows as left-aligned columns (the first row the header): plain text whether stdout is
    a terminal or a pipe, never folded to the terminal's width."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
