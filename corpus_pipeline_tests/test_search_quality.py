"""Search quality on the shared corpus, on the user's path, against a floor and against a naive
baseline computed in the same run (see benchmarks/search_quality.py; `python -m
benchmarks.search_quality` prints the full table): every document through `corpus ingest` (the
encrypted PDF with the password in the corpus manifest), one published revision, the questions
as `POST /v1/search` over HTTP. Scored over all 40 questions with the corpus's own
`score_search.py`: a document that fails to ingest makes its questions misses, it never leaves
the question set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import load_questions
from benchmarks.harness import score_search as score
from benchmarks.search_quality import BenchmarkRun, run_benchmark

from .support import SHARED_CORPUS

pytestmark = pytest.mark.slow

# Measured over the 40 questions:
# ours     hit@1 0.90, hit@5 0.95, hit@10 0.975, MRR@10 0.929, section@10 1.00;
# baseline hit@1 0.875, hit@5 0.95, hit@10 0.95, MRR@10 0.897 (BM25 over 120-word windows).
# The set grew with the parsers (32 questions before XLSX/PPTX/images/the password: ours hit@5
# 1.00, MRR 0.984). Of the new ones, q31 (a paraphrase of a reviewer comment) ranks 6th, and
# q13's answer sentence is misread by OCR in the TIFF scan, so neither system finds it.
# Floors = measured − 0.02.
HIT5_FLOOR = 0.93
MRR_FLOOR = 0.90


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchmarkRun, Path]:
    if not (SHARED_CORPUS / "questions.jsonl").is_file():
        pytest.skip(f"shared corpus not found at {SHARED_CORPUS}")
    work = tmp_path_factory.mktemp("search_quality")
    return run_benchmark(SHARED_CORPUS, work), work


@pytest.fixture(scope="module")
def measured(run: tuple[BenchmarkRun, Path]) -> dict[str, dict[str, Any]]:
    """Overall scores of both systems over every question (one benchmark run)."""
    result, work = run
    systems = {"ours": result.ours, "baseline": result.baseline}
    scores = {
        system: score(SHARED_CORPUS, lines, result.questions, work / f"score_{system}")
        for system, lines in systems.items()
    }
    return {system: s["summary"]["all"] for system, s in scores.items()}


def test_every_question_is_scored_whatever_failed_to_ingest(run, measured):
    result, _ = run
    assert len(result.questions) == len(load_questions(SHARED_CORPUS)) == 40
    assert measured["ours"]["n"] == measured["baseline"]["n"] == 40


def test_every_corpus_document_is_ingested(run):
    result, _ = run
    assert result.corpus.failed == {}


def test_ours_stays_above_the_measured_floor(measured):
    ours = measured["ours"]
    assert ours["hit@5"] >= HIT5_FLOOR, ours
    assert ours["mrr@10"] >= MRR_FLOOR, ours


def test_ours_finds_at_least_what_the_naive_baseline_finds_in_the_top_5(measured):
    assert measured["ours"]["hit@5"] >= measured["baseline"]["hit@5"], measured


def test_ours_ranks_at_least_as_well_as_the_naive_baseline(measured):
    assert measured["ours"]["mrr@10"] >= measured["baseline"]["mrr@10"], measured


def test_ours_cites_the_expected_section_for_its_hits(measured):
    assert measured["ours"]["section@10"] >= 0.98, measured["ours"]
