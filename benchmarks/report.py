"""`python -m benchmarks.report`: docs/benchmarks.md from the result files in benchmarks/results.

The figures a reader looks for, on one page, each next to the file it came from and its date,
so the README and the docs quote results instead of copying them. Only the results are read
(no benchmark runs): the page changes exactly when a result file does. The machine is the one
the results record; for results that record none, the machine generating the page is named,
labelled as such.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, RESULTS, machine_facts

OUT = REPO / "docs" / "benchmarks.md"
Row = dict[str, Any]
Lines = list[str]


def _committed_at(path: Path) -> datetime | None:
    """When the commit that last wrote `path` was made, if the file is as committed."""

    def git(*args: str) -> str:
        run = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
        return run.stdout.strip() if run.returncode == 0 else ""

    relative = str(path.resolve().relative_to(REPO))
    if git("status", "--porcelain", "--", relative) or not git("ls-files", "--", relative):
        return None
    stamp = git("log", "-1", "--format=%cI", "--", relative)
    return datetime.fromisoformat(stamp).astimezone(UTC) if stamp else None


@dataclass(frozen=True)
class Result:
    """One result file: its name, contents and date."""

    path: Path
    data: Row

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def date(self) -> str:
        """Its recorded `generated_at`; else, for a file as committed, the date of the commit
        that last wrote it (a checkout's file dates are the clone's); else its modification
        time (a run just wrote it). The last two are labelled."""
        recorded = self.data.get("generated_at")
        if isinstance(recorded, str):
            moment = datetime.fromisoformat(recorded).astimezone(UTC)
            return moment.strftime("%Y-%m-%d %H:%M UTC")
        committed = _committed_at(self.path)
        if committed is not None:
            return committed.strftime("%Y-%m-%d %H:%M UTC") + " (commit date)"
        moment = datetime.fromtimestamp(self.path.stat().st_mtime, UTC)
        return moment.strftime("%Y-%m-%d %H:%M UTC") + " (file date)"

    def source(self) -> str:
        return f"`benchmarks/results/{self.name}`, {self.date}"


# -- formatting --------------------------------------------------------------------------------


def get(data: Any, *path: str) -> Any:
    """data[path[0]][path[1]]…, None where a key is missing."""
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def num(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return "-" if value is None else str(value)


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> Lines:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def hits(scores: Any, keys: Sequence[str] = ("hit@1", "hit@5", "hit@10")) -> str:
    """'0.53 / 0.77 / 0.79' of a scorer's group (or '-')."""
    if not isinstance(scores, dict):
        return "-"
    return " / ".join(num(scores.get(k), 3) for k in keys)


def met(target: Any) -> str:
    return "met" if get(target, "met") or get(target, "ok") else "missed"


# -- machines ----------------------------------------------------------------------------------


def describe(facts: Row) -> str:
    parts = [
        facts.get("cpu_model") or "CPU model unknown",
        f"{facts.get('cpu_count')} cores",
        f"{facts.get('memory_gib')} GiB RAM",
        f"Python {facts.get('python')}",
        str(facts.get("platform")),
    ]
    return ", ".join(parts)


def machines(results: dict[str, Result]) -> Lines:
    recorded: dict[str, list[str]] = {}
    for result in results.values():
        facts = result.data.get("machine")
        if isinstance(facts, dict):
            recorded.setdefault(describe(facts), []).append(result.name)
    lines = ["## Machine", ""]
    for machine, names in sorted(recorded.items()):
        lines.append(f"- Recorded by {', '.join(f'`{n}`' for n in sorted(names))}: {machine}.")
    unrecorded = sorted(r.name for r in results.values() if "machine" not in r.data)
    if unrecorded:
        lines.append(
            f"- Not recorded by the other {len(unrecorded)} result files; the machine this page "
            f"was generated on (not necessarily theirs): {describe(machine_facts())}."
        )
    return [*lines, ""]


# -- sections ----------------------------------------------------------------------------------


def structure_quality(r: Result) -> Lines:
    s = r.data["scores"]["summary"]
    h, t = s.get("headings", {}), s.get("tables", {})
    failed = [d for d, status in r.data.get("status", {}).items() if status != "ok"]
    return [
        f"{s.get('documents')} documents of the shared corpus through `corpus ingest`, scored with "
        f"its `score_structure.py`; {len(failed)} failed.",
        "",
        *table(
            ["headings recall", "precision", "order", "level", "tables recall", "cell recall"],
            [
                [
                    num(h.get("recall")),
                    num(h.get("precision")),
                    num(h.get("order")),
                    num(h.get("level_acc")),
                    num(t.get("recall")),
                    num(t.get("cell_recall")),
                ]
            ],
        ),
    ]


