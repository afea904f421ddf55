"""`corpus serve`, `corpus mcp` and `corpus keys create` (registered on the `corpus` group)."""

from __future__ import annotations

import os
import sys

import click

from corpus_pipeline.contracts.keys import create_local_key
from query_service.config import ServiceSettings
from query_service.server import UnsafeBinding, default_workers, serve, serve_stdio


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Server processes  [default: one per usable CPU core]",
)
@click.option("--access-log/--no-access-log", default=False, show_default=True)
def serve_command(host: str, port: int, workers: int | None, access_log: bool) -> None:
    """Serve the published corpus over HTTP (/v1, /docs) and MCP (/mcp)."""
    try:
        serve(ServiceSettings(), host, port, workers or default_workers(), access_log)
    except UnsafeBinding as exc:
        raise click.UsageError(str(exc)) from exc


@click.command("mcp")
def mcp_command() -> None:
    """Serve the MCP tools over stdio (for a local agent)."""
    try:
        serve_stdio(ServiceSettings(), os.environ.get("CORPUS_API_KEY"))
    except UnsafeBinding as exc:
        raise click.UsageError(str(exc)) from exc


@click.group("keys")
def keys_group() -> None:
    """API keys of the query service."""


@click.command("create")
@click.option("--principal", default="local-dev", show_default=True)
@click.option(
    "--namespace", "namespaces", multiple=True, help="Readable namespace (repeatable; default all)."
)
@click.option(
    "--if-missing", is_flag=True, help="Do nothing (exit 0) when a key file already exists."
)
def create_key_command(principal: str, namespaces: tuple[str, ...], if_missing: bool) -> None:
    """Create the key file with one new key; prints the key once (only its hash is stored)."""
    settings = ServiceSettings()
    key = create_local_key(settings.keys_file, principal, namespaces or ("*",))
    if key is None:
        if if_missing:
            click.echo(
                f"key file exists: {settings.keys_file} (keys are stored hashed; create a new file to get a new key)"
            )
            return
        click.echo(f"error: {settings.keys_file} exists already", err=True)
        sys.exit(1)
    click.echo(key)


keys_group.add_command(create_key_command)
COMMANDS = [serve_command, mcp_command, keys_group]
