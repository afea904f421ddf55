"""`corpus formats`: what this deployment can parse, from the parsers' registry
(`parsing.formats`) with LibreOffice and Tesseract looked up now; `--json` prints the answer of
`GET /v1/supported-formats`."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from corpus_pipeline.cli.options import json_option
from corpus_pipeline.cli.output import console, read_settings
from corpus_pipeline.contracts.formats import FormatSupport, SupportedFormats

_TOOLS = {"libreoffice": "LibreOffice", "tesseract": "Tesseract"}


@click.command("formats")
@json_option("The answer of GET /v1/supported-formats.")
def formats_command(as_json: bool) -> None:
    """List the formats this deployment parses, what each keeps, and what is missing."""
    from corpus_pipeline.parsing.formats import capabilities

    report = capabilities(read_settings())
    if as_json:
        click.echo(report.model_dump_json())
        return
    console.print(_table(report))
    _print_tools_and_containers(report)


def _table(report: SupportedFormats) -> Table:
    table = Table(show_lines=False, header_style="bold")
    table.add_column("format", min_width=12)
    table.add_column("extensions", min_width=10, max_width=22)
    table.add_column("headings", ratio=1, min_width=16)
    for column in ("tables", "images", "OCR", "available"):
        table.add_column(column, no_wrap=True)
    for entry in report.formats:
        table.add_row(
            escape(entry.name),
            " ".join(f".{ext}" for ext in entry.extensions),
            escape(entry.headings or "-"),
            _tables(entry),
            "yes" if entry.images else "no",
            {True: "on", False: "[yellow]off[/]", None: "-"}[entry.ocr],
            "yes" if entry.available else f"[red]no[/]: needs {_TOOLS[entry.requires or '']}",
        )
    return table


def _tables(entry: FormatSupport) -> str:
    if not entry.tables:
        return "no"
    return "with spans" if entry.table_spans else "yes"


def _print_tools_and_containers(report: SupportedFormats) -> None:
    """The external programs (what each enables, and how to get it when missing), then the
    files that are split into documents instead of parsed."""
    for tool in report.tools:
        mark = "[green]ok[/]" if tool.available else "[yellow]--[/]"
        console.print(
            f"{mark} {_TOOLS[tool.tool]:<12} {escape(tool.detail)}; for {escape(tool.enables)}"
        )
    for container in report.containers:
        extensions = " ".join(f".{ext}" for ext in container.extensions)
        console.print(f"   {container.name} ({extensions}): {escape(container.becomes)}")


COMMANDS = [formats_command]
