"""The naive floor (`--baseline naive-bm25`): what a weekend RAG finds, asked the same questions.

Each document's plain text (`plaintext`) is cut into 1,000-character windows with 200
characters of overlap; each window cites the pages it spans. Windows are ranked by Okapi BM25
(k1 1.5, b 0.75; bm25s's "lucene" variant: the textbook formula with the never-negative idf
log(1 + (N - df + 0.5) / (df + 0.5)), in float64) over lower-cased `\\w+` words, each query word
counted once. Only windows sharing a word with the query rank; ties go to the earlier window
(documents in name order, windows in text order), so the same input gives the same ranking.

The documents are a folder's files (`--docs DIR`) or the source files stored for the
namespace; the floor reads the bytes themselves, never the pipeline's artifacts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePath
from typing import NamedTuple

import bm25s  # type: ignore[import-untyped]
import numpy as np

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.evaluation.plaintext import Part, Unreadable, pdf_parts, plain_text
from corpus_pipeline.evaluation.relevance import Hit

WINDOW_CHARS = 1000
WINDOW_OVERLAP = 200
BM25_K1 = 1.5
BM25_B = 0.75
BM25_METHOD = "lucene"
_WORD = re.compile(r"\w+")


class Window(NamedTuple):
    """A stretch of a document's plain text and the pages (1-based) it spans."""

    text: str
    pages: list[int]


def tokens(text: str) -> list[str]:
    """Lower-cased `\\w+` words: no stemming, no stop words."""
    return _WORD.findall(text.lower())


def windows_of(parts: Sequence[Part]) -> list[Window]:
    """The parts' text joined, cut into 1,000-character windows that overlap by 200; each
    window lists the numbered pages it touches (none for a flow format)."""
    starts, offset = [], 0
    for text, _ in parts:
        starts.append(offset)
        offset += len(text)
    full = "".join(text for text, _ in parts)
    out = []
    step = WINDOW_CHARS - WINDOW_OVERLAP
    for start in range(0, max(len(full) - WINDOW_OVERLAP, 1), step):
        end = min(start + WINDOW_CHARS, len(full))
        pages = [
            page
            for (text, page), s in zip(parts, starts, strict=True)
            if page is not None and s < end and s + len(text) > start
        ]
        out.append(Window(full[start:end], pages))
    return out


def page_windows(pdf: Path) -> list[Window]:
    """The windows of a PDF's PyMuPDF text."""
    return windows_of(pdf_parts(pdf.read_bytes()))


class NaiveBM25:
    """BM25 over windows given as (document name, text, pages); `search` returns window
    indices, best first."""

    def __init__(self, windows: Sequence[tuple[str, str, Sequence[int]]]) -> None:
        self.meta = [(doc, list(pages)) for doc, _, pages in windows]
        self._model: bm25s.BM25 | None = None
        if windows:
            self._model = bm25s.BM25(k1=BM25_K1, b=BM25_B, method=BM25_METHOD, dtype="float64")
            self._model.index([tokens(text) for _, text, _ in windows], show_progress=False)

    def search(self, query: str, k: int = 10) -> list[int]:
        if self._model is None:
            return []
        vocabulary = self._model.vocab_dict
        words = sorted({word for word in tokens(query) if word in vocabulary})
        if not words:
            return []
        scores = self._model.get_scores(words)
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return [int(i) for i in order if scores[i] > 0]


def _names(name: str) -> tuple[str, str]:
    """How a question may name a document: its base file name and its stem, case aside."""
    base = PurePath(name).name.casefold()
    return base, PurePath(base).stem


@dataclass(frozen=True)
class SourceDocument:
    """A document the floor reads: its name as the questions cite it, its id, its bytes."""

    name: str
    document_id: str
    read: Callable[[], bytes]


def folder_documents(root: Path) -> Iterator[SourceDocument]:
    """Every file below `root` (hidden ones left out), by relative path."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root)
        if not any(part.startswith(".") for part in relative.parts):
            yield SourceDocument(relative.as_posix(), relative.as_posix(), path.read_bytes)


def stored_documents(settings: CorpusSettings, namespace: str) -> Iterator[SourceDocument]:
    """The source files stored for the namespace (the registry's records), by name."""
    from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

    store = ObjectStore(settings.object_store)
    records = [r for r in SourceRegistry(store).records() if r.namespace == namespace]
    for record in sorted(records, key=lambda r: (r.source_file_name, r.document_id)):
        yield SourceDocument(
            record.source_file_name, record.document_id, partial(store.get_bytes, record.object_key)
        )


@dataclass
class NaiveBaseline:
    """The floor over a set of documents: their windows, one index, and the documents it could
    not read (name → why)."""

    windows: list[tuple[SourceDocument, int, Window]]
    unreadable: dict[str, str] = field(default_factory=dict)
    index: NaiveBM25 = field(init=False)

    def __post_init__(self) -> None:
        self.index = NaiveBM25([(d.name, w.text, w.pages) for d, _, w in self.windows])

    @classmethod
    def build(cls, documents: Iterable[SourceDocument]) -> NaiveBaseline:
        windows: list[tuple[SourceDocument, int, Window]] = []
        unreadable: dict[str, str] = {}
        for document in documents:
            try:
                parts = plain_text(document.name, document.read())
            except Unreadable as exc:
                unreadable[document.name] = str(exc)
                continue
            windows += [(document, i, w) for i, w in enumerate(windows_of(parts))]
        return cls(windows, unreadable)

    @property
    def documents(self) -> int:
        return len({d.name for d, _, _ in self.windows})

    def search(self, query: str, k: int = 10, within: str | None = None) -> list[Hit]:
        """The top `k` windows as results (chunk id: the window's number in its document);
        `within` a document (its file name or stem, case aside), the top `k` of its windows:
        the floor in the single-document setting."""
        if within is None:
            found = self.index.search(query, k)
        else:
            wanted = PurePath(within).name.casefold()
            found = [
                i
                for i in self.index.search(query, len(self.windows))
                if wanted in _names(self.windows[i][0].name)
            ][:k]
        hits = []
        for i in found:
            document, number, window = self.windows[i]
            hits.append(
                Hit(
                    document_id=document.document_id,
                    chunk_id=f"window-{number:05d}",
                    source_file_name=document.name,
                    content=window.text,
                    pages=tuple(window.pages),
                )
            )
        return hits