def search_quality(r: Result) -> Lines:
    ours, base = (
        r.data["scores"]["ours"]["all_questions"],
        r.data["scores"]["baseline"]["all_questions"],
    )
    groups = ["all", *sorted(g for g in ours if g != "all")]
    return [
        f"The shared corpus's development questions as `POST /v1/search` (top {r.data.get('top_k')}),"
        " scored with its `score_search.py` (the answer in a result), beside the naive floor: "
        f"{r.data.get('baseline')}. Failed documents: {len(r.data.get('failed_documents', {}))}.",
        "",
        *table(
            [
                "group",
                "n",
                "ours hit@1 / @5 / @10",
                "MRR@10",
                "BM25 floor hit@1 / @5 / @10",
                "MRR@10",
            ],
            (
                [
                    g,
                    num(get(ours, g, "n")),
                    hits(ours.get(g)),
                    num(get(ours, g, "mrr@10"), 3),
                    hits(base.get(g)),
                    num(get(base, g, "mrr@10"), 3),
                ]
                for g in groups
            ),
        ),
    ]


def agentic_quality(r: Result) -> Lines:
    lines = [
        "Every question over HTTP: classic (top 10) and agentic search (rule planner) at each "
        "token budget, agentic scored on its primary answer alone (its `results` in order). "
        "Recall: any passage of the answer hits; share: `evidence_text` tokens of the response's.",
    ]
    for name, data in r.data.get("sets", {}).items():
        summary = get(data, "summary") or {}
        rows = []
        for system, s in (summary.get("all") or {}).items():
            agentic = system != "classic"
            rows.append(
                [
                    f"agentic {system}" if agentic else "classic",
                    hits(s),
                    num(s.get("recall"), 3),
                    num(s.get("empty")),
                    num(s.get("evidence_share_mean"), 3) if agentic else "-",
                    num(s.get("p50_ms"), 1),
                ]
            )
        halves = "; ".join(
            f"{half}: classic {hits(get(summary, half, 'classic'))}, agentic 8000 "
            f"{hits(get(summary, half, '8000'))}"
            for half in ("tuned", "held out")
            if half in summary
        )
        kinds = "; ".join(
            f"{group} ({num(get(summary, group, 'classic', 'n'))}): classic "
            f"{num(get(summary, group, 'classic', 'hit@5'), 3)}, agentic 8000 "
            f"{num(get(summary, group, '8000', 'hit@5'), 3)}"
            for group in summary
            if group.startswith(("kind: ", "type: "))
        )
        lines += [
            "",
            f"**{name}** ({num(get(summary, 'all', 'classic', 'n'))} questions; {halves}):",
            "",
            *table(
                ["system", "hit@1 / @5 / @10", "recall", "empty", "evidence share", "ms p50"],
                rows,
            ),
            *(["", f"Page-hit@5 by question kind and document type: {kinds}."] if kinds else []),
        ]
    latency = r.data.get("latency")
    if isinstance(latency, dict):
        lines += [
            "",
            "Development store over HTTP: "
            + "; ".join(
                f"{s} p50 {num(get(latency, s, 'p50_ms'), 1)} ms, p95 "
                f"{num(get(latency, s, 'p95_ms'), 1)} ms"
                for s in ("classic", "agentic")
            )
            + ". MCP tool text (tokens, mean): "
            + "; ".join(
                f"{k} {num(get(v, 'tokens_mean'))}" for k, v in (r.data.get("mcp") or {}).items()
            )
            + ".",
        ]
    targets = "; ".join(f"{name}: {met(t)}" for name, t in r.data.get("targets", {}).items())
    return [*lines, "", f"Targets: {targets}."]


