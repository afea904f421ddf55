"""Synthetic document artifacts built from real text, for search and publish benchmarks.

Sentences, headings and tables come from the shared corpus's ground-truth Markdown files
(real vocabulary, real heading titles). Documents of 200–1000 chunks are recombined from them:
every chunk is 40–120 words made of short runs of consecutive real sentences, mostly from one
"primary" source file per document (so documents have topics and keywords), with identifier
tokens (`ISO-9001:2015`, `Table 2-1`, `v3.4.1`, …) sprinkled in, section paths 2–4 levels deep
titled with real headings, a few table chunks with their HTML files, and a handful of
boilerplate chunks shared across documents (exercising cross-document dedupe).

The artifact directories (chunks.json, doc_nav.json, manifest.json with its `files` hashes,
tables/*.html) are written directly through the pydantic contracts — no parser runs. Everything
is deterministic for a given seed.

Below the generator, what the scale benchmarks (`search_latency`, `http_latency`,
`dense_latency`, `agentic_quality`) share: a namespace of a given size generated and bulk-published
once under a work folder and reused while the generator and the published layout are unchanged,
and the query mix they time. Artifacts of a million chunks cannot come through `corpus ingest`
in a benchmark's time, so they are published with the publisher's own function.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import random
import re
import resource
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.harness import SHARED_CORPUS, log
from corpus_pipeline.common.ids import chunk_id_for, document_id_for
from corpus_pipeline.contracts import ChunksFile, DocNav, Manifest, SourceRecord
from corpus_pipeline.contracts import published as published_layout
from corpus_pipeline.contracts.published import read_pointer
from corpus_pipeline.index import channels
from corpus_pipeline.publish import tables as publish_tables
from corpus_pipeline.publish.publisher import (
    PublishItem,
    PublishReport,
    publish_items_for,
    publish_namespace,
)

GENERATOR_VERSION = 3  # 3: sections carry ids
DEFAULT_TEXT_DIR = SHARED_CORPUS / "groundtruth"
MIN_CHUNKS, MAX_CHUNKS = 200, 1000
MIN_WORDS, MAX_WORDS = 40, 120
MIN_RUNS = 3  # runs of consecutive sentences per text chunk
PRIMARY_SHARE = 0.8  # share of sentences drawn from the document's primary source
IDENT_CHUNK_SHARE = 0.25  # chunks that mention at least one identifier
TABLE_SHARE = 0.02  # table chunks (with a tables/*.html resource)
BOILERPLATE_PER_DOC = 3
SECTION_MEAN_CHUNKS = 8  # a new section starts every ~8 chunks
RECEIVED_AT = datetime(2026, 1, 1, tzinfo=UTC)

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_LIST_MARK = re.compile(r"^\s*(?:[-*+·]|\d+[.)])\s+")
_TABLE_SEP = re.compile(r"^\|?\s*:?-{2,}")
_WORD = re.compile(r"[A-Za-z][a-z]{4,}")

_STOPWORDS = """a about above after again against all also an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    more most no nor not now of off on once only or other our out over own same she should so some
    such than that the their them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your which
    using used use however therefore thus given based within without among these where"""
STOPWORDS = frozenset(_STOPWORDS.split())

IDENT_TEMPLATES = (
    "See {} for details.",
    "The requirements of {} apply.",
    "Refer to {} before changing the configuration.",
    "This is summarised in {}.",
    "Compliance with {} is verified annually.",
    "The values follow {}.",
    "As listed in {}, the defaults are unchanged.",
    "The procedure was updated in {}.",
)


@dataclass(frozen=True)
class Source:
    name: str
    sentences: tuple[tuple[str, int], ...]  # (sentence, word count)
    headings: tuple[str, ...]
    tables: tuple[tuple[tuple[str, ...], ...], ...]  # rows of cells


@dataclass(frozen=True)
class TextModel:
    sources: tuple[Source, ...]
    weights: tuple[float, ...]  # by sentence count
    headings: tuple[str, ...]  # every heading of every source
    tables: tuple[tuple[tuple[str, ...], ...], ...]
    identifiers: tuple[str, ...]
    ident_weights: tuple[float, ...]  # Zipf-like: a few codes are common, most are rare
    words: tuple[str, ...]  # content words, with repetition (frequency-weighted sampling)


def _clean(text: str) -> str:
    text = html.unescape(_TAG.sub(" ", _LINK.sub(r"\1", text)))
    text = text.replace("**", "").replace("`", "").replace("$$", "")
    return " ".join(text.split())


def _parse_markdown(name: str, text: str) -> Source:
    sentences: list[tuple[str, int]] = []
    headings: list[str] = []
    tables: list[tuple[tuple[str, ...], ...]] = []
    rows: list[tuple[str, ...]] = []
    in_code = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            continue
        if line.startswith("|"):
            if not _TABLE_SEP.match(line):
                cells = tuple(_clean(c) for c in line.strip("|").split("|"))
                if any(cells):
                    rows.append(cells)
            continue
        if len(rows) >= 2:
            tables.append(tuple(rows[:8]))
        rows = []
        if in_code or not line or line.startswith(("<!--", "![", "$$")):
            continue
        if line.startswith("#"):
            title = _clean(line.lstrip("#"))
            if 3 <= len(title) <= 80 and any(c.isalpha() for c in title):
                headings.append(title)
            continue
        for sentence in _SENTENCE_SPLIT.split(_clean(_LIST_MARK.sub("", line))):
            words = sentence.count(" ") + 1
            if 4 <= words <= 60:
                sentences.append((sentence, words))
    if len(rows) >= 2:
        tables.append(tuple(rows[:8]))
    return Source(name, tuple(sentences), tuple(dict.fromkeys(headings)), tuple(tables))


def _identifiers(rng: random.Random, count: int) -> list[str]:
    standards = (9001, 14001, 27001, 45001, 13485, 22000, 50001, 31000, 62304, 26262)
    makers: list[Any] = [
        lambda: f"ISO-{rng.choice(standards)}:{rng.choice((2008, 2013, 2015, 2018, 2022))}",
        lambda: f"IEC-{rng.randint(60000, 62999)}",
        lambda: f"Table {rng.randint(1, 12)}-{rng.randint(1, 20)}",
        lambda: f"Figure {rng.randint(1, 12)}-{rng.randint(1, 30)}",
        lambda: f"v{rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 30)}",
        lambda: f"RFC-{rng.randint(700, 9600)}",
        lambda: f"ERR-{rng.randint(1000, 9999)}",
        lambda: f"PN-{rng.randint(100, 999)}-{rng.randint(10, 99)}{rng.choice('ABCDEFGH')}",
        lambda: f"CVE-{rng.randint(2014, 2026)}-{rng.randint(1000, 49999)}",
        lambda: (
            "QIBM_"
            + "_".join(rng.choice(("DB", "SEC", "ADM", "AUD", "USR", "SYS", "CFG")) for _ in "ab")
        ),
    ]
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen.setdefault(rng.choice(makers)(), None)
    return list(seen)


@cache
def load_text_model(text_dir: Path = DEFAULT_TEXT_DIR, seed: int = 7) -> TextModel:
    sources = []
    for path in sorted(text_dir.glob("*.md")):
        source = _parse_markdown(path.stem, path.read_text(encoding="utf-8"))
        if len(source.sentences) >= 10:
            sources.append(source)
    if not sources:
        raise FileNotFoundError(f"no usable Markdown files under {text_dir}")
    words = [
        w.lower()
        for s in sources
        for sentence, _ in s.sentences
        for w in _WORD.findall(sentence)
        if w.lower() not in STOPWORDS
    ]
    identifiers = _identifiers(random.Random(f"{seed}/identifiers"), 3000)
    return TextModel(
        sources=tuple(sources),
        weights=tuple(float(len(s.sentences)) for s in sources),
        headings=tuple(dict.fromkeys(h for s in sources for h in s.headings)),
        tables=tuple(t for s in sources for t in s.tables),
        identifiers=tuple(identifiers),
        ident_weights=tuple(1.0 / (i + 1) ** 0.8 for i in range(len(identifiers))),
        words=tuple(words),
    )


# -- documents -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocSpec:
    """Everything needed to regenerate one document deterministically."""

    index: int
    namespace: str
    source_file_name: str
    chunks: int
    seed: str
    boilerplate: tuple[int, ...]
    variant: int = 0  # >0: a changed version (some chunks rewritten)

    @property
    def document_id(self) -> str:
        return document_id_for(self.namespace, self.source_file_name)

    def record(self) -> SourceRecord:
        digest = hashlib.sha256(f"{self.seed}/{self.variant}".encode()).hexdigest()
        return SourceRecord(
            document_id=self.document_id,
            namespace=self.namespace,
            source_file_name=self.source_file_name,
            object_key=f"{self.namespace}/{self.source_file_name}",
            sha256=digest,
            size_bytes=self.chunks * 700,
            received_at=RECEIVED_AT,
        )


@dataclass
class _Section:
    title: str
    path: tuple[str, ...]
    section_id: str
    first_text: str = ""
    chunk_count: int = 0
    children: dict[str, _Section] = field(default_factory=dict)


class _DocBuilder:
    def __init__(self, model: TextModel, spec: DocSpec) -> None:
        self.model = model
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.primary = self.rng.choices(model.sources, weights=model.weights)[0]
        titles = list(self.primary.headings)
        while len(titles) < 40:
            titles.append(self.rng.choice(model.headings))
        self.titles = titles
        self.root: dict[str, _Section] = {}
        self.path: tuple[str, ...] = ()
        self.sections_made = 0

    def _source(self, rng: random.Random) -> Source:
        if rng.random() < PRIMARY_SHARE:
            return self.primary
        return rng.choices(self.model.sources, weights=self.model.weights)[0]

    def _identifier(self, rng: random.Random) -> str:
        return rng.choices(self.model.identifiers, weights=self.model.ident_weights)[0]

    def text(self, rng: random.Random) -> str:
        target = rng.randint(MIN_WORDS, MAX_WORDS)
        parts: list[str] = []
        words = 0
        idents = rng.random() < IDENT_CHUNK_SHARE
        runs = 0
        # At least MIN_RUNS runs from random places: with fewer, the same few-sentence chunk
        # recurs by chance and the corpus dedupes far more than real documents do.
        while words < target or runs < MIN_RUNS:
            sentences = self._source(rng).sentences
            start = rng.randrange(len(sentences))
            runs += 1
            for sentence, n in sentences[start : start + rng.randint(1, 2)]:
                parts.append(sentence)
                words += n
                if words >= target and runs >= MIN_RUNS:
                    break
            if idents and rng.random() < 0.5:
                parts.append(rng.choice(IDENT_TEMPLATES).format(self._identifier(rng)))
                words += 5
                idents = rng.random() < 0.3
        if idents:
            parts.insert(rng.randrange(len(parts) + 1), f"({self._identifier(rng)})")
        text = " ".join(parts)
        if words > MAX_WORDS:
            text = " ".join(text.split()[:MAX_WORDS])
        return text

    def table(self, rng: random.Random) -> tuple[str, str]:
        rows = rng.choice(self.model.tables) if self.model.tables else (("a", "b"), ("1", "2"))
        caption = f"{self._identifier(rng)}: {rng.choice(self.titles)}"
        body = "\n".join(" | ".join(r) for r in rows)
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows
        )
        return (
            f"{caption}\n{body}",
            f"<table><caption>{html.escape(caption)}</caption>{cells}</table>",
        )

    def next_path(self, first: bool) -> tuple[str, ...]:
        """Section path of the next chunk: stays, or opens a new section (2–4 levels deep)."""
        rng = self.rng
        if not first and rng.random() >= 1 / SECTION_MEAN_CHUNKS:
            return self.path
        depth = len(self.path)
        level = 1 if first else rng.choice([lv for lv in (1, 2, 2, 3, 3, 4) if lv <= depth + 1])
        path = self.path[: level - 1]
        while True:
            path = (*path, self._child_title(path))
            if len(path) >= 2 and (len(path) == 4 or rng.random() < 0.6):
                break
        self.path = path
        return path

    def _child_title(self, parent: tuple[str, ...]) -> str:
        siblings = self._node(parent).children if parent else self.root
        for _ in range(8):
            title = self.rng.choice(self.titles)
            if title not in siblings:
                break
        else:
            title = f"{title} ({len(siblings) + 1})"
        self.sections_made += 1
        section = _Section(title=title, path=(*parent, title), section_id=f"s{self.sections_made}")
        siblings[title] = section
        return title

    def _node(self, path: tuple[str, ...]) -> _Section:
        node = self.root[path[0]]
        for title in path[1:]:
            node = node.children[title]
        return node

    def note_chunk(self, path: tuple[str, ...], content: str) -> None:
        node = self._node(path)
        node.chunk_count += 1
        if not node.first_text:
            node.first_text = _first_sentence(content)


def _first_sentence(text: str) -> str:
    return _SENTENCE_SPLIT.split(text.split("\n", 1)[0], maxsplit=1)[0][:200]


def _keywords(text: str) -> list[str]:
    rng = random.Random(text)
    candidates = [w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS]
    picked = dict.fromkeys(rng.sample(candidates, min(3, len(candidates))))
    return list(picked)


def boilerplate_text(model: TextModel, seed: str, k: int) -> str:
    rng = random.Random(f"{seed}/boilerplate/{k}")
    source = rng.choices(model.sources, weights=model.weights)[0]
    start = rng.randrange(len(source.sentences))
    body = " ".join(s for s, _ in source.sentences[start : start + 3])
    return f"Notice {k}: {body}"


def _section_nodes(sections: dict[str, _Section]) -> list[dict[str, Any]]:
    out = []
    for s in sections.values():
        children = _section_nodes(s.children)
        summary = s.first_text or (
            "Sections: " + "; ".join(c.title for c in list(s.children.values())[:8])
        )
        out.append(
            {
                "section_id": s.section_id,
                "title": s.title,
                "path": list(s.path),
                "level": len(s.path),
                "summary": summary,
                "chunk_count": s.chunk_count,
                "children": children,
            }
        )
    return out


def _hierarchy(sections: dict[str, _Section]) -> list[dict[str, Any]]:
    return [
        {"title": s.title, "level": len(s.path), "children": _hierarchy(s.children)}
        for s in sections.values()
    ]


def write_document(model: TextModel, spec: DocSpec, directory: Path) -> int:
    """Write one artifact directory; returns the number of chunk positions (occurrences)."""
    builder = _DocBuilder(model, spec)
    rng = builder.rng
    fmt = "pdf" if rng.random() < 0.7 else "docx"
    boiler_at = {rng.randrange(spec.chunks): k for k in spec.boilerplate}
    chunks: dict[str, dict[str, Any]] = {}
    tables: dict[str, str] = {}
    page = 1
    for order in range(spec.chunks):
        path = builder.next_path(order == 0)
        if fmt == "pdf" and order and rng.random() < 0.2:
            page += 1
        pages = [page] if fmt == "pdf" else []
        file_path = None
        if order in boiler_at:
            content = boilerplate_text(model, spec.seed.split("/")[0], boiler_at[order])
        elif rng.random() < TABLE_SHARE:
            content, table_html = builder.table(rng)
            file_path = f"tables/table-{len(tables) + 1:04d}.html"
            tables[file_path] = table_html
        else:
            content = builder.text(rng)
            if spec.variant and order % 10 == 0:  # a changed version rewrites ~10% of chunks
                content = builder.text(random.Random(f"{spec.seed}/v{spec.variant}/{order}"))
        cid = chunk_id_for(content)
        section_id = builder._node(path).section_id
        occurrence = {
            "hierarchy_path": list(path),
            "section_id": section_id,
            "order": order,
            "page_nums": pages,
        }
        builder.note_chunk(path, content)
        if cid in chunks:  # identical content twice in one document: one chunk, two places
            chunks[cid]["occurrences"].append(occurrence)
            continue
        words = content.count(" ") + 1
        chunks[cid] = {
            "chunk_id": cid,
            "chunk_type": "table" if file_path else "text",
            "content": content,
            "hierarchy_path": list(path),
            "section_id": section_id,
            "metadata": {
                "length": len(content),
                "summary": _first_sentence(content),
                "page_nums": pages,
                "tokens": words * 4 // 3,
                "keywords": _keywords(content),
                "file_path": file_path,
                "order": order,
            },
            "occurrences": [occurrence],
        }
    document_id = spec.document_id
    chunks_file = ChunksFile.model_validate(
        {"document_id": document_id, "chunks": list(chunks.values())}
    )
    title = next(iter(builder.root))
    resources = [
        {
            "resource_id": Path(c["metadata"]["file_path"]).stem,
            "kind": "table",
            "file_path": c["metadata"]["file_path"],
            "chunk_id": c["chunk_id"],
            "caption": c["content"].split("\n", 1)[0],
            "section_path": c["hierarchy_path"],
            "section_id": c["section_id"],
            "page_nums": c["metadata"]["page_nums"],
        }
        for c in chunks.values()
        if c["metadata"]["file_path"]
    ]
    nav = DocNav.model_validate(
        {
            "document_id": document_id,
            "title": title,
            "root_chunk_count": 0,
            "sections": _section_nodes(builder.root),
            "resources": resources,
        }
    )
    files: dict[str, bytes] = {
        "chunks.json": chunks_file.model_dump_json().encode(),
        "doc_nav.json": nav.model_dump_json().encode(),
        **{p: h.encode() for p, h in tables.items()},
    }
    directory.mkdir(parents=True, exist_ok=True)
    if tables:
        (directory / "tables").mkdir(exist_ok=True)
    for rel, data in files.items():
        (directory / rel).write_bytes(data)
    chunk_values = list(chunks.values())
    record = spec.record()
    manifest = Manifest.model_validate(
        {
            "document_id": document_id,
            "namespace": spec.namespace,
            "source_file_name": spec.source_file_name,
            "title": title,
            "source": {
                "source_file_name": spec.source_file_name,
                "namespace": spec.namespace,
                "object_key": record.object_key,
                "archived_path": f"source/{Path(spec.source_file_name).name}",
                "sha256": record.sha256,
                "size_bytes": record.size_bytes,
                "media_type": "application/pdf" if fmt == "pdf" else "application/vnd.docx",
                "format": fmt,
                "source_kind": record.source_kind.value,
            },
            "profile": {
                "format": fmt,
                "media_type": "application/pdf" if fmt == "pdf" else "application/vnd.docx",
                "extension": f".{fmt}",
                "size_bytes": record.size_bytes,
                "sha256": record.sha256,
                "page_count": page if fmt == "pdf" else None,
                "routing": {"strategy": fmt, "reason": "synthetic benchmark document"},
            },
            "parser": fmt,
            "pipeline_version": f"synthetic-{GENERATOR_VERSION}",
            "timings": {},
            "statistics": {
                "chunks": len(chunk_values),
                "text_chunks": len(chunk_values) - len(tables),
                "table_chunks": len(tables),
                "image_chunks": 0,
                "sections": len(_all_sections(builder.root)),
                "headings": len(_all_sections(builder.root)),
                "tables": len(tables),
                "images": 0,
                "image_files": 0,
                "tokens": sum(c["metadata"]["tokens"] for c in chunk_values),
                "characters": sum(c["metadata"]["length"] for c in chunk_values),
                "rows": spec.chunks,
                "pages": page if fmt == "pdf" else None,
            },
            "files": {rel: hashlib.sha256(data).hexdigest() for rel, data in sorted(files.items())},
            "HIERARCHY": _hierarchy(builder.root),
            "diagnostics_count": {},
        }
    )
    (directory / "manifest.json").write_text(manifest.model_dump_json(by_alias=True), "utf-8")
    return spec.chunks


def _all_sections(sections: dict[str, _Section]) -> list[_Section]:
    out = []
    for s in sections.values():
        out.append(s)
        out.extend(_all_sections(s.children))
    return out


# -- corpus plans ------------------------------------------------------------------------------


def plan_corpus(total_chunks: int, namespace: str, seed: int) -> list[DocSpec]:
    """Document specs whose chunk positions add up to `total_chunks`."""
    rng = random.Random(f"{seed}/plan/{total_chunks}")
    sizes: list[int] = []
    while sum(sizes) < total_chunks:
        sizes.append(rng.randint(MIN_CHUNKS, MAX_CHUNKS))
    sizes[-1] -= sum(sizes) - total_chunks
    pool = max(8, len(sizes) // 4)
    model = load_text_model()
    specs = []
    for i, n in enumerate(sizes):
        stem = model.sources[i % len(model.sources)].name.replace(".", "-")[:24]
        kind = "pdf" if i % 10 < 7 else "docx"
        boilerplate = tuple(rng.randrange(pool) for _ in range(BOILERPLATE_PER_DOC))
        specs.append(
            DocSpec(
                index=i,
                namespace=namespace,
                source_file_name=f"synthetic/{i // 500:03d}/{stem}-{i:06d}.{kind}",
                chunks=n,
                seed=f"{seed}/doc/{i}",
                boilerplate=boilerplate,
            )
        )
    return specs


def extra_spec(namespace: str, seed: int, variant: int, chunks: int = 300) -> DocSpec:
    """The one additional document of the incremental-publish measurement (and its variants)."""
    return DocSpec(
        index=-1,
        namespace=namespace,
        source_file_name="incoming/extra-report.pdf",
        chunks=chunks,
        seed=f"{seed}/extra",
        boilerplate=(0,),
        variant=variant,
    )


def _write_spec(args: tuple[DocSpec, str]) -> int:
    spec, directory = args
    return write_document(load_text_model(), spec, Path(directory))


def generate(specs: list[DocSpec], artifacts_dir: Path, workers: int) -> Iterator[int]:
    """Write every spec's directory under artifacts_dir/<document_id>; yields chunk counts."""
    jobs = [(s, str(artifacts_dir / s.document_id)) for s in specs]
    if workers <= 1:
        yield from map(_write_spec, jobs)
        return
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap_unordered(_write_spec, jobs, chunksize=4)


