"""`corpus serve`, `corpus mcp` and `corpus keys` (registered on the `corpus` group)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import click

from corpus_pipeline.access import keys as access
from corpus_pipeline.access.keys import UnsafeBinding
from corpus_pipeline.contracts.keys import KeyFileError
from query_service.api.server import default_workers, serve, serve_stdio
from query_service.config import ServiceSettings


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
    """API keys of both services (changes apply to running services within seconds)."""


@contextmanager
def _key_errors() -> Iterator[None]:
    """A refused change as one line naming the file and the problem, exit code 1."""
    path = ServiceSettings().keys_file
    try:
        yield
    except (KeyFileError, access.KeyNotFound, ValueError, OSError) as exc:
        raise click.ClickException(f"{path}: {exc}") from None


def _namespaces(values: tuple[str, ...]) -> list[str]:
    """Repeated options and comma-separated lists alike: `--read a --read b`, `--read a,b`."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@click.command("create")
@click.argument("name")
@click.option("--read", "reads", multiple=True, help="Namespace it reads (repeatable; * = all).")
@click.option(
    "--write", "writes", multiple=True, help="Namespace it uploads to (repeatable; also read)."
)
@click.option("--if-missing", is_flag=True, help="Exit 0 without a key when NAME exists.")
def create_key_command(
    name: str, reads: tuple[str, ...], writes: tuple[str, ...], if_missing: bool
) -> None:
    """Create a key NAME; prints the key once (only its SHA-256 hash is stored)."""
    path = ServiceSettings().keys_file
    with _key_errors():
        key = access.create_key(
            path, name, _namespaces(reads), _namespaces(writes), if_missing=if_missing
        )
    if key is None:
        click.echo(f"a key named '{name}' exists in {path}; nothing created", err=True)
        return
    click.echo(key)
    click.echo(f"key '{name}' added to {path}; it is shown only this once", err=True)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M") if moment else "-"


@click.command("list")
def list_keys_command() -> None:
    """Names, namespaces, created and last used (never a key or its hash)."""
    path = ServiceSettings().keys_file
    with _key_errors():
        keys = access.list_keys(path)
    if not keys:
        click.echo(f"no keys in {path}; create one with `{access.CREATE_COMMAND}`")
        return
    rows = [("name", "read", "write", "created", "last used")] + [
        (
            k.name,
            ",".join(k.namespaces) or "-",
            ",".join(k.write_namespaces) or "-",
            _when(k.created_at),
            _when(k.last_used),
        )
        for k in keys
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        click.echo("  ".join(row[i].ljust(widths[i]) for i in range(5)).rstrip())


@click.command("revoke")
@click.argument("name")
def revoke_key_command(name: str) -> None:
    """Remove the key NAME; services refuse it within seconds."""
    path = ServiceSettings().keys_file
    with _key_errors():
        access.revoke_key(path, name)
    click.echo(f"key '{name}' revoked in {path}", err=True)


@click.command("rotate")
@click.argument("name")
def rotate_key_command(name: str) -> None:
    """Replace the key NAME by a new one with the same namespaces; prints it once."""
    path = ServiceSettings().keys_file
    with _key_errors():
        key = access.rotate_key(path, name)
    click.echo(key)
    click.echo(f"key '{name}' rotated in {path}; the old key stops working", err=True)


for _command in (create_key_command, list_keys_command, revoke_key_command, rotate_key_command):
    keys_group.add_command(_command)

COMMANDS = [serve_command, mcp_command, keys_group]
