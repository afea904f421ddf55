"""`corpus search`: the published revision searched from the command line (classic or
agentic). The query service's retrieval modules are imported inside the command, keeping
`corpus --help` fast."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import click
from pydantic import ValidationError
from rich.markup import escape
from rich.text import Text

from corpus_pipeline.cli.options import json_option, mode_options, namespace_option
from corpus_pipeline.cli.output import CommandError, console, read_settings
from corpus_pipeline.common.settings import CorpusSettings
from query_service.config import ServiceSettings

if TYPE_CHECKING:
    from corpus_pipeline.cli.snippets import Snippet
    from corpus_pipeline.contracts.agentic import AgenticRequest
    from corpus_pipeline.contracts.search import SearchRequest, SearchResponse
    from query_service.snapshot.revision import Revision

R = TypeVar("R", "SearchRequest", "AgenticRequest")


def _parse_types(value: str | None) -> list[str]:
    if not value:
        return ["text", "image", "table"]
    return [v.strip() for v in value.split(",") if v.strip()]


def _invalid_request(exc: ValidationError) -> click.UsageError:
    """The first validation error as 'field: message'."""
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "request"
    return click.UsageError(f"{field}: {first['msg']}")


def _prepared(
    model: type[R],
    query: str,
    namespace: str | None,
    top_k: int,
    types: str | None,
    exclude_documents: tuple[str, ...],
    **fields: object,
) -> tuple[CorpusSettings, R, Revision]:
    """The settings, the request the options make (a usage error when it is invalid) and the
    published revision of its namespace (a usage error when there is none)."""
    settings = read_settings(namespace)
    try:
        request = model(
            query=query,
            namespace=namespace or settings.namespace,
            top_k=top_k,
            chunk_types=_parse_types(types),
            exclude_document_ids=list(exclude_documents),
            **fields,
        )
    except ValidationError as exc:
        raise _invalid_request(exc) from exc
    return settings, request, _open_published(settings, request.namespace)


def _open_published(settings: CorpusSettings, namespace: str) -> Revision:
    from query_service.snapshot.revision import NamespaceNotFound, open_revision

    try:
        return open_revision(settings.published_dir, namespace)
    except NamespaceNotFound as exc:
        raise CommandError(f"{exc} (run `corpus ingest` or `corpus publish` first)") from exc


@click.command("search")
@click.argument("query")
@namespace_option("Namespace to search (default CORPUS_NAMESPACE).")
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
@json_option("Print the response object the HTTP API returns.")
@mode_options
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
        from corpus_pipeline.contracts.agentic import AgenticRequest

        settings, agentic, revision = _prepared(
            AgenticRequest,
            query,
            namespace,
            top_k,
            types,
            exclude_documents,
            mode="agentic",
            token_budget=budget,
        )
        _agentic_search(settings, agentic, revision, as_json)
        return
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search

    _, request, revision = _prepared(
        SearchRequest, query, namespace, top_k, types, exclude_documents
    )
    response = classic_search(revision, request)
    if as_json:
        click.echo(response.model_dump_json(indent=2))
        return
    _print_results(response)


def _print_results(response: SearchResponse) -> None:
    """Each result as a person reads it: rank, file, pages, section path and kind, then a
    snippet with the query's words marked (bold on a terminal, between ** when piped)."""
    from corpus_pipeline.cli.snippets import snippet

    console.print(
        f"[dim]{len(response.results)} results for[/] {escape(repr(response.query))} [dim]in "
        f"'{response.namespace}' revision {response.revision} ({response.took_ms:.1f} ms)[/]",
        highlight=False,
    )
    for rank, r in enumerate(response.results, 1):
        where = " > ".join(r.section_path) or "(document start)"
        pages = f"  {'pp' if len(r.pages) > 1 else 'p'}. {_pages(r.pages)}" if r.pages else ""
        console.print(
            f"\n[bold]{rank}.[/] [cyan]{escape(r.source_file_name)}[/]{pages}  {escape(where)}  "
            f"[dim]({r.chunk_type.value}, score {r.score:.4f})[/]",
            highlight=False,
        )
        console.print(_marked(snippet(r.content, response.query)))
        if len(r.occurrences) > 1:
            others = ", ".join(
                f"{o.source_file_name}: {' > '.join(o.section_path)}" for o in r.occurrences[1:]
            )
            console.print(f"[dim]also in: {escape(others)}[/]")


def _pages(pages: list[int]) -> str:
    """'4' or '4-6' for consecutive pages, else '4, 7'."""
    if len(pages) > 1 and pages == list(range(pages[0], pages[-1] + 1)):
        return f"{pages[0]}-{pages[-1]}"
    return ", ".join(map(str, pages))


def _marked(found: Snippet) -> Text:
    """The snippet, indented, its marked words bold on a terminal; plain text with the marks
    as ** when stdout is not one (rich drops styles there)."""
    if not console.is_terminal:
        return Text("   " + found.plain())
    text = Text("   " + found.text)
    for start, end in found.marks:
        text.stylize("bold yellow", start + 3, end + 3)
    return text


def _agentic_search(
    settings: CorpusSettings, request: AgenticRequest, revision: Revision, as_json: bool
) -> None:
    from query_service.retrieval.agentic import BudgetTooSmall, agentic_search
    from query_service.retrieval.planner import make_navigator, make_planner
    from query_service.snapshot.records import RunRecorder

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
        f"stop: {response.stop_reason}; {len(response.results)} passages, {response.budget.unread} hits unread[/]"
    )


COMMANDS = [search_command]
