"""Ingest throughput on real filings: pages/s per stage and end to end, next to plain text.

Over the real-world set's documents of one kind (default: its 20 SEC 10-Q filings; `--doc-type`
for those its questions give one type, `--all` for all 117), in one run, side by side:

- **plain**: PyMuPDF `page.get_text()` over every page, the floor the ratio is taken against;
- **stages** (in-process, no Dagster, as `corpus debug`): profile, parse, hierarchy, chunks,
  seconds summed over the documents, as pages/s each and together ("pipeline work");
- **ingest, 1 worker** and **ingest, N workers** (`corpus_pipeline.orchestration.ingest.ingest`, the path of
  `corpus ingest`: every Dagster asset and contract check, each into a fresh CORPUS_HOME): wall
  time and pages/s to chunks, and how many cores the machine kept busy meanwhile (OCR runs
  Tesseract on several pages at once, so one worker can already use both); the batch's
  parallel speed-up is their ratio;
- **`corpus ingest`, 1 worker** and **N workers**: the command itself, as a user runs it, each
  in a fresh process into a fresh CORPUS_HOME: its imports and forkserver start, the batch and
  its publish, wall time from launch to exit. The batch's parallel speed-up (`parallel_wall_ratio`)
  is the ratio of these two; the in-process runs above start warm (this process has imported
  everything by then), so their ratio (`in_process_wall_ratio`) charges the N-worker run alone
  with starting processes;
- **`corpus ingest`, one process**: the command with one worker, OCR one page at a time and no
  page helper: nothing runs beside the parse, which is what "one process" means. The one-worker
  run above is already partly parallel (two Tesseracts on scans, the page helper on long PDFs),
  so the N-worker run is set against both: `parallel_wall_ratio` (against one worker with its
  page-level parallelism) and `serial_wall_ratio` (against one process);
- **without Dagster**: the very code of each document's step (`defs.documents.run_document`:
  source, profile, parse in its worker process, chunks, nav, manifest and the contract checks)
  called directly, one document after another, into a fresh CORPUS_HOME;
- **Dagster overhead** per document, measured twice: on the filings, the 1-worker ingest time
  minus the same documents without Dagster (a difference of two long runs, so it carries their
  noise); and on `OVERHEAD_DOCUMENTS` generated one-paragraph Markdown files, where the work is
  ~50 ms, their per-document ingest time minus their time without Dagster (runs, step, event log,
  partition bookkeeping: what orchestration costs, nothing else);
- **table flags**: the cheap flag that decides where the table finder runs, against the finder
  itself on every page (precision, recall, and the finder's seconds on false positives);
- **peak RSS** of this process and of its largest child (parse workers, pool workers);
- **a lone long PDF**: the set's longest PDF alone through the command, with and without the
  page helper (`pdf_page_helper`: a forked process reads every other page while the parse
  reads the rest), alternating, two runs each: what one document gains from the second core.

Publishing is timed once for the batch, apart (it stays serialised). The stage, table-flag and
without-Dagster figures measure the pipeline's own functions as components, in-process; every
other figure is the path a user takes. Writes `benchmarks/results/ingest_speed.json` (or
`--out`). Run: `python -m benchmarks.ingest_speed`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pymupdf

from benchmarks.harness import CORPUS_CLI, REALWORLD, RESULTS, linked_inbox, write_json
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.defs.documents import run_document
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import DocumentRuns
from corpus_pipeline.parsing.pdf import tables as pdf_tables
from corpus_pipeline.parsing.pdf.profile import open_pdf
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
from corpus_pipeline.structure.hierarchy import assign_hierarchy

# The set's 20 SEC 10-Q filings are named year_quarter_ticker ("2023_Q3_AAPL.pdf").
DEFAULT_FILES = "*_Q?_*.pdf"
STAGES = ("profile", "parse", "hierarchy", "chunks")
OVERHEAD_DOCUMENTS = 20
# One process: one worker, one Tesseract at a time, no page helper.
SERIAL_ENVIRON = {"CORPUS_OCR_WORKERS": "1", "CORPUS_PDF_PAGE_HELPER": "false"}
_mupdf: Any = pymupdf  # only partly annotated


def select(root: Path, doc_type: str | None, pattern: str | None = None) -> list[Path]:
    """The set's documents matching a file-name glob, else those of one doc_type (as its
    questions name them), else all of them."""
    docs = sorted((root / "docs").glob(pattern or "*.pdf"))
    if doc_type is None or pattern is not None:
        return docs
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    wanted = {q["doc"] for q in map(json.loads, lines) if q["doc_type"] == doc_type}
    return [d for d in docs if d.name in wanted]


def pages_of(path: Path) -> int:
    with _mupdf.open(path) as doc:
        return int(doc.page_count)


def plain_text_seconds(files: Sequence[Path]) -> float:
    started = time.perf_counter()
    for path in files:
        with _mupdf.open(path) as doc:
            for page in doc:
                page.get_text()
    return time.perf_counter() - started


def stage_seconds(files: Sequence[Path]) -> dict[str, float]:
    """Each stage's seconds summed over the files, in-process (no Dagster, no worker)."""
    settings = load_settings(home=Path(tempfile.mkdtemp(prefix="corpus-stages-")))
    totals = dict.fromkeys(STAGES, 0.0)
    for path in files:
        mark = time.perf_counter()
        profiled = pipeline.run_profile(path, path.name)
        profile = profiled.profile
        totals["profile"] += time.perf_counter() - mark
        with tempfile.TemporaryDirectory(prefix="corpus-stage-") as tmp:
            mark = time.perf_counter()
            ctx = pipeline.parse_rows(profiled, Path(tmp), settings)
            totals["parse"] += time.perf_counter() - mark
            mark = time.perf_counter()
            rows = assign_hierarchy(ctx.rows)
            totals["hierarchy"] += time.perf_counter() - mark
            mark = time.perf_counter()
            pipeline.chunk_document(rows, profile, settings)
            totals["chunks"] += time.perf_counter() - mark
    shutil.rmtree(settings.home, ignore_errors=True)
    return totals


