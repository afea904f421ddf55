"""`corpus inspect` and `corpus debug`: a document's stored artifacts, or one file run through
the pipeline functions in-process (imported inside the command: they pull in the parsers)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click
from rich.table import Table
from rich.tree import Tree

from corpus_pipeline.cli.output import CommandError, console, err_console, read_settings
from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.contracts import DocNav, HeadingNode, Manifest, SectionNode


def _section_tree(parent: Tree, sections: list[SectionNode]) -> None:
    for s in sections:
        branch = parent.add(f"[bold]{s.title}[/] [dim](level {s.level}, {s.chunk_count} chunks)[/]")
        _section_tree(branch, s.children)


@click.command("inspect")
@click.argument("document_id")
def inspect_command(document_id: str) -> None:
    """Print a document's section tree and chunk counts from its artifacts."""
    settings = read_settings()
    directory = settings.artifacts_dir / document_id
    if not (directory / "manifest.json").is_file():
        raise CommandError(f"no artifacts for '{document_id}' under {settings.artifacts_dir}")
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


@click.command("debug")
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
    from corpus_pipeline.pipeline import stages as pipeline
    from corpus_pipeline.structure.hierarchy import heading_tree

    settings = read_settings()
    try:
        profiled = pipeline.run_profile(file, file.name)
        profile = profiled.profile
        if stop_at == "profile":
            click.echo(profile.model_dump_json(indent=2))
            return
        with tempfile.TemporaryDirectory(prefix="corpus-debug-") as tmp:
            ctx = pipeline.parse_rows(profiled, Path(tmp))
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
        raise CommandError(f"{file.name}: {exc}") from exc


COMMANDS = [inspect_command, debug_command]
