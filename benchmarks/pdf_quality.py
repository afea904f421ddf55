"""PDF path, side by side with pymupdf4llm: structure quality on the corpus PDFs (official
scorer: heading F1, table recall), speed on a generated 200+ page text-heavy PDF (ours vs raw
`page.get_text()` vs pymupdf4llm), and peak RSS of our parser on a generated 2,000-page PDF
(in a subprocess, so the number is the parser's alone).

The parser is measured as a component, in-process (`parse_pdf` after `profile_source`, no
Dagster), so the time and memory are its own and the other library runs on equal terms.

Writes benchmarks/results/pdf_quality.json and prints a table.
`python -m benchmarks.pdf_quality [--llm-pages 40]`
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import pymupdf

from benchmarks.harness import REPO, RESULTS, SHARED_CORPUS, score_structure, write_json
from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.pdf import parse_pdf
from corpus_pipeline.profiling import profile_source
from corpus_pipeline.structure.hierarchy import assign_hierarchy

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_MUPDF: Any = pymupdf


# -- quality ---------------------------------------------------------------------------------


def corpus_pdfs(corpus: Path) -> list[tuple[Path, str | None]]:
    out = []
    with (corpus / "manifest.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["format"] == "pdf" and rec.get("in_corpus"):
                out.append((corpus / "docs" / rec["doc"], rec.get("password")))
    return out


def ours(path: Path, password: str | None, work: Path) -> dict[str, Any]:
    profile = profile_source(path, password=password).profile
    ctx = ParseContext(
        source_path=path,
        source_file_name=path.name,
        profile=profile,
        workdir=work,
        password=password,
    )
    parse_pdf(ctx)
    rows = assign_hierarchy(ctx.rows)
    return {
        "doc": path.name,
        "headings": [{"text": r.text, "level": r.heading_level} for r in rows if r.heading_level],
        "tables": [
            {
                "page": r.page_numbers[0] if r.page_numbers else None,
                "html": (work / r.resource_path).read_text(encoding="utf-8"),
            }
            for r in rows
            if r.row_type.value == "table" and r.resource_path
        ],
    }


def markdown_structure(md: str) -> tuple[list[dict[str, Any]], list[list[list[str]]]]:
    """Headings from `#` lines and tables from pipe tables (cells split on `|`)."""
    headings: list[dict[str, Any]] = []
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in md.splitlines():
        m = _MD_HEADING.match(line)
        if m:
            text = re.sub(r"[*_`]+", "", m.group(2)).strip()
            if text:
                headings.append({"text": text, "level": len(m.group(1))})
        if line.strip().startswith("|"):
            if not _MD_SEPARATOR.match(line):
                cells = [c.strip().replace("<br>", " ") for c in line.strip().strip("|").split("|")]
                current.append(cells)
            continue
        if current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return headings, tables


def theirs(path: Path, password: str | None) -> dict[str, Any]:
    import pymupdf4llm

    doc = _MUPDF.open(path)
    if doc.needs_pass:
        doc.authenticate(password or "")
    md = pymupdf4llm.to_markdown(doc, show_progress=False)
    doc.close()
    headings, tables = markdown_structure(md)
    return {
        "doc": path.name,
        "headings": headings,
        "tables": [{"page": None, "cells": t} for t in tables],
    }


def score(corpus: Path, records: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    parsed = out.with_suffix(".jsonl")
    parsed.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return score_structure(corpus, parsed, out.with_suffix(".scores.json"))


def _f1(h: dict[str, float]) -> float | None:
    if "recall" not in h:
        return h.get("precision")  # `levels: none`: only precision is defined
    p, r = h.get("precision", 0.0), h["recall"]
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


# -- speed and memory ---------------------------------------------------------------------------


def synthetic_pdf(corpus: Path, path: Path, min_pages: int) -> int:
    """A deterministic text-heavy PDF from the ground-truth markdown, numbered headings."""
    paragraphs: list[str] = []
    for md in sorted((corpus / "groundtruth").glob("*.md")):
        for block in re.split(r"\n\s*\n", md.read_text(encoding="utf-8")):
            text = " ".join(block.split())
            if len(text) > 80 and not text.startswith(("|", "<", "#", "!")):
                paragraphs.append(text)
    doc = _MUPDF.open()
    page = None
    y = 0.0
    chapter = section = 0
    i = 0
    while doc.page_count < min_pages or page is None:
        if i % 6 == 0:
            if i % 30 == 0:
                chapter += 1
                section = 0
                title, size, font = f"{chapter} Chapter {chapter} of the corpus", 16.0, "hebo"
            else:
                section += 1
                title, size, font = f"{chapter}.{section} Section {section}", 12.0, "hebo"
            lines = [(title, size, font)]
        else:
            lines = []
        text = paragraphs[i % len(paragraphs)]
        lines += [(ln, 10.0, "helv") for ln in textwrap.wrap(text, 95)]
        for text_line, size, font in lines:
            if page is None or y > 780:
                page = doc.new_page(width=595, height=842)
                page.insert_text((280, 820), str(doc.page_count), fontsize=8)
                y = 60.0
            y += size * 1.4
            page.insert_text((60, y), text_line, fontsize=size, fontname=font)
        y += 8
        i += 1
    doc.save(path, garbage=3, deflate=True)
    count = int(doc.page_count)
    doc.close()
    return count


def pages_per_second_raw(path: Path) -> float:
    doc = _MUPDF.open(path)
    started = time.perf_counter()
    for page in doc:
        page.get_text()
    seconds = time.perf_counter() - started
    count = int(doc.page_count)
    doc.close()
    return count / seconds


def pages_per_second_ours(path: Path) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        profile = profile_source(path).profile
        ctx = ParseContext(
            source_path=path, source_file_name=path.name, profile=profile, workdir=Path(tmp)
        )
        parse_pdf(ctx)
        seconds = time.perf_counter() - started
    return (profile.page_count or 0) / seconds, len(ctx.rows)


def pages_per_second_pymupdf4llm(path: Path, pages: int) -> float:
    import pymupdf4llm

    doc = _MUPDF.open(path)
    started = time.perf_counter()
    pymupdf4llm.to_markdown(doc, pages=list(range(pages)), show_progress=False)
    seconds = time.perf_counter() - started
    doc.close()
    return pages / seconds


_RSS_CHILD = """
import resource, sys, tempfile, time
from pathlib import Path
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.pdf import parse_pdf
from corpus_pipeline.profiling import profile_source
path = Path(sys.argv[1])
started = time.perf_counter()
profile = profile_source(path).profile
with tempfile.TemporaryDirectory() as tmp:
    ctx = ParseContext(source_path=path, source_file_name=path.name, profile=profile,
                       workdir=Path(tmp))
    parse_pdf(ctx)
