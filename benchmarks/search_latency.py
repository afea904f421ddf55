"""Search latency and publish cost at corpus scale, on synthetic documents made of real text.

    python -m benchmarks.search_latency [--sizes 10000,100000,1000000] [--queries 300] [--quick]

Per corpus size (chunk positions; see `benchmarks/harness/synthetic.py` for the generator):
1. generate the artifact directories (cached under --workdir, keyed by size);
2. bulk-publish them as one namespace in a child process (timed, peak RSS; cached);
3. search latency, single-threaded, after a warm-up pass: `classic_search` (top_k=10) and, for
   the same query in the same loop, the three raw tantivy channel queries it is built on (the
   same shaped term queries, as deep as classic search reads them, back to back; no fusion,
   no stored-document fetch): the floor classic search is held against;
4. publish ONE extra document (~300 chunks) into the corpus: add, re-publish a changed version,
   delete — three runs each, medians (must not grow with the corpus);
5. index size on disk per chunk (tantivy folder of the current revision, LanceDB folder).

Writes benchmarks/results/search_latency.json (search_latency_quick.json with --quick) and
prints a markdown table. Where classic search spends its time is read from `--profile`: a
cProfile of the real `classic_search` at the largest size, written to
benchmarks/results/search_latency_profile.txt (an earlier stage-timed hand copy of classic
search drifted from it and was removed).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import resource
import shutil
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import tantivy

from benchmarks.harness import (
    RESULTS,
    TOP_K,
    log,
    machine_facts,
    percentile,
    write_json,
)
from benchmarks.harness import synthetic as syn
from benchmarks.harness.synthetic import NAMESPACE, QUERY_MIX, BenchQuery, SizeDirs, dir_bytes
from corpus_pipeline.contracts.published import read_pointer
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.index import channels
from corpus_pipeline.publish.publisher import PublishItem, publish_namespace
from query_service.retrieval.classic import MIN_DEPTH, classic_search
from query_service.retrieval.queries import channel_query, path_query, shape_query
from query_service.snapshot.revision import Revision, open_revision

# The channels with an index field (document, page and dense rank by other means).
INDEX_CHANNELS = tuple(channels.CHANNEL_FIELDS)
RAW_DEPTH = MIN_DEPTH  # as deep as classic search reads each channel
ONE_DOC_CHUNKS = 300
ONE_DOC_RUNS = 3
TARGET_P50_MS = 20.0
TARGET_RATIO = 2.0
TARGET_SIZE = 1_000_000


# -- search measurement ------------------------------------------------------------------------


def channel_queries(
    revision: Revision, shaped: dict[str, list[str]]
) -> list[tuple[str, tantivy.Query]]:
    """The lexical channels' term queries from classic search's own builders (`shape_query`,
    `channel_query`, `path_query`; no filters, label phrases or other word forms)."""
    out = []
    for channel, terms in shaped.items():
        if not terms:
            continue
        if channel == "path":
            query, _full = path_query(revision.searcher, terms, revision.pointer.chunks)
        else:
            query = channel_query(channel, terms, None)
        out.append((channel, query))
    return out


def raw_channels(revision: Revision, shaped: dict[str, list[str]]) -> int:
    """The channel queries executed back to back, RAW_DEPTH hits each: no fusion, no
    stored-document fetch (the raw index work classic search is held against)."""
    searcher = revision.searcher
    hits = 0
    for _channel, query in channel_queries(revision, shaped):
        hits += len(searcher.search(query, RAW_DEPTH, count=False).hits)
    return hits


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6


def measure_search(revision: Revision, queries: list[BenchQuery]) -> dict[str, Any]:
    requests = [SearchRequest(query=q.text, namespace=NAMESPACE, top_k=TOP_K) for q in queries]
    shaped = [{c: shape_query(c, q.text) for c in INDEX_CHANNELS} for q in queries]
    started = time.perf_counter()
    for request, terms in zip(requests, shaped, strict=True):  # warm-up pass
        raw_channels(revision, terms)
        classic_search(revision, request)
    warmup = time.perf_counter() - started
    gc.collect()
    classic_ms: list[float] = []
    raw_ms: list[float] = []
    for i, (request, terms) in enumerate(zip(requests, shaped, strict=True)):
        # Alternate the order so neither side systematically runs on a warmer cache.
        run_classic = partial(classic_search, revision, request)
        run_raw = partial(raw_channels, revision, terms)
        if i % 2:
            classic_ms.append(_timed(run_classic))
            raw_ms.append(_timed(run_raw))
        else:
            raw_ms.append(_timed(run_raw))
            classic_ms.append(_timed(run_classic))
    by_kind: dict[str, dict[str, float]] = {}
    for kind, _ in QUERY_MIX:
        idx = [i for i, q in enumerate(queries) if q.kind == kind]
        if idx:
            by_kind[kind] = {
                "n": len(idx),
                "p50_classic_ms": round(percentile([classic_ms[i] for i in idx], 50), 3),
                "p50_raw_ms": round(percentile([raw_ms[i] for i in idx], 50), 3),
            }
    p50c, p50r = percentile(classic_ms, 50), percentile(raw_ms, 50)
    per_query_ratio = [c / r for c, r in zip(classic_ms, raw_ms, strict=True) if r > 0]
    return {
        "queries": len(queries),
        "warmup_seconds": round(warmup, 2),
        "p50_classic_ms": round(p50c, 3),
        "p95_classic_ms": round(percentile(classic_ms, 95), 3),
        "p99_classic_ms": round(percentile(classic_ms, 99), 3),
        "mean_classic_ms": round(statistics.fmean(classic_ms), 3),
        "p50_raw_ms": round(p50r, 3),
        "p95_raw_ms": round(percentile(raw_ms, 95), 3),
        "p99_raw_ms": round(percentile(raw_ms, 99), 3),
        "mean_raw_ms": round(statistics.fmean(raw_ms), 3),
        "ratio_p50": round(p50c / p50r, 2) if p50r else None,
        "ratio_p95": round(percentile(classic_ms, 95) / percentile(raw_ms, 95), 2),
        "ratio_median_per_query": round(percentile(per_query_ratio, 50), 2),
        "by_kind": by_kind,
    }


def profile_classic(revision: Revision, queries: list[BenchQuery], out: Path) -> str:
    requests = [SearchRequest(query=q.text, namespace=NAMESPACE, top_k=TOP_K) for q in queries]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(2):
        for request in requests:
            classic_search(revision, request)
    profiler.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)
    out.write_text(buffer.getvalue(), encoding="utf-8")
    return buffer.getvalue()


# -- one-document publish ------------------------------------------------------------------------


def ensure_extra(workdir: Path, seed: int) -> dict[int, Path]:
    """Two versions of the extra document (the second rewrites ~10% of its chunks)."""
    model = syn.load_text_model()
    root = workdir / "extra"
    key = {"generator_version": syn.GENERATOR_VERSION, "seed": seed, "chunks": ONE_DOC_CHUNKS}
    dirs = {v: root / f"v{v}" for v in (1, 2)}
    if syn.read_marker(root / "extra.json", key) is None:
        shutil.rmtree(root, ignore_errors=True)
        for variant, directory in dirs.items():
            spec = syn.extra_spec(NAMESPACE, seed, variant, ONE_DOC_CHUNKS)
            syn.write_document(model, spec, directory)
        (root / "extra.json").write_text(json.dumps(key), encoding="utf-8")
    return dirs


def measure_one_doc(
    dirs: SizeDirs, items: list[PublishItem], extra: dict[int, Path], seed: int
) -> dict[str, Any]:
    extra_items = {
        v: PublishItem(
            record=syn.extra_spec(NAMESPACE, seed, v, ONE_DOC_CHUNKS).record(), directory=path
        )
        for v, path in extra.items()
    }
    # Start from the corpus alone (a crashed earlier run may have left the extra doc in).
    publish_namespace(dirs.published, NAMESPACE, items)
    runs: list[dict[str, Any]] = []
    for run in range(ONE_DOC_RUNS):
        for op, batch in (
            ("add", [*items, extra_items[1]]),
            ("update", [*items, extra_items[2]]),
            ("delete", items),
        ):
            started = time.perf_counter()
            report = publish_namespace(dirs.published, NAMESPACE, batch)
            seconds = time.perf_counter() - started
            entry = {"run": run, "op": op, **syn.report_dict(report, seconds)}
            # The publisher compacts every LanceDB table on every 20th revision.
            entry["compaction"] = bool(entry["revision"] and entry["revision"] % 20 == 0)
            if entry["published"] + entry["removed"] != 1:
                raise RuntimeError(f"one-doc publish did not change exactly one document: {entry}")
            runs.append(entry)
            log(f"    {op:6s} run {run}: {seconds:.2f}s {entry['timings']}")
    medians = {
        op: round(statistics.median(r["seconds"] for r in runs if r["op"] == op), 3)
        for op in ("add", "update", "delete")
    }
    stage_medians = {
        op: {
            stage: round(
                statistics.median(r["timings"].get(stage, 0.0) for r in runs if r["op"] == op), 3
            )
            for stage in ("diff", "tantivy", "lance")
        }
        for op in ("add", "update", "delete")
    }
    return {
        "chunks": ONE_DOC_CHUNKS,
        "median_seconds": medians,
        "median_stage_seconds": stage_medians,
        "runs": runs,
    }


# -- disk --------------------------------------------------------------------------------------


def measure_disk(dirs: SizeDirs) -> dict[str, Any]:
    ns_dir = dirs.published / NAMESPACE
    pointer = read_pointer(ns_dir)
    if pointer is None:
        raise RuntimeError("namespace not published")
    tantivy_dir = ns_dir / pointer.tantivy_dir
    meta = json.loads((tantivy_dir / "meta.json").read_text(encoding="utf-8"))
    tantivy_bytes = dir_bytes(tantivy_dir)
    lance_bytes = dir_bytes(ns_dir / "lance")
    chunks = max(pointer.chunks, 1)
    return {
        "revision": pointer.revision,
        "unique_chunks": pointer.chunks,
        "tantivy_segments": len(meta.get("segments", [])),
        "tantivy_bytes": tantivy_bytes,
        "tantivy_bytes_per_chunk": round(tantivy_bytes / chunks),
        "tantivy_all_revisions_bytes": dir_bytes(ns_dir / "tantivy"),
        "lance_bytes": lance_bytes,
        "lance_bytes_per_chunk": round(lance_bytes / chunks),
        "lance_versions_note": "LanceDB folder includes every table version kept so far",
    }


# -- driver ------------------------------------------------------------------------------------


def run_size(size: int, args: argparse.Namespace, queries: list[BenchQuery]) -> dict[str, Any]:
    dirs = SizeDirs(args.workdir / f"n{size}")
    phases: dict[str, float] = {}
    log(f"size {size:,}: corpus")
    mark = time.perf_counter()
    corpus = syn.ensure_corpus(dirs, size, args.seed, args.workers)
    phases["generate"] = time.perf_counter() - mark
    log(f"  corpus: {corpus['docs']} docs in {corpus['seconds']}s (cached={corpus['cached']})")
    mark = time.perf_counter()
    bulk = syn.ensure_published(dirs, corpus)
    phases["bulk_publish"] = time.perf_counter() - mark
    log(f"  bulk publish: {bulk['seconds']}s {bulk['timings']} (cached={bulk['cached']})")
    disk_before = measure_disk(dirs)

    mark = time.perf_counter()
    revision = open_revision(dirs.published, NAMESPACE)
    phases["open_revision"] = time.perf_counter() - mark
    mark = time.perf_counter()
    load_before = os.getloadavg()[0]
    search = measure_search(revision, queries)
    # Other processes on the machine inflate latencies: keep the 1-minute load next to them.
    search["load_avg_1m"] = {"before": load_before, "after": os.getloadavg()[0]}
    phases["search"] = time.perf_counter() - mark
    log(
        f"  search: classic p50 {search['p50_classic_ms']} ms p95 {search['p95_classic_ms']} ms;"
        f" raw p50 {search['p50_raw_ms']} ms p95 {search['p95_raw_ms']} ms"
    )
    if args.profile and size == max(args.sizes):
        mark = time.perf_counter()
        out = args.out.parent / "search_latency_profile.txt"
        profile_classic(revision, queries, out)
        phases["profile"] = time.perf_counter() - mark
        log(f"  profile written to {out}")
    del revision
    gc.collect()

    mark = time.perf_counter()
    items = syn.corpus_items(dirs)
    one_doc = measure_one_doc(dirs, items, ensure_extra(args.workdir, args.seed), args.seed)
    phases["one_doc_publish"] = time.perf_counter() - mark
    log(f"  one-doc publish medians: {one_doc['median_seconds']}")
    mark = time.perf_counter()
    disk = measure_disk(dirs)
    phases["disk"] = time.perf_counter() - mark
    return {
        "size": size,
        "chunks": disk["unique_chunks"],
        "chunk_positions": corpus["chunk_positions"],
        "docs": corpus["docs"],
        "corpus": corpus,
        "bulk_publish_seconds": bulk["seconds"],
        "bulk_publish": bulk,
        "search": search,
        "one_doc_publish_seconds": one_doc["median_seconds"]["add"],
        "one_doc_publish": one_doc,
        "disk": disk,
        "disk_after_bulk": disk_before,
        "bytes_per_chunk": {
            "tantivy": disk["tantivy_bytes_per_chunk"],
            "lance": disk["lance_bytes_per_chunk"],
        },
        "phase_seconds": {k: round(v, 2) for k, v in phases.items()},
    }


def verdict(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    at = [s for s in sizes if s["size"] >= TARGET_SIZE]
    if not at:
        return {"evaluated": False, "reason": f"no size >= {TARGET_SIZE:,} in this run"}
    s = at[0]["search"]
    p50_ok = s["p50_classic_ms"] <= TARGET_P50_MS
    ratio_ok = (s["ratio_p50"] or 0) <= TARGET_RATIO
    return {
        "evaluated": True,
        "size": at[0]["size"],
        "p50_classic_ms": s["p50_classic_ms"],
        "p50_target_ms": TARGET_P50_MS,
        "p50_ok": p50_ok,
        "ratio_p50": s["ratio_p50"],
        "ratio_target": TARGET_RATIO,
        "ratio_ok": ratio_ok,
    }


def markdown_table(sizes: list[dict[str, Any]]) -> str:
    lines = [
        "| chunks | docs | bulk publish s | classic p50 / p95 ms | raw p50 / p95 ms | ratio p50 "
        "| 1-doc add / update / delete s | tantivy B/chunk | lance B/chunk |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in sizes:
        q = s["search"]
        one = s["one_doc_publish"]["median_seconds"]
        lines.append(
            f"| {s['chunks']:,} | {s['docs']:,} | {s['bulk_publish_seconds']:.1f} "
            f"| {q['p50_classic_ms']:.2f} / {q['p95_classic_ms']:.2f} "
            f"| {q['p50_raw_ms']:.2f} / {q['p95_raw_ms']:.2f} | {q['ratio_p50']:.2f} "
            f"| {one['add']:.2f} / {one['update']:.2f} / {one['delete']:.2f} "
            f"| {s['bytes_per_chunk']['tantivy']:,} | {s['bytes_per_chunk']['lance']:,} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated chunks")
    ap.add_argument("--quick", action="store_true", help="sizes 10000,100000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/corpus-bench"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="generator procs")
    ap.add_argument("--questions", type=Path, default=syn.DEFAULT_QUESTIONS)
    ap.add_argument("--out", type=Path, default=None, help="result JSON path")
    ap.add_argument("--profile", action="store_true", help="cProfile classic search")
    args = ap.parse_args(argv)
    raw_sizes = "10000,100000" if args.quick else args.sizes
    args.sizes = [int(s.replace("_", "")) for s in raw_sizes.split(",") if s.strip()]
    if args.out is None:
        name = "search_latency_quick.json" if args.quick else "search_latency.json"
        args.out = RESULTS / name
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    args.workdir.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model = syn.load_text_model()
    queries = syn.make_queries(model, args.queries, args.seed, args.questions)
    sizes = [run_size(size, args, queries) for size in args.sizes]
    result = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_facts(),
        "params": {
            "sizes": args.sizes,
            "queries": args.queries,
            "query_mix": dict(QUERY_MIX),
            "top_k": TOP_K,
            "raw_depth_per_channel": RAW_DEPTH,
            "one_doc_chunks": ONE_DOC_CHUNKS,
            "one_doc_runs": ONE_DOC_RUNS,
            "seed": args.seed,
            "workdir": str(args.workdir),
            "generator_version": syn.GENERATOR_VERSION,
        },
        "targets": {
            "p50_classic_ms_at_1M": TARGET_P50_MS,
            "classic_over_raw_p50": TARGET_RATIO,
        },
        "verdict": verdict(sizes),
        "sizes": sizes,
        "peak_rss_mib_this_process": round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ),
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    write_json(args.out, result, indent=2)
    print(markdown_table(sizes))
    print(f"\nverdict: {json.dumps(result['verdict'])}")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
