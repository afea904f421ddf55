"""When a returned result answers a question: the development sets' own rules, exactly.

- Answer strings (`../shared/corpus/score_search.py`): the result names the question's document
  (same base name, case-insensitive) and its text holds one of the answer strings, both
  normalised alike: NFKC, Markdown backslash escapes undone (`\\_` → `_`), whitespace collapsed,
  case folded.
- Gold pages (`../shared/realworld/score_pages.py`): the result names the document (same base
  name, or same stem, case-insensitive) and one of its pages is a gold page.
- Neither: the result names the document (the page rule's names).

A question with both answers and pages is judged by its answers (the contract's `gold`). A
question without a document (`doc` None) takes a result of any document.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from corpus_pipeline.contracts.evaluation import EvalQuestion, QuestionResult, RankedResult

SNIPPET_CHARS = 160
DOC_HIT_AT = 10
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")
# The format groups of `score_search.py` (its `format=` figures), widened to the other
# extensions the pipeline reads; anything else is grouped by its extension.
FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".html": "html",
    ".htm": "html",
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
    ".tif": "image",
    ".tiff": "image",
    ".webp": "image",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
}


@dataclass(frozen=True)
class Hit:
    """One returned result as the rules read it: where it is, and its whole text."""

    document_id: str
    chunk_id: str
    source_file_name: str
    content: str
    pages: tuple[int, ...] = ()
    section_path: tuple[str, ...] = ()


def norm(text: str) -> str:
    """`score_search.py`'s normalisation of answers and result text."""
    text = unicodedata.normalize("NFKC", text or "")
    text = _ESCAPE.sub(r"\1", text)
    return " ".join(text.split()).casefold()


def same_base_name(name: str, doc: str) -> bool:
    """The answer rule's document match: equal base names, case-insensitive."""
    return PurePath(name).name.casefold() == doc.casefold()


def same_name_or_stem(name: str, doc: str) -> bool:
    """The page rule's document match: equal base names or equal stems, case-insensitive."""
    a, b = PurePath(name).name.casefold(), doc.casefold()
    return a == b or PurePath(a).stem == PurePath(b).stem


def names_document(question: EvalQuestion, hit: Hit) -> bool:
    """The result is in the question's document, by the name rule of the question's gold."""
    if question.doc is None:
        return True
    if question.gold == "answers":
        return same_base_name(hit.source_file_name, question.doc)
    return same_name_or_stem(hit.source_file_name, question.doc)


def is_relevant(question: EvalQuestion, hit: Hit, answers: list[str] | None = None) -> bool:
    """The result answers the question by the rule of its gold (`answers`: the question's
    answer strings already normalised, when judging many results)."""
    if not names_document(question, hit):
        return False
    if question.gold == "answers":
        wanted = answers if answers is not None else [norm(a) for a in question.answers]
        text = norm(hit.content)
        return any(answer in text for answer in wanted)
    if question.gold == "pages":
        return bool(set(question.pages) & set(hit.pages))
    return True


def doc_type_of(question: EvalQuestion) -> str:
    """The group of the per-type figures: the question's `doc_type`, else its document's format
    (`score_search.py`'s groups), else "unspecified"."""
    if question.doc_type:
        return question.doc_type
    if question.doc is None:
        return "unspecified"
    suffix = PurePath(question.doc).suffix.lower()
    return FORMATS.get(suffix, suffix.lstrip(".") or "other")


def kind_groups(kind: str) -> list[str]:
    """The kind groups a question counts in: a kind joined with "+" ("Table+Chart") counts in
    each of its parts, as `score_pages.py` groups them."""
    parts = [part.strip() for part in kind.split("+") if part.strip()]
    return parts or [kind]


def judge(
    question: EvalQuestion,
    hits: Sequence[Hit],
    top_k: int,
    *,
    latency_ms: float | None = None,
    evidence_tokens: int | None = None,
    error: str | None = None,
) -> QuestionResult:
    """The question's top `top_k` results, each judged, with where the first relevant one
    stands and whether its document is in the top 10 (the scorers' doc-hit@10)."""
    answers = [norm(a) for a in question.answers]
    ranked = [
        RankedResult(
            rank=rank,
            document_id=hit.document_id,
            chunk_id=hit.chunk_id,
            source_file_name=hit.source_file_name,
            pages=list(hit.pages),
            section_path=list(hit.section_path),
            relevant=is_relevant(question, hit, answers),
            snippet=" ".join(hit.content.split())[:SNIPPET_CHARS],
        )
        for rank, hit in enumerate(hits[:top_k], 1)
    ]
    return QuestionResult(
        id=question.id,
        question=question.question,
        kind=question.kind,
        doc_type=doc_type_of(question),
        doc=question.doc,
        gold=question.gold,
        first_relevant_rank=next((r.rank for r in ranked if r.relevant), None),
        doc_hit=any(names_document(question, hit) for hit in hits[: min(top_k, DOC_HIT_AT)]),
        results=ranked,
        latency_ms=None if latency_ms is None else round(latency_ms, 3),
        evidence_tokens=evidence_tokens,
        error=error,
    )