def table_flags(files: Sequence[Path]) -> dict[str, Any]:
    """How precise the cheap table flag is: the table finder runs on every page with a text
    layer (which the parser never does), and each page counts as flagged or not and as holding
    a table or not; the finder's seconds on flagged pages without a table are what false
    positives cost, its seconds on unflagged pages with one what the flag saves at what loss."""
    counts = {"pages": 0, "flagged": 0, "flagged_with_table": 0, "unflagged_with_table": 0}
    seconds = {"flagged_without_table": 0.0, "flagged_with_table": 0.0, "unflagged": 0.0}
    for path in files:
        with open_pdf(path) as doc:  # as the parser opens it (an oversized tag tree detached)
            for page in doc:
                if not page.get_text("text").strip():
                    continue  # scanned: OCR pages never reach the table finder
                counts["pages"] += 1
                flagged = pdf_tables.table_likely(page)
                mark = time.perf_counter()
                found = bool(pdf_tables.find_tables(page, page.number + 1))
                took = time.perf_counter() - mark
                if flagged:
                    counts["flagged"] += 1
                    counts["flagged_with_table"] += int(found)
                    seconds["flagged_with_table" if found else "flagged_without_table"] += took
                else:
                    counts["unflagged_with_table"] += int(found)
                    seconds["unflagged"] += took
    total = counts["flagged"]
    return {
        **counts,
        "precision": round(counts["flagged_with_table"] / total, 3) if total else None,
        "recall": round(
            counts["flagged_with_table"]
            / max(1, counts["flagged_with_table"] + counts["unflagged_with_table"]),
            3,
        ),
        "finder_seconds": {k: round(v, 2) for k, v in seconds.items()},
    }