def realworld_quality(r: Result, others: Sequence[Result]) -> Lines:
    scores = r.data["scores"]
    systems = [s for s in ("naive BM25", "classic", "agentic 8k") if s in scores]
    groups = [g for g in r.data.get("groups", []) if g == "all" or g.count(":") == 1]
    groups.sort(key=lambda g: (g != "all", not g.startswith("half:"), g))
    lines = [
        f"{r.data.get('documents')} long PDFs in one namespace, {r.data.get('questions')} "
        "questions scored page-exact with the set's `score_pages.py` (page-hit@1 / @5 / @10); "
        "the naive floor is textbook BM25 over 1,000-character windows of PyMuPDF text. "
        f"Ingest: {r.data.get('ingested')}; failed documents: "
        f"{len(r.data.get('failed_documents') or {})}.",
        "",
        *table(
            ["group", "n", *systems],
            (
                [
                    g,
                    num(get(scores, systems[0], g, "n")),
                    *(hits(get(scores, s, g)) for s in systems),
                ]
                for g in groups
            ),
        ),
    ]
    single = r.data.get("scores_per_document")
    if isinstance(single, dict) and single:
        alone = [s for s in ("naive BM25", "classic", "agentic 8k") if s in single]
        lines += [
            "",
            "Per document (each question asked with `filters.document_ids` of its document; the "
            "floor searches that document's windows):",
            "",
            *table(
                ["group", "n", *alone],
                (
                    [
                        g,
                        num(get(single, alone[0], g, "n")),
                        *(hits(get(single, s, g)) for s in alone),
                    ]
                    for g in groups
                    if get(single, alone[0], g) is not None
                ),
            ),
        ]
    finance = r.data.get("finance_scores")
    if isinstance(finance, dict):
        lines += [
            "",
            f"Financial-metric questions ({r.data.get('finance_questions')}):",
            "",
            *table(
                ["group", *systems],
                [["all", *(hits(get(finance, s, "all")) for s in systems)]],
            ),
        ]
    latency = r.data.get("latency", {})
    timed = [s for s in ("classic", "agentic 8k") if s in latency]
    if timed:
        lines += [
            "",
            "Latency over HTTP: "
            + "; ".join(
                f"{s} p50 {num(get(latency, s, 'p50_ms'), 1)} ms, p95 {num(get(latency, s, 'p95_ms'), 1)} ms"
                for s in timed
            )
            + ".",
        ]
    if others:
        lines += [
            "",
            "Other recorded runs of this benchmark:",
            "",
            *table(
                [
                    "file",
                    "date",
                    "ingest",
                    "classic page-hit@1 / @5 / @10 (all)",
                    "per document: classic / agentic 8k / floor @5",
                ],
                (
                    [
                        f"`{o.name}`",
                        o.date,
                        str(o.data.get("ingested")),
                        hits(get(o.data, "scores", "classic", "all")),
                        " / ".join(
                            num(get(o.data, "scores_per_document", s, "all", "hit@5"), 3)
                            for s in ("classic", "agentic 8k", "naive BM25")
                        )
                        if o.data.get("scores_per_document")
                        else "-",
                    ]
                    for o in others
                ),
            ),
        ]
    return lines


def filings_store(r: Result) -> Lines:
    store = r.data.get("store", {})
    latency = r.data.get("latency", {})
    scores = r.data.get("scores_original_questions", {})
    return [
        f"{num(store.get('documents'))} filings ({num(store.get('chunks'))} unique chunks) derived "
        f"from the set's 10-Qs; {r.data.get('queries')} queries over HTTP.",
        "",
        *table(
            ["mode", "p50 ms", "p95 ms", "page-hit@1 / @5 / @10 (40 questions)", "MRR@10"],
            (
                [
                    mode,
                    num(get(latency, mode, "p50_ms"), 1),
                    num(get(latency, mode, "p95_ms"), 1),
                    hits(scores.get(mode)),
                    num(get(scores, mode, "mrr@10"), 3),
                ]
                for mode in sorted(latency)
            ),
        ),
    ]


def identity(r: Result) -> Lines:
    d = r.data
    fields = d.get("fields_right") or {}
    n = d.get("documents")
    rows = [
        [form, num(g.get("documents")), *(num(g.get(f)) for f in fields)]
        for form, g in (d.get("by_form") or {}).items()
    ]
    wrong = "; ".join(f"{w['file']}: {', '.join(w['fields'])}" for w in d.get("wrong") or [])
    return [
        "Every filing of `financebench_dev` and the 20 10-Qs of `realworld` through "
        "`corpus ingest`; each stored subject checked against values read off the documents "
        "(`benchmarks/data/identity/filings.jsonl`). Right per field, by form:",
        "",
        *table(["form", "documents", *fields], rows),
        "",
        f"All {n} documents: "
        + ", ".join(f"{f} {num(v)}" for f, v in fields.items())
        + f". Issuer, form, fiscal year and quarter: {num(d.get('core_right'))} of "
        f"{num(d.get('core_checked'))} ({num(d.get('core_share'), 3)}). Wrong: {wrong or 'none'}.",
    ]


