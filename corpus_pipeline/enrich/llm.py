"""Optional LLM roles through any OpenAI-compatible endpoint (the `openai` client).

Each role (summary, hierarchy, image description, OCR, classification) has its own model key
and is used only when configured; otherwise the offline default stays in charge. Every role
talks through one `ChatModel`, whose failures carry only the error type: stored messages never
hold endpoint URLs, hosts or keys.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus_pipeline.common.settings import CorpusSettings, LLMRole
from corpus_pipeline.enrich.text import Passage, extractive_summary, passage_text

Summarizer = Callable[[Passage], str]
Content = str | list[dict[str, Any]]


class LLMFailure(Exception):
    """A provider call failed; the message is only the error type (safe to store)."""


@dataclass
class ChatModel:
    """One role's chat model: a single user message in, the reply text out (temperature 0)."""

    role: LLMRole
    timeout: float

    def __post_init__(self) -> None:
        from openai import OpenAI

        self._client = OpenAI(
            base_url=self.role.base_url or None,
            api_key=self.role.keys()[0] or "not-set",
            timeout=self.timeout,
            max_retries=1,
        )

    @classmethod
    def for_role(cls, settings: CorpusSettings, name: str) -> ChatModel | None:
        """The role's model, or None when the role has no model configured."""
        role = settings.role(name)
        return cls(role, settings.llm_timeout_seconds) if role.enabled else None

    def complete(self, content: Content) -> str:
        import openai

        try:
            response = self._client.chat.completions.create(
                model=self.role.model,
                messages=[{"role": "user", "content": content}],  # type: ignore[misc,list-item]
                temperature=0,
            )
        except openai.OpenAIError as exc:
            raise LLMFailure(type(exc).__name__) from None
        return response.choices[0].message.content or ""


_SUMMARY_PROMPT = (
    "Summarise the following document passage in at most two sentences. Use only facts from "
    "the passage; do not add commentary.\n\nPassage:\n{text}"
)


@dataclass
class LLMSummarizer:
    """Summaries from a chat model; falls back to the extractive summary on any provider error."""

    model: ChatModel
    max_sentences: int
    errors: list[str] = field(default_factory=list)

    def __call__(self, passage: Passage) -> str:
        text = passage_text(passage)
        if not text.strip():
            return ""
        try:
            content = self.model.complete(_SUMMARY_PROMPT.format(text=text[:12000]))
        except LLMFailure as exc:
            self.errors.append(f"summary model failed ({exc}); extractive summary used")
            return extractive_summary(passage, self.max_sentences)
        summary = " ".join(content.split())
        return summary or extractive_summary(passage, self.max_sentences)


def make_summarizer(settings: CorpusSettings, language: str | None = None) -> Summarizer:
    """The configured summariser: LLM when the summary role has a model, else extractive."""
    model = ChatModel.for_role(settings, "summary")
    if model is not None:
        return LLMSummarizer(model, settings.summary_max_sentences)
    max_sentences = settings.summary_max_sentences

    def summarize(passage: Passage) -> str:
        return extractive_summary(passage, max_sentences, language)

    return summarize


_IMAGE_PROMPT = (
    "Describe this image from a document for someone who cannot see it, in at most three "
    "sentences: what it shows, and any text, labels or numbers that matter. Do not guess beyond "
    "what is visible.{context}"
)


@dataclass
class ImageDescriber:
    """Descriptions of stored images by a vision model (the `image_description` role), one call
    per image file (a deduplicated image is described once), at most `limit` per document."""

    model: ChatModel
    limit: int
    errors: list[str] = field(default_factory=list)
    skipped: int = 0
    _cache: dict[Path, str | None] = field(default_factory=dict)

    def __call__(self, image: Path, context: str = "") -> str | None:
        if image in self._cache:
            return self._cache[image]
        if len(self._cache) >= self.limit:
            self.skipped += 1
            return None
        mime = mimetypes.guess_type(image.name)[0] or "image/png"
        url = f"data:{mime};base64,{base64.b64encode(image.read_bytes()).decode('ascii')}"
        hint = f"\nText next to it in the document: {context[:500]}" if context.strip() else ""
        content: Content = [
            {"type": "text", "text": _IMAGE_PROMPT.format(context=hint)},
            {"type": "image_url", "image_url": {"url": url}},
        ]
        try:
            description: str | None = " ".join(self.model.complete(content).split()) or None
        except LLMFailure as exc:
            self.errors.append(f"image description model failed ({exc}); image kept without one")
            description = None
        self._cache[image] = description
        return description
