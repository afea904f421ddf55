"""Agentic search quality and latency, next to classic search, in one run.

1. Quality on the shared corpus, on the user's path of `benchmarks/search_quality.py`: every
   document through `corpus ingest` (Dagster assets and checks; the encrypted sample with the
   manifest's password) into a fresh CORPUS_HOME, one published revision, every query as
   `POST /v1/search` over HTTP to `corpus serve`: the 40 development questions through agentic search (rule-based
   planner, no model) under token budgets 2000 / 8000 / 32000, and through classic search
   (top_k=10). The agentic ranked list is `results` followed by `fallback_results`; both systems
   are scored with the corpus's own `score_search.py` over all 40 questions (a document that
   failed to ingest makes its questions misses and is listed in `failed_documents`) and, to
   diagnose, over the questions whose document was ingested. Per question also: the evidence tokens
   (`budget.used`, the whole serialized response, and the tokens of `evidence_text`) and the
   "evidence hit": an answer string occurs in `evidence_text` (normalised as the scorer does).
   A diagnostic run at the maximum budget (200000) separates budget cuts from navigation misses.
2. Latency on the cached 100k-chunk synthetic namespace of `benchmarks/search_latency.py`
   (`benchmarks.harness.synthetic`, under --workdir, built if missing): ~200 generated queries,
   single-threaded, in-process (`agentic_search` and `classic_search` on the opened revision),
   after a warm-up pass; agentic (budget 8000, rule planner) and classic (top_k=10) alternate
   per query. A cProfile pass over the same queries (the calling thread and every step thread
   agentic search starts) attributes agentic time to its parts.

Targets: agentic hit@5 at the 8k budget ≥ classic hit@10 (all questions); agentic p50 <
300 ms without a model. Misses are classified (discovery / navigation / ranking / budget).

Writes benchmarks/results/agentic_quality.json and prints tables.
Run: `python -m benchmarks.agentic_quality [--corpus DIR] [--queries 200] [--skip-latency]`.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import (
    NAMESPACE,
    RESULTS,
    SHARED_CORPUS,
    TOP_K,
    Results,
    corpus_passwords,
    ingest_folder,
    load_questions,
    load_script,
    log,
    machine_facts,
    percentile,
    post_search,
    score_search,
    search_client,
    search_ours,
    write_json,
)
from benchmarks.harness import synthetic as syn
from corpus_pipeline.contracts import published as pt
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse, AgenticResult
from corpus_pipeline.contracts.search import SearchRequest
from query_service.retrieval.agentic import agentic_search
from query_service.retrieval.budget import tokens_of
from query_service.retrieval.classic import classic_search
from query_service.retrieval.planner import RulePlanner
from query_service.snapshot.revision import Revision, open_revision

BUDGETS = (2000, 8000, 32000)
DIAGNOSTIC_BUDGET = 200_000
TARGET_BUDGET = 8000
TARGET_P50_MS = 300.0
LATENCY_SIZE = 100_000
SUBSETS = ("all_questions", "supported_questions")
METRICS = ("hit@1", "hit@5", "hit@10", "mrr@10", "doc_hit@10")
PROFILED = (
    "agentic_search",
    "_run_step",
    "run_step",
    "classic_search",
    "sections",
    "chunks",
    "render_chunk",
    "_coverage",
    "_idf_weights",
    "render_evidence",
    "_fit",
    "_response",
    "count_tokens",
    "model_dump_json",
    "to_list",
    "analyze",
    "doc_freq",
)

Row = dict[str, Any]


def load_scorer(corpus: Path) -> Any:
    """The corpus's score_search module (for `norm` and `same_doc`, exactly as it scores)."""
    return load_script(corpus / "score_search.py")


def as_line(result: AgenticResult) -> Row:
    return {
        "content": result.content,
        "source_file_name": result.source_file_name,
        "section_path": result.section_path,
        "pages": result.pages,
    }


def ranked(response: AgenticResponse) -> list[Row]:
    """The agentic ranked list: evidence results, then the fallback (discovered, not opened)."""
    return [as_line(r) for r in [*response.results, *response.fallback_results]]


