"""A long PDF parsed alone has every other page read by a forked helper: the parse's output is
the same as without it, and whatever the helper cannot deliver the parse reads itself."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pymupdf

from corpus_pipeline.parsing.pdf.prefetch import PagePrefetch

mu: Any = pymupdf

REPO = Path(__file__).resolve().parent.parent


def _square(number: int) -> int:
    return number * number


def _fails_at_six(number: int) -> int:
    if number == 6:
        raise RuntimeError("the helper stops here")
    return number


def test_each_page_is_handed_out_once_whatever_the_order_asked() -> None:
    prefetch = PagePrefetch(_square, [2, 4, 6, 8, 10])
    try:
        assert prefetch.take(2) == 4
        assert prefetch.take(3) is None, "not a page the helper reads"
        assert prefetch.take(8) == 64
        assert prefetch.take(4) == 16, "a result that arrived waits until it is asked for"
        assert prefetch.take(4) is None, "and is handed out once"
        assert prefetch.take(10) == 100
    finally:
        prefetch.close()


def test_after_the_helper_fails_every_remaining_page_is_left_to_the_caller() -> None:
    prefetch = PagePrefetch(_fails_at_six, [2, 4, 6, 8])
    try:
        assert prefetch.take(2) == 2
        assert prefetch.take(4) == 4
        assert prefetch.take(6) is None
        assert prefetch.take(8) is None
    finally:
        prefetch.close()


def _picture(seed: int, width: int = 120, height: int = 90) -> Any:
    rng = random.Random(seed)
    samples = bytes(rng.randrange(256) for _ in range(width * height * 3))
    return mu.Pixmap(mu.csRGB, width, height, samples, False)


def _long_pdf(path: Path, pages: int = 40) -> Path:
    """Headings, body text, a ruled table on every fifth page, a logo on every page (one image
    object) and a picture of its own on every seventh page: state that crosses pages."""
    doc: Any = mu.open()
    logo = _picture(0, 64, 64)
    logo_xref = 0
    for n in range(1, pages + 1):
        page = doc.new_page(width=595, height=842)
        if logo_xref:
            page.insert_image(mu.Rect(480, 30, 540, 90), xref=logo_xref)
        else:
            logo_xref = page.insert_image(mu.Rect(480, 30, 540, 90), pixmap=logo)
        page.insert_text((72, 120), f"{n}. Chapter {n} of the field guide", fontsize=16)
        y = 150
        for line in range(12):
            page.insert_text((72, y), f"Page {n} line {line}: teal and wigeon feed in shallows.")
            y += 16
        if n % 5 == 0:
            top = 400
            for row in range(4):
                for col in range(3):
                    rect = mu.Rect(
                        72 + 150 * col, top + 24 * row, 222 + 150 * col, top + 24 * (row + 1)
                    )
                    page.draw_rect(rect, color=(0, 0, 0), width=0.8)
                    label = "Species" if row == 0 else f"r{row}c{col} {n * 10 + row}"
                    page.insert_text((rect.x0 + 4, rect.y1 - 8), label, fontsize=9)
        if n % 7 == 0:
            page.insert_image(mu.Rect(72, 560, 312, 740), pixmap=_picture(n))
        page.insert_text((280, 820), f"Field guide — page {n}", fontsize=8)
    doc.save(path)
    doc.close()
    return path


_PARSE_BOTH = """
import hashlib, json, pickle, sys, tempfile
from dataclasses import replace
from pathlib import Path
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.parsing.pdf import prefetch
from corpus_pipeline.common.settings import load_settings

started = []
original = prefetch.PagePrefetch.__init__
def counted(self, *args, **kwargs):
    started.append(1)
    original(self, *args, **kwargs)
prefetch.PagePrefetch.__init__ = counted
path = Path(sys.argv[1])
out = {}
for helper in (False, True):
    settings = load_settings(home=Path(tempfile.mkdtemp()), pdf_page_helper=helper)
    source = replace(pipeline.run_profile(path, path.name), reads=None)
    work = Path(tempfile.mkdtemp())
    ctx = pipeline.parse_rows(source, work, settings)
    files = sorted(
        (p.relative_to(work).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
        for p in work.rglob("*") if p.is_file()
    )
    out[str(helper)] = {
        "rows": [r.model_dump(mode="json") for r in ctx.rows],
        "diagnostics": [d.model_dump(mode="json") for d in ctx.diagnostics.items],
        "files": files,
        "labels": ctx.page_labels,
        "helpers": len(started),
    }
print(json.dumps(out))
"""


def test_a_long_pdf_parses_the_same_with_the_page_helper(tmp_path: Path) -> None:
    """In a fresh process (a single-threaded one, as a parse worker is)."""
    pdf = _long_pdf(tmp_path / "guide.pdf")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _PARSE_BOTH, str(pdf)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    alone, helped = out["False"], out["True"]
    assert alone["helpers"] == 0 and helped["helpers"] == 1, "the helper ran only when allowed"
    tables = [r for r in alone["rows"] if r["row_type"] == "table"]
    images = [r for r in alone["rows"] if r["row_type"] == "image"]
    assert len(tables) == 8 and len(images) == 5, "the fixture has state that crosses pages"
    assert helped["rows"] == alone["rows"]
    assert helped["diagnostics"] == alone["diagnostics"]
    assert helped["files"] == alone["files"]
    assert helped["labels"] == alone["labels"]


def test_without_a_process_to_spare_the_parse_reads_every_page_itself(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.parsing.pdf import document as pdf_parser
    from corpus_pipeline.pipeline import stages as pipeline

    def no_fork() -> int:
        raise OSError("Resource temporarily unavailable")

    pdf = _long_pdf(tmp_path / "guide.pdf", pages=34)
    source = replace(pipeline.run_profile(pdf, pdf.name), reads=None)
    rows = {}
    for helper in (False, True):
        settings = load_settings(home=tmp_path / f"home-{helper}", pdf_page_helper=helper)
        monkeypatch.setattr(pdf_parser, "can_fork", lambda: True)
        monkeypatch.setattr(os, "fork", no_fork)
        work = tmp_path / f"work-{helper}"
        ctx = pipeline.parse_rows(source, work, settings)
        rows[helper] = [r.model_dump(mode="json") for r in ctx.rows]
    assert rows[True] == rows[False]
    assert sum("Chapter 34" in r["text"] for r in rows[True]) == 1
