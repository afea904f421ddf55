"""The `corpus` command: the group, assembled from one module per command group and the query
service's commands (`serve`, `mcp`, `keys`)."""

from __future__ import annotations

import warnings

import click

from corpus_pipeline.cli import (
    formats,
    history,
    ingest,
    inspection,
    maintenance,
    search,
    services,
)
from corpus_pipeline.cli.evaluate import COMMANDS as EVAL_COMMANDS
from query_service.api.commands import COMMANDS as SERVICE_COMMANDS


@click.group()
@click.version_option(package_name="corpus", message="corpus %(version)s")
def main() -> None:
    """corpus: turn documents into a searchable, cited corpus."""
    # Dagster flags preview APIs (partitioned asset checks) on every load; not for end users.
    warnings.filterwarnings("ignore", module=r"dagster\..*")


for _command in (
    *ingest.COMMANDS,
    *inspection.COMMANDS,
    *search.COMMANDS,
    *EVAL_COMMANDS,
    *history.COMMANDS,
    *maintenance.COMMANDS,
    *formats.COMMANDS,
    *services.COMMANDS,
    *SERVICE_COMMANDS,
):
    main.add_command(_command)