def save_records(specs: list[DocSpec], path: Path) -> None:
    data = [json.loads(s.record().model_dump_json()) for s in specs]
    path.write_text(json.dumps(data), encoding="utf-8")


def load_records(path: Path) -> list[SourceRecord]:
    return [SourceRecord.model_validate(r) for r in json.loads(path.read_text(encoding="utf-8"))]


# -- a cached namespace of a given size --------------------------------------------------------

NAMESPACE = "bench"
DEFAULT_QUESTIONS = SHARED_CORPUS / "questions.jsonl"
QUERY_MIX = (("phrase", 0.30), ("words", 0.25), ("identifier", 0.20), ("question", 0.25))


def dir_bytes(path: Path) -> int:
    """Bytes of the files under path, hard links counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(root, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


@dataclass(frozen=True)
class SizeDirs:
    root: Path

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def published(self) -> Path:
        return self.root / "published"

    @property
    def records(self) -> Path:
        return self.root / "records.json"

    @property
    def corpus_marker(self) -> Path:
        return self.root / "corpus.json"

    @property
    def bulk_marker(self) -> Path:
        return self.root / "bulk.json"


def read_marker(path: Path, expect: dict[str, Any]) -> dict[str, Any] | None:
    """A cache marker's data when it exists and matches `expect` on every key."""
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data if all(data.get(k) == v for k, v in expect.items()) else None


