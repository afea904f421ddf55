"""`corpus eval`: a question file through the query path, scored, with the naive floor beside it;
`corpus eval --compare A.json B.json`: two runs' differences.

The evaluation modules are imported inside the command, keeping `corpus --help` fast. Exit 1
when the run cannot be made (an unreadable or invalid question file, a namespace without a
published revision, a service that refuses the key, no documents for the floor), with one
message naming what failed; exit 2 only for bad usage.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.progress import Progress
from rich.table import Table

from corpus_pipeline.cli.options import FILE, FOLDER, mode_options, namespace_option
from corpus_pipeline.cli.output import console, err_console, fail, read_settings
from corpus_pipeline.common.settings import CorpusSettings

if TYPE_CHECKING:
    from corpus_pipeline.contracts.evaluation import EvalRun, Metrics
    from corpus_pipeline.evaluation.baseline import NaiveBaseline
    from corpus_pipeline.evaluation.compare import Comparison
    from corpus_pipeline.evaluation.runner import QueryPath, RunSettings

LOCAL_KEY = Path("service") / "local_key.txt"
FIGURES = ("hit_at_1", "hit_at_5", "hit_at_10", "mrr_at_10", "ndcg_at_10", "doc_hit_at_10")
TITLES = ("hit@1", "hit@5", "hit@10", "MRR@10", "nDCG@10", "doc@10")


def _api_key(settings: CorpusSettings, key_file: Path | None) -> str:
    """The key for `--url`: `--api-key-file`, else CORPUS_API_KEY, else the local key that
    `make run` wrote; none is bad usage."""
    if key_file is not None:
        try:
            key = key_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            fail("corpus eval", f"{key_file}: cannot be read ({exc.strerror or exc})")
        if not key:
            fail("corpus eval", f"{key_file}: holds no key")
        return key
    if key := os.environ.get("CORPUS_API_KEY", "").strip():
        return key
    local = settings.home / LOCAL_KEY
    if local.is_file() and (key := local.read_text(encoding="utf-8").strip()):
        return key
    raise click.UsageError("--url needs an API key: --api-key-file PATH or CORPUS_API_KEY")


def _query_path(
    settings: CorpusSettings, namespace: str, url: str | None, key_file: Path | None
) -> QueryPath:
    from corpus_pipeline.evaluation.runner import InProcess, OverHttp
    from query_service.config import ServiceSettings

    if url:
        return OverHttp(url, _api_key(settings, key_file))
    return InProcess(ServiceSettings(home=settings.home), namespace)


def _baseline(settings: CorpusSettings, namespace: str, docs: Path | None) -> NaiveBaseline:
    from corpus_pipeline.evaluation.baseline import (
        NaiveBaseline,
        folder_documents,
        stored_documents,
    )

    if docs is not None:
        if not docs.is_dir():
            fail("corpus eval", f"--docs {docs}: no such folder")
        baseline = NaiveBaseline.build(folder_documents(docs))
        where = str(docs)
    else:
        baseline = NaiveBaseline.build(stored_documents(settings, namespace))
        where = f"the sources stored for namespace '{namespace}'"
    if not baseline.windows:
        fail("corpus eval", f"naive-bm25: no document with plain text in {where} (give --docs DIR)")
    if baseline.unreadable:
        names = ", ".join(sorted(baseline.unreadable)[:5])
        more = len(baseline.unreadable) - 5
        err_console.print(
            f"[dim]naive-bm25: {len(baseline.unreadable)} documents without plain text "
            f"({names}{f', … {more} more' if more > 0 else ''})[/]"
        )
    return baseline


def _default_out(settings: CorpusSettings, questions: Path, mode: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return settings.home / "eval" / f"{questions.stem}-{mode}-{stamp}"


def _figures(m: Metrics) -> list[str]:
    return [str(m.n), *(f"{getattr(m, f):.3f}" for f in FIGURES)]


def _summary(run: EvalRun) -> None:
    table = Table(title=f"{run.questions_file}: namespace '{run.namespace}' ({run.target})")
    for title in ("system", "n", *TITLES):
        table.add_column(title, justify="left" if title == "system" else "right", no_wrap=True)
    for name, system in run.systems.items():
        table.add_row(name, *_figures(system.overall))
    console.print(table)
    for name, system in run.systems.items():
        m = system.overall
        if m.latency_p50_ms is not None and m.latency_p95_ms is not None:
            tokens = (
                f", evidence {m.evidence_tokens_mean:.0f} tokens per question"
                if m.evidence_tokens_mean is not None
                else ""
            )
            console.print(
                f"{name}: latency p50 {m.latency_p50_ms:.1f} ms, p95 {m.latency_p95_ms:.1f} ms"
                f"{tokens}"
            )
    kinds = Table(title="per question kind")
    for title in ("kind", "system", "n", *TITLES):
        kinds.add_column(
            title,
            justify="left" if title in ("kind", "system") else "right",
            overflow="fold",
        )
    for kind in sorted({k for s in run.systems.values() for k in s.by_kind}):
        for name, system in run.systems.items():
            if kind in system.by_kind:
                kinds.add_row(kind, name, *_figures(system.by_kind[kind]))
    console.print(kinds)


def _print_comparison(comparison: Comparison, a: Path, b: Path) -> None:
    for note in comparison.notes:
        err_console.print(f"[yellow]note:[/] {note}")
    for system, groups in comparison.groups.items():
        table = Table(title=f"{system}: A = {a}, B = {b} (B − A)")
        for title in ("kind", "n A", "n B", *TITLES):
            table.add_column(title, justify="left" if title == "kind" else "right")
        for group, (ma, mb) in groups.items():
            cells = [
                "–" if ma is None or mb is None else f"{getattr(mb, f) - getattr(ma, f):+.3f}"
                for f in FIGURES
            ]
            table.add_row(group, str(ma.n if ma else 0), str(mb.n if mb else 0), *cells)
        console.print(table)
    if not comparison.flips:
        console.print("no question flipped hit@1, hit@5 or hit@10")
        return
    n = len(comparison.flips)
    console.print(f"{n} question{'' if n == 1 else 's'} flipped (rank A → rank B):")
    for f in comparison.flips:
        change = ("gained " if f.gained else "lost ") + ", ".join(f"hit@{k}" for k in f.cutoffs)
        console.print(
            f"  {f.system}  {f.id}  ({f.kind})  {f.rank_a or 'miss'} → {f.rank_b or 'miss'}  "
            f"{change}  {f.question}",
            markup=False,
            highlight=False,
        )


def _compare(a: Path, b: Path) -> None:
    from corpus_pipeline.evaluation.compare import ResultsFileError, compare, load_run

    try:
        comparison = compare(load_run(a), load_run(b))
    except ResultsFileError as exc:
        fail("corpus eval", exc)
    _print_comparison(comparison, a, b)


@click.command("eval")
@click.argument("questions", required=False, type=FILE)
@namespace_option("Namespace asked (default CORPUS_NAMESPACE).")
@mode_options
@click.option("--top-k", "-k", default=10, show_default=True, type=click.IntRange(1, 100))
@click.option(
    "--baseline",
    type=click.Choice(["naive-bm25"]),
    help="Also run the naive floor on the same questions.",
)
@click.option(
    "--docs",
    type=FOLDER,
    help="Folder of the documents the floor reads (default: the namespace's stored sources).",
)
@click.option(
    "--out",
    type=FOLDER,
    help="Folder for results.json, report.md and plots (default $CORPUS_HOME/eval/…).",
)
@click.option(
    "--url",
    envvar="CORPUS_QUERY_URL",
    help="A running query service to ask over HTTP (default: in-process).",
)
@click.option(
    "--api-key-file", type=FILE, help="File holding the API key for --url (default CORPUS_API_KEY)."
)
@click.option(
    "--per-document",
    is_flag=True,
    help="Ask each question within its gold document (filters.document_ids, resolved from its "
    "file name), as an agent that holds the document does.",
)
@click.option(
    "--compare",
    nargs=2,
    type=FILE,
    help="Compare two results.json files instead of running: A B.",
)
def eval_command(
    questions: Path | None,
    namespace: str | None,
    mode: str,
    budget: int,
    top_k: int,
    baseline: str | None,
    docs: Path | None,
    out: Path | None,
    url: str | None,
    api_key_file: Path | None,
    per_document: bool,
    compare: tuple[Path, Path] | None,
) -> None:
    """Ask every question of QUESTIONS (JSON Lines, docs/evaluation.md) through the query
    service and score the answers: hit@1/5/10, MRR@10, nDCG@10, doc-hit@10, latency, per kind
    and per document type; writes results.json and report.md."""
    if compare:
        if questions is not None:
            raise click.UsageError("give either QUESTIONS or --compare A B, not both")
        _compare(*compare)
        return
    if questions is None:
        raise click.UsageError("missing QUESTIONS (or --compare A B)")
    if docs is not None and baseline is None:
        raise click.UsageError("--docs is for --baseline naive-bm25")
    from corpus_pipeline.evaluation.report import write_report
    from corpus_pipeline.evaluation.runner import RunSettings

    settings = read_settings(namespace)
    run = RunSettings(
        settings.namespace,
        "agentic" if mode == "agentic" else "classic",
        top_k,
        budget,
        per_document=per_document,
    )
    result = _evaluated(settings, run, questions, url, api_key_file, baseline, docs)
    _summary(result)
    setting = f"{mode}-per-document" if per_document else mode
    for written in write_report(result, out or _default_out(settings, questions, setting)):
        console.print(f"wrote {written}")


def _evaluated(
    settings: CorpusSettings,
    run: RunSettings,
    questions: Path,
    url: str | None,
    key_file: Path | None,
    baseline: str | None,
    docs: Path | None,
) -> EvalRun:
    """The run: the questions through the query path, then through the floor when asked."""
    from corpus_pipeline.evaluation.questions import QuestionFileError, load_questions
    from corpus_pipeline.evaluation.runner import EvalError, evaluate

    try:
        question_file = load_questions(questions)
    except QuestionFileError as exc:
        fail("corpus eval", exc)
    try:
        path = _query_path(settings, run.namespace, url, key_file)
        try:
            floor = _baseline(settings, run.namespace, docs) if baseline else None
            with Progress(console=err_console, transient=True) as progress:
                task = progress.add_task("asking", total=len(question_file.questions))
                result, revisions = evaluate(
                    question_file,
                    path,
                    run,
                    floor,
                    lambda done, _: progress.update(task, completed=done),
                )
        finally:
            path.close()
    except EvalError as exc:
        fail("corpus eval", exc)
    if len(revisions) > 1:
        err_console.print(f"[yellow]note:[/] revisions {sorted(revisions)} answered during the run")
    return result


COMMANDS = [eval_command]
