"""Dense vectors: the local ONNX model and an OpenAI-compatible endpoint behind one interface,
and a document's vector file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from corpus_pipeline.common.keypool import KeyPool
from corpus_pipeline.common.settings import EmbeddingsRole, LLMRole, load_settings
from corpus_pipeline.embeddings.vectors import (
    EmbeddingError,
    EndpointEmbedder,
    LocalMiniLM,
    embed_document,
    embedder_for,
    read_vectors,
    vectors_path,
)
from corpus_pipeline.orchestration.ingest import ingest

from .openai_server import Request, error, openai_server
from .support import FakeTime


@pytest.fixture(scope="module")
def local() -> LocalMiniLM:
    return LocalMiniLM()


def test_local_vectors_have_unit_length_and_the_models_dimension(local: LocalMiniLM):
    vectors = local.embed(["Tufted ducks dive for mussels.", "The pump was resealed."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_local_vectors_rank_a_paraphrase_above_an_unrelated_sentence(local: LocalMiniLM):
    question, paraphrase, unrelated = local.embed(
        [
            "How dependent is the company on a few large cities?",
            "Five metropolitan areas account for most of our bookings.",
            "The turbine bearing was replaced after the inspection.",
        ]
    )
    assert question @ paraphrase > question @ unrelated + 0.1


def test_a_texts_vector_does_not_depend_on_its_batch(local: LocalMiniLM):
    alone = local.embed(["Brent geese graze eelgrass."])[0]
    together = local.embed(
        ["A much longer sentence about something else entirely.", "Brent geese graze eelgrass."]
    )[1]
    assert np.allclose(alone, together, atol=1e-5)


def _embedding_reply(dimension: int) -> Any:
    def reply(body: dict[str, Any]) -> tuple[int, str]:
        texts = body["input"]
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(len(t)), 1.0] + [0.0] * (dimension - 2),
            }
            for i, t in enumerate(texts)
        ]
        payload = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        return 200, json.dumps(payload)

    return reply


def test_an_endpoint_is_called_in_batches_with_its_model_and_key():
    with openai_server(_embedding_reply(4)) as server:
        role = LLMRole(model="embed-small", base_url=server.base_url, api_key="sk-role")
        embedder = EndpointEmbedder(role, dimension=4, timeout=5, batch=2)
        vectors = embedder.embed(["a", "bbb", "cc"])
    assert [len(r["input"]) for r in server.requests] == [2, 1]
    assert {r["model"] for r in server.requests} == {"embed-small"}
    assert server.api_keys == ["sk-role", "sk-role"]
    assert vectors.shape == (3, 4) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[1][0] > vectors[0][0], "rows come back in input order"
    assert embedder.spec.key == "endpoint:embed-small:4"


def test_an_endpoint_rotates_its_batches_over_the_roles_keys():
    with openai_server(_embedding_reply(4)) as server:
        role = LLMRole(model="e", base_url=server.base_url, api_key="sk-one, sk-two")
        EndpointEmbedder(role, dimension=4, timeout=5, batch=1).embed(["a", "b", "c", "d"])
    assert server.api_keys == ["sk-one", "sk-two", "sk-one", "sk-two"]


def test_a_rate_limited_batch_goes_again_on_the_next_key_and_the_limited_key_rests():
    ok = _embedding_reply(4)

    def reply(request: Request) -> Any:
        if request.api_key == "sk-one":
            return error(429, "slow down", {"Retry-After": "30"})
        return ok(request.body)

    clock = FakeTime()
    with openai_server(on_request=reply) as server:
        role = LLMRole(model="e", base_url=server.base_url, api_key="sk-one,sk-two")
        pool = KeyPool(2, 60, clock=clock.clock, sleep=clock.sleep)
        vectors = EndpointEmbedder(role, 4, timeout=5, batch=1, pool=pool).embed(["a", "bb"])
    assert vectors.shape == (2, 4)
    assert server.api_keys == ["sk-one", "sk-two", "sk-two"]  # sk-one rests its 30 s
    assert clock.sleeps == []


def test_a_key_takes_no_more_than_its_requests_per_minute():
    clock = FakeTime()
    with openai_server(_embedding_reply(4)) as server:
        role = EmbeddingsRole(
            model="e", base_url=server.base_url, api_key="sk-one", requests_per_minute=2
        )
        pool = KeyPool(1, 2, clock=clock.clock, sleep=clock.sleep)
        EndpointEmbedder(role, 4, timeout=5, batch=1, pool=pool).embed(["a", "b", "c"])
    assert len(server.requests) == 3
    assert clock.sleeps == [60.0]  # the third batch waits for the first to leave the window


def test_keys_that_stay_rate_limited_fail_naming_the_limit_and_no_key():
    clock = FakeTime()
    with openai_server(lambda body: error(429, "limit", {"Retry-After": "900"})) as server:
        role = LLMRole(model="e", base_url=server.base_url, api_key="sk-secret-1,sk-secret-2")
        pool = KeyPool(2, 60, clock=clock.clock, sleep=clock.sleep)
        with pytest.raises(EmbeddingError, match="rate limited") as raised:
            EndpointEmbedder(role, 4, timeout=5, pool=pool).embed(["a"])
    assert "sk-secret" not in str(raised.value) and "127.0.0.1" not in str(raised.value)


def test_an_endpoint_error_is_told_by_its_type_only():
    with openai_server(lambda body: error(401, "bad key sk-secret at http://10.0.0.5")) as server:
        role = LLMRole(model="embed-small", base_url=server.base_url, api_key="sk-secret")
        with pytest.raises(EmbeddingError) as raised:
            EndpointEmbedder(role, dimension=4, timeout=5).embed(["a"])
    assert str(raised.value) == "embedding endpoint failed (AuthenticationError)"


def test_an_endpoint_of_another_dimension_is_refused_naming_the_setting():
    with openai_server(_embedding_reply(8)) as server:
        role = LLMRole(model="embed-small", base_url=server.base_url)
        with pytest.raises(EmbeddingError, match="returned 8 dimensions, configured 4"):
            EndpointEmbedder(role, dimension=4, timeout=5).embed(["a"])


def test_the_dense_channel_is_off_unless_configured(tmp_path: Path):
    assert embedder_for(load_settings(home=tmp_path)) is None
    assert isinstance(embedder_for(load_settings(home=tmp_path, dense="local")), LocalMiniLM)
    with pytest.raises(EmbeddingError, match="CORPUS_EMBEDDINGS__MODEL"):
        embedder_for(load_settings(home=tmp_path, dense="endpoint"))


@pytest.mark.slow
def test_a_document_gets_one_vector_per_unique_chunk_and_keeps_unchanged_ones(
    tmp_path: Path, local: LocalMiniLM
):
    note = tmp_path / "ducks.md"
    note.write_text(
        "# Ducks\n\nTufted ducks dive for mussels in winter.\n\n# Geese\n\nBrent geese graze.\n"
    )
    settings = load_settings(home=tmp_path / "home", ingest_workers=1)
    [result] = ingest([note], settings)
    assert result.status == "ok" and result.document_id
    first = embed_document(settings, result.document_id, local)
    spec, vectors = read_vectors(first.path)
    assert first.path == vectors_path(settings, result.document_id, local.spec)
    assert spec == local.spec and first.embedded == first.chunks == len(vectors) > 0
    again = embed_document(settings, result.document_id, local)
    assert again.embedded == 0 and read_vectors(again.path)[1].keys() == vectors.keys()


def test_a_chunk_is_embedded_under_its_title_and_section_path():
    from corpus_pipeline.embeddings.vectors import embedding_text

    assert embedding_text("Apple Inc. Form 10-Q", ["PART I", "Item 2."], "Net sales rose.") == (
        "Apple Inc. Form 10-Q\nPART I > Item 2.\nNet sales rose."
    )
    assert embedding_text(None, [], "Net sales rose.") == "Net sales rose."


def test_the_embeddings_roles_keys_and_rate_come_from_the_environment(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("CORPUS_DENSE", "endpoint")
    monkeypatch.setenv("CORPUS_EMBEDDINGS__MODEL", "embed-small")
    monkeypatch.setenv("CORPUS_EMBEDDINGS__API_KEY", "sk-a,sk-b,sk-c")
    monkeypatch.setenv("CORPUS_EMBEDDINGS__REQUESTS_PER_MINUTE", "7")
    embedder = embedder_for(load_settings(home=tmp_path))
    assert isinstance(embedder, EndpointEmbedder)
    with openai_server(_embedding_reply(1536)) as server:
        embedder.role = embedder.role.model_copy(update={"base_url": server.base_url})
        embedder.embed(["a"])
    assert embedder.pool is not None
    assert (len(embedder.pool), embedder.pool.requests_per_minute) == (3, 7)
