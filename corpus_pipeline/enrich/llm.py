"""Optional LLM roles through any OpenAI-compatible endpoint (the `openai` client).

Each role (summary, hierarchy, image description, OCR, classification) has its own model key
and is used only when configured; otherwise the offline default stays in charge. Errors never
leak endpoint URLs or keys into stored messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from corpus_pipeline.enrich.text import extractive_summary
from corpus_pipeline.settings import CorpusSettings, LLMRole

Summarizer = Callable[[str], str]

_SUMMARY_PROMPT = (
    "Summarise the following document passage in at most two sentences. Use only facts from "
    "the passage; do not add commentary.\n\nPassage:\n{text}"
)


@dataclass
class LLMSummarizer:
    """Summaries from a chat model; falls back to the extractive summary on any provider error."""

    role: LLMRole
    timeout: float
    max_sentences: int
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from openai import OpenAI

        self._client = OpenAI(
            base_url=self.role.base_url or None,
            api_key=self.role.api_key.get_secret_value() or "not-set",
            timeout=self.timeout,
            max_retries=1,
        )

    def __call__(self, text: str) -> str:
        import openai

        if not text.strip():
            return ""
        try:
            response = self._client.chat.completions.create(
                model=self.role.model,
                messages=[{"role": "user", "content": _SUMMARY_PROMPT.format(text=text[:12000])}],
                temperature=0,
            )
            content = response.choices[0].message.content or ""
        except openai.OpenAIError as exc:
            self.errors.append(
                f"summary model failed ({type(exc).__name__}); extractive summary used"
            )
            return extractive_summary(text, self.max_sentences)
        summary = " ".join(content.split())
        return summary or extractive_summary(text, self.max_sentences)


def make_summarizer(settings: CorpusSettings, language: str | None = None) -> Summarizer:
    """The configured summariser: LLM when the summary role has a model, else extractive."""
    role = settings.role("summary")
    if role.enabled:
        return LLMSummarizer(role, settings.llm_timeout_seconds, settings.summary_max_sentences)
    max_sentences = settings.summary_max_sentences

    def summarize(text: str) -> str:
        return extractive_summary(text, max_sentences, language)

    return summarize
