"""What the dense channel adds to a classic query at corpus scale.

    python -m benchmarks.dense_latency [--size 100000] [--queries 200] [--weight W]

The synthetic corpus of `benchmarks.search_latency` (`benchmarks.harness.synthetic`: same generator,
seed and cache under --workdir) is published a second time, into its own folder, with a vector for every chunk: the
vectors are seeded random unit vectors of the local model's dimension, because embedding 100k
chunks on two cores takes about an hour and the cost of ranking depends on how many vectors
there are, not on their values. Queries are embedded by the real local model
(`query_service.retrieval.dense`), as a served query is.

Measured single-threaded after a warm-up pass, per query, side by side in one loop: classic
search with the lexical channels only, with the default weights (which rerank the lexical top 30
by the vectors when a revision has them) and with the dense channel fused at `--weight`;
and the dense stage alone, split into the query's embedding and the ranking over the matrix.
Reports p50/p95 of each, the load time of the revision's vector matrix and its memory. Writes
benchmarks/results/dense_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import RESULTS, log, nearest_rank, write_json
from benchmarks.harness import synthetic as syn
from corpus_pipeline.contracts import ChunksFile
from corpus_pipeline.contracts.search import DEFAULT_WEIGHTS, SearchRequest
from corpus_pipeline.embeddings.vectors import LocalMiniLM, write_vectors
from corpus_pipeline.publish.publisher import PublishItem, publish_namespace
from query_service.retrieval import dense
from query_service.retrieval.classic import classic_search
from query_service.retrieval.dense import dense_index, query_embedder
from query_service.snapshot.revision import open_revision

TARGET_P50_MS = 20.0


def ensure_vectors(dirs: syn.SizeDirs, seed: int) -> list[PublishItem]:
    """One vector file per synthetic document (seeded by its id), beside its artifacts."""
    spec = LocalMiniLM().spec
    items = []
    for item in syn.corpus_items(dirs):
        path = dirs.root / "vectors" / f"{item.record.document_id}.parquet"
        if not path.is_file():
            chunks = ChunksFile.model_validate_json(
                (item.directory / "chunks.json").read_text(encoding="utf-8")
            )
            ids = sorted({c.chunk_id for c in chunks.chunks})
            rng = np.random.default_rng([seed, int(item.record.sha256[:8], 16)])
            matrix = rng.standard_normal((len(ids), spec.dimension)).astype(np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
            write_vectors(path, spec, ids, matrix)
        items.append(PublishItem(item.record, item.directory, vectors=path))
    return items


def run(args: argparse.Namespace) -> dict[str, Any]:
    dirs = syn.SizeDirs(args.workdir / f"size-{args.size}")
    corpus = syn.ensure_corpus(dirs, args.size, args.seed, args.workers)
    log(f"corpus: {corpus['docs']} documents ({'cached' if corpus['cached'] else 'generated'})")
    published = dirs.root / "published-dense"
    items = ensure_vectors(dirs, args.seed)
    if not (published / syn.NAMESPACE / "CURRENT.json").is_file():
        started = time.perf_counter()
        report = publish_namespace(published, syn.NAMESPACE, items)
        log(
            f"published with vectors: {report.pointer.chunks} chunks in {time.perf_counter() - started:.0f} s"
        )
    revision = open_revision(published, syn.NAMESPACE)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    index = dense_index(revision)
    load_seconds = time.perf_counter() - started
    assert index is not None
    embedder = query_embedder(index.spec)
    model = syn.load_text_model()
    queries = syn.make_queries(model, args.queries, args.seed, args.questions)
    only_words = {**DEFAULT_WEIGHTS, "rerank": 0.0}
    hybrid = {**only_words, "dense": args.weight}

    def lexical(text: str) -> object:
        return classic_search(revision, SearchRequest(query=text, top_k=10, weights=only_words))

    def reranked(text: str) -> object:  # the default weights: the lexical top 30 reranked
        return classic_search(revision, SearchRequest(query=text, top_k=10))

    def fused(text: str) -> object:
        return classic_search(revision, SearchRequest(query=text, top_k=10, weights=hybrid))

    calls = (("lexical", lexical), ("default (rerank)", reranked), ("fused", fused))
    for q in queries[:20]:  # warm-up: the model, the index readers, the caches
        for _, call in calls:
            call(q.text)
    times: dict[str, list[float]] = {name: [] for name in [*dict(calls), "embed", "rank"]}
    for q in queries:
        for name, call in calls:
            t = time.perf_counter()
            call(q.text)
            times[name].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        vector = embedder.embed([q.text])[0]
        times["embed"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        index.rank(vector, 100)
        times["rank"].append((time.perf_counter() - t) * 1000)
    stats = {
        name: {
            "p50_ms": nearest_rank(values, 0.5),
            "p95_ms": nearest_rank(values, 0.95),
            "mean_ms": round(statistics.fmean(values), 2),
        }
        for name, values in times.items()
    }
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "size": args.size,
        "unique_chunks": len(index.chunk_ids),
        "dimension": index.spec.dimension,
        "space": index.spec.key,
        "vectors": "seeded random unit vectors (ranking cost depends on their count only)",
        "search": (
            "exact dot product over one float32 matrix"
            if index.codes is None
            else f"sign-bit (binary) candidates, {dense.CANDIDATE_SHARE:.0%} of the set, "
            "rescored by exact dot product"
        ),
        "weight": args.weight,
        "queries": len(queries),
        "matrix_load_seconds": round(load_seconds, 2),
        "matrix_mib": round(index.matrix.nbytes / 2**20, 1),
        "peak_rss_growth_mib": round(
            (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        ),
        "latency": stats,
        "target": {
            "classic_p50_ms_with_dense": TARGET_P50_MS,
            "met": max(stats["fused"]["p50_ms"], stats["default (rerank)"]["p50_ms"])
            <= TARGET_P50_MS,
        },
        "cores": len(os.sched_getaffinity(0)),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--weight", type=float, default=DEFAULT_WEIGHTS["dense"] or 1.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/corpus-bench"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--questions", type=Path, default=syn.DEFAULT_QUESTIONS)
    ap.add_argument("--out", type=Path, default=RESULTS / "dense_latency.json")
    args = ap.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=1))
    write_json(args.out, result)


if __name__ == "__main__":
    main()