def first_hit(scorer: Any, q: Row, lines: Sequence[Row]) -> int | None:
    """1-based position of the first result the scorer would count as a hit (no cut-off)."""
    answers = [scorer.norm(a) for a in q["answers"]]
    for i, r in enumerate(lines, 1):
        if scorer.same_doc(r.get("source_file_name"), q["doc"]):
            text = scorer.norm(r.get("content", ""))
            if any(a in text for a in answers):
                return i
    return None


def run_agentic(
    client: httpx.Client, questions: Sequence[Row], budget: int, scorer: Any
) -> tuple[Results, list[Row]]:
    """Scorer lines and per-question measurements at one budget (`took_ms` includes HTTP)."""
    lines: Results = []
    rows: list[Row] = []
    for q in questions:
        started = time.perf_counter()
        request = AgenticRequest(
            mode="agentic", query=q["question"], namespace=NAMESPACE, token_budget=budget
        )
        payload = post_search(client, request.model_dump(mode="json"))
        response = AgenticResponse.model_validate(payload)
        took = (time.perf_counter() - started) * 1000
        full = ranked(response)
        lines.append({"id": q["id"], "results": full})
        answers = {scorer.norm(a) for a in q["answers"]}
        evidence = scorer.norm(response.evidence_text)
        found = {a for a in answers if a in evidence}
        hit_in_results = first_hit(scorer, q, [as_line(r) for r in response.results])
        hit_in_fallback = first_hit(scorer, q, [as_line(r) for r in response.fallback_results])
        opened: list[str] = []
        for r in response.results:
            label = f"{r.source_file_name} :: {' > '.join(r.section_path) or '(start)'}"
            if label not in opened:
                opened.append(label)
        rows.append(
            {
                "id": q["id"],
                "budget": budget,
                "steps": [s.query for s in response.plan],
                "first_hit": first_hit(scorer, q, full),
                "hit_in_results": hit_in_results,
                "hit_in_fallback": hit_in_fallback,
                "evidence_hit": bool(found),
                "evidence_answer_recall": len(found) / len(answers) if answers else 0.0,
                "used": response.budget.used,
                "evidence_tokens": tokens_of(response.evidence_text),
                "evidence_tokens_available": response.budget.evidence_tokens_available,
                "results": len(response.results),
                "fallback": len(response.fallback_results),
                "stop_reason": response.stop_reason,
                "truncated": response.budget.truncated,
                "sections_opened": opened,
                "took_ms": round(took, 2),
            }
        )
    return lines, rows


def answer_locations(revision: Revision, questions: Sequence[Row], scorer: Any) -> dict[str, Row]:
    """Where each question's answer lives in the published revision (its document only): the
    sections whose own chunks (by their stored section_path) contain it, the sections whose title
    contains it, and which of those titled sections hold no chunk of their own (their text is a
    deduplicated chunk stored under another section)."""
    chunks = (
        revision.table(pt.CHUNKS)
        .search()
        .select(["source_path", "section_path", "content"])
        .limit(None)
        .to_list()
    )
    sections = (
        revision.table(pt.SECTIONS)
        .search()
        .select(["document_id", "path", "title"])
        .limit(None)
        .to_list()
    )
    doc_of = {}
    for row in (
        revision.table(pt.CHUNKS)
        .search()
        .select(["source_path", "document_id"])
        .limit(None)
        .to_list()
    ):
        doc_of[row["document_id"]] = row["source_path"]
    out: dict[str, Row] = {}
    for q in questions:
        answers = [scorer.norm(a) for a in q["answers"]]
        own = [c for c in chunks if scorer.same_doc(c["source_path"], q["doc"])]
        with_rows = {tuple(c["section_path"]) for c in own}
        in_content = sorted(
            {
                " > ".join(c["section_path"])
                for c in own
                if any(a in scorer.norm(c["content"]) for a in answers)
            }
        )
        titled = [
            tuple(s["path"])
            for s in sections
            if scorer.same_doc(doc_of.get(s["document_id"], ""), q["doc"])
            and any(a in scorer.norm(s["title"] or "") for a in answers)
        ]
        out[q["id"]] = {
            "in_content": in_content,
            "in_title": [" > ".join(p) for p in titled],
            "titled_without_own_chunks": [" > ".join(p) for p in titled if p not in with_rows],
        }
    return out


