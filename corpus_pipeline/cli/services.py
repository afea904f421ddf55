"""`corpus ingest-api`: the upload API served over HTTP (uvicorn and the app are imported inside
the command). The query service's `serve` and `mcp` come from `query_service.api.commands`."""

from __future__ import annotations

import click

from corpus_pipeline.access.keys import UnsafeBinding, check_binding
from corpus_pipeline.cli.output import read_settings


@click.command("ingest-api")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8001, show_default=True, type=int)
def ingest_api_command(host: str, port: int) -> None:
    """Serve the upload API (POST /v1/documents, GET /v1/jobs/{id}); jobs run in the background."""
    import uvicorn

    from corpus_pipeline.upload_api.app import create_ingest_app

    settings = read_settings()
    try:
        click.echo(check_binding(settings.keys_file, settings.open_access, host), err=True)
    except UnsafeBinding as exc:
        raise click.UsageError(str(exc)) from None
    uvicorn.run(create_ingest_app(settings), host=host, port=port, log_level="info")


COMMANDS = [ingest_api_command]
