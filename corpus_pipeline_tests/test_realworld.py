"""Real-world PDFs through `corpus ingest`: a filing, an accident report, a paper and a
clinical protocol that nobody on this project wrote. Each must be ingested, chunked, and keep
at least 90% of the words of its own text layer (word recall; running headers excluded by the
parser's rule)."""

from __future__ import annotations

import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import IngestResult
from corpus_pipeline.pipeline.stages import document_dir
from corpus_pipeline.quality.recall import document_word_recall

from .support import REALWORLD_DOCS as REALWORLD
from .support import needs_shared

SAMPLES = {
    "2023_Q2_AAPL.pdf": "SEC 10-Q filing, 28 pages of financial tables",
    "20080108X00031.pdf": "NTSB accident report, 3 pages of form fields",
    "2303.05039v2.pdf": "research paper, 9 pages in two columns",
    "NCT06158269_Prot_000.pdf": "clinical-trial protocol, 5 pages",
}
MIN_RECALL = 0.9

pytestmark = [
    pytest.mark.slow,
    needs_shared(REALWORLD),
]


@pytest.fixture(scope="module")
def ingested(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[CorpusSettings, dict[str, IngestResult]]:
    """The samples ingested in one call, as `corpus ingest FILE...` does."""
    home = tmp_path_factory.mktemp("realworld") / "corpus_home"
    settings = load_settings(home=home, object_store_url="")
    results = ingest([REALWORLD / name for name in SAMPLES], settings, "realworld")
    return settings, {r.source_file_name: r for r in results}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_a_real_world_pdf_is_ingested_into_chunks(ingested, name: str):
    _, results = ingested
    result = results[name]
    assert (result.status, result.error) == ("ok", None)
    assert result.counts["text"] + result.counts["table"] > 0, result.counts


@pytest.mark.parametrize("name", list(SAMPLES))
def test_a_real_world_pdf_keeps_its_words(ingested, name: str):
    settings, results = ingested
    document_id = results[name].document_id
    assert document_id is not None
    recall = document_word_recall(REALWORLD / name, document_dir(settings, document_id))
    assert recall.recall is not None and recall.recall >= MIN_RECALL, recall.as_dict()