def cpu_jiffies() -> tuple[int, int, int]:
    """(busy, total) CPU ticks of the whole machine since boot and its core count, from
    /proc/stat: over a run, busy/total × cores is how many cores the run kept busy (OCR's
    Tesseract processes and the parse workers included, which per-process counters miss)."""
    lines = Path("/proc/stat").read_text().splitlines()
    ticks = [int(v) for v in lines[0].split()[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return sum(ticks) - idle, sum(ticks), cores


def cores_busy(since: tuple[int, int, int]) -> float:
    """How many cores the machine kept busy on average since `cpu_jiffies()` gave `since`."""
    end = cpu_jiffies()
    return (end[0] - since[0]) / max(end[1] - since[1], 1) * end[2]


def ingest_run(files: Sequence[Path], workers: int, workdir: Path) -> dict[str, Any]:
    """`corpus ingest` of the files into a fresh home with `workers` processes, then publish."""
    inbox = linked_inbox(files, workdir / f"inbox-{workers}")
    settings = load_settings(
        home=workdir / f"home-{workers}", object_store_url="", ingest_workers=workers
    )
    started, busy = time.perf_counter(), cpu_jiffies()
    results = ingest([inbox], settings)
    seconds = time.perf_counter() - started
    cores = cores_busy(busy)
    mark = time.perf_counter()
    published = DocumentRuns.of(settings).publish(settings.namespace)
    return {
        "workers": workers,
        "seconds": round(seconds, 2),
        "cores_busy": round(cores, 2),
        "failed": {r.source_file_name: r.error for r in results if r.status != "ok"},
        "document_seconds": {r.source_file_name: round(r.seconds, 2) for r in results},
        "publish_seconds": round(time.perf_counter() - mark, 2),
        "published_chunks": published.chunks,
    }


def command_run(
    files: Sequence[Path],
    workers: int,
    workdir: Path,
    label: str = "",
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`corpus ingest --json` of the files in a fresh process and CORPUS_HOME (publish included)."""
    name = label or str(workers)
    inbox = linked_inbox(files, workdir / f"command-inbox-{name}")
    env = {
        **os.environ,
        "CORPUS_HOME": str(workdir / f"command-home-{name}"),
        "CORPUS_INGEST_WORKERS": str(workers),
        "CORPUS_OBJECT_STORE_URL": "",
        **(environ or {}),
    }
    command = [str(CORPUS_CLI), "ingest", "--json", str(inbox)]
    started, busy = time.perf_counter(), cpu_jiffies()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    cores = cores_busy(busy)
    if done.returncode != 0 and not done.stdout.strip():
        raise RuntimeError(f"corpus ingest exited with {done.returncode}: {done.stderr[-2000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {
        "workers": workers,
        "seconds": round(seconds, 2),
        "cores_busy": round(cores, 2),
        "failed": {r["file"]: r["error"] for r in rows if r.get("status") == "failed"},
    }


def without_dagster_seconds(files: Sequence[Path], home: Path) -> float:
    """Each document's step body run as plain code (its file stored first, as ingest does;
    the storing is not timed, like ingest's per-document seconds)."""
    settings = load_settings(home=home, object_store_url="")
    registry = SourceRegistry(ObjectStore(settings.object_store))
    seconds = 0.0
    for path in files:
        record = registry.register(
            path.read_bytes(), path.name, settings.namespace, SourceKind.CLI, None
        )
        started = time.perf_counter()
        for result in run_document(settings, record.document_id):
            if isinstance(result, dg.AssetCheckResult) and not result.passed:
                raise SystemExit(f"{path.name}: {result.description}")
        seconds += time.perf_counter() - started
    return seconds


def overhead_per_document(workdir: Path) -> dict[str, float]:
    """Orchestration cost per document on tiny generated files (work ~50 ms each): ingest with
    one worker against the step body without Dagster, the first document of each left out
    (imports, forkserver start)."""
    inbox = workdir / "inbox-tiny"
    inbox.mkdir()
    for n in range(OVERHEAD_DOCUMENTS + 1):
        (inbox / f"note{n:02}.md").write_text(
            f"# Note {n}\n\nInspection {n} passed; the valves were replaced.\n", encoding="utf-8"
        )
    files = sorted(inbox.iterdir())
    started = time.perf_counter()
    without_dagster_seconds(files[:1], workdir / "tiny-plain-warm")
    plain = without_dagster_seconds(files[1:], workdir / "tiny-plain")
    settings = load_settings(home=workdir / "home-tiny", object_store_url="", ingest_workers=1)
    results = ingest(files, settings)
    ingested = sum(r.seconds for r in results[1:])
    n = len(files) - 1
    return {
        "documents": n,
        "ingest_s_per_document": round(ingested / n, 3),
        "without_dagster_s_per_document": round(plain / n, 3),
        "overhead_s_per_document": round((ingested - plain) / n, 3),
        "seconds": round(time.perf_counter() - started, 1),
    }


def lone_document(root: Path, workdir: Path, rounds: int = 2) -> dict[str, Any]:
    """The set's longest PDF alone through the `corpus ingest` command, with and without the
    page helper (`pdf_page_helper`: every other page read by a second process), alternating."""
    path = max(sorted((root / "docs").glob("*.pdf")), key=pages_of)
    runs: dict[str, list[dict[str, Any]]] = {"without_helper": [], "with_helper": []}
    for i in range(rounds):
        for name, flag in (("without_helper", "false"), ("with_helper", "true")):
            runs[name].append(
                command_run(
                    [path], 1, workdir, f"lone-{name}-{i}", {"CORPUS_PDF_PAGE_HELPER": flag}
                )
            )
    pages = pages_of(path)
    out: dict[str, Any] = {"file": path.name, "pages": pages}
    for name, found in runs.items():
        seconds = sum(r["seconds"] for r in found) / len(found)
        out[name] = {
            "seconds": round(seconds, 2),
            "runs": [r["seconds"] for r in found],
            "cores_busy": round(sum(r["cores_busy"] for r in found) / len(found), 2),
            "pages_per_s": round(pages / seconds, 1),
            "failed": {k: v for r in found for k, v in r["failed"].items()},
        }
    out["wall_ratio"] = round(out["with_helper"]["seconds"] / out["without_helper"]["seconds"], 3)
    return out


def run(files: Sequence[Path], workers: int, workdir: Path) -> dict[str, Any]:
    pages = sum(pages_of(p) for p in files)
    plain = plain_text_seconds(files)
    stages = stage_seconds(files)
    work = sum(stages.values())
    plain_steps = without_dagster_seconds(files, workdir / "home-plain")
    one = ingest_run(files, 1, workdir)
    many = ingest_run(files, workers, workdir)
    command_one = command_run(files, 1, workdir)
    command_many = command_run(files, workers, workdir)
    command_serial = command_run(files, 1, workdir, label="serial", environ=SERIAL_ENVIRON)
    rate = round(pages / work, 1)
    return {
        "documents": len(files),
        "pages": pages,
        "plain_text": {"seconds": round(plain, 2), "pages_per_s": round(pages / plain, 1)},
        "stages": {
            name: {"seconds": round(s, 2), "pages_per_s": round(pages / s, 1) if s else None}
            for name, s in stages.items()
        },
        "pipeline_work": {"seconds": round(work, 2), "pages_per_s": rate},
        "ingest_1_worker": {**one, "pages_per_s": round(pages / one["seconds"], 1)},
        f"ingest_{workers}_workers": {**many, "pages_per_s": round(pages / many["seconds"], 1)},
        "command_1_worker": {
            **command_one,
            "pages_per_s": round(pages / command_one["seconds"], 1),
        },
        f"command_{workers}_workers": {
            **command_many,
            "pages_per_s": round(pages / command_many["seconds"], 1),
        },
        "command_one_process": {
            **command_serial,
            "pages_per_s": round(pages / command_serial["seconds"], 1),
        },
        "parallel_wall_ratio": round(command_many["seconds"] / command_one["seconds"], 3),
        "serial_wall_ratio": round(command_many["seconds"] / command_serial["seconds"], 3),
        "in_process_wall_ratio": round(many["seconds"] / one["seconds"], 3),
        "ratio_to_plain_text": round(plain / one["seconds"], 4),
        "without_dagster": {
            "seconds": round(plain_steps, 2),
            "pages_per_s": round(pages / plain_steps, 1),
        },
        "dagster_overhead_per_document_s": round((one["seconds"] - plain_steps) / len(files), 2),
        "dagster_overhead_tiny_documents": overhead_per_document(workdir),
        "table_flags": table_flags(files),
        "peak_rss_mb": {
            "this_process": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "largest_child": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
        },
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--set", dest="root", type=Path, default=REALWORLD)
    ap.add_argument("--doc-type", default=None, help="Documents its questions give this type.")
    ap.add_argument("--all", action="store_true", help="Every document of the set.")
    ap.add_argument("--files", default=None, help=f"File-name glob (default {DEFAULT_FILES}).")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    pattern = None if args.all or args.doc_type else (args.files or DEFAULT_FILES)
    files = select(args.root, args.doc_type, pattern)
    if not files:
        sys.exit(f"no documents of type {args.doc_type!r} in {args.root}")
    workdir = Path(tempfile.mkdtemp(prefix="corpus-ingest-speed-"))
    try:
        result = {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "selection": pattern or args.doc_type or "all",
            **run(files, args.workers, workdir),
            "lone_document": lone_document(args.root, workdir),
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    shown = {k: v for k, v in result.items() if not k.startswith(("ingest_", "command_"))}
    print(json.dumps(shown, indent=1))
    for key in (k for k in result if k.startswith(("ingest_", "command_"))):
        print(key, {k: v for k, v in result[key].items() if k != "document_seconds"})
    write_json(args.out / "ingest_speed.json", result)


if __name__ == "__main__":
    main()
