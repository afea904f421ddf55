"""Search quality on the shared corpus, measured on the user's path: every document through
`corpus ingest` (Dagster assets and their contract checks, the encrypted sample with the corpus
manifest's password, then the published revision) into a fresh CORPUS_HOME, and the 40
development questions as `POST /v1/search` over HTTP to `corpus serve`, scored with the
corpus's own `score_search.py`. A document that fails to ingest stays in the question set: its
questions are misses, and it is listed in `failed_documents` with its error.

Next to it, in the same run and over the same 40 questions, a naive baseline: BM25 (tantivy,
`en_stem` tokenizer) over fixed 120-word windows (60-word overlap) of the plain text the pipeline
extracted (the parsed rows' text in order from the artifacts; for a document that failed, from
`corpus debug --stop-at parse --json`; no section paths, no pages).

Writes benchmarks/results/search_quality.json and prints a side-by-side table.
Run: `python -m benchmarks.search_quality [--corpus DIR] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import tantivy

from benchmarks.harness import (
    CORPUS_CLI,
    RESULTS,
    SHARED_CORPUS,
    TOP_K,
    Ingested,
    Results,
    corpus_passwords,
    ingest_folder,
    load_questions,
    score_search,
    search_client,
    search_ours,
    write_json,
)
from corpus_pipeline.common.settings import CorpusSettings

WINDOW_WORDS = 120
WINDOW_OVERLAP = 60
BASELINE = (
    f"BM25 (tantivy en_stem) over {WINDOW_WORDS}-word windows with {WINDOW_OVERLAP}-word overlap "
    "of the parsed rows' text joined in order; no section paths, no pages"
)
TABLE_METRICS = ("hit@1", "hit@5", "hit@10", "mrr@10", "section@10", "doc_hit@10")


# -- the benchmark ----------------------------------------------------------------------------


@dataclass
class Corpus:
    """The baseline's text per document, the documents the pipeline ingested, and those it
    failed (name → error)."""

    texts: dict[str, str] = field(default_factory=dict)
    ingested: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


@dataclass
class BenchmarkRun:
    corpus: Corpus
    questions: list[dict[str, Any]]
    ours: Results
    baseline: Results
    seconds: dict[str, float]

    def supported_questions(self) -> list[dict[str, Any]]:
        """Questions whose document was ingested (a diagnostic subset, never the headline)."""
        ingested = set(self.corpus.ingested)
        return [q for q in self.questions if q["doc"] in ingested]


def artifact_text(settings: CorpusSettings, document_id: str) -> str:
    """The parsed rows' text of an ingested document, in reading order (from its artifacts)."""
    table = pq.read_table(
        settings.artifacts_dir / document_id / "parsed.parquet", columns=["order", "text"]
    )
    rows = sorted(zip(table["order"].to_pylist(), table["text"].to_pylist(), strict=True))
    return "\n".join(text for _, text in rows if text and text.strip())


def extract_text(doc: Path) -> str | None:
    """`corpus debug DOC --stop-at parse --json` (profile and parse, no Dagster): the baseline's
    text of a document the pipeline did not ingest (a later stage failed), so the baseline is
    not handicapped by our failure. None when the command cannot parse it either (the command
    takes no password: an encrypted document that failed stays unread)."""
    done = subprocess.run(
        [str(CORPUS_CLI), "debug", str(doc), "--stop-at", "parse", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    start = done.stdout.find("[")
    if done.returncode != 0 or start < 0:
        return None
    rows = sorted(json.loads(done.stdout[start:]), key=lambda r: r["order"])
    return "\n".join(r["text"] for r in rows if r["text"].strip())


def corpus_of(ingested: Ingested, docs_dir: Path) -> Corpus:
    corpus = Corpus(ingested=sorted(ingested.ok), failed=dict(sorted(ingested.failed.items())))
    for name, document_id in ingested.ok.items():
        corpus.texts[name] = artifact_text(ingested.settings, document_id)
    for name in corpus.failed:
        text = extract_text(docs_dir / name)
        if text is not None:  # else the pipeline cannot read it at all: neither system sees it
            corpus.texts[name] = text
    return corpus


def windows(text: str, size: int = WINDOW_WORDS, overlap: int = WINDOW_OVERLAP) -> list[str]:
    """Fixed word windows; the last one ends at the text's end (none for an empty text)."""
    words = text.split()
    step = size - overlap
    if step <= 0:
        raise ValueError("overlap must be smaller than the window size")
    starts = range(0, max(len(words) - overlap, 1), step)
    return [" ".join(words[s : s + size]) for s in starts if words[s : s + size]]


def query_text(question: str) -> str:
    """The question as a plain disjunction of words: no query syntax, no upper-case operators."""
    return re.sub(r"[^\w]+", " ", question).strip().lower()


def search_baseline(
    texts: dict[str, str], questions: Iterable[dict[str, Any]], index_dir: Path
) -> Results:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=True, tokenizer_name="en_stem")
    builder.add_text_field("doc", stored=True, tokenizer_name="raw")
    schema = builder.build()
    index_dir.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema, path=str(index_dir))
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for doc, text in sorted(texts.items()):
        for window in windows(text):
            writer.add_document(tantivy.Document(text=window, doc=doc))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    lines = []
    for q in questions:
        query, _errors = index.parse_query_lenient(query_text(q["question"]), ["text"])
        hits = searcher.search(query, TOP_K).hits
        results = []
        for _score, address in hits:
            stored = searcher.doc(address)
            results.append(
                {
                    "content": stored["text"][0],
                    "source_file_name": stored["doc"][0],
                    "section_path": [],
                    "pages": None,
                }
            )
        lines.append({"id": q["id"], "results": results})
    return lines