def ensure_corpus(dirs: SizeDirs, size: int, seed: int, workers: int) -> dict[str, Any]:
    """The artifact directories of a `size`-chunk corpus (generated unless cached)."""
    key = {"generator_version": GENERATOR_VERSION, "seed": seed, "size": size}
    marker = read_marker(dirs.corpus_marker, key)
    if marker is not None:
        return {**marker, "cached": True}
    if dirs.root.exists():
        shutil.rmtree(dirs.root)
    dirs.artifacts.mkdir(parents=True)
    started = time.perf_counter()
    specs = plan_corpus(size, NAMESPACE, seed)
    done = 0
    next_report = 0.0
    for positions in generate(specs, dirs.artifacts, workers):
        done += positions
        if time.perf_counter() - started > next_report:
            log(f"  generated {done:,}/{size:,} chunk positions")
            next_report += 15
    save_records(specs, dirs.records)
    data = {
        **key,
        "docs": len(specs),
        "chunk_positions": size,
        "artifact_bytes": dir_bytes(dirs.artifacts),
        "seconds": round(time.perf_counter() - started, 2),
        "workers": workers,
    }
    dirs.corpus_marker.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return {**data, "cached": False}


def corpus_items(dirs: SizeDirs) -> list[PublishItem]:
    return publish_items_for(dirs.artifacts, load_records(dirs.records), NAMESPACE)