def classify(
    classic_rank: int | None,
    doc_discovered: bool,
    where: Row,
    at_budget: Row,
    unbounded: Row,
) -> str | None:
    """Why agentic missed the top 5 at this budget (None when it did not)."""
    if at_budget["first_hit"] is not None and at_budget["first_hit"] <= 5:
        return None
    if not where["in_content"] and not where["in_title"]:
        return "unreachable: the answer is in no published chunk or section title of its document"
    if not where["in_content"]:
        empty = where["titled_without_own_chunks"]
        detail = (
            f"; {empty} hold no chunk of their own (deduplicated text stored under another "
            "section), so opening them renders nothing and the heading never reaches the evidence"
            if empty
            else ""
        )
        return (
            f"navigation/rendering: the answer is only a section heading ({where['in_title']}), "
            f"never a chunk's content{detail}"
        )
    if classic_rank is None and unbounded["first_hit"] is None:
        if not doc_discovered:
            return "discovery: the document is not in the discovery top 10"
        return (
            "discovery: the document is found but not the answer's chunk, and navigation misses it"
        )
    if at_budget["hit_in_results"] is not None:
        return (
            f"ranking: answer opened (evidence #{at_budget['hit_in_results']}) but other "
            "sections' chunks outrank it"
        )
    if unbounded["hit_in_results"] is not None and at_budget["stop_reason"] == "budget_exhausted":
        return "budget: answer's section opened, its chunk cut by the budget"
    if at_budget["hit_in_fallback"] is not None:
        return (
            "navigation: answer chunk discovered (fallback) but its section not opened; "
            f"listed after {at_budget['results']} evidence results"
        )
    return "navigation: classic finds it, agentic opened other sections and dropped the hit"


def summarize_tokens(rows: Sequence[Row], key: str) -> dict[str, float]:
    values = [float(r[key]) for r in rows]
    if not values:
        return {}
    return {
        "mean": round(statistics.fmean(values), 1),
        "p50": round(percentile(values, 50), 1),
        "max": max(values),
    }


