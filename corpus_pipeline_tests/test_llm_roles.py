"""Every LLM role (summary, image description, hierarchy judge, classification) uses its
configured OpenAI-compatible model, and only then; failures keep the offline result and never
leak the endpoint or key. The real `openai` client talks to a local server the test starts."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import (
    ChunkType,
    DocumentProfile,
    FileFormat,
    ParsedRow,
    PdfProfile,
    RowType,
)
from corpus_pipeline.enrich.llm import LLMSummarizer, make_summarizer
from corpus_pipeline.pipeline.stages import chunk_document
from corpus_pipeline.profiling import profile_source

from .openai_server import completion, openai_server
from .support import DOCS, bare_profile, publish_namespaces
from .test_parse_pdf import body, headings, make_pdf, parse

ROWS = [
    ParsedRow(
        order=0,
        row_type=RowType.PARAGRAPH,
        source_location="row 0",
        text="Mallards dabble in shallow water. Tufted ducks dive for food. Goldeneye stay far out.",
    ),
]


def test_without_a_model_the_summary_is_extractive_and_offline(corpus_home):
    summarize = make_summarizer(load_settings())
    assert not isinstance(summarize, LLMSummarizer)
    assert (
        summarize("One sentence here. Another one there.")
        == "One sentence here. Another one there."
    )


def test_a_configured_summary_model_writes_the_summaries(corpus_home, monkeypatch):
    with openai_server(lambda body: (200, completion("Ducks feed in different ways."))) as server:
        monkeypatch.setenv("CORPUS_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("CORPUS_LLM_API_KEY", "sk-test-secret")
        monkeypatch.setenv("CORPUS_SUMMARY__MODEL", "summary-mini")
        settings = load_settings()
        profile = bare_profile(DOCS / "wiki.md", FileFormat.MARKDOWN, "markdown")
        result, diagnostics = chunk_document(ROWS, profile, settings)
    (chunk,) = result.chunks
    assert chunk.chunk_type is ChunkType.TEXT
    assert chunk.metadata.summary == "Ducks feed in different ways."
    assert server.requests[0]["model"] == "summary-mini"
    assert "Mallards dabble" in server.requests[0]["messages"][0]["content"]
    assert {k.lower(): v for k, v in server.headers[0].items()}[
        "authorization"
    ] == "Bearer sk-test-secret"
    assert diagnostics == []


def test_a_failing_provider_falls_back_without_leaking_the_endpoint(corpus_home, monkeypatch):
    with openai_server(lambda body: (500, '{"error": {"message": "boom"}}')) as server:
        monkeypatch.setenv("CORPUS_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("CORPUS_LLM_API_KEY", "sk-test-secret")
        monkeypatch.setenv("CORPUS_SUMMARY__MODEL", "summary-mini")
        profile = bare_profile(DOCS / "wiki.md", FileFormat.MARKDOWN, "markdown")
        result, diagnostics = chunk_document(ROWS, profile, load_settings())
    assert result.chunks[0].metadata.summary.startswith("Mallards dabble")
    (diag,) = diagnostics
    assert diag.code == "summary.fallback"
    assert "127.0.0.1" not in diag.message and "sk-test" not in diag.message


def _use_model(monkeypatch: pytest.MonkeyPatch, base_url: str, role: str) -> None:
    monkeypatch.setenv("CORPUS_LLM_BASE_URL", base_url)
    monkeypatch.setenv("CORPUS_LLM_API_KEY", "sk-test-secret")
    monkeypatch.setenv(f"CORPUS_{role.upper()}__MODEL", f"{role}-model")


def _png(path: Path, color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(buffer, format="PNG")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def _image_rows(*paths: str) -> list[ParsedRow]:
    rows = [ParsedRow(order=0, row_type=RowType.PARAGRAPH, source_location="p0", text="A map.")]
    for i, path in enumerate(paths, 1):
        rows.append(
            ParsedRow(
                order=i,
                row_type=RowType.IMAGE,
                source_location=f"img {i}",
                text="Figure 1: the harbour",
                resource_path=path,
            )
        )
    return rows


def _image_url(request: dict[str, Any]) -> str:
    (part,) = [p for p in request["messages"][0]["content"] if p["type"] == "image_url"]
    url: str = part["image_url"]["url"]
    return url


def test_a_vision_model_describes_each_distinct_image_once(corpus_home, monkeypatch, tmp_path):
    data = _png(tmp_path / "parse" / "images" / "abc.png", (200, 30, 30))
    reply = completion("A red harbour map with the lighthouse marked.")
    with openai_server(lambda body: (200, reply)) as server:
        _use_model(monkeypatch, server.base_url, "image_description")
        profile = bare_profile(DOCS / "wiki.md", FileFormat.MARKDOWN, "markdown")
        rows = _image_rows("images/abc.png", "images/abc.png")
        result, diagnostics = chunk_document(rows, profile, load_settings(), tmp_path / "parse")
    (image,) = [c for c in result.chunks if c.chunk_type is ChunkType.IMAGE]
    assert image.content == "Figure 1: the harbour\nA red harbour map with the lighthouse marked."
    assert len(image.occurrences) == 2 and len(server.requests) == 1, "one call per image file"
    (request,) = server.requests
    assert request["model"] == "image_description-model"
    url = _image_url(request)
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == data, "the stored image bytes are sent"
    assert "Figure 1: the harbour" in request["messages"][0]["content"][0]["text"]
    assert diagnostics == []


def test_without_a_vision_model_images_keep_their_own_text(corpus_home, tmp_path):
    _png(tmp_path / "parse" / "images" / "abc.png", (200, 30, 30))
    profile = bare_profile(DOCS / "wiki.md", FileFormat.MARKDOWN, "markdown")
    result, _ = chunk_document(
        _image_rows("images/abc.png"), profile, load_settings(), tmp_path / "parse"
    )
    (image,) = [c for c in result.chunks if c.chunk_type is ChunkType.IMAGE]
    assert image.content == "Figure 1: the harbour"


def test_a_failing_vision_model_keeps_the_image_and_says_why(corpus_home, monkeypatch, tmp_path):
    _png(tmp_path / "parse" / "images" / "abc.png", (200, 30, 30))
    with openai_server(lambda body: (503, '{"error": {"message": "down"}}')) as server:
        _use_model(monkeypatch, server.base_url, "image_description")
        profile = bare_profile(DOCS / "wiki.md", FileFormat.MARKDOWN, "markdown")
        result, diagnostics = chunk_document(
            _image_rows("images/abc.png"), profile, load_settings(), tmp_path / "parse"
        )
    (image,) = [c for c in result.chunks if c.chunk_type is ChunkType.IMAGE]
    assert image.content == "Figure 1: the harbour"
    (diag,) = diagnostics
    assert diag.code == "image_description.failed"
    assert "127.0.0.1" not in diag.message and "sk-test" not in diag.message


def test_vision_calls_per_document_are_capped(corpus_home, monkeypatch, tmp_path):
    _png(tmp_path / "parse" / "images" / "a.png", (200, 30, 30))
    _png(tmp_path / "parse" / "images" / "b.png", (30, 200, 30))
    monkeypatch.setenv("CORPUS_IMAGE_DESCRIPTION_MAX_IMAGES", "1")
    with openai_server(lambda body: (200, completion("A coloured square."))) as server:
        _use_model(monkeypatch, server.base_url, "image_description")
        profile = bare_profile(DOCS / "wiki.md", FileFormat.MARKDOWN, "markdown")
        rows = _image_rows("images/a.png", "images/b.png")
        _, diagnostics = chunk_document(rows, profile, load_settings(), tmp_path / "parse")
    assert len(server.requests) == 1
    assert [d.code for d in diagnostics] == ["image_description.limited"]


def _pdf(profile: DocumentProfile) -> PdfProfile:
    assert profile.pdf is not None
    return profile.pdf


def _bold_candidates_pdf(tmp_path: Path) -> Path:
    return make_pdf(
        tmp_path / "bold.pdf",
        [
            [
                ("Engine maintenance", 16, "helv"),
                *body(),
                ("Safety notes", 10, "hebo"),
                *body(),
                ("Tools needed", 10, "hebo"),
                *body(),
            ]
        ],
    )


def test_the_hierarchy_model_judges_only_the_bold_only_candidates(
    corpus_home, monkeypatch, tmp_path
):
    path = _bold_candidates_pdf(tmp_path)
    verdict = json.dumps({"0": True, "1": False})
    with openai_server(lambda body: (200, completion(f"Here you go: {verdict}"))) as server:
        _use_model(monkeypatch, server.base_url, "hierarchy")
        ctx = parse(path, tmp_path, settings=load_settings())
    assert [h[0] for h in headings(ctx)] == ["Engine maintenance", "Safety notes"]
    (request,) = server.requests
    prompt = request["messages"][0]["content"]
    assert "0. [10.0pt bold] Safety notes" in prompt and "1. [10.0pt bold] Tools needed" in prompt
    assert "Engine maintenance" not in prompt, "size evidence needs no model"
    assert any("Tools needed" in r.text for r in ctx.rows if r.row_type is RowType.PARAGRAPH)


def test_a_failing_hierarchy_model_keeps_the_rule_based_headings(
    corpus_home, monkeypatch, tmp_path
):
    path = _bold_candidates_pdf(tmp_path)
    with openai_server(lambda body: (200, completion("no idea"))) as server:
        _use_model(monkeypatch, server.base_url, "hierarchy")
        ctx = parse(path, tmp_path, settings=load_settings())
    assert len(server.requests) == 1
    assert [h[0] for h in headings(ctx)] == ["Engine maintenance", "Safety notes", "Tools needed"]


def test_the_classification_model_names_the_kind_of_document(corpus_home, monkeypatch):
    path = DOCS / "amt_handbook_sample.pdf"
    rule_label = _pdf(profile_source(path).profile).classification
    with openai_server(
        lambda body: (200, completion(" Aviation Maintenance Handbook. "))
    ) as server:
        _use_model(monkeypatch, server.base_url, "classification")
        profile = _pdf(profile_source(path, settings=load_settings()).profile)
    assert profile.classification == "aviation maintenance handbook"
    assert profile.category == "general", "routing never depends on the model"
    assert "Boots self-locking nut" in server.requests[0]["messages"][0]["content"]
    assert rule_label != "aviation maintenance handbook"


def test_a_failing_classification_model_keeps_the_rule_label(corpus_home, monkeypatch):
    path = DOCS / "amt_handbook_sample.pdf"
    rule_label = _pdf(profile_source(path).profile).classification
    with openai_server(lambda body: (500, '{"error": {"message": "boom"}}')) as server:
        _use_model(monkeypatch, server.base_url, "classification")
        profile = _pdf(profile_source(path, settings=load_settings()).profile)
    assert server.requests, "the model was asked"
    assert profile.classification == rule_label


def test_an_ingested_image_is_searchable_by_its_description(corpus_home, monkeypatch):
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search
    from query_service.snapshot.revision import open_revision

    from .support import build_documents

    reply = completion("A cartoon duck wearing a blue sailor hat, floating on a lake.")
    with openai_server(lambda body: (200, reply)) as server:
        _use_model(monkeypatch, server.base_url, "image_description")
        settings = load_settings()
        build_documents(settings, {"word_sample.docx": (DOCS / "word_sample.docx").read_bytes()})
    assert server.requests, "the stored image went to the vision model"
    publish_namespaces(settings)
    revision = open_revision(settings.published_dir, "default")
    response = classic_search(
        revision, SearchRequest(query="sailor hat", top_k=1, chunk_types=["image"])
    )
    (top,) = response.results
    assert "sailor hat" in top.content and "Figure 1" in top.content
    assert top.resource is not None and top.resource.description == top.content
