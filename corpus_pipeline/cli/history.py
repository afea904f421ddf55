"""`corpus list` and `corpus runs`: the documents of the corpus and what became of them, and
the recent runs (document and publish runs from the Dagster instance, agentic searches from
their records), as plain columns or, with `--json`, one JSON object per line.

A document's status: `published` (the namespace's current revision holds these bytes),
`processed` (its artifacts hold these bytes; the next publish takes them), `processing` or
`failed` (its last run, from the Dagster instance), else `registered` (stored, not run yet).
Dagster and the published tables are imported inside the commands, keeping `--help` fast.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click

from corpus_pipeline.cli.options import json_option, namespace_option
from corpus_pipeline.cli.output import echo_json_line, print_columns, read_settings
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import Manifest, SourceRecord

if TYPE_CHECKING:
    from corpus_pipeline.orchestration.history import RunSummary

KINDS = ("ingest", "publish", "search")


@click.command("list")
@namespace_option("Only this namespace (default: all).")
@json_option("One JSON object per document and line.")
def list_command(namespace: str | None, as_json: bool) -> None:
    """List the documents: status, pages, chunks and when they were ingested."""
    settings = read_settings(namespace)
    records = [r for r in _records(settings) if namespace is None or r.namespace == namespace]
    records.sort(key=lambda r: (r.namespace, r.source_file_name, r.document_id))
    rows = _document_rows(settings, records)
    if as_json:
        for row in rows:
            echo_json_line(row)
        return
    if not rows:
        click.echo(f"no documents{f' in namespace {namespace!r}' if namespace else ''}")
        return
    header = ("namespace", "file", "status", "pages", "chunks", "ingested at", "document id")
    print_columns(
        [
            header,
            *[
                (
                    row["namespace"],
                    row["file"],
                    row["status"],
                    _number(row["pages"]),
                    _number(row["chunks"]),
                    _when(row["ingested_at"]),
                    row["document_id"],
                )
                for row in rows
            ],
        ]
    )


def _document_rows(settings: CorpusSettings, records: list[SourceRecord]) -> list[dict[str, Any]]:
    """Each registered document with its status and the counts of the manifest made from its
    current bytes (none while it has no such manifest)."""
    published: dict[str, Manifest] = {}
    for ns in sorted({r.namespace for r in records}):
        published.update(_published_manifests(settings, ns))
    rows: list[dict[str, Any]] = []
    for record in records:
        committed = _committed_manifest(settings, record.document_id)
        shown = next(
            (m for m in (published.get(record.document_id), committed) if _holds(m, record)), None
        )
        if _holds(published.get(record.document_id), record):
            status = "published"
        elif _holds(committed, record):
            status = "processed"
        else:
            status = ""  # decided from the Dagster instance, next
        rows.append(
            {
                "namespace": record.namespace,
                "document_id": record.document_id,
                "file": record.source_file_name,
                "status": status,
                "pages": shown.statistics.pages if shown else None,
                "chunks": shown.statistics.chunks if shown else None,
                "ingested_at": record.received_at.isoformat(),
            }
        )
    pending = [row["document_id"] for row in rows if not row["status"]]
    if pending:
        from corpus_pipeline.orchestration.history import document_states
        from corpus_pipeline.orchestration.runs import dagster_instance

        states = document_states(dagster_instance(settings), pending)
        for row in rows:
            row["status"] = row["status"] or states.get(row["document_id"], "registered")
    return rows


def _records(settings: CorpusSettings) -> list[SourceRecord]:
    from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

    return SourceRegistry(ObjectStore(settings.object_store)).records()


def _holds(manifest: Manifest | None, record: SourceRecord) -> bool:
    return manifest is not None and manifest.source.sha256 == record.sha256


def _committed_manifest(settings: CorpusSettings, document_id: str) -> Manifest | None:
    try:
        text = (settings.artifacts_dir / document_id / "manifest.json").read_text(encoding="utf-8")
    except OSError:
        return None
    return Manifest.model_validate_json(text)


def _published_manifests(settings: CorpusSettings, namespace: str) -> dict[str, Manifest]:
    """Document id → its manifest in the namespace's current revision (none before the first
    publish)."""
    from corpus_pipeline.contracts.published import DOCUMENTS
    from query_service.snapshot.revision import NamespaceNotFound, open_revision

    try:
        revision = open_revision(settings.published_dir, namespace)
    except NamespaceNotFound:
        return {}
    rows = revision.rows(DOCUMENTS, columns=["document_id", "manifest"])
    return {row["document_id"]: Manifest.model_validate_json(row["manifest"]) for row in rows}


@click.command("runs")
@namespace_option("Only this namespace's runs.")
@click.option(
    "--kind",
    "kinds",
    type=click.Choice(KINDS),
    multiple=True,
    help="Only runs of this kind (repeatable; default: all three).",
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@json_option("One JSON object per run and line.")
def runs_command(namespace: str | None, kinds: tuple[str, ...], limit: int, as_json: bool) -> None:
    """List recent runs, newest first: ingest (document and embedding runs) and publish runs
    from the Dagster instance, agentic searches from their records under $CORPUS_HOME/runs."""
    settings = read_settings(namespace)
    wanted = set(kinds or KINDS)
    runs: list[dict[str, Any]] = []
    if wanted & {"ingest", "publish"}:
        from corpus_pipeline.orchestration.history import recent_runs
        from corpus_pipeline.orchestration.runs import dagster_instance

        stages: list[Any] = ["document", "embedding"] if "ingest" in wanted else []
        stages += ["publish"] if "publish" in wanted else []
        found = recent_runs(dagster_instance(settings), stages, namespace, limit)
        names = {r.document_id: r.source_file_name for r in _records(settings)}
        runs += [_pipeline_run(run, names) for run in found]
    if "search" in wanted:
        runs += _search_runs(settings, namespace)
    runs.sort(key=lambda run: run["started_at"], reverse=True)
    runs = runs[:limit]
    if as_json:
        for run in runs:
            echo_json_line(run)
        return
    if not runs:
        click.echo("no runs")
        return
    header = ("started", "kind", "status", "namespace", "seconds", "what", "run id")
    print_columns(
        [
            header,
            *[
                (
                    _when(run["started_at"]),
                    run["kind"],
                    run["status"],
                    run["namespace"] or "-",
                    "-" if run["seconds"] is None else f"{run['seconds']:.1f}",
                    run["target"],
                    run["run_id"][:8],
                )
                for run in runs
            ],
        ]
    )


def _pipeline_run(run: RunSummary, names: dict[str, str]) -> dict[str, Any]:
    """A document, embedding or publish run as a row; a document run names its file."""
    kind = "publish" if run.stage == "publish" else "ingest"
    target = names.get(run.target, run.target)
    target = f"embeddings: {target}" if run.stage == "embedding" else target
    return {
        "kind": kind,
        "run_id": run.run_id,
        "status": run.status,
        "started_at": run.created_at.astimezone(UTC).isoformat(),
        "seconds": None if run.seconds is None else round(run.seconds, 3),
        "namespace": run.namespace,
        "trigger": run.trigger,
        "target": target,
    }


def _search_runs(settings: CorpusSettings, namespace: str | None) -> list[dict[str, Any]]:
    """The agentic searches recorded per namespace (`query_service.snapshot.records`)."""
    from query_service.snapshot.records import read_runs

    runs_dir = settings.home / "runs"
    folders = [runs_dir / namespace] if namespace else sorted(runs_dir.glob("*"))
    out = []
    for folder in (f for f in folders if f.is_dir()):
        for row in read_runs(runs_dir, folder.name).to_pylist():
            if row["record_type"] != "run":
                continue
            query = json.loads(row["inputs"]).get("query", "")
            stop = json.loads(row["outputs"]).get("stop_reason", "")
            out.append(
                {
                    "kind": "search",
                    "run_id": row["run_id"],
                    "status": "failure" if row["error"] else "success",
                    "started_at": row["created_at"].astimezone(UTC).isoformat(),
                    "seconds": round(row["latency_ms"] / 1000, 3),
                    "namespace": folder.name,
                    "trigger": "agentic search",
                    "target": f"{query[:60]!r} ({row['tokens']} tokens, stop: {stop})",
                }
            )
    return out


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _when(iso: str) -> str:
    """An ISO time as 'YYYY-MM-DD HH:MM:SS' in UTC."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


COMMANDS = [list_command, runs_command]
