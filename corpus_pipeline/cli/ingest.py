"""`corpus ingest`, `corpus publish` and `corpus delete`: documents into and out of a namespace.

The orchestration and publishing modules import Dagster and the pipeline, so they are imported
inside the commands, keeping `corpus --help` fast.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from corpus_pipeline.cli.ingest_report import Batch, JsonLines, Report, Terminal
from corpus_pipeline.cli.options import json_option, namespace_option
from corpus_pipeline.cli.output import console, corpus_errors, fail, read_settings


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@namespace_option("Namespace of the documents (default CORPUS_NAMESPACE).")
@click.option(
    "--organizational-unit", default=None, help="Free-text owner unit, kept as a filterable field."
)
@json_option("One JSON line per file as it finishes (the default when stdout is not a terminal).")
@click.option(
    "--password", default=None, help="Password of encrypted PDFs (kept in memory, never stored)."
)
@click.option(
    "--force",
    is_flag=True,
    help="Process files again even when unchanged (e.g. after changing a setting).",
)
def ingest_command(
    paths: tuple[Path, ...],
    namespace: str | None,
    organizational_unit: str | None,
    as_json: bool,
    password: str | None,
    force: bool,
) -> None:
    """Store, parse, chunk and publish files or folders, reporting each file as it finishes:
    ingested, unchanged (the same bytes are ingested already), skipped or failed (exit 1)."""
    settings = read_settings(namespace)
    if not settings.parse_in_process:
        from corpus_pipeline.pipeline import processes

        processes.start_forkserver()  # its imports overlap the pipeline's, next
    from corpus_pipeline.orchestration.ingest import collect_files, ingest
    from corpus_pipeline.orchestration.runs import DocumentRuns

    with corpus_errors():
        total = len(collect_files(paths))
    report: Report = JsonLines() if as_json or not sys.stdout.isatty() else Terminal(total)
    with corpus_errors(), report.running():
        results = ingest(
            paths,
            settings,
            namespace,
            organizational_unit,
            on_progress=report.file_done,
            password=password,
            force=force,
        )
    with report.publishing():
        ns = namespace or settings.namespace
        published, dense = DocumentRuns.of(settings).publish_processed(ns, results)
    report.finish(Batch(results, published, dense))
    if published is not None and published.error is not None:
        fail("publish failed", published.error)
    if any(r.status == "failed" for r in results):
        sys.exit(1)


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
    with corpus_errors():
        record = forget_document(settings, document_id)
    outcome = DocumentRuns.of(settings).publish(record.namespace)
    if outcome.error:
        fail("publish failed", outcome.error)
    console.print(
        f"deleted {document_id} ({record.source_file_name}); namespace '{record.namespace}' is at revision {outcome.revision}"
    )


COMMANDS = [ingest_command, publish_command, delete_command]
