"""The dense channel end to end: documents searchable lexically first, vectors in a later
revision, the fourth fused channel, and filters that hold for it exactly as for the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.embeddings import EmbeddingSpec
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest, SearchResult
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import DocumentRuns
from query_service.retrieval import dense
from query_service.retrieval.classic import classic_search
from query_service.retrieval.dense import DenseIndex, dense_index, sign_codes
from query_service.snapshot.revision import open_revision

NOTES = {
    "travel.md": "# Bookings\n\nFive metropolitan areas account for most of our bookings, and "
    "losing any of them would hurt revenue.\n",
    "birds.md": "# Ducks\n\nTufted ducks dive for mussels in cold lakes during the winter.\n",
    "plant.md": "# Maintenance\n\nThe turbine bearing was replaced and the pump resealed.\n",
    "geese.md": "# Geese\n\nBrent geese graze eelgrass on the mudflats at low tide.\n",
}
DENSE_ONLY = {"path": 0.0, "content": 0.0, "term": 0.0, "page": 0.0, "dense": 1.0}
QUESTION = "How dependent is the company on a few large cities?"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("dense")
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    settings = load_settings(home=root / "home", ingest_workers=1, dense="local")
    results = ingest([root / name for name in NOTES], settings)
    assert all(r.status == "ok" for r in results)
    lexical = DocumentRuns.of(settings).publish("default")
    embedded = DocumentRuns.of(settings).embed([r.document_id for r in results if r.document_id])
    dense = DocumentRuns.of(settings).publish("default")
    ids = {r.source_file_name: r.document_id for r in results}
    return settings, ids, lexical, embedded, dense


def _search(settings, **request) -> list[str]:
    revision = open_revision(settings.published_dir, "default")
    response = classic_search(revision, SearchRequest(top_k=2, **request))
    return [r.document_id for r in response.results]


def test_vectors_arrive_in_the_revision_after_the_lexical_one(corpus):
    settings, _, lexical, embedded, dense = corpus
    assert lexical.revision == 1 and dense.revision == 2
    assert embedded.documents == 4 and not embedded.errors
    first = open_revision(settings.published_dir, "default", None)
    index = dense_index(first)
    assert index is not None and len(index.chunk_ids) == embedded.chunks
    assert index.spec.key == "local:all-MiniLM-L6-v2-onnx-int8:384"


def test_the_dense_channel_finds_a_paraphrase_the_words_miss(corpus):
    settings, ids, *_ = corpus
    assert _search(settings, query=QUESTION, weights=DENSE_ONLY)[0] == ids["travel.md"]


def test_a_filtered_out_document_never_comes_back_through_the_dense_channel(corpus):
    settings, ids, *_ = corpus
    others = [d for name, d in ids.items() if name != "travel.md"]
    found = _search(
        settings,
        query=QUESTION,
        weights=DENSE_ONLY,
        filters=SearchFilters(document_ids=others),
    )
    assert found and ids["travel.md"] not in found
    excluded = _search(
        settings, query=QUESTION, weights=DENSE_ONLY, exclude_document_ids=[ids["travel.md"]]
    )
    assert excluded and ids["travel.md"] not in excluded


def test_the_rerank_channel_reorders_what_the_words_found_by_the_models_similarity(corpus):
    settings, ids, *_ = corpus
    revision = open_revision(settings.published_dir, "default")
    query = "the winter revenue of the pump"

    def run(weights: dict[str, float]) -> list[SearchResult]:
        request = SearchRequest(query=query, top_k=3, weights=weights)
        return classic_search(revision, request).results

    lexical = run({"content": 1.0})
    reranked = run({"content": 1.0, "rerank": 50.0})
    found = dense.query_vector(revision, query)
    assert found is not None
    index, vector = found
    similar = index.similarity(vector, [r.chunk_id for r in reranked])
    # The same chunks the words found, in the order of the model's similarity to the query.
    assert {r.chunk_id for r in reranked} == {r.chunk_id for r in lexical}
    assert similar == sorted(similar, key=lambda cos: -(cos or 0.0))
    assert reranked[0].document_id == ids["plant.md"] != lexical[0].document_id


def test_a_revision_with_vectors_is_reranked_by_default(corpus):
    settings, *_ = corpus
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(query="the winter revenue of the pump", top_k=3)
    assert all("rerank" in r.channels for r in classic_search(revision, request).results)


def test_a_revision_without_vectors_has_no_dense_channel(tmp_path: Path):
    note = tmp_path / "travel.md"
    note.write_text(NOTES["travel.md"], encoding="utf-8")
    settings = load_settings(home=tmp_path / "home", ingest_workers=1)
    [result] = ingest([note], settings)
    assert result.status == "ok"
    DocumentRuns.of(settings).publish("default")
    revision = open_revision(settings.published_dir, "default")
    assert dense_index(revision) is None
    response = classic_search(revision, SearchRequest(query=QUESTION, top_k=1, weights=DENSE_ONLY))
    assert response.results == [] or response.small_corpus
    assert dense.query_vector(revision, QUESTION) is None  # nothing to rerank with either


def _clustered(rows: int, seed: int = 7) -> np.ndarray:
    """Unit vectors around 50 centres (real embeddings cluster by topic; random ones do not)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((50, 384))
    matrix = centres[rng.integers(0, 50, rows)] + 0.6 * rng.standard_normal((rows, 384))
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix.astype(np.float32)


def test_sign_codes_pack_one_bit_per_dimension():
    codes = sign_codes(np.array([[1.0, -1.0] * 192, [-0.5] * 384], dtype=np.float32))
    assert codes.shape == (2, 6) and codes.dtype == np.uint64
    assert int(np.bitwise_count(codes[0]).sum()) == 192 and int(codes[1].sum()) == 0


def test_a_large_set_ranks_by_sign_codes_then_exact_scores_like_the_exact_scan():
    data = _clustered(4020)
    matrix, queries = data[:4000], data[4000:]  # queries near the same topics
    ids = [f"c{i:05d}" for i in range(len(matrix))]
    spec = EmbeddingSpec(provider="local", model="m", dimension=384)
    exact = DenseIndex(spec, ids, matrix)
    approximate = DenseIndex(spec, ids, matrix, sign_codes(matrix))
    overlap = [
        len({c for c, _ in exact.rank(q, 10)} & {c for c, _ in approximate.rank(q, 10)}) / 10
        for q in queries
    ]
    assert approximate.candidates(queries[0], 10) is not None  # the pool is a part of the set
    assert sum(overlap) / len(overlap) >= 0.9
    top = approximate.rank(queries[0], 5)
    assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)


def test_only_sets_above_the_exact_limit_get_sign_codes(monkeypatch):
    spec = EmbeddingSpec(provider="local", model="m", dimension=384)
    matrix = _clustered(300)
    ids = [str(i) for i in range(300)]
    assert DenseIndex.build(spec, ids, matrix).codes is None
    monkeypatch.setattr(dense, "EXACT_UP_TO", 100)
    assert DenseIndex.build(spec, ids, matrix).codes is not None
