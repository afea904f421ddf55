"""Retrieval on real long documents, page-exact, next to naive BM25 in the same run.

All 117 PDFs of `../shared/realworld/docs` go into ONE namespace through `corpus ingest`
(`harness.ingest_folder`: Dagster assets and their contract checks, one published revision); a
document that fails stays in the question set, its questions are misses. The 199 questions
(`questions.jsonl`) and the 100 financial-metric questions (`finance_questions.jsonl`) then go
to `corpus serve` over HTTP (`POST /v1/search`) as an agent sends them: classic
(top 10) and agentic (8k token budget). Agentic search is scored as an agent reads it: its
primary answer alone, the `results` in order (each passage's pages). Scoring is the set's own
`score_pages.py` (page-hit@1/5/10, MRR@10, doc-hit@10; overall, per doc_type, per evidence kind).

Beside it, in the same run:
- the naive floor, the product's (`corpus_pipeline.evaluation.baseline`, what `corpus eval
  --baseline naive-bm25` runs): PyMuPDF plain text per document, 1,000-character windows with
  200 overlap, Okapi BM25 (k1 1.5, b 0.75), top 10 (each window cites the pages it covers);
- the channel study: classic with content only, each channel alone, and the fused default.

Generalisation is measured, not assumed: the documents are split into two halves by a stable hash
of the file name (`half_of`: the first byte of its BLAKE2b digest, even → "tuned", odd → "held
out"); every choice is made on the tuned half and both halves are reported, per set and per
document type. A change that helps the tuned half and hurts the other is reverted.

Writes benchmarks/results/realworld_quality.json and prints the tables.
Run: `python -m benchmarks.realworld_quality [--home DIR [--reuse]]` (`--reuse` searches an
already ingested home without ingesting again; the headline comes from a full run).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq

from benchmarks.harness import (
    AGENTIC_BUDGET,
    REALWORLD,
    RESULTS,
    TOP_K,
    Ingested,
    ingest_folder,
    load_script,
    log,
    nearest_rank,
    post_search,
    primary_answer,
    realworld_questions,
    result_line,
    score_pages,
    search_client,
    write_json,
    write_jsonl,
)
from corpus_pipeline.contracts import published
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse
from corpus_pipeline.contracts.search import DEFAULT_WEIGHTS, RevisionPointer
from corpus_pipeline.evaluation.baseline import NaiveBaseline, folder_documents

# The floor's pieces, as this benchmark's tests read them.
from corpus_pipeline.evaluation.baseline import NaiveBM25 as NaiveBM25
from corpus_pipeline.evaluation.baseline import page_windows as page_windows
from query_service.snapshot.revision import open_revision

NAMESPACE = "realworld"
CHANNEL_STUDY: dict[str, dict[str, float] | None] = {
    "fused (default)": None,
    "content only": {"content": 1.0},
    "path only": {"path": 1.0},
    "term only": {"term": 1.0},
    "content + term": {"content": DEFAULT_WEIGHTS["content"], "term": DEFAULT_WEIGHTS["term"]},
    "fused without the page channel": {**DEFAULT_WEIGHTS, "page": 0.0},
    "fused without the document channel": {**DEFAULT_WEIGHTS, "document": 0.0},
    "fused without the part channel": {**DEFAULT_WEIGHTS, "part": 0.0},
    "fused, part channel 1": {**DEFAULT_WEIGHTS, "part": 1.0},
    "fused, part channel 3": {**DEFAULT_WEIGHTS, "part": 3.0},
    "fused, document channel 1": {**DEFAULT_WEIGHTS, "document": 1.0},
    "fused, document channel 3": {**DEFAULT_WEIGHTS, "document": 3.0},
}
# With `--dense` (vectors of the local model, issue 17): the dense channel alone and fused at
# each weight of the curve, scored per group (the weight is chosen on these numbers).
# The rerank channel (the fused lexical top 30 reordered by the model) has its own curve.
DENSE_CURVE = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
RERANK_CURVE = (0.5, 1.0, 1.5, 2.0, 3.0)
LEXICAL = {**DEFAULT_WEIGHTS, "rerank": 0.0}
DENSE_STUDY: dict[str, dict[str, float] | None] = {
    "lexical (no vectors)": LEXICAL,
    "default (rerank 1.5)": None,
    "dense only": {"dense": 1.0},
    **{f"fused + dense {w:g}": {**LEXICAL, "dense": w} for w in DENSE_CURVE},
    **{f"lexical + rerank {w:g}": {**LEXICAL, "rerank": w} for w in RERANK_CURVE},
}
METRICS = ("hit@1", "hit@5", "hit@10", "mrr@10", "doc@10")

Row = dict[str, Any]


def breakdown(
    root: Path, lines: list[Row], work: Path, name: str, field: str, questions: str = "finance"
) -> dict[str, Row]:
    """The set's scorer over the questions of each value of `field` ("metric", "statements":
    the financial-metric questions per measure and per statement they need)."""
    path = work / f"{name}-by-{field}.jsonl"
    write_jsonl(path, lines)
    groups: dict[str, list[Row]] = defaultdict(list)
    scorer = load_script(root / "score_pages.py")
    for q in realworld_questions(root, questions):
        value = q[field]
        groups["+".join(sorted(value)) if isinstance(value, list) else str(value)].append(q)
    out: dict[str, Row] = {}
    for value, kept in sorted(groups.items()):
        subset = work / f"{name}-{field}-{len(out)}.jsonl"
        write_jsonl(subset, kept)
        out[value] = scorer.score(str(path), str(subset))["all"]
    return out


# -- the system, as an agent calls it -----------------------------------------------------------


def stored_ids(client: httpx.Client) -> dict[str, str]:
    """Document id by source file name: what `filters.document_ids` takes per document."""
    listed = client.get("/v1/documents", params={"namespace": NAMESPACE, "limit": 500})
    listed.raise_for_status()
    return {d["source_file_name"]: d["document_id"] for d in listed.json()["items"]}


def _within(q: Row, documents: Mapping[str, str] | None) -> Row:
    """The filter of the single-document setting (a document the store lacks: none, so the
    question is asked over an empty filter and misses)."""
    if documents is None:
        return {}
    return {"filters": {"document_ids": [documents.get(q["doc"], "missing-document")]}}


def classic(
    client: httpx.Client,
    questions: Sequence[Row],
    weights: dict[str, float] | None = None,
    documents: Mapping[str, str] | None = None,
) -> tuple[list[Row], list[float]]:
    lines, took = [], []
    for q in questions:
        body: Row = {"query": q["question"], "top_k": TOP_K, "namespace": NAMESPACE}
        body |= _within(q, documents)
        if weights is not None:
            body["weights"] = weights
        started = time.perf_counter()
        payload = post_search(client, body)
        took.append((time.perf_counter() - started) * 1000)
        lines.append({"id": q["id"], "results": [result_line(r) for r in payload["results"]]})
    return lines, took


def agentic(
    client: httpx.Client, questions: Sequence[Row], documents: Mapping[str, str] | None = None
) -> tuple[list[Row], list[float]]:
    lines, took = [], []
    for q in questions:
        request = AgenticRequest(
            mode="agentic",
            query=q["question"],
            namespace=NAMESPACE,
            token_budget=AGENTIC_BUDGET,
            **_within(q, documents),
        )
        started = time.perf_counter()
        payload = post_search(client, request.model_dump(mode="json"))
        took.append((time.perf_counter() - started) * 1000)
        response = AgenticResponse.model_validate(payload)
        lines.append({"id": q["id"], "results": primary_answer(response)})
    return lines, took


# -- the naive floor ------------------------------------------------------------------------------


def naive(
    docs: Path, questions: Sequence[Row], split: int
) -> tuple[list[Row], list[Row], list[Row]]:
    """The product's floor (`corpus eval --baseline naive-bm25`) over the PDFs of `docs`: its
    results for `questions`, returned as those before `split` and after (the two question sets,
    over one index built once), and those before `split` asked each within its document."""
    floor = NaiveBaseline.build(d for d in folder_documents(docs) if d.name.endswith(".pdf"))

    def line(q: Row, within: str | None) -> Row:
        return {
            "id": q["id"],
            "results": [
                {"source_file_name": h.source_file_name, "pages": list(h.pages)}
                for h in floor.search(q["question"], TOP_K, within)
            ],
        }

    lines = [line(q, None) for q in questions]
    return lines[:split], lines[split:], [line(q, q["doc"]) for q in questions[:split]]


# -- heading statistics ------------------------------------------------------------------------

_HEADER_CELL = re.compile(r"<th[^>]*>(.*?)</th>", re.S)


def _norm(text: str) -> str:
    return " ".join(html.unescape(re.sub(r"<br>", " ", text)).split()).casefold()


def heading_stats(directory: Path) -> Row:
    """One document's headings as published: how many, how deep, and the share that are table
    header cells (the text of a header cell or a whole header row of one of its tables; body
    cells are left out, a row label "Gross margin" is often also a section's title) or that
    repeat more than twice (running headers, column headers over and over): both should be
    near zero."""
    table = pq.read_table(
        directory / "parsed.parquet", columns=["row_type", "text", "hierarchy_path"]
    ).to_pylist()
    heads = [_norm(r["text"]) for r in table if r["row_type"] == "heading" and r["text"].strip()]
    cells: set[str] = set()
    for path in sorted((directory / "tables").glob("*.html")):
        markup = path.read_text(encoding="utf-8")
        for row in re.findall(r"<tr>(.*?)</tr>", markup, re.S):
            texts = [_norm(c) for c in _HEADER_CELL.findall(row)]
            cells.update(t for t in texts if t)
            cells.add(" ".join(t for t in texts if t))
    counts = Counter(heads)
    n = len(heads)
    return {
        "headings": n,
        "depth": max((len(r["hierarchy_path"]) for r in table), default=0),
        "table_cell_share": round(sum(1 for h in heads if h in cells) / n, 3) if n else 0.0,
        "repeated_share": round(sum(1 for h in heads if counts[h] > 2) / n, 3) if n else 0.0,
    }


def structure(home: Path) -> Row:
    """`heading_stats` per ingested document (by file name) and their means."""
    per_doc: dict[str, Row] = {}
    for manifest in sorted((home / "artifacts").glob("*/manifest.json")):
        name = json.loads(manifest.read_text(encoding="utf-8"))["source_file_name"]
        per_doc[name] = heading_stats(manifest.parent)
    keys = ("headings", "depth", "table_cell_share", "repeated_share")
    mean = {
        k: round(statistics.fmean(d[k] for d in per_doc.values()), 3) if per_doc else 0.0
        for k in keys
    }
    return {"mean": mean, "per_document": per_doc}


# -- report --------------------------------------------------------------------------------------


def embedding_of(ingested: Ingested) -> Row | None:
    """What the dense channel added, as the published revisions record it: the documents and
    unique chunks with a vector in the revision `corpus ingest` ended on, the seconds from the
    first revision of this ingest (lexical) to that one (embedding and one publish), and the
    ingested documents without a vector. None when no vectors were published."""
    ns_dir = ingested.settings.published_dir / NAMESPACE
    pointers = sorted(
        (
            RevisionPointer.model_validate_json(path.read_text(encoding="utf-8"))
            for path in (ns_dir / published.REVISIONS_DIR).glob("*.json")
        ),
        key=lambda p: p.revision,
    )
    if not pointers or published.VECTORS not in pointers[-1].lance_versions:
        return None
    revision = open_revision(ingested.settings.published_dir, NAMESPACE)
    vectors = revision.table(published.VECTORS).to_arrow().select(["document_id", "chunk_id"])
    documents = set(vectors.column("document_id").to_pylist())
    chunks = len(set(vectors.column("chunk_id").to_pylist()))
    if not chunks:
        return None
    seconds = (pointers[-1].created_at - pointers[0].created_at).total_seconds()
    return {
        "documents": len(documents),
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "chunks_per_s": round(chunks / seconds, 1) if seconds > 0 else None,
        "errors": {n: "no vector" for n, d in ingested.ok.items() if d not in documents},
    }


def table(systems: dict[str, dict[str, Row]], groups: Sequence[str]) -> list[str]:
    head = f"{'group':<44}{'system':<18}{'n':>4}" + "".join(f"{m:>8}" for m in METRICS)
    out = [head]
    for group in groups:
        for name, scores in systems.items():
            m = scores.get(group)
            if m is None:
                continue
            cells = "".join(f"{m[k]:>8.3f}" for k in METRICS)
            out.append(f"{group:<44}{name:<18}{m['n']:>4}{cells}")
    return out


def run(home: Path, reuse: bool, root: Path, dense: bool = False) -> Row:
    questions = realworld_questions(root)
    finance = realworld_questions(root, "finance")
    docs = root / "docs"
    work = Path(tempfile.mkdtemp(prefix="realworld-quality-"))
    started = time.perf_counter()
    failed: dict[str, str] = {}
    ingest_seconds = None
    embedding: Row | None = None
    dense_study: dict[str, dict[str, Row]] = {}
    if not reuse:
        log(f"ingesting {len(list(docs.glob('*.pdf')))} documents into {home} …")
        ingested = ingest_folder(docs, home, namespace=NAMESPACE)
        for r in ingested.results:
            log(f"  {r.status:<6} {r.seconds:6.1f}s {r.source_file_name}")
        failed = ingested.failed
        ingest_seconds = round(time.perf_counter() - started, 1)
        if dense:
            embedding = embedding_of(ingested)
    log("naive BM25 floor …")
    floor, finance_floor, floor_per_document = naive(
        docs, [*questions, *finance], split=len(questions)
    )
    systems: dict[str, list[Row]] = {"naive BM25": floor}
    per_document: dict[str, list[Row]] = {"naive BM25": floor_per_document}
    finance_systems: dict[str, list[Row]] = {"naive BM25": finance_floor}
    latency: dict[str, Row] = {}
    channels: dict[str, dict[str, Row]] = {}
    with search_client(home, NAMESPACE) as client:
        log("classic …")
        systems["classic"], took = classic(client, questions)
        finance_systems["classic"], finance_took = classic(client, finance)
        took += finance_took
        latency["classic"] = {
            "p50_ms": nearest_rank(took, 0.5, 1),
            "p95_ms": nearest_rank(took, 0.95, 1),
        }
        log("agentic …")
        systems["agentic 8k"], took = agentic(client, questions)
        finance_systems["agentic 8k"], finance_took = agentic(client, finance)
        took += finance_took
        latency["agentic 8k"] = {
            "p50_ms": nearest_rank(took, 0.5, 1),
            "p95_ms": nearest_rank(took, 0.95, 1),
        }
        log("per document …")
        documents = stored_ids(client)
        per_document["classic"] = classic(client, questions, documents=documents)[0]
        per_document["agentic 8k"] = agentic(client, questions, documents)[0]
        for name, weights in CHANNEL_STUDY.items():
            lines = (
                systems["classic"] if weights is None else classic(client, questions, weights)[0]
            )
            channels[name] = score_pages(root, lines, work, f"channel-{len(channels)}")["all"]
        if dense:
            for name, weights in DENSE_STUDY.items():
                lines, took = (
                    (systems["classic"], [])
                    if weights is None
                    else classic(client, questions, weights)
                )
                dense_study[name] = score_pages(root, lines, work, f"dense-{len(dense_study)}")
                if took:
                    latency[f"classic, {name}"] = {
                        "p50_ms": nearest_rank(took, 0.5, 1),
                        "p95_ms": nearest_rank(took, 0.95, 1),
                    }
    scores = {
        name: score_pages(root, lines, work, name.replace(" ", "_"))
        for name, lines in systems.items()
    }
    # The single-document setting: each question asked within its gold document.
    scores_per_document = {
        name: score_pages(root, lines, work, "per-document-" + name.replace(" ", "_"))
        for name, lines in per_document.items()
    }
    finance_scores = {
        name: score_pages(root, lines, work, "finance-" + name.replace(" ", "_"), "finance")
        for name, lines in finance_systems.items()
    }
    finance_breakdown = {
        field: {
            name: breakdown(root, lines, work, name.replace(" ", "_"), field)
            for name, lines in finance_systems.items()
        }
        for field in ("metric", "statements")
    }
    groups = sorted({g for s in scores.values() for g in s}, key=lambda g: (g != "all", g))
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "documents": len(list(docs.glob("*.pdf"))),
        "questions": len(questions),
        "ingested": "reused" if reuse else "fresh",
        "ingest_seconds": ingest_seconds,
        "failed_documents": failed,
        "scores": scores,
        "scores_per_document": scores_per_document,
        "groups": groups,
        "finance_questions": len(finance),
        "finance_scores": finance_scores,
        "finance_breakdown": finance_breakdown,
        "channel_study": channels,
        "dense_study": dense_study,
        "embedding": embedding,
        "structure": structure(home),
        "latency": latency,
        "per_question": {
            name: {line["id"]: line["results"][:TOP_K] for line in [*lines, *finance_lines]}
            for (name, lines), finance_lines in zip(
                systems.items(), finance_systems.values(), strict=True
            )
            if name != "naive BM25"
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, default=None, help="CORPUS_HOME to ingest into")
    parser.add_argument("--reuse", action="store_true", help="search --home without ingesting")
    parser.add_argument("--set", type=Path, default=REALWORLD, dest="root")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--dense",
        action="store_true",
        help="ingest with the local dense model (CORPUS_DENSE=local) and study its weight",
    )
    args = parser.parse_args(argv)
    if args.reuse and args.home is None:
        parser.error("--reuse needs --home")
    home = args.home or Path(tempfile.mkdtemp(prefix="realworld-home-"))
    if args.dense:
        os.environ["CORPUS_DENSE"] = "local"
    result = run(home, args.reuse, args.root, args.dense)
    print("\n".join(table(result["scores"], result["groups"])))
    print("\nper document (filters.document_ids of each question's document):")
    print("\n".join(table(result["scores_per_document"], result["groups"])))
    print("\nfinancial-metric questions:")
    finance_groups = sorted(
        {g for s in result["finance_scores"].values() for g in s if "type:" not in g},
        key=lambda g: (g != "all", g),
    )
    print("\n".join(table(result["finance_scores"], finance_groups)))
    for field, systems in result["finance_breakdown"].items():
        print(f"\nfinancial-metric questions per {field}:")
        values = sorted({v for per in systems.values() for v in per})
        flipped = {v: {name: per[v] for name, per in systems.items()} for v in values}
        print("\n".join(table({n: {v: flipped[v][n] for v in values} for n in systems}, values)))
    print("\nchannel study (classic, all 199 questions):")
    print("\n".join(table({k: {"all": v} for k, v in result["channel_study"].items()}, ["all"])))
    if result["dense_study"]:
        groups = [g for g in result["groups"] if g == "all" or g.startswith("type:")]
        print("\ndense study (classic):")
        print("\n".join(table(result["dense_study"], groups)))
        print(f"embedding: {result['embedding']}")
    print(f"\nheadings per document (mean): {result['structure']['mean']}")
    print(f"latency: {result['latency']}")
    if result["failed_documents"]:
        print(f"failed documents: {result['failed_documents']}")
    write_json(args.out / "realworld_quality.json", result)


if __name__ == "__main__":
    main()