def run_benchmark(corpus_dir: Path, workdir: Path) -> BenchmarkRun:
    """Ingest, publish and search with both systems over all questions (unscored)."""
    seconds: dict[str, float] = {}
    passwords = corpus_passwords(corpus_dir)
    mark = time.perf_counter()
    ingested = ingest_folder(corpus_dir / "docs", workdir / "corpus_home", passwords)
    seconds["ingest_publish"] = time.perf_counter() - mark
    if ingested.publish_error:
        raise RuntimeError(f"publish failed: {ingested.publish_error}")
    mark = time.perf_counter()
    corpus = corpus_of(ingested, corpus_dir / "docs")
    seconds["baseline_text"] = time.perf_counter() - mark
    questions = load_questions(corpus_dir)
    mark = time.perf_counter()
    if ingested.pointer is None:
        ours: Results = [{"id": q["id"], "results": []} for q in questions]
    else:
        with search_client(ingested.settings.home) as client:
            ours = search_ours(client, questions)
    seconds["search_ours_http"] = time.perf_counter() - mark
    mark = time.perf_counter()
    baseline = search_baseline(corpus.texts, questions, workdir / "baseline_index")
    seconds["search_baseline"] = time.perf_counter() - mark
    return BenchmarkRun(corpus, questions, ours, baseline, seconds)


def score_run(run: BenchmarkRun, corpus_dir: Path, workdir: Path) -> dict[str, dict[str, Any]]:
    """Scores of both systems over all questions (the headline) and, to diagnose, over the
    questions whose document was ingested:
    {"ours" | "baseline": {"all_questions" | "supported_questions": scorer output}}."""
    subsets = {"all_questions": run.questions, "supported_questions": run.supported_questions()}
    return {
        system: {
            subset: score_search(
                corpus_dir, results, questions, workdir / f"score_{system}_{subset}"
            )
            for subset, questions in subsets.items()
        }
        for system, results in (("ours", run.ours), ("baseline", run.baseline))
    }


def per_question(run: BenchmarkRun, scores: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per question: rank of the first hit and the scorer's row for each system, plus the top
    result of ours (file and section) for diagnosing misses."""
    rows = []
    ours_top = {line["id"]: line["results"] for line in run.ours}
    ingested = set(run.corpus.ingested)
    for q in run.questions:
        row: dict[str, Any] = {
            "id": q["id"],
            "doc": q["doc"],
            "kind": q["kind"],
            "ingested": q["doc"] in ingested,
        }
        for system in ("ours", "baseline"):
            s = scores[system]["all_questions"]["per_question"][q["id"]]
            row[f"{system}_rank"] = round(1 / s["mrr@10"]) if s["mrr@10"] else None
            row[system] = s
        top = ours_top.get(q["id"]) or []
        row["ours_top1"] = (
            {"source_file_name": top[0]["source_file_name"], "section_path": top[0]["section_path"]}
            if top
            else None
        )
        rows.append(row)
    return rows


def report(run: BenchmarkRun, scores: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "top_k": TOP_K,
        "path": "corpus ingest (Dagster assets + checks, publish) → corpus serve → "
        "POST /v1/search over HTTP; failed documents count as misses",
        "baseline": BASELINE,
        "seconds": {k: round(v, 2) for k, v in run.seconds.items()},
        "ingested": run.corpus.ingested,
        "failed_documents": run.corpus.failed,
        "skipped": {},  # kept for readers of older results: nothing leaves the question set
        "supported_question_ids": [q["id"] for q in run.supported_questions()],
        "scores": {
            system: {subset: s["summary"] for subset, s in by_subset.items()}
            for system, by_subset in scores.items()
        },
        "per_question": per_question(run, scores),
    }


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(result: dict[str, Any]) -> None:
    scores = result["scores"]
    header = f"{'group':<30}{'n':>4}  " + "".join(f"{m:>19}" for m in TABLE_METRICS)
    print(header)
    print(f"{'':<36}" + "".join(f"{'ours / base':>19}" for _ in TABLE_METRICS))
    for subset in ("all_questions", "supported_questions"):
        groups = scores["ours"][subset]
        for group in groups:
            if subset == "supported_questions" and group != "all":
                continue
            ours, base = groups[group], scores["baseline"][subset][group]
            label = f"{subset.split('_')[0]}:{group}"
            cells = "".join(f"{_fmt(ours[m]) + ' / ' + _fmt(base[m]):>19}" for m in TABLE_METRICS)
            print(f"{label:<30}{ours['n']:>4}  {cells}")
    missed = [f"{r['id']}({r['kind']})" for r in result["per_question"] if not r["ours"]["hit@10"]]
    print(f"ours missed at 10: {', '.join(missed) or 'none'}")
    failed = result["failed_documents"]
    print(f"failed documents ({len(failed)}): " + ("none" if not failed else ""))
    for name, error in failed.items():
        print(f"  {name}: {error}")
    print(f"baseline: {result['baseline']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--corpus", type=Path, default=SHARED_CORPUS)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        run = run_benchmark(args.corpus, Path(tmp))
        scores = score_run(run, args.corpus, Path(tmp) / "scores")
    result = report(run, scores)
    result["seconds"]["total"] = round(time.perf_counter() - started, 2)
    out = write_json(args.out / "search_quality.json", result)
    print_table(result)
    print(f"{result['seconds']}; results in {out}")


if __name__ == "__main__":
    main()
