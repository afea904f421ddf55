"""What a run leaves behind: `results.json` (the `EvalRun` contract, keys in its field order,
groups sorted) and `report.md` with two plots: per-kind bars and the latency histogram.

The report puts every system of the run side by side (the service, and the naive floor when
asked for), overall, per question kind and per document type, then lists the questions the
service missed. The plots are PNG files beside it, drawn with matplotlib's Agg backend (no
display needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from corpus_pipeline.contracts.evaluation import EvalRun, Metrics, SystemResult

RESULTS_FILE = "results.json"
REPORT_FILE = "report.md"
KIND_PLOT = "by_kind.png"
LATENCY_PLOT = "latency.png"
# Metrics field → column title, in report order.
COLUMNS = {
    "hit_at_1": "hit@1",
    "hit_at_5": "hit@5",
    "hit_at_10": "hit@10",
    "mrr_at_10": "MRR@10",
    "ndcg_at_10": "nDCG@10",
    "doc_hit_at_10": "doc-hit@10",
}
MISSES_LISTED = 50


def write_results(run: EvalRun, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_FILE
    path.write_text(run.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def _cell(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _row(label: Sequence[str], m: Metrics, extra: bool) -> str:
    cells = [*label, str(m.n), *(_cell(getattr(m, f)) for f in COLUMNS)]
    if extra:
        cells += [
            _cell(m.latency_p50_ms, 1),
            _cell(m.latency_p95_ms, 1),
            _cell(m.evidence_tokens_mean, 0),
        ]
    return "| " + " | ".join(cells) + " |"


def _table(head: Sequence[str], extra: bool = False) -> list[str]:
    titles = [*head, "n", *COLUMNS.values()]
    if extra:
        titles += ["p50 ms", "p95 ms", "evidence tokens"]
    return ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]


def _groups(systems: dict[str, SystemResult], attribute: str, title: str) -> list[str]:
    names = sorted({g for s in systems.values() for g in getattr(s, attribute)})
    lines = _table([title, "system"])
    for group in names:
        for name, system in systems.items():
            metrics = getattr(system, attribute).get(group)
            if metrics is not None:
                lines.append(_row([group, name], metrics, extra=False))
    return lines


def _misses(run: EvalRun) -> list[str]:
    service = run.systems[run.mode]
    floor = run.systems.get("naive-bm25")
    floor_ranks = {q.id: q.first_relevant_rank for q in floor.questions} if floor else {}
    missed = [q for q in service.questions if q.first_relevant_rank is None]
    if not missed:
        return [f"The service found a relevant result in its top {run.top_k} for every question."]
    lines = [f"{len(missed)} questions without a relevant result in the top {run.top_k}:", ""]
    for q in missed[:MISSES_LISTED]:
        top = ", ".join(dict.fromkeys(r.source_file_name for r in q.results[:3])) or "no results"
        floor_note = ""
        if q.id in floor_ranks and floor_ranks[q.id] is not None:
            floor_note = f"; the floor found it at rank {floor_ranks[q.id]}"
        reason = f"; {q.error}" if q.error else ""
        lines.append(f"- `{q.id}` ({q.kind}) {q.question} — top: {top}{floor_note}{reason}")
    if len(missed) > MISSES_LISTED:
        lines.append(f"- … and {len(missed) - MISSES_LISTED} more (results.json lists them all)")
    return lines


def report_markdown(run: EvalRun, plots: Sequence[str]) -> str:
    budget = f", token budget {run.budget}" if run.budget is not None else ""
    scope = (
        "each question within its gold document"
        if run.setting == "per document"
        else "every question of the whole namespace"
    )
    lines = [
        f"# corpus eval: {run.questions_file}",
        "",
        f"Namespace `{run.namespace}`, revision {run.revision if run.revision else '–'}, "
        f"asked {run.target} in {run.mode} mode (top {run.top_k}{budget}), {scope}; question file "
        f"sha256 `{run.questions_sha256[:16]}…`. Relevance: answer strings, else gold pages, "
        "else the document (docs/evaluation.md).",
        "",
        "## Overall",
        "",
        *_table(["system"], extra=True),
        *(_row([name], s.overall, extra=True) for name, s in run.systems.items()),
        "",
        "## Per question kind",
        "",
        *_groups(run.systems, "by_kind", "kind"),
        "",
        "## Per document type",
        "",
        *_groups(run.systems, "by_doc_type", "type"),
        "",
    ]
    for plot in plots:
        lines += [f"![{plot}]({plot})", ""]
    lines += ["## Misses", "", *_misses(run), ""]
    return "\n".join(lines)


def plot_by_kind(run: EvalRun, path: Path) -> None:
    """hit@10 and MRR@10 per question kind, one bar per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({k for s in run.systems.values() for k in s.by_kind})
    fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 1.2 * len(kinds) + 4), 4.5), sharey=True)
    width = 0.8 / max(len(run.systems), 1)
    for ax, field in zip(axes, ("hit_at_10", "mrr_at_10"), strict=True):
        for i, (name, system) in enumerate(run.systems.items()):
            values = [
                getattr(system.by_kind[k], field) if k in system.by_kind else 0.0 for k in kinds
            ]
            ax.bar([x + i * width for x in range(len(kinds))], values, width, label=name)
        ax.set_title(COLUMNS[field])
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(kinds))])
        ax.set_xticklabels(kinds, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
    axes[0].legend(loc="lower left")
    fig.suptitle(f"{run.questions_file}: per question kind")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_latency(run: EvalRun, path: Path) -> bool:
    """A histogram of the per-question latency of each system that measured one (False, and
    no file, when none did)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = {
        name: [q.latency_ms for q in s.questions if q.latency_ms is not None]
        for name, s in run.systems.items()
    }
    measured = {name: values for name, values in measured.items() if values}
    if not measured:
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, values in measured.items():
        ax.hist(values, bins=30, alpha=0.7, label=name)
        overall = run.systems[name].overall
        for q, value in (("p50", overall.latency_p50_ms), ("p95", overall.latency_p95_ms)):
            if value is not None:
                ax.axvline(value, linestyle="--", linewidth=1)
                ax.annotate(f"{q} {value:.0f} ms", (value, ax.get_ylim()[1] * 0.9), fontsize=8)
    ax.set_xlabel("latency per question (ms)")
    ax.set_ylabel("questions")
    ax.legend()
    ax.set_title(f"{run.questions_file}: latency ({run.target})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def write_report(run: EvalRun, out: Path) -> list[Path]:
    """results.json, the plots and report.md in `out`: the paths written."""
    written = [write_results(run, out)]
    plots = [KIND_PLOT]
    plot_by_kind(run, out / KIND_PLOT)
    written.append(out / KIND_PLOT)
    if plot_latency(run, out / LATENCY_PLOT):
        plots.append(LATENCY_PLOT)
        written.append(out / LATENCY_PLOT)
    report = out / REPORT_FILE
    report.write_text(report_markdown(run, plots), encoding="utf-8")
    written.append(report)
    return written
