"""The summary role uses a configured OpenAI-compatible model, and only then."""

from __future__ import annotations

from corpus_pipeline.contracts import ChunkType, FileFormat, ParsedRow, RowType
from corpus_pipeline.enrich.llm import LLMSummarizer, make_summarizer
from corpus_pipeline.pipeline import chunk_document
from corpus_pipeline.settings import load_settings

from .openai_server import completion, openai_server
from .support import DOCS, bare_profile

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
