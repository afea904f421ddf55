"""Search quality on the shared corpus, against a floor and against a naive baseline computed in
the same run (see benchmarks/search_quality.py; `python -m benchmarks.search_quality` prints the
full table). Scored over the questions whose document the pipeline ingests (DOCX, HTML,
Markdown today: 11 of the 40 questions), with the corpus's own `score_search.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.search_quality import BenchmarkRun, run_benchmark, score

from .support import SHARED_CORPUS

pytestmark = pytest.mark.slow

# Measured over the 32 questions whose document is ingested (DOCX, HTML, Markdown, PDF; the
# TIFF/WebP/PPTX/XLSX and the encrypted PDF are not ingested here):
# ours     hit@1 0.81, hit@5 0.97, MRR@10 0.88, section@10 1.00 (q21's answer is a heading title,
#          which no chunk's content holds);
# baseline hit@1 0.97, hit@5 1.00, MRR@10 0.97 (BM25 over 120-word windows, no section paths).
# Floors = measured − 0.02.
HIT5_FLOOR = 0.95
MRR_FLOOR = 0.86


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Overall scores of both systems over the supported questions (one benchmark run)."""
    if not (SHARED_CORPUS / "questions.jsonl").is_file():
        pytest.skip(f"shared corpus not found at {SHARED_CORPUS}")
    work = tmp_path_factory.mktemp("search_quality")
    run: BenchmarkRun = run_benchmark(SHARED_CORPUS, work)
    questions = run.supported_questions()
    assert questions, "no question's document was ingested"
    systems = {"ours": run.ours, "baseline": run.baseline}
    scores = {
        system: score(SHARED_CORPUS, results, questions, Path(work) / f"score_{system}")
        for system, results in systems.items()
    }
    return {system: s["summary"]["all"] for system, s in scores.items()}


def test_ours_stays_above_the_measured_floor(measured):
    ours = measured["ours"]
    assert ours["hit@5"] >= HIT5_FLOOR, ours
    assert ours["mrr@10"] >= MRR_FLOOR, ours


@pytest.mark.xfail(
    strict=True, reason="q21 (a heading title as the answer) is in no chunk's content"
)
def test_ours_finds_at_least_what_the_naive_baseline_finds_in_the_top_5(measured):
    assert measured["ours"]["hit@5"] >= measured["baseline"]["hit@5"], measured


@pytest.mark.xfail(
    strict=True,
    reason="known gap on PDFs: the naive 120-word BM25 windows rank the answer first more often "
    "(MRR@10 0.97 vs ours 0.88); ours wins on section citations and on Markdown. Remove this mark "
    "when ranking closes the gap.",
)
def test_ours_ranks_at_least_as_well_as_the_naive_baseline(measured):
    assert measured["ours"]["mrr@10"] >= measured["baseline"]["mrr@10"], measured