def pdf_quality(r: Result) -> Lines:
    q, speed, memory = r.data["quality"], r.data.get("speed", {}), r.data.get("memory", {})
    return [
        "The corpus PDFs parsed by our parser and by pymupdf4llm, scored with `score_structure.py`.",
        "",
        *table(
            ["parser", "heading F1", "recall", "precision", "table recall (found/expected)"],
            (
                [
                    name,
                    num(get(q, name, "heading_f1")),
                    num(get(q, name, "heading_recall")),
                    num(get(q, name, "heading_precision")),
                    f"{num(get(q, name, 'table_recall'))} "
                    f"({get(q, name, 'tables_found')}/{get(q, name, 'tables_expected')})",
                ]
                for name in ("ours", "pymupdf4llm")
            ),
        ),
        "",
        f"Speed on a {speed.get('pdf_pages')}-page PDF: ours {num(speed.get('ours_pages_per_s'), 1)} "
        f"pages/s, raw `get_text` {num(speed.get('raw_get_text_pages_per_s'), 1)}, pymupdf4llm "
        f"{num(speed.get('pymupdf4llm_pages_per_s'))}. Peak RSS parsing {num(memory.get('pages'))} "
        f"pages: {num(memory.get('peak_rss_mib'), 1)} MiB (limit {memory.get('limit_mib')}).",
    ]


def search_latency(r: Result) -> Lines:
    rows = []
    for s in r.data.get("sizes", []):
        q, one = s["search"], get(s, "one_doc_publish", "median_seconds") or {}
        rows.append(
            [
                num(s.get("chunks")),
                " / ".join(
                    num(q.get(k)) for k in ("p50_classic_ms", "p95_classic_ms", "p99_classic_ms")
                ),
                num(q.get("p50_raw_ms")),
                num(q.get("ratio_p50")),
                num(s.get("bulk_publish_seconds"), 1),
                " / ".join(num(one.get(k)) for k in ("add", "update", "delete")),
                num(get(s, "bytes_per_chunk", "tantivy")),
            ]
        )
    verdict = r.data.get("verdict", {})
    note = (
        f"Target at {num(verdict.get('size'))} chunks (p50 ≤ {verdict.get('p50_target_ms')} ms, "
        f"classic/raw ≤ {verdict.get('ratio_target')}): "
        f"{'met' if verdict.get('p50_ok') and verdict.get('ratio_ok') else 'missed'}."
        if verdict.get("evaluated")
        else "Target not evaluated (no 1M-chunk size in this run)."
    )
    return [
        *table(
            [
                "chunks",
                "classic p50 / p95 / p99 ms",
                "raw channels p50 ms",
                "ratio p50",
                "bulk publish s",
                "1-doc add / update / delete s",
                "tantivy B/chunk",
            ],
            rows,
        ),
        "",
        note,
    ]


def dense_latency(r: Result) -> Lines:
    latency = r.data.get("latency", {})
    return [
        f"Classic search on {num(r.data.get('unique_chunks'))} chunks with a vector each "
        f"({r.data.get('queries')} queries, in-process); matrix load "
        f"{num(r.data.get('matrix_load_seconds'))} s, {num(r.data.get('matrix_mib'), 1)} MiB.",
        "",
        *table(
            ["measurement", "p50 ms", "p95 ms"],
            ([name, num(v.get("p50_ms")), num(v.get("p95_ms"))] for name, v in latency.items()),
        ),
        "",
        f"Target (classic with vectors p50 ≤ {get(r.data, 'target', 'classic_p50_ms_with_dense')} ms): "
        f"{met(r.data.get('target'))}.",
    ]