def report_dict(report: PublishReport, seconds: float) -> dict[str, Any]:
    """One publish: its seconds, stage timings and the revision it made."""
    pointer = report.pointer
    return {
        "seconds": round(seconds, 3),
        "timings": {k: round(v, 3) for k, v in report.timings.items()},
        "revision": pointer.revision if pointer else None,
        "chunks": pointer.chunks if pointer else None,
        "documents": pointer.documents if pointer else None,
        "published": len(report.published),
        "removed": len(report.removed),
    }


def _bulk_publish_child(root: str, result_path: str) -> None:
    """Runs in a fresh process: publish the whole corpus once, report time and peak RSS."""
    dirs = SizeDirs(Path(root))
    items = corpus_items(dirs)
    started = time.perf_counter()
    report = publish_namespace(dirs.published, NAMESPACE, items)
    seconds = time.perf_counter() - started
    data = report_dict(report, seconds)
    data["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    Path(result_path).write_text(json.dumps(data), encoding="utf-8")


def publish_format() -> str:
    """Hash of the published layout's definitions: a cached namespace built by another version
    of the tables or the index schema is rebuilt, not appended to."""
    digest = hashlib.sha256()
    for module in (published_layout, publish_tables, channels):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


def ensure_published(dirs: SizeDirs, corpus: dict[str, Any]) -> dict[str, Any]:
    """The corpus bulk-published as one namespace in a child process (unless cached)."""
    key = {
        "corpus_seconds": corpus["seconds"],
        "generator_version": GENERATOR_VERSION,
        "publish_format": publish_format(),
    }
    marker = read_marker(dirs.bulk_marker, key)
    if marker is not None and read_pointer(dirs.published / NAMESPACE) is not None:
        return {**marker, "cached": True}
    if dirs.published.exists():
        shutil.rmtree(dirs.published)
    import multiprocessing as mp

    result_path = dirs.root / ".bulk-result.json"
    result_path.unlink(missing_ok=True)
    process = mp.get_context("spawn").Process(
        target=_bulk_publish_child, args=(str(dirs.root), str(result_path))
    )
    process.start()
    process.join()
    if process.exitcode != 0 or not result_path.is_file():
        raise RuntimeError(f"bulk publish failed (exit code {process.exitcode})")
    data = {**key, **json.loads(result_path.read_text(encoding="utf-8"))}
    dirs.bulk_marker.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return {**data, "cached": False}


@dataclass(frozen=True)
class BenchQuery:
    kind: str
    text: str


def make_queries(model: TextModel, count: int, seed: int, questions_path: Path) -> list[BenchQuery]:
    """Real-ish queries: phrases cut from real sentences, bags of corpus words, identifiers
    (alone or with a few words) and the shared corpus's development questions."""
    rng = random.Random(f"{seed}/queries")
    questions = [
        json.loads(line)["question"]
        for line in questions_path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    kinds = [k for k, _ in QUERY_MIX]
    weights = [w for _, w in QUERY_MIX]
    sentences = [s for source in model.sources for s, _ in source.sentences]
    out: list[BenchQuery] = []
    for _ in range(count):
        kind = rng.choices(kinds, weights=weights)[0]
        if kind == "question" and not questions:
            kind = "phrase"
        if kind == "phrase":
            words = rng.choice(sentences).split()
            n = min(rng.randint(2, 8), len(words))
            start = rng.randrange(len(words) - n + 1)
            text = " ".join(words[start : start + n])
        elif kind == "words":
            text = " ".join(rng.choice(model.words) for _ in range(rng.randint(2, 8)))
        elif kind == "identifier":
            if rng.random() < 0.5:
                ident = rng.choices(model.identifiers, weights=model.ident_weights)[0]
            else:
                ident = rng.choice(model.identifiers)
            extra = [rng.choice(model.words) for _ in range(rng.choice((0, 0, 1, 2, 3)))]
            text = " ".join([ident, *extra])
        else:
            text = rng.choice(questions)
        out.append(BenchQuery(kind=kind, text=text))
    return out
