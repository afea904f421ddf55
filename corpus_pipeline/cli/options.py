"""Options several `corpus` commands share, declared once so that their flags, parameter names
and types stay the same everywhere; each command still says in its help what the option means
for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])

# Path parameters, given to the command as `Path`s: a file, or a folder.
FILE = click.Path(path_type=Path, dir_okay=False)
FOLDER = click.Path(path_type=Path, file_okay=False)


def namespace_option(help: str) -> Callable[[F], F]:
    """`-n, --namespace` as `namespace` (None when not given)."""
    return click.option("--namespace", "-n", default=None, help=help)


def json_option(help: str) -> Callable[[F], F]:
    """`--json` as the flag `as_json`."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def mode_options(command: F) -> F:
    """`--mode` (classic or agentic) and the agentic mode's `--budget`, in the range the
    agentic request accepts."""
    command = click.option(
        "--budget",
        default=8000,
        show_default=True,
        type=click.IntRange(512, 200_000),
        help="Token budget (agentic mode).",
    )(command)
    return click.option(
        "--mode", type=click.Choice(["classic", "agentic"]), default="classic", show_default=True
    )(command)