def http_latency(r: Result) -> Lines:
    params, inproc = r.data.get("params", {}), r.data.get("in_process", {})
    workers = params.get("server_workers")
    levels = [(workers, lv) for lv in r.data.get("levels", [])]
    levels += [(lv.get("server_workers"), lv) for lv in r.data.get("compare_workers", [])]
    verdict = r.data.get("verdict", {})
    return [
        f"`corpus serve` on {num(params.get('chunks'))} synthetic chunks, answer cache off, "
        "closed-loop clients in another process. In-process p50: `classic_search` "
        f"{num(get(inproc, 'classic_search', 'p50_ms'))} ms, the route's search "
        f"{num(get(inproc, 'service_search', 'p50_ms'))} ms.",
        "",
        *table(
            ["clients", "server processes", "req/s", "p50 ms", "p95 ms", "p99 ms", "errors"],
            (
                [
                    num(lv.get("clients")),
                    num(w),
                    num(lv.get("throughput_rps"), 1),
                    num(lv.get("p50_ms")),
                    num(lv.get("p95_ms")),
                    num(lv.get("p99_ms")),
                    num(lv.get("errors")),
                ]
                for w, lv in levels
            ),
        ),
        "",
        f"Target ({verdict.get('clients')} clients, p50 < {verdict.get('p50_target_ms')} ms, no "
        f"errors): {met(verdict) if verdict.get('evaluated') else 'not evaluated'}.",
    ]


def ingest_speed(results: Sequence[Result]) -> Lines:
    rows = []
    for r in results:
        d = r.data
        many = sorted(k for k in d if k.startswith("command_") and k.endswith("_workers"))
        rows.append(
            [
                f"`{r.name}` ({d.get('selection')})",
                num(d.get("documents")),
                num(d.get("pages")),
                num(get(d, "plain_text", "pages_per_s"), 1),
                num(get(d, "pipeline_work", "pages_per_s"), 1),
                num(get(d, "command_1_worker", "pages_per_s"), 1),
                " / ".join(f"{num(get(d, k, 'pages_per_s'), 1)} ({k.split('_')[1]})" for k in many),
                num(d.get("dagster_overhead_per_document_s")),
            ]
        )
    return table(
        [
            "result",
            "documents",
            "pages",
            "plain text pages/s",
            "pipeline work pages/s",
            "`corpus ingest` 1 worker pages/s",
            "N workers pages/s (N)",
            "Dagster s/document",
        ],
        rows,
    )


def realworld_ingest(r: Result) -> Lines:
    s, publish = r.data["summary"], r.data.get("publish", {})
    acceptance = {k: v for k, v in s.get("acceptance", {}).items() if isinstance(v, dict)}
    missed = sorted(k for k, v in acceptance.items() if not v.get("met"))
    return [
        f"{s.get('ok')}/{s.get('files')} files ok ({len(s.get('refused', {}))} refused, "
        f"{len(s.get('failed', {}))} failed), {num(s.get('pages_ok'))} pages at "
        f"{num(s.get('pages_per_second'))} pages/s of document time; median word recall "
        f"{num(s.get('median_recall'), 4)} over {s.get('pdfs_with_recall')} PDFs; publish "
        f"{num(publish.get('seconds'), 1)} s for {num(publish.get('chunks'))} chunks. Acceptance: "
        + (f"missed {', '.join(missed)}." if missed else f"all {len(acceptance)} targets met."),
    ]


def sensor_ingest(results: Sequence[Result]) -> Lines:
    return table(
        ["result", "executor", "documents", "wall s", "documents/s", "Dagster overhead share"],
        (
            [
                f"`{r.name}`",
                str(r.data.get("executor", "in_process")),
                num(r.data.get("published_documents")),
                num(r.data.get("wall_seconds"), 1),
                num(r.data.get("documents_per_s")),
                num(get(r.data, "document_runs", "overhead_share"), 3),
            ]
            for r in results
        ),
    )


def soak(r: Result) -> Lines:
    d, config = r.data, r.data.get("config", {})
    ratio = d.get("rss_after_over_start", {})
    return [
        f"{num(d.get('seconds'), 0)} s with {config.get('query_clients')} query and "
        f"{config.get('upload_clients')} upload clients, a parse worker and the upload API killed, "
        f"a key revoked: {num(d.get('queries'))} queries ({num(d.get('queries_failed'))} failed), "
        f"p50 {num(d.get('query_p50_ms'), 1)} ms, p99 {num(d.get('query_p99_ms'), 1)} ms; "
        f"{num(d.get('uploads_accepted'))} uploads accepted, jobs done / error / unfinished "
        f"{d.get('jobs_done')} / {d.get('jobs_error')} / {d.get('jobs_unfinished')}; the revoked "
        f"key refused after {num(d.get('revoked_key_refused_after_s'))} s; RSS after / start: "
        + ", ".join(f"{k} {num(v, 3)}" for k, v in sorted(ratio.items()))
        + ".",
    ]


