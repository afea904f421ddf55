"""Structure quality on the shared corpus: every document through `corpus ingest` (the user's
path: Dagster assets and their checks), headings and tables read back from the committed
artifacts (the parsed rows' contract) and scored with the corpus's own `score_structure.py`; a
failed document scores as empty output.

Writes benchmarks/results/structure_quality.json and prints a per-document table.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks.harness import (
    RESULTS,
    SHARED_CORPUS,
    corpus_passwords,
    ingest_folder,
    score_structure,
    write_json,
)
from corpus_pipeline.contracts.rows import table_to_rows


def parse_corpus(corpus: Path, out: Path, home: Path) -> dict[str, str]:
    """Ingest every document as `corpus ingest` does and read headings and tables back from the
    committed artifacts; returns doc → status ('ok' or the error the user saw). A document that
    failed is left out of the scored file, which the scorer counts as empty output (a miss)."""
    ingested = ingest_folder(corpus / "docs", home, corpus_passwords(corpus))
    status: dict[str, str] = {}
    with out.open("w", encoding="utf-8") as fh:
        for result in sorted(ingested.results, key=lambda r: r.source_file_name):
            name = result.source_file_name
            if result.status != "ok" or not result.document_id:
                status[name] = result.error or "failed"
                continue
            directory = ingested.settings.artifacts_dir / result.document_id
            rows = table_to_rows(pq.read_table(directory / "parsed.parquet"))
            headings = [{"text": r.text, "level": r.heading_level} for r in rows if r.heading_level]
            tables = [
                {
                    "page": r.page_numbers[0] if r.page_numbers else None,
                    "html": (directory / r.resource_path).read_text(encoding="utf-8"),
                }
                for r in rows
                if r.row_type.value == "table" and r.resource_path
            ]
            fh.write(json.dumps({"doc": name, "headings": headings, "tables": tables}) + "\n")
            status[name] = "ok"
    return status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, default=SHARED_CORPUS)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    parsed = args.out / "structure_parsed.jsonl"
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        status = parse_corpus(args.corpus, parsed, Path(tmp) / "corpus_home")
    seconds = time.perf_counter() - started
    scores_path = args.out / "structure_scores.tmp"
    scores = score_structure(args.corpus, parsed, scores_path)
    scores_path.unlink()
    result = {"seconds": round(seconds, 2), "status": status, "scores": scores}
    write_json(args.out / "structure_quality.json", result, indent=2)
    per_doc = scores.get("per_doc") or scores.get("documents") or {}
    print(
        f"{'document':40} {'status':28} {'h.recall':>8} {'h.prec':>7} {'order':>6} {'level':>6} {'t.recall':>8} {'spans':>6}"
    )
    for doc, st in status.items():
        row = per_doc.get(doc, {}) if isinstance(per_doc, dict) else {}
        h = row.get("headings", {})
        t = row.get("tables", {})

        def f(d: dict[str, float], k: str) -> str:
            return f"{d[k]:.2f}" if k in d else "-"

        print(
            f"{doc:40} {st[:28]:28} {f(h, 'recall'):>8} {f(h, 'precision'):>7} {f(h, 'order'):>6} {f(h, 'level_acc'):>6} {f(t, 'recall'):>8} {f(t, 'span_recall'):>6}"
        )
    print(f"parsed in {seconds:.1f}s; results in {args.out / 'structure_quality.json'}")


if __name__ == "__main__":
    main()