def quality(corpus_dir: Path, workdir: Path) -> Row:
    seconds: dict[str, float] = {}
    scorer = load_scorer(corpus_dir)
    mark = time.perf_counter()
    passwords = corpus_passwords(corpus_dir)
    ingested = ingest_folder(corpus_dir / "docs", workdir / "corpus_home", passwords)
    seconds["ingest_publish"] = time.perf_counter() - mark
    if ingested.pointer is None or ingested.publish_error:
        raise RuntimeError(f"nothing published: {ingested.publish_error or ingested.failed}")
    ok = set(ingested.ok)
    failed = dict(sorted(ingested.failed.items()))
    questions = load_questions(corpus_dir)
    supported = [q for q in questions if q["doc"] in ok]
    subsets = {"all_questions": questions, "supported_questions": supported}
    revision = open_revision(ingested.settings.published_dir, NAMESPACE)

    systems: dict[str, Results] = {}
    agentic_rows: dict[int, dict[str, Row]] = {}
    with search_client(ingested.settings.home) as client:
        mark = time.perf_counter()
        classic_lines = search_ours(client, questions)
        seconds["classic"] = time.perf_counter() - mark
        systems["classic"] = classic_lines
        for budget in (*BUDGETS, DIAGNOSTIC_BUDGET):
            mark = time.perf_counter()
            lines, rows = run_agentic(client, questions, budget, scorer)
            seconds[f"agentic_{budget}"] = time.perf_counter() - mark
            systems[f"agentic_{budget}"] = lines
            agentic_rows[budget] = {r["id"]: r for r in rows}
            log(f"  agentic budget {budget}: {seconds[f'agentic_{budget}']:.1f}s")

    scores = {
        system: {
            subset: score_search(corpus_dir, lines, qs, workdir / "scores" / f"{system}_{subset}")
            for subset, qs in subsets.items()
        }
        for system, lines in systems.items()
    }
    table: dict[str, dict[str, Row]] = {}
    for subset, qs in subsets.items():
        ids = {q["id"] for q in qs}
        table[subset] = {}
        for system in systems:
            summary = scores[system][subset]["summary"]["all"]
            row: Row = {"n": summary["n"], **{m: summary[m] for m in METRICS}}
            if system.startswith("agentic_"):
                budget = int(system.split("_")[1])
                rows = [r for i, r in agentic_rows[budget].items() if i in ids]
                row["evidence_hit"] = round(
                    sum(r["evidence_hit"] for r in rows) / max(len(rows), 1), 4
                )
                row["budget_used"] = summarize_tokens(rows, "used")
                row["evidence_tokens"] = summarize_tokens(rows, "evidence_tokens")
                row["budget_exhausted"] = sum(r["stop_reason"] == "budget_exhausted" for r in rows)
                row["zero_evidence"] = sum(r["results"] == 0 for r in rows)
                row["evidence_share_of_used"] = round(
                    statistics.fmean(r["evidence_tokens"] / max(r["used"], 1) for r in rows), 3
                )
                row["took_ms_p50"] = round(percentile([r["took_ms"] for r in rows], 50), 1)
            table[subset][system] = row

    classic_top = {line["id"]: line["results"] for line in classic_lines}
    locations = answer_locations(revision, questions, scorer)
    per_question: list[Row] = []
    for q in questions:
        classic_rank = first_hit(scorer, q, classic_top[q["id"]])
        doc_discovered = any(
            scorer.same_doc(r["source_file_name"], q["doc"]) for r in classic_top[q["id"]]
        )
        unbounded = agentic_rows[DIAGNOSTIC_BUDGET][q["id"]]
        entry: Row = {
            "id": q["id"],
            "doc": q["doc"],
            "kind": q["kind"],
            "ingested": q["doc"] in ok,
            "section_hint": q.get("section_hint"),
            "classic_rank": classic_rank,
            "classic_top1": (
                f"{classic_top[q['id']][0]['source_file_name']} :: "
                f"{' > '.join(classic_top[q['id']][0]['section_path'])}"
                if classic_top[q["id"]]
                else None
            ),
            "plan": unbounded["steps"],
            "doc_discovered": doc_discovered,
            "answer_location": locations[q["id"]],
        }
        for budget in (*BUDGETS, DIAGNOSTIC_BUDGET):
            r = agentic_rows[budget][q["id"]]
            entry[f"agentic_{budget}"] = {
                **{k: v for k, v in r.items() if k not in ("id", "budget", "steps")},
                "miss_cause": classify(
                    classic_rank, doc_discovered, locations[q["id"]], r, unbounded
                )
                if entry["ingested"]
                else f"not ingested: {failed.get(q['doc'], 'unknown document')}",
            }
        per_question.append(entry)
    return {
        "budgets": list(BUDGETS),
        "diagnostic_budget": DIAGNOSTIC_BUDGET,
        "ranked_list": "agentic results followed by fallback_results (scorer uses the top 10)",
        "path": "corpus ingest (Dagster assets + checks, publish) → corpus serve → "
        "POST /v1/search over HTTP; failed documents count as misses",
        "ingested": sorted(ok),
        "failed_documents": failed,
        "skipped": {},  # kept for readers of older results: nothing leaves the question set
        "supported_question_ids": [q["id"] for q in supported],
        "table": table,
        "per_question": per_question,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
    }


# -- latency -----------------------------------------------------------------------------------


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "p99_ms": round(percentile(values, 99), 2),
        "mean_ms": round(statistics.fmean(values), 2),
        "max_ms": round(max(values), 2),
    }


def profile_agentic(revision: Revision, requests: Sequence[AgenticRequest]) -> dict[str, Any]:
    """Cumulative ms per query of agentic search's parts (one cProfile pass): a profiler on
    this thread and one on every thread started meanwhile (agentic search runs its steps in a
    thread pool of its own), merged."""
    planner = RulePlanner()
    profiler = cProfile.Profile()
    started: list[cProfile.Profile] = []

    def profile_thread(*_: Any) -> None:
        # Called at a new thread's first event: a profiler of its own from there on.
        threaded = cProfile.Profile()
        started.append(threaded)
        threaded.enable()

    threading.setprofile(profile_thread)
    profiler.enable()
    try:
        for request in requests:
            agentic_search(revision, request, planner)
    finally:
        profiler.disable()
        threading.setprofile(None)  # type: ignore[arg-type]
    stats = pstats.Stats(profiler)
    for threaded in started:
        stats.add(threaded)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, _tt, cumulative, _callers) in raw.items():
        if name not in PROFILED:
            continue
        if name in ("sections", "chunks") and not filename.endswith("sections.py"):
            continue
        if name == "classic_search" and not filename.endswith("classic.py"):
            continue
        key = f"{Path(filename).stem}.{name}"
        out[key] = max(out.get(key, 0.0), cumulative * 1000 / len(requests))
    return {
        "note": "cumulative ms per query under cProfile (inflated vs the timed run); the step "
        "threads are profiled too (the step and its parts), each step once",
        "ms_per_query": dict(
            sorted(((k, round(v, 2)) for k, v in out.items()), key=lambda kv: -kv[1])
        ),
    }