def upload_door(r: Result) -> Lines:
    d, rss = r.data, r.data.get("rss_mb", {})
    return [
        *table(
            ["`GET /readyz`", "p50 ms", "p99 ms"],
            (
                [label, num(get(d, key, "p50_ms")), num(get(d, key, "p99_ms"))]
                for label, key in (("idle", "readyz_idle"), ("under load", "readyz_under_load"))
            ),
        ),
        "",
        f"{d.get('uploads')} uploads of {num(d.get('upload_mb'), 1)} MB at once; target p99 under "
        f"load ≤ {d.get('target_readyz_p99_ms')} ms. Upload API RSS start / peak / after: "
        f"{num(rss.get('start'), 1)} / {num(rss.get('peak'), 1)} / {num(rss.get('after'), 1)} MB.",
    ]


def _hostile_outcome(case: Any) -> str:
    if not isinstance(case, dict):
        return "-"
    if case.get("service") == "ingest":
        error = case.get("error")
        outcome = f"{case.get('outcome')}" + (f": {error}" if error else "")
        if case.get("largest_chunk_tokens") is not None:
            outcome += f"; largest chunk {num(case['largest_chunk_tokens'])} tokens"
        if case.get("note"):
            outcome += f" ({case['note']})"
        return outcome
    if "document" in case and "namespace" in case:  # the oracle timing
        return "; ".join(
            f"{what}: unreadable {get(case, what, 'unreadable', 'statuses')} p50 "
            f"{num(get(case, what, 'unreadable', 'p50_ms'))} ms, missing "
            f"{get(case, what, 'missing', 'statuses')} p50 "
            f"{num(get(case, what, 'missing', 'p50_ms'))} ms"
            for what in ("document", "namespace")
        )
    if "other_job_started_after_s" in case:
        note = f" ({case['note']})" if case.get("note") else ""
        return f"other key's job started after {case['other_job_started_after_s']} s{note}"
    status = case.get("status")
    if status == 0:
        return f"no answer within {num(case.get('seconds'), 0)} s"
    detail = case.get("detail") or case.get("note")
    return f"{status}" + (f": {detail}" if detail else "")


def _hostile_cost(case: Any) -> str:
    if not isinstance(case, dict):
        return "-"
    memory = case.get("peak_process_mb", case.get("server_peak_growth_mb"))
    label = "peak MiB" if "peak_process_mb" in case else "server +MiB"
    seconds = case.get("seconds")
    return f"{num(seconds)} s" + (f", {label} {num(memory)}" if memory is not None else "")


def hostile(r: Result) -> Lines:
    after, before = r.data.get("cases", {}), get(r.data, "before", "cases") or {}
    rows = [
        [
            name,
            case.get("service", "-"),
            _hostile_outcome(before.get(name)),
            _hostile_cost(before.get(name)),
            _hostile_outcome(case),
            _hostile_cost(case),
        ]
        for name, case in after.items()
    ]
    return [
        *table(["case", "service", "before", "before: cost", "after", "after: cost"], rows),
        "",
        f"Before: {get(r.data, 'before', 'commit') or '-'}; ingest cases under "
        f"`CORPUS_PARSE_MAX_MEMORY_MB={r.data.get('parse_max_memory_mb')}` (peak: the largest "
        "resident memory of any process of the run); query cases: the server's peak resident "
        "memory growth during the request (after a warm-up search).",
    ]


# -- the page ----------------------------------------------------------------------------------

Single = Callable[[Result], Lines]
Several = Callable[[Sequence[Result]], Lines]


