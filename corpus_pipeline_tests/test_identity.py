"""Every filing's identity as its own pages state it: issuer, form, period end, fiscal year and
quarter, and trading symbol, checked field by field against values read off the documents
(`benchmarks/data/identity/filings.jsonl`: the 33 filings of `financebench_dev` — 10-Ks, 10-Qs, 8-Ks and
earnings releases of 14 companies, fiscal years ending in January, May, June, September and
December — and the 20 10-Qs of `realworld`).

Each document is parsed from its first pages, which hold the cover, the headline or dateline
and the statements' column heads: everything the subject is read from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from benchmarks.identity import CHECKS, CORE, TRUTH
from corpus_pipeline.contracts import DocumentSubject
from corpus_pipeline.finance.subject import document_subject
from corpus_pipeline.pipeline import stages
from corpus_pipeline.structure.titles import document_title

from .support import REALWORLD_DOCS, REPO_ROOT, needs_shared

FINANCEBENCH_DOCS = REPO_ROOT.parent / "shared" / "financebench_dev" / "docs"
FIRST_PAGES = 6

pytestmark = [needs_shared(FINANCEBENCH_DOCS), needs_shared(REALWORLD_DOCS)]


def _subject(path: Path, tmp: Path) -> DocumentSubject:
    doc: Any = pymupdf.open(path)  # type: ignore[no-untyped-call]
    doc.select(list(range(min(FIRST_PAGES, doc.page_count))))
    first = tmp / path.name
    doc.save(first)
    doc.close()
    ctx = stages.parse_rows(stages.run_profile(first, path.name), tmp / "work")
    rows = stages.structure_rows(ctx.rows)
    title = document_title(rows, path.name, ctx.declared_title)
    return document_subject(rows, path.name, title, ctx.running_text)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bool]]:
    """Per document, per field: right or wrong."""
    out: dict[str, dict[str, bool]] = {}
    for line in TRUTH.read_text(encoding="utf-8").splitlines():
        truth = json.loads(line)
        folder = FINANCEBENCH_DOCS if (FINANCEBENCH_DOCS / truth["file"]).is_file() else None
        path = (folder or REALWORLD_DOCS) / truth["file"]
        subject = _subject(path, tmp_path_factory.mktemp("identity"))
        out[truth["file"]] = {field: check(subject, truth) for field, check in CHECKS.items()}
    return out


def _wrong(checked: dict[str, dict[str, bool]], fields: tuple[str, ...]) -> list[str]:
    return [f"{doc}: {f}" for doc, right in checked.items() for f in fields if not right[f]]


@pytest.mark.slow
def test_issuer_form_fiscal_year_and_quarter_are_right_for_97_percent(checked):
    wrong = _wrong(checked, CORE)
    assert 1 - len(wrong) / (len(checked) * len(CORE)) >= 0.97, wrong


@pytest.mark.slow
@pytest.mark.parametrize("field", CORE)
def test_each_identity_field_is_right_for_nearly_every_filing(checked, field):
    wrong = _wrong(checked, (field,))
    assert len(wrong) <= 1, wrong


@pytest.mark.slow
def test_every_ten_q_of_the_realworld_set_is_fully_identified(checked):
    ten_qs = {doc: right for doc, right in checked.items() if doc[:4].isdigit()}
    assert len(ten_qs) == 20
    assert _wrong(ten_qs, tuple(CHECKS)) == []


@pytest.mark.slow
def test_period_ends_and_primary_symbols_are_read_off_the_pages(checked):
    for field in ("period_end", "ticker"):
        wrong = _wrong(checked, (field,))
        assert len(wrong) / len(checked) <= 0.06, wrong
