"""`corpus gc` and `corpus doctor`: unreferenced storage removed, and the supporting parts of
this configuration checked (the checks live in `cli.doctor`, imported inside the command)."""

from __future__ import annotations

import sys
from datetime import timedelta

import click
from rich.markup import escape

from corpus_pipeline.cli.output import console, corpus_errors, read_settings


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option(
    "--min-age-minutes",
    default=60,
    show_default=True,
    type=click.IntRange(min=0),
    help="Keep anything younger (a file being registered, a document being committed).",
)
def gc_command(dry_run: bool, min_age_minutes: int) -> None:
    """Remove stored bytes and per-document folders (artifacts, work, embeddings) that no
    registry record references; published revisions are never touched."""
    from corpus_pipeline.storage.gc import collect_garbage

    with corpus_errors():
        report = collect_garbage(
            read_settings(), dry_run=dry_run, min_age=timedelta(minutes=min_age_minutes)
        )
    verb = "would remove" if dry_run else "removed"
    for item in report.removed:
        console.print(f"{verb} {item.kind} {escape(item.location)} ({item.size_bytes:,} bytes)")
    console.print(report.summary())


@click.command("doctor")
@click.option("--query-url", default="http://127.0.0.1:8000", show_default=True)
@click.option("--ingest-url", default="http://127.0.0.1:8001", show_default=True)
def doctor_command(query_url: str, ingest_url: str) -> None:
    """One line per supporting part of this configuration; exit 1 when a required part fails."""
    from corpus_pipeline.cli.doctor import run_checks

    settings = read_settings()
    failed = False
    for check in run_checks(settings, query_url, ingest_url):
        mark = (
            "[green]ok[/]  "
            if check.ok
            else ("[red]FAIL[/]" if check.required else "[yellow]--[/]  ")
        )
        console.print(f"{mark} {check.part:<26} {escape(check.detail)}")
        failed |= check.required and not check.ok
    if failed:
        sys.exit(1)


COMMANDS = [gc_command, doctor_command]
