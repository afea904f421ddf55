"""The `corpus` command: ingest, inspect, debug."""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.tree import Tree

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import DocNav, Manifest, SectionNode

console = Console(soft_wrap=True)
err_console = Console(stderr=True)


def _settings(namespace: str | None = None) -> CorpusSettings:
    try:
        return load_settings(**({"namespace": namespace} if namespace else {}))
    except ValueError as exc:
        raise click.UsageError(f"invalid setting: {exc}") from exc


@click.group()
def main() -> None:
    """corpus: turn documents into a searchable, cited corpus."""
    # Dagster flags preview APIs (partitioned asset checks) on every load; not for end users.
    warnings.filterwarnings("ignore", module=r"dagster\..*")


@main.command("ingest")
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
    settings = _settings(namespace)
    if not settings.parse_in_process:
        from corpus_pipeline.pipeline import processes

        processes.start_forkserver()  # its imports overlap the pipeline's, next
    from corpus_pipeline.orchestration.ingest import collect_files, ingest, publish_batch

    try:
        total = len(collect_files(paths))
    except CorpusError as exc:
        raise click.UsageError(str(exc)) from exc
    progress = Progress(
        TextColumn("[bold]ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        transient=True,
        disable=as_json or total < 2,
    )
    with progress:
        task = progress.add_task("", total=total)
        results = ingest(
            paths,
            settings,
            namespace,
            organizational_unit,
            on_progress=lambda r: progress.update(task, advance=1, description=r.source_file_name),
            password=password,
        )
    ns = namespace or settings.namespace
    published, dense = publish_batch(settings, ns, results)
    if as_json:
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
    else:
        for r in results:
            if r.status == "ok":
                counts = " ".join(
                    f"{k}={r.counts.get(k, 0)}" for k in ("text", "table", "image", "sections")
                )
                console.print(
                    f"[green]ok[/]     {r.document_id}  {escape(r.source_file_name)}  {counts}  "
                    f"({r.seconds:.1f}s{_skipped_note(r.skipped)})"
                )
            elif r.status == "skipped":  # an archive member that is not a document
                console.print(
                    f"[yellow]skipped[/] {escape(r.source_file_name)}  {escape(r.error or '')}"
                )
            else:
                console.print(
                    f"[red]failed[/] {r.document_id or '-'}  {escape(r.source_file_name)}  "
                    f"{escape(r.error or '')}"
                )
        ok = sum(r.status == "ok" for r in results)
        documents = sum(r.status != "skipped" for r in results)
        console.print(f"{ok}/{documents} documents in namespace '{ns}'")
        console.print(f"artifacts: {settings.artifacts_dir}")
        if dense is not None:
            console.print(
                f"dense: {dense.documents} documents, {dense.chunks} chunk vectors "
                f"({dense.embedded} embedded now) in {dense.seconds:.1f}s"
                + "".join(
                    f"\n[red]not embedded[/] {d}  {escape(m)}" for d, m in dense.errors.items()
                )
            )
        if published is not None and published.error is None:
            console.print(
                f"published: namespace '{ns}' revision {published.revision} ({published.documents} "
                f"documents, {published.chunks} unique chunks) in {settings.published_dir / ns}"
            )
    if published is not None and published.error is not None:
        err_console.print(f"[red]publish failed:[/] {published.error}")
        sys.exit(1)
    if any(r.status not in ("ok", "skipped") for r in results):
        sys.exit(1)


def _skipped_note(skipped: dict[str, int]) -> str:
    """'; 3 parts skipped: image ×2, table ×1' for the ingest line ('' when nothing was lost)."""
    if not skipped:
        return ""
    total = sum(skipped.values())
    parts = ", ".join(f"{escape(kind)} ×{n}" for kind, n in skipped.items())
    return f"; {total} part{'s' if total != 1 else ''} skipped: {parts}"


def _section_tree(parent: Tree, sections: list[SectionNode]) -> None:
    for s in sections:
        branch = parent.add(f"[bold]{s.title}[/] [dim](level {s.level}, {s.chunk_count} chunks)[/]")
        _section_tree(branch, s.children)


@main.command("inspect")
@click.argument("document_id")
def inspect_command(document_id: str) -> None:
    """Print a document's section tree and chunk counts from its artifacts."""
    settings = _settings()
    directory = settings.artifacts_dir / document_id
    if not (directory / "manifest.json").is_file():
        raise click.UsageError(
            f"document_id: no artifacts for '{document_id}' under {settings.artifacts_dir}"
        )
    manifest = Manifest.model_validate_json(
        (directory / "manifest.json").read_text(encoding="utf-8")
    )
    nav = DocNav.model_validate_json((directory / "doc_nav.json").read_text(encoding="utf-8"))
    stats = manifest.statistics
    tree = Tree(
        f"[bold]{nav.title}[/] [dim]({manifest.source_file_name}, {nav.root_chunk_count} chunks before the first heading)[/]"
    )
    _section_tree(tree, nav.sections)
    console.print(tree)
    console.print(
        f"chunks: {stats.chunks} (text {stats.text_chunks}, table {stats.table_chunks}, image {stats.image_chunks}); "
        f"sections {stats.sections}; tokens {stats.tokens}; resources {len(nav.resources)}"
    )
    console.print(f"directory: {directory}")


@main.command("debug")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--stop-at",
    type=click.Choice(["profile", "parse", "hierarchy", "chunks"]),
    default="chunks",
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def debug_command(file: Path, stop_at: str, as_json: bool) -> None:
    """Run one file through the pipeline functions in-process (no Dagster) up to a stage."""
    from corpus_pipeline.contracts import HeadingNode
    from corpus_pipeline.pipeline import stages as pipeline
    from corpus_pipeline.structure.hierarchy import heading_tree

    settings = _settings()
    try:
        profile = pipeline.run_profile(file, file.name)
        if stop_at == "profile":
            click.echo(profile.model_dump_json(indent=2))
            return
        with tempfile.TemporaryDirectory(prefix="corpus-debug-") as tmp:
            ctx = pipeline.parse_rows(file, file.name, profile, Path(tmp))
            rows = ctx.rows if stop_at == "parse" else pipeline.structure_rows(ctx.rows)
            if stop_at in ("parse", "hierarchy") and as_json:
                payload: object = [r.model_dump(mode="json") for r in rows]
                if stop_at == "hierarchy":
                    payload = [h.model_dump(mode="json") for h in heading_tree(rows)]
                click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
                return
            if stop_at == "parse":
                table = Table(title=f"{len(rows)} rows ({profile.routing.strategy})")
                for col in ("order", "type", "level", "text", "resource", "location"):
                    table.add_column(col, overflow="fold")
                for r in rows:
                    table.add_row(
                        str(r.order),
                        r.row_type.value,
                        str(r.heading_level or ""),
                        r.text[:100],
                        r.resource_path or "",
                        r.source_location,
                    )
                console.print(table)
            elif stop_at == "hierarchy":
                tree = Tree(f"[bold]{file.name}[/]")

                def grow(parent: Tree, nodes: list[HeadingNode]) -> None:
                    for n in nodes:
                        grow(
                            parent.add(f"{n.title} [dim](level {n.level}, row {n.order})[/]"),
                            n.children,
                        )

                grow(tree, heading_tree(rows))
                console.print(tree)
            else:
                result, _ = pipeline.chunk_document(rows, profile, settings)
                if as_json:
                    click.echo(
                        json.dumps(
                            [c.model_dump(mode="json") for c in result.chunks],
                            indent=2,
                            ensure_ascii=False,
                        )
                    )
                    return
                table = Table(title=f"{len(result.chunks)} chunks")
                for col in ("chunk_id", "type", "tokens", "path", "content"):
                    table.add_column(col, overflow="fold")
                for c in result.chunks:
                    table.add_row(
                        c.chunk_id[:12],
                        c.chunk_type.value,
                        str(c.metadata.tokens),
                        " > ".join(c.hierarchy_path),
                        c.content[:120].replace("\n", " "),
                    )
                console.print(table)
            for d in ctx.diagnostics.items:
                err_console.print(f"[yellow]{d.stage}/{d.code}[/]: {d.message}")
    except CorpusError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        sys.exit(2)


@main.command("publish")
@click.option(
    "--namespace", "-n", "namespaces", multiple=True, help="Namespace(s) to publish (default: all)."
)
def publish_command(namespaces: tuple[str, ...]) -> None:
    """Publish the current artifacts as a new revision (only when something changed)."""
    from corpus_pipeline.publish.service import publish

    for report in publish(_settings(), list(namespaces) or None):
        pointer = report.pointer
        console.print(
            f"{report.namespace}: revision {pointer.revision} "
            f"({len(report.published)} published, {len(report.removed)} removed, {report.unchanged} unchanged; "
            f"{pointer.chunks} chunks) in {report.seconds:.2f}s"
        )


def _parse_types(value: str | None) -> list[str]:
    if not value:
        return ["text", "image", "table"]
    return [v.strip() for v in value.split(",") if v.strip()]


@main.command("search")
@click.argument("query")
@click.option(
    "--namespace", "-n", default=None, help="Namespace to search (default CORPUS_NAMESPACE)."
)
@click.option("--top-k", "-k", default=10, show_default=True, type=int)
@click.option(
    "--types", default=None, help="Allowed chunk types, comma-separated (text,table,image)."
)
@click.option(
    "--exclude-document",
    "exclude_documents",
    multiple=True,
    help="Document id to exclude (repeatable).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the response object the HTTP API returns."
)
@click.option(
    "--mode", type=click.Choice(["classic", "agentic"]), default="classic", show_default=True
)
@click.option(
    "--budget", default=8000, show_default=True, type=int, help="Token budget (agentic mode)."
)
def search_command(
    query: str,
    namespace: str | None,
    top_k: int,
    types: str | None,
    exclude_documents: tuple[str, ...],
    as_json: bool,
    mode: str,
    budget: int,
) -> None:
    """Search the published revision: ranked results with citations (classic), or cited
    evidence under a token budget (agentic)."""
    if mode == "agentic":
        _agentic_search(query, namespace, top_k, types, exclude_documents, as_json, budget)
        return
    from pydantic import ValidationError

    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search
    from query_service.snapshot.revision import NamespaceNotFound, open_revision

    settings = _settings(namespace)
    try:
        request = SearchRequest(
            query=query,
            namespace=namespace or settings.namespace,
            top_k=top_k,
            chunk_types=_parse_types(types),  # type: ignore[arg-type]
            exclude_document_ids=list(exclude_documents),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "request"
        raise click.UsageError(f"{field}: {first['msg']}") from exc
    try:
        revision = open_revision(settings.published_dir, request.namespace)
    except NamespaceNotFound as exc:
        raise click.UsageError(f"{exc} (run `corpus ingest` or `corpus publish` first)") from exc
    response = classic_search(revision, request)
    if as_json:
        click.echo(response.model_dump_json(indent=2))
        return
    console.print(
        f"[dim]{len(response.results)} results for[/] {query!r} [dim]in '{response.namespace}' "
        f"revision {response.revision} ({response.took_ms:.1f} ms)[/]"
    )
    for rank, r in enumerate(response.results, 1):
        where = " > ".join(r.section_path) or "(document start)"
        pages = f" p.{','.join(map(str, r.pages))}" if r.pages else ""
        console.print(
            f"\n[bold]{rank}.[/] [cyan]{r.source_file_name}[/]{pages} — {where} [dim]({r.chunk_type.value}, score {r.score:.4f}, {r.chunk_id})[/]"
        )
        text = r.content if len(r.content) <= 400 else r.content[:400] + " …"
        console.print(text, markup=False)
        if len(r.occurrences) > 1:
            others = ", ".join(
                f"{o.source_file_name}: {' > '.join(o.section_path)}" for o in r.occurrences[1:]
            )
            console.print(f"[dim]also in: {others}[/]")


@main.command("delete")
@click.argument("document_id")
def delete_command(document_id: str) -> None:
    """Delete a document: forget its record and artifacts, then publish its namespace without it."""
    from corpus_pipeline.orchestration.ingest import forget_document, publish_namespace_run

    settings = _settings()
    try:
        record = forget_document(settings, document_id)
    except CorpusError as exc:
        raise click.UsageError(str(exc)) from exc
    outcome = publish_namespace_run(settings, record.namespace)
    if outcome.error:
        err_console.print(f"[red]publish failed:[/] {outcome.error}")
        sys.exit(1)
    console.print(
        f"deleted {document_id} ({record.source_file_name}); namespace '{record.namespace}' is at revision {outcome.revision}"
    )


@main.command("gc")
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
    from datetime import timedelta

    from corpus_pipeline.storage.gc import collect_garbage

    try:
        report = collect_garbage(
            _settings(), dry_run=dry_run, min_age=timedelta(minutes=min_age_minutes)
        )
    except CorpusError as exc:
        raise click.UsageError(str(exc)) from exc
    verb = "would remove" if dry_run else "removed"
    for item in report.removed:
        console.print(f"{verb} {item.kind} {escape(item.location)} ({item.size_bytes:,} bytes)")
    console.print(report.summary())


def _agentic_search(
    query: str,
    namespace: str | None,
    top_k: int,
    types: str | None,
    exclude_documents: tuple[str, ...],
    as_json: bool,
    budget: int,
) -> None:
    from pydantic import ValidationError

    from corpus_pipeline.contracts.agentic import AgenticRequest
    from query_service.config import ServiceSettings
    from query_service.retrieval.agentic import BudgetTooSmall, agentic_search
    from query_service.retrieval.planner import make_navigator, make_planner
    from query_service.snapshot.records import RunRecorder
    from query_service.snapshot.revision import NamespaceNotFound, open_revision

    settings = _settings(namespace)
    try:
        request = AgenticRequest(
            mode="agentic",
            query=query,
            namespace=namespace or settings.namespace,
            top_k=top_k,
            token_budget=budget,
            chunk_types=_parse_types(types),  # type: ignore[arg-type]
            exclude_document_ids=list(exclude_documents),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise click.UsageError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc
    try:
        revision = open_revision(settings.published_dir, request.namespace)
    except NamespaceNotFound as exc:
        raise click.UsageError(f"{exc} (run `corpus ingest` or `corpus publish` first)") from exc
    planner, model_tokens = make_planner(ServiceSettings(home=settings.home))
    recorder = RunRecorder(settings.home / "runs", request.namespace)
    try:
        navigator = make_navigator(ServiceSettings(home=settings.home))
        response = agentic_search(revision, request, planner, recorder, model_tokens, navigator)
    except BudgetTooSmall as exc:
        raise click.UsageError(f"budget: {exc}") from exc
    recorder.write()
    if as_json:
        click.echo(response.model_dump_json(indent=2))
        return
    console.print(response.evidence_text, markup=False)
    steps = ", ".join(f"{p.id} {p.status} ({p.tokens} tokens)" for p in response.plan)
    console.print(
        f"\n[dim]plan ({response.planner}): {steps}; budget {response.budget.used}/{response.budget.limit}; "
        f"stop: {response.stop_reason}; {len(response.results)} results, {len(response.fallback_results)} fallback[/]"
    )


@main.command("runs")
@click.option("--namespace", "-n", default=None)
@click.option("--limit", default=20, show_default=True, type=int)
def runs_command(namespace: str | None, limit: int) -> None:
    """List recent agentic runs (append-only records under $CORPUS_HOME/runs)."""
    from query_service.snapshot.records import read_runs

    settings = _settings()
    table = read_runs(settings.home / "runs", namespace)
    rows = [r for r in table.to_pylist() if r["record_type"] == "run"]
    rows.sort(key=lambda r: r["created_at"], reverse=True)
    out = Table(title=f"{len(rows)} runs")
    for col in ("created_at", "run_id", "query", "tokens", "latency ms", "outcome"):
        out.add_column(col, overflow="fold")
    for r in rows[:limit]:
        query = json.loads(r["inputs"]).get("query", "")
        outcome = json.loads(r["outputs"]).get("stop_reason", "")
        out.add_row(
            str(r["created_at"])[:19],
            r["run_id"],
            query[:60],
            str(r["tokens"]),
            f"{r['latency_ms']:.0f}",
            outcome,
        )
    console.print(out)


@main.command("ingest-api")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8001, show_default=True, type=int)
def ingest_api_command(host: str, port: int) -> None:
    """Serve the upload API (POST /v1/documents, GET /v1/jobs/{id}); jobs run in the background."""
    import uvicorn

    from corpus_pipeline.access.keys import UnsafeBinding, check_binding
    from corpus_pipeline.upload_api.app import create_ingest_app

    settings = _settings()
    try:
        click.echo(check_binding(settings.keys_file, settings.open_access, host), err=True)
    except UnsafeBinding as exc:
        raise click.UsageError(str(exc)) from None
    uvicorn.run(create_ingest_app(settings), host=host, port=port, log_level="info")


@main.command("doctor")
@click.option("--query-url", default="http://127.0.0.1:8000", show_default=True)
@click.option("--ingest-url", default="http://127.0.0.1:8001", show_default=True)
def doctor_command(query_url: str, ingest_url: str) -> None:
    """One line per supporting part of this configuration; exit 1 when a required part fails."""
    from corpus_pipeline.cli.doctor import run_checks

    settings = _settings()
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


def _register_service_commands() -> None:
    from query_service.api.commands import COMMANDS

    for command in COMMANDS:
        main.add_command(command)


_register_service_commands()