print(len(ctx.rows), profile.page_count, len(profile.pdf.split_plan), time.perf_counter() - started,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss(source: Path, path: Path, pages: int) -> dict[str, Any]:
    """Build a `pages`-page PDF from `source` and parse it in a child process."""
    base = _MUPDF.open(source)
    doc = _MUPDF.open()
    while doc.page_count < pages:
        doc.insert_pdf(base, to_page=min(base.page_count, pages - doc.page_count) - 1)
    doc.save(path)  # no garbage collection: it is quadratic-ish on 2,000 pages
    doc.close()
    base.close()
    out = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD, str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout.split()
    rows, page_count, ranges, seconds, rss_kib = out[-5:]
    return {
        "pages": int(page_count),
        "rows": int(rows),
        "ranges": int(ranges),
        "seconds": round(float(seconds), 2),
        "peak_rss_mib": round(int(rss_kib) / 1024, 1),
    }


def _progress(message: str) -> None:
    print(f"[pdf_quality] {message}", file=sys.stderr, flush=True)


# -- main --------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--corpus", type=Path, default=SHARED_CORPUS)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--min-pages", type=int, default=220)
    ap.add_argument("--llm-pages", type=int, default=40, help="pages timed for pymupdf4llm")
    ap.add_argument("--rss-pages", type=int, default=2000)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    ours_records, theirs_records, errors = [], [], {}
    seconds = {"ours": 0.0, "pymupdf4llm": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for path, password in corpus_pdfs(args.corpus):
            started = time.perf_counter()
            try:
                ours_records.append(ours(path, password, Path(tmp) / path.name))
            except CorpusError as exc:
                errors[path.name] = str(exc)
            seconds["ours"] += time.perf_counter() - started
            started = time.perf_counter()
            theirs_records.append(theirs(path, password))
            seconds["pymupdf4llm"] += time.perf_counter() - started
        _progress(f"quality done ({seconds})")
        ours_scores = score(args.corpus, ours_records, Path(tmp) / "ours")
        theirs_scores = score(args.corpus, theirs_records, Path(tmp) / "theirs")

        synthetic = Path(tmp) / "synthetic.pdf"
        pages = synthetic_pdf(args.corpus, synthetic, args.min_pages)
        _progress(f"synthetic PDF: {pages} pages")
        raw = pages_per_second_raw(synthetic)
        ours_pps, rows = pages_per_second_ours(synthetic)
        _progress(f"raw {raw:.1f} p/s, ours {ours_pps:.1f} p/s")
        llm_pps = pages_per_second_pymupdf4llm(synthetic, min(args.llm_pages, pages))
        _progress(f"pymupdf4llm {llm_pps:.2f} p/s")
        rss = peak_rss(synthetic, Path(tmp) / "big.pdf", args.rss_pages)
        _progress(f"memory {rss}")

    per_doc: dict[str, Any] = {}
    for rec in ours_records + [{"doc": d} for d in errors]:
        doc = rec["doc"]
        o = ours_scores["per_doc"].get(doc, {})
        t = theirs_scores["per_doc"].get(doc, {})
        per_doc[doc] = {
            "ours": {
                "heading_f1": _f1(o.get("headings", {})),
                **o.get("headings", {}),
                "table_recall": o.get("tables", {}).get("recall"),
            },
            "pymupdf4llm": {
                "heading_f1": _f1(t.get("headings", {})),
                **t.get("headings", {}),
                "table_recall": t.get("tables", {}).get("recall"),
            },
        }

    def summary(scores: dict[str, Any]) -> dict[str, Any]:
        """Macro averages over the corpus PDFs only (the scorer's own summary spans all 32
        corpus documents, most of which are not PDFs)."""
        docs = [scores["per_doc"].get(d, {}) for d in per_doc]
        heads = [d.get("headings", {}) for d in docs]

        def mean(key: str) -> float:
            values = [float(h[key]) for h in heads if key in h]
            return round(sum(values) / max(len(values), 1), 4)

        f1s = [f for f in (_f1(h) for h in heads) if f is not None]
        tables = [d.get("tables", {}) for d in docs]
        expected = sum(t.get("expected", 0) for t in tables)
        found = sum(t.get("found", 0) for t in tables)
        return {
            "heading_f1": round(sum(f1s) / max(len(f1s), 1), 4),
            "heading_recall": mean("recall"),
            "heading_precision": mean("precision"),
            "heading_order": mean("order"),
            "table_recall": round(found / max(expected, 1), 4),
            "tables_found": found,
            "tables_expected": expected,
            "tables_predicted": sum(t.get("predicted", 0) for t in tables),
        }

    result = {
        "quality": {
            "ours": summary(ours_scores),
            "pymupdf4llm": summary(theirs_scores),
            "seconds": {k: round(v, 2) for k, v in seconds.items()},
            "errors": errors,
            "per_doc": per_doc,
        },
        "speed": {
            "pdf_pages": pages,
            "rows": rows,
            "raw_get_text_pages_per_s": round(raw, 1),
            "ours_pages_per_s": round(ours_pps, 1),
            "pymupdf4llm_pages_per_s": round(llm_pps, 2),
            "pymupdf4llm_pages_timed": min(args.llm_pages, pages),
            "ours_share_of_raw": round(ours_pps / raw, 3),
            "ours_vs_pymupdf4llm": round(ours_pps / llm_pps, 1),
        },
        "memory": {**rss, "limit_mib": 1024, "ok": rss["peak_rss_mib"] < 1024},
    }
    write_json(args.out / "pdf_quality.json", result, indent=2)

    print(
        f"{'document':34} {'ours F1':>8} {'rec':>5} {'prec':>5} {'ord':>5} {'tab':>5}   "
        f"{'4llm F1':>8} {'rec':>5} {'prec':>5} {'tab':>5}"
    )

    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.2f}"

    for doc, row in per_doc.items():
        o, t = row["ours"], row["pymupdf4llm"]
        print(
            f"{doc:34} {f(o['heading_f1']):>8} {f(o.get('recall')):>5} {f(o.get('precision')):>5} "
            f"{f(o.get('order')):>5} {f(o['table_recall']):>5}   {f(t['heading_f1']):>8} "
            f"{f(t.get('recall')):>5} {f(t.get('precision')):>5} {f(t['table_recall']):>5}"
        )
    q = result["quality"]
    for name in ("ours", "pymupdf4llm"):
        s = q[name]
        print(
            f"{name:12} heading F1 {s['heading_f1']:.3f}  recall {s['heading_recall']:.3f}  "
            f"precision {s['heading_precision']:.3f}  order {s['heading_order']:.3f}  table "
            f"recall {s['table_recall']:.3f} ({s['tables_found']}/{s['tables_expected']}, "
            f"{s['tables_predicted']} predicted)  ({q['seconds'][name]:.1f}s)"
        )
    sp = result["speed"]
    print(
        f"speed on {sp['pdf_pages']} pages: raw get_text {sp['raw_get_text_pages_per_s']} p/s, "
        f"ours {sp['ours_pages_per_s']} p/s ({sp['ours_share_of_raw']:.0%} of raw), "
        f"pymupdf4llm {sp['pymupdf4llm_pages_per_s']} p/s on {sp['pymupdf4llm_pages_timed']} "
        f"pages (ours {sp['ours_vs_pymupdf4llm']}x)"
    )
    m = result["memory"]
    print(
        f"memory: {m['pages']} pages in {m['ranges']} ranges, {m['rows']} rows, "
        f"{m['seconds']}s, peak RSS {m['peak_rss_mib']} MiB (limit 1024)"
    )


if __name__ == "__main__":
    main()
