"""`corpus ingest`, `corpus publish` and `corpus delete`: documents into and out of a namespace.

The orchestration and publishing modules import Dagster and the pipeline, so they are imported
inside the commands, keeping `corpus --help` fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from corpus_pipeline.cli.output import (
    console,
    corpus_errors_as_usage,
    err_console,
    fail,
    read_settings,
)

if TYPE_CHECKING:
    from corpus_pipeline.common.settings import CorpusSettings
    from corpus_pipeline.orchestration.runs import EmbedOutcome, IngestResult, PublishOutcome


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--namespace", "-n", default=None, help="Namespace of the documents (default CORPUS_NAMESPACE)."
)
@click.option(
    "--organizational-unit", default=None, help="Free-text owner unit, kept as a filterable field."
)
@click.option("--json", "as_json", is_flag=True, help="Print the per-file summary as JSON.")
@click.option(
    "--password", default=None, help="Password of encrypted PDFs (kept in memory, never stored)."
)
def ingest_command(
    paths: tuple[Path, ...],
    namespace: str | None,
    organizational_unit: str | None,
    as_json: bool,
    password: str | None,
) -> None:
    """Store, parse and chunk files or folders; prints one line per file."""
    settings = read_settings(namespace)
    if not settings.parse_in_process:
        from corpus_pipeline.pipeline import processes

        processes.start_forkserver()  # its imports overlap the pipeline's, next
    from corpus_pipeline.orchestration.runs import DocumentRuns

    results = _ingest_with_progress(
        paths, settings, namespace, organizational_unit, password, quiet=as_json
    )
    ns = namespace or settings.namespace
    published, dense = DocumentRuns.of(settings).publish_processed(ns, results)
    if as_json:
        _print_json(results)
    else:
        _print_lines(results, settings, ns, published, dense)
    if published is not None and published.error is not None:
        fail("publish failed", published.error)
    if any(r.status not in ("ok", "skipped") for r in results):
        sys.exit(1)


def _ingest_with_progress(
    paths: tuple[Path, ...],
    settings: CorpusSettings,
    namespace: str | None,
    organizational_unit: str | None,
    password: str | None,
    *,
    quiet: bool,
) -> list[IngestResult]:
    """Every file of `paths` run, with a progress bar on stderr for two files or more (none
    when `quiet`)."""
    from corpus_pipeline.orchestration.ingest import collect_files, ingest

    with corpus_errors_as_usage():
        total = len(collect_files(paths))
    progress = Progress(
        TextColumn("[bold]ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        transient=True,
        disable=quiet or total < 2,
    )
    with progress:
        task = progress.add_task("", total=total)
        return ingest(
            paths,
            settings,
            namespace,
            organizational_unit,
            on_progress=lambda r: progress.update(task, advance=1, description=r.source_file_name),
            password=password,
        )


def _print_json(results: list[IngestResult]) -> None:
    """The per-file summary as JSON (`--json`)."""
    click.echo(
        json.dumps(
            [
                {
                    "source_file_name": r.source_file_name,
                    "document_id": r.document_id,
                    "status": r.status,
                    "chunks": r.counts,
                    "error": r.error,
                    "skipped": r.skipped,
                    "seconds": round(r.seconds, 3),
                }
                for r in results
            ],
            indent=2,
        )
    )


def _print_lines(
    results: list[IngestResult],
    settings: CorpusSettings,
    ns: str,
    published: PublishOutcome | None,
    dense: EmbedOutcome | None,
) -> None:
    """One line per file, then the batch: documents ok, where the artifacts are, what was
    embedded and the revision published."""
    for r in results:
        console.print(_result_line(r))
    ok = sum(r.status == "ok" for r in results)
    documents = sum(r.status != "skipped" for r in results)
    console.print(f"{ok}/{documents} documents in namespace '{ns}'")
    console.print(f"artifacts: {settings.artifacts_dir}")
    if dense is not None:
        console.print(
            f"dense: {dense.documents} documents, {dense.chunks} chunk vectors "
            f"({dense.embedded} embedded now) in {dense.seconds:.1f}s"
            + "".join(f"\n[red]not embedded[/] {d}  {escape(m)}" for d, m in dense.errors.items())
        )
    if published is not None and published.error is None:
        console.print(
            f"published: namespace '{ns}' revision {published.revision} ({published.documents} "
            f"documents, {published.chunks} unique chunks) in {settings.published_dir / ns}"
        )


def _result_line(r: IngestResult) -> str:
    """A file's line: ok with its counts, skipped (an archive member that is not a document),
    or failed with the reason."""
    if r.status == "ok":
        counts = " ".join(
            f"{k}={r.counts.get(k, 0)}" for k in ("text", "table", "image", "sections")
        )
        return (
            f"[green]ok[/]     {r.document_id}  {escape(r.source_file_name)}  {counts}  "
            f"({r.seconds:.1f}s{_skipped_note(r.skipped)})"
        )
    if r.status == "skipped":  # an archive member that is not a document
        return f"[yellow]skipped[/] {escape(r.source_file_name)}  {escape(r.error or '')}"
    return (
        f"[red]failed[/] {r.document_id or '-'}  {escape(r.source_file_name)}  "
        f"{escape(r.error or '')}"
    )


def _skipped_note(skipped: dict[str, int]) -> str:
    """'; 3 parts skipped: image ×2, table ×1' for the ingest line ('' when nothing was lost)."""
    if not skipped:
        return ""
    total = sum(skipped.values())
    parts = ", ".join(f"{escape(kind)} ×{n}" for kind, n in skipped.items())
    return f"; {total} part{'s' if total != 1 else ''} skipped: {parts}"


@click.command("publish")
@click.option(
    "--namespace", "-n", "namespaces", multiple=True, help="Namespace(s) to publish (default: all)."
)
def publish_command(namespaces: tuple[str, ...]) -> None:
    """Publish the current artifacts as a new revision (only when something changed)."""
    from corpus_pipeline.orchestration.runs import DocumentRuns
    from corpus_pipeline.publish.service import known_namespaces

    settings = read_settings()
    runs = DocumentRuns.of(settings)
    for namespace in list(namespaces) or known_namespaces(settings):
        outcome = runs.publish(namespace)
        if outcome.error is not None:
            fail("publish failed", outcome.error)
        console.print(
            f"{namespace}: revision {outcome.revision} "
            f"({outcome.published} published, {outcome.removed} removed, {outcome.unchanged} unchanged; "
            f"{outcome.chunks} chunks) in {outcome.seconds:.2f}s"
        )


@click.command("delete")
@click.argument("document_id")
def delete_command(document_id: str) -> None:
    """Delete a document: forget its record and artifacts, then publish its namespace without it."""
    from corpus_pipeline.orchestration.runs import DocumentRuns
    from corpus_pipeline.storage.gc import forget_document

    settings = read_settings()
    with corpus_errors_as_usage():
        record = forget_document(settings, document_id)
    outcome = DocumentRuns.of(settings).publish(record.namespace)
    if outcome.error:
        fail("publish failed", outcome.error)
    console.print(
        f"deleted {document_id} ({record.source_file_name}); namespace '{record.namespace}' is at revision {outcome.revision}"
    )


COMMANDS = [ingest_command, publish_command, delete_command]