def fuzz_parsers(r: Result) -> Lines:
    d, config, totals = r.data, r.data.get("config", {}), r.data.get("totals", {})
    rows = [
        [
            fmt,
            num(f.get("inputs")),
            num(f.get("worker_inputs")),
            num(f.get("conversions")),
            num(len(f.get("findings", []))),
            num(len(f.get("memory_limit_stops", []))),
            num(f.get("peak_worker_rss_mb"), 0),
        ]
        for fmt, f in d.get("formats", {}).items()
    ]
    return [
        f"{num(config.get('seconds'), 0)} s over every routed format (seed {config.get('seed')}, "
        f"parse limits {num(config.get('parse_timeout_seconds'), 0)} s / "
        f"{config.get('parse_max_memory_mb')} MiB): {num(totals.get('inputs'))} inputs, "
        f"{num(totals.get('crash'))} crashes, {num(totals.get('hang'))} hangs, "
        f"{num(totals.get('memory_limit_stops'))} stops at the memory limit.",
        "",
        *table(
            [
                "format",
                "inputs",
                "in the worker",
                "LibreOffice",
                "crashes",
                "memory stops",
                "peak worker MiB",
            ],
            rows,
        ),
    ]


SECTIONS: list[tuple[str, str, Single]] = [
    ("Structure quality", "structure_quality", structure_quality),
    ("Search quality", "search_quality", search_quality),
    ("Agentic search quality", "agentic_quality", agentic_quality),
    ("Filings store", "filings_store", filings_store),
    ("Document identity", "identity", identity),
    ("PDF parser beside pymupdf4llm", "pdf_quality", pdf_quality),
    ("Search latency at scale", "search_latency", search_latency),
    ("Search latency at scale (quick run)", "search_latency_quick", search_latency),
    ("Dense channel latency", "dense_latency", dense_latency),
    ("HTTP latency", "http_latency", http_latency),
    ("Real-world ingest", "realworld_ingest", realworld_ingest),
    ("Soak", "soak", soak),
    ("Upload door", "upload_door", upload_door),
    ("Parser fuzzing", "fuzz_parsers", fuzz_parsers),
    ("Hostile input", "hostile", hostile),
]
GROUPS: list[tuple[str, str, Several]] = [
    ("Ingest throughput", "ingest_speed", ingest_speed),
    ("Ingest through the sensor", "sensor_ingest", sensor_ingest),
]
ORDER = [
    "structure_quality",
    "search_quality",
    "agentic_quality",
    "realworld_quality",
    "filings_store",
    "identity",
    "pdf_quality",
    "search_latency",
    "search_latency_quick",
    "dense_latency",
    "http_latency",
    "ingest_speed",
    "realworld_ingest",
    "sensor_ingest",
    "soak",
    "upload_door",
    "fuzz_parsers",
    "hostile",
]


def load(results_dir: Path) -> dict[str, Result]:
    return {
        path.stem: Result(path, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(results_dir.glob("*.json"))
    }


def section(title: str, sources: Sequence[Result], body: Lines) -> Lines:
    return [
        f"## {title}",
        "",
        "Source: " + "; ".join(r.source() for r in sources) + ".",
        "",
        *body,
        "",
    ]


def render(results: dict[str, Result]) -> str:
    lines = [
        "# Benchmarks",
        "",
        "The headline figures of the last recorded run of each benchmark, generated by "
        "`python -m benchmarks.report` from `benchmarks/results/*.json` (the last step of "
        "`make bench`; do not edit by hand). How each benchmark measures is in its module's "
        "docstring under `benchmarks/`.",
        "",
        *machines(results),
    ]
    used: set[str] = set()
    blocks: dict[str, Lines] = {}
    for title, stem, single in SECTIONS:
        if stem in results:
            used.add(stem)
            blocks[stem] = section(title, [results[stem]], single(results[stem]))
    for title, prefix, several in GROUPS:
        found = [
            r for stem, r in results.items() if stem == prefix or stem.startswith(prefix + "_")
        ]
        if found:
            used.update(r.path.stem for r in found)
            blocks[prefix] = section(title, found, several(found))
    if "realworld_quality" in results:
        others = [r for s, r in results.items() if s.startswith("realworld_quality_")]
        used.update(["realworld_quality", *(r.path.stem for r in others)])
        blocks["realworld_quality"] = section(
            "Real-world retrieval (page-exact)",
            [results["realworld_quality"]],
            realworld_quality(results["realworld_quality"], others),
        )
    for stem in ORDER:
        lines += blocks.pop(stem, [])
    for block in blocks.values():  # a section missing from ORDER still shows
        lines += block
    rest = [r for stem, r in results.items() if stem not in used]
    if rest:
        lines += ["## Other result files", ""]
        lines += [f"- {r.source()}" for r in rest]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(load(args.results)), encoding="utf-8")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