def latency(workdir: Path, count: int, seed: int, questions: Path) -> Row:
    dirs = syn.SizeDirs(workdir / f"n{LATENCY_SIZE}")
    corpus = syn.ensure_corpus(dirs, LATENCY_SIZE, seed, os.cpu_count() or 1)
    bulk = syn.ensure_published(dirs, corpus)
    revision = open_revision(dirs.published, syn.NAMESPACE)
    queries = syn.make_queries(syn.load_text_model(), count, seed, questions)
    classic_requests = [
        SearchRequest(query=q.text, namespace=syn.NAMESPACE, top_k=TOP_K) for q in queries
    ]
    agentic_requests = [
        AgenticRequest(
            mode="agentic", query=q.text, namespace=syn.NAMESPACE, token_budget=TARGET_BUDGET
        )
        for q in queries
    ]
    planner = RulePlanner()
    started = time.perf_counter()
    for c, a in zip(classic_requests, agentic_requests, strict=True):  # warm-up pass
        classic_search(revision, c)
        agentic_search(revision, a, planner)
    warmup = time.perf_counter() - started
    gc.collect()
    load_before = os.getloadavg()[0]
    classic_ms: list[float] = []
    agentic_ms: list[float] = []
    steps: list[int] = []
    for i, (c, a) in enumerate(zip(classic_requests, agentic_requests, strict=True)):
        responses: list[AgenticResponse] = []

        def run_agentic_once(a: AgenticRequest = a, out: list[AgenticResponse] = responses) -> None:
            out.append(agentic_search(revision, a, planner))

        def run_classic_once(c: SearchRequest = c) -> None:
            classic_search(revision, c)

        if i % 2:
            classic_ms.append(_timed(run_classic_once))
            agentic_ms.append(_timed(run_agentic_once))
        else:
            agentic_ms.append(_timed(run_agentic_once))
            classic_ms.append(_timed(run_classic_once))
        steps.append(len(responses[0].plan))
    load_after = os.getloadavg()[0]
    by_kind: dict[str, Row] = {}
    for kind, _ in syn.QUERY_MIX:
        idx = [i for i, q in enumerate(queries) if q.kind == kind]
        if idx:
            by_kind[kind] = {
                "n": len(idx),
                "agentic_p50_ms": round(percentile([agentic_ms[i] for i in idx], 50), 2),
                "classic_p50_ms": round(percentile([classic_ms[i] for i in idx], 50), 2),
            }
    slowest = sorted(range(len(queries)), key=lambda i: -agentic_ms[i])[:5]
    log("  profiling agentic")
    profile = profile_agentic(revision, agentic_requests)
    return {
        "namespace": str(dirs.published / syn.NAMESPACE),
        "chunks": revision.pointer.chunks,
        "documents": revision.pointer.documents,
        "revision": revision.number,
        "corpus_cached": corpus["cached"],
        "publish_cached": bulk["cached"],
        "queries": len(queries),
        "query_mix": dict(syn.QUERY_MIX),
        "token_budget": TARGET_BUDGET,
        "planner": "rule (no model)",
        "warmup_seconds": round(warmup, 2),
        "load_avg_1m": {"before": load_before, "after": load_after},
        "agentic": _stats(agentic_ms),
        "classic": _stats(classic_ms),
        "multi_step_queries": sum(s > 1 for s in steps),
        "by_kind": by_kind,
        "slowest_agentic": [
            {"kind": queries[i].kind, "query": queries[i].text, "ms": round(agentic_ms[i], 1)}
            for i in slowest
        ],
        "profile": profile,
    }


# -- report ------------------------------------------------------------------------------------


def _f(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_report(result: Row) -> None:
    q = result["quality"]
    print("\n## Quality (shared corpus, 40 development questions)\n")
    print(
        "| subset | system | n | hit@1 | hit@5 | hit@10 | evidence hit | used p50 / max "
        "| evidence tok p50 | exhausted | ms p50 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for subset in SUBSETS:
        for system, row in q["table"][subset].items():
            if system == f"agentic_{DIAGNOSTIC_BUDGET}":
                continue
            cells = [subset.split("_")[0], system, str(row["n"])]
            cells += [_f(row[m]) for m in ("hit@1", "hit@5", "hit@10")]
            if system.startswith("agentic_"):
                cells += [
                    _f(row["evidence_hit"]),
                    f"{row['budget_used']['p50']:.0f} / {row['budget_used']['max']:.0f}",
                    f"{row['evidence_tokens']['p50']:.0f}",
                    str(row["budget_exhausted"]),
                    f"{row['took_ms_p50']:.1f}",
                ]
            else:
                cells += ["-"] * 5
            print("| " + " | ".join(cells) + " |")
    if "latency" in result:
        la = result["latency"]
        print(
            f"\n## Latency ({la['chunks']:,}-chunk synthetic namespace, {la['queries']} queries)\n"
        )
        print("| system | p50 ms | p95 ms | p99 ms | mean ms |")
        print("|---|---:|---:|---:|---:|")
        for system in ("agentic", "classic"):
            s = la[system]
            print(
                f"| {system} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {s['p99_ms']:.1f} "
                f"| {s['mean_ms']:.1f} |"
            )
    print("\n## Targets\n")
    for name, target in result["targets"].items():
        print(f"- {name}: {json.dumps(target)}")
    for budget in BUDGETS:
        print(f"\n## Agentic misses at hit@5 ({budget} budget, all questions)\n")
        for entry in q["per_question"]:
            a = entry[f"agentic_{budget}"]
            if a["miss_cause"]:
                print(
                    f"- {entry['id']} ({entry['kind']}, classic rank {entry['classic_rank']}): "
                    f"{a['miss_cause']}"
                )
        lost = [
            f"{e['id']} ({e[f'agentic_{budget}']['results']} evidence results)"
            for e in q["per_question"]
            if not e[f"agentic_{budget}"]["evidence_hit"]
        ]
        print(f"- answer not in evidence_text: {', '.join(lost) or 'none'}")
    every = q["table"]["all_questions"]
    shares = ", ".join(
        f"{b}: {every[f'agentic_{b}']['evidence_share_of_used']:.2f}" for b in BUDGETS
    )
    print(f"\nevidence_text tokens / budget.used (mean, all questions): {shares}")
    if "latency" in result:
        prof = result["latency"]["profile"]["ms_per_query"]
        print("\nagentic time by part (cProfile, cumulative ms/query, inflated): ", end="")
        print(", ".join(f"{k} {v}" for k, v in list(prof.items())[:10]))


def targets(result: Row) -> Row:
    table = result["quality"]["table"]["all_questions"]
    agentic = table[f"agentic_{TARGET_BUDGET}"]["hit@5"]
    classic = table["classic"]["hit@10"]
    out: Row = {
        "agentic_hit@5_at_8k_ge_classic_hit@10": {
            "agentic_hit@5": agentic,
            "classic_hit@10": classic,
            "met": agentic >= classic,
        }
    }
    if "latency" in result:
        p50 = result["latency"]["agentic"]["p50_ms"]
        out["agentic_p50_below_300ms"] = {
            "agentic_p50_ms": p50,
            "target_ms": TARGET_P50_MS,
            "met": p50 < TARGET_P50_MS,
        }
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--corpus", type=Path, default=SHARED_CORPUS)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/corpus-bench"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--skip-latency", action="store_true")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    result: Row = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_facts(),
    }
    log("quality: ingest + search")
    with tempfile.TemporaryDirectory() as tmp:
        result["quality"] = quality(args.corpus, Path(tmp))
    if not args.skip_latency:
        log(f"latency: {args.queries} queries on the {LATENCY_SIZE:,}-chunk namespace")
        result["latency"] = latency(
            args.workdir, args.queries, args.seed, args.corpus / "questions.jsonl"
        )
    result["targets"] = targets(result)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    out = write_json(args.out / "agentic_quality.json", result)
    print_report(result)
    print(f"\nwritten: {out} ({result['total_seconds']}s)")


if __name__ == "__main__":
    main()
