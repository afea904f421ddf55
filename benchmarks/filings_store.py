"""Agentic and classic latency on a store of 40k chunks of filings (issue 14, point 6).

The real-world set holds 20 SEC 10-Q filings (~4k chunks); the agentic latency target also
names a store of 40k chunks of filings, the size where agentic search on long filings used to
take a second. This benchmark builds one from the real filings, the way a filings archive
grows — the same companies, quarter after quarter:

1. The 20 10-Q PDFs of `../shared/realworld/docs` go through `corpus ingest` into a fresh
   CORPUS_HOME, namespace `filings` (the user's path: Dagster assets and checks).
2. Earlier "quarters" are derived from their committed artifacts until the namespace holds at
   least `--chunks` unique chunks: variant k of a filing moves every year back by 2k and maps
   every other digit through a permutation of 0-9 seeded by k (quarters, "Q3", and forms,
   "10-Q", keep theirs), in
   the chunks, the navigation tree, the manifest and the table files. The edit keeps every
   text's length, so embed markers stay where they are; chunk ids are recomputed from the new
   text (prose without figures stays one chunk shared by every quarter, as in a real archive).
   Each variant is registered as a document of its own (the store's registry: no command
   registers a derived document) and the namespace is published once through the
   `corpus_revision` asset.
3. Queries over HTTP (`POST /v1/search` to `corpus serve`), agentic (8k token budget, rule planner) and classic
   (top 10) alternating, after a warm-up pass: the set's 40 10-Q questions and the same
   questions moved to earlier years (those that name a year). p50/p95 per mode.
4. The 40 original questions are also scored page-exact with the set's `score_pages.py`: the
   same questions as in `realworld_quality`, with ten times as many filings beside them.

Writes benchmarks/results/filings_store.json and prints the figures.
Run: `python -m benchmarks.filings_store [--chunks 40000] [--workdir DIR]`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import (
    AGENTIC_BUDGET,
    REALWORLD,
    RESULTS,
    TOP_K,
    ingest_folder,
    linked_inbox,
    log,
    nearest_rank,
    post_search,
    primary_answer,
    realworld_questions,
    result_line,
    score_pages,
    search_client,
    write_json,
)
from corpus_pipeline.common.ids import chunk_id_for, sha256_bytes
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse
from corpus_pipeline.contracts.artifacts import Chunk, ChunksFile, DocNav, SectionNode
from corpus_pipeline.orchestration.runs import DocumentRuns
from corpus_pipeline.quality.artifacts import hash_text_of
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

NAMESPACE = "filings"
FILINGS_TYPE = "SEC 10-Q filing"
TARGET_CHUNKS = 40_000
MAX_VARIANTS = 40
QUESTION_SHIFTS = 4  # each question that names a year is also asked of 4 earlier quarters
YEAR_STEP = 2  # variant k moves years back by 2k: two bases one year apart never collide

_NUMBER = re.compile(r"\d+")
_YEAR = re.compile(r"(?:19|20)\d\d")
_FORM = re.compile(r"-[A-Z]")
_HTML_TEXT = re.compile(r">([^<]+)<")

Row = dict[str, Any]


class Shift:
    """Variant k of a text, of the same length: years back by 2k, other digits permuted."""

    def __init__(self, k: int) -> None:
        self.k = k
        digits = list("0123456789")
        random.Random(f"filings-variant-{k}").shuffle(digits)
        self._table = str.maketrans("0123456789", "".join(digits))

    def year(self, match: re.Match[str]) -> str:
        return str(int(match.group(0)) - YEAR_STEP * self.k)

    def _number(self, match: re.Match[str]) -> str:
        text, start = match.group(0), match.start()
        before = match.string[start - 1] if start else ""
        if len(text) == 4 and _YEAR.fullmatch(text):
            return self.year(match)
        after = match.string[match.end() : match.end() + 2]
        if (len(text) == 1 and before in "Qq") or _FORM.fullmatch(after):
            return text  # a quarter ("Q3") or a form ("10-Q") keeps its number
        return text.translate(self._table)

    def __call__(self, text: str) -> str:
        return _NUMBER.sub(self._number, text)

    def keeping(self, text: str, spans: Sequence[tuple[int, int]]) -> str:
        """The text shifted outside `spans` (embed markers, which name files)."""
        out, at = [], 0
        for start, end in sorted(spans):
            out += [self(text[at:start]), text[start:end]]
            at = end
        return "".join([*out, self(text[at:])])

    def html(self, markup: str) -> str:
        """Only the text between tags: attributes such as rowspan="2" keep their values."""
        return _HTML_TEXT.sub(lambda m: f">{self(m.group(1))}<", markup)

    def day(self, value: str | None) -> str | None:
        if not value:
            return value
        day = date.fromisoformat(value[:10])
        try:
            moved = day.replace(year=day.year - YEAR_STEP * self.k)
        except ValueError:  # 29 February
            moved = day.replace(year=day.year - YEAR_STEP * self.k, day=28)
        return moved.isoformat() + value[10:]


def _shift_chunk(chunk: Chunk, shift: Shift) -> Chunk:
    spans = [c.position for c in chunk.metadata.connect_to if c.relation.value == "embeds"]
    content = shift.keeping(chunk.content, spans)
    meta = chunk.metadata.model_copy(
        update={
            "summary": shift(chunk.metadata.summary),
            "keywords": [shift(k) for k in chunk.metadata.keywords],
        }
    )
    moved = chunk.model_copy(
        update={
            "content": content,
            "metadata": meta,
            "hierarchy_path": [shift(p) for p in chunk.hierarchy_path],
            "occurrences": [
                o.model_copy(update={"hierarchy_path": [shift(p) for p in o.hierarchy_path]})
                for o in chunk.occurrences
            ],
        }
    )
    return moved.model_copy(update={"chunk_id": chunk_id_for(hash_text_of(moved))})


def _shift_section(node: SectionNode, shift: Shift) -> SectionNode:
    return node.model_copy(
        update={
            "title": shift(node.title),
            "path": [shift(p) for p in node.path],
            "summary": shift(node.summary),
            "children": [_shift_section(c, shift) for c in node.children],
        }
    )


def derive_variant(source: Path, target: Path, document_id: str, shift: Shift) -> set[str]:
    """Write variant `shift.k` of the committed document in `source` to `target`; returns its
    chunk ids. Chunks, navigation tree, manifest and table files move together."""
    chunks = ChunksFile.model_validate_json((source / "chunks.json").read_text(encoding="utf-8"))
    nav = DocNav.model_validate_json((source / "doc_nav.json").read_text(encoding="utf-8"))
    manifest: Row = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    moved = [_shift_chunk(c, shift) for c in chunks.chunks]
    new_id = {old.chunk_id: new.chunk_id for old, new in zip(chunks.chunks, moved, strict=True)}
    if len(set(new_id.values())) != len(new_id):
        raise ValueError(f"variant {shift.k} of {source.name} merges two chunks")
    moved = [
        c.model_copy(
            update={
                "metadata": c.metadata.model_copy(
                    update={
                        "connect_to": [
                            t.model_copy(update={"target": new_id.get(t.target, t.target)})
                            for t in c.metadata.connect_to
                        ]
                    }
                )
            }
        )
        for c in moved
    ]
    target.mkdir(parents=True)
    for folder in ("tables", "images"):
        if (source / folder).is_dir():
            shutil.copytree(source / folder, target / folder)
    for table in (target / "tables").glob("*.html") if (target / "tables").is_dir() else ():
        table.write_text(shift.html(table.read_text(encoding="utf-8")), encoding="utf-8")
    chunks_out = chunks.model_copy(update={"document_id": document_id, "chunks": moved})
    nav_out = nav.model_copy(
        update={
            "document_id": document_id,
            "title": shift(nav.title),
            "sections": [_shift_section(s, shift) for s in nav.sections],
            "resources": [
                r.model_copy(
                    update={
                        "chunk_id": new_id.get(r.chunk_id, r.chunk_id),
                        "caption": shift(r.caption) if r.caption else r.caption,
                        "section_path": [shift(p) for p in r.section_path],
                    }
                )
                for r in nav.resources
            ],
        }
    )
    manifest.update(
        document_id=document_id,
        namespace=NAMESPACE,
        source_file_name=shift(manifest["source_file_name"]),
        title=shift(manifest["title"]),
        document_date=shift.day(manifest.get("document_date")),
        running_text=[shift(t) for t in manifest.get("running_text") or []],
    )
    (target / "chunks.json").write_text(chunks_out.model_dump_json(indent=1), encoding="utf-8")
    (target / "doc_nav.json").write_text(nav_out.model_dump_json(indent=1), encoding="utf-8")
    manifest["files"] = {
        path.relative_to(target).as_posix(): sha256_bytes(path.read_bytes())
        for path in sorted(target.rglob("*"))
        if path.is_file()
    }
    (target / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return set(new_id.values())


def build_store(
    home: Path, root: Path, target_chunks: int, filings: Sequence[str]
) -> tuple[CorpusSettings, Row]:
    """Ingest the real filings, then register and write earlier quarters until the namespace
    holds `target_chunks` unique chunks; publish once."""
    work = Path(tempfile.mkdtemp(prefix="filings-inbox-"))
    inbox = linked_inbox([root / "docs" / name for name in filings], work / "inbox")
    started = time.perf_counter()
    ingested = ingest_folder(inbox, home, namespace=NAMESPACE)
    ingest_seconds = time.perf_counter() - started
    failed = ingested.failed
    settings = ingested.settings
    registry = SourceRegistry(ObjectStore(settings.object_store))
    originals = [r for r in registry.records() if r.namespace == NAMESPACE]
    unique: set[str] = set()
    for record in originals:
        chunks = ChunksFile.model_validate_json(
            (settings.artifacts_dir / record.document_id / "chunks.json").read_text("utf-8")
        )
        unique |= {c.chunk_id for c in chunks.chunks}
    real_chunks, variants = len(unique), 0
    started = time.perf_counter()
    while len(unique) < target_chunks and variants < MAX_VARIANTS:
        variants += 1
        shift = Shift(variants)
        for record in sorted(originals, key=lambda r: r.source_file_name):
            name = shift(record.source_file_name)
            derived = registry.register(
                json.dumps({"derived_from": record.document_id, "variant": variants}).encode(),
                name,
                NAMESPACE,
            )
            unique |= derive_variant(
                settings.artifacts_dir / record.document_id,
                settings.artifacts_dir / derived.document_id,
                derived.document_id,
                shift,
            )
    derive_seconds = time.perf_counter() - started
    started = time.perf_counter()
    published = DocumentRuns.of(settings).publish(NAMESPACE)
    if published.error is not None:
        raise RuntimeError(f"publish failed: {published.error}")
    return settings, {
        "filings": len(filings),
        "failed_documents": failed,
        "ingest_seconds": round(ingest_seconds, 1),
        "real_unique_chunks": real_chunks,
        "variants_per_filing": variants,
        "derive_seconds": round(derive_seconds, 1),
        "publish_seconds": round(time.perf_counter() - started, 1),
        "documents": published.documents,
        "chunks": published.chunks,
    }


def shifted_questions(questions: Sequence[Row]) -> list[Row]:
    """The questions, and those that name a year asked again of earlier quarters."""
    out = list(questions)
    for k in range(1, QUESTION_SHIFTS + 1):
        years = Shift(k).year
        for q in questions:
            moved = _YEAR.sub(years, q["question"])
            if moved != q["question"]:
                out.append({**q, "id": f"{q['id']}-{k}", "question": moved})
    return out


def _classic(client: httpx.Client, query: str) -> list[Row]:
    body = {"query": query, "top_k": TOP_K, "namespace": NAMESPACE}
    return [result_line(r) for r in post_search(client, body)["results"]]


def _agentic(client: httpx.Client, query: str) -> list[Row]:
    request = AgenticRequest(
        mode="agentic", query=query, namespace=NAMESPACE, token_budget=AGENTIC_BUDGET
    )
    payload = post_search(client, request.model_dump(mode="json"))
    return primary_answer(AgenticResponse.model_validate(payload))


MODES: dict[str, Callable[[httpx.Client, str], list[Row]]] = {
    "classic": _classic,
    "agentic 8k": _agentic,
}


def measure(client: httpx.Client, queries: Sequence[Row]) -> tuple[Row, dict[str, list[Row]]]:
    """A warm-up pass, then every query in both modes, alternating; the second pass's latency
    and results."""
    for q in queries:
        for search in MODES.values():
            search(client, q["question"])
    took: dict[str, list[float]] = {name: [] for name in MODES}
    lines: dict[str, list[Row]] = {name: [] for name in MODES}
    for q in queries:
        for name, search in MODES.items():
            started = time.perf_counter()
            results = search(client, q["question"])
            took[name].append((time.perf_counter() - started) * 1000)
            lines[name].append({"id": q["id"], "results": results})
    latency = {
        name: {
            "queries": len(values),
            "p50_ms": nearest_rank(values, 0.5, 1),
            "p95_ms": nearest_rank(values, 0.95, 1),
            "max_ms": round(max(values), 1),
        }
        for name, values in took.items()
    }
    return latency, lines


def run(home: Path, root: Path, target_chunks: int) -> Row:
    questions = [q for q in realworld_questions(root) if q["doc_type"] == FILINGS_TYPE]
    filings = sorted({q["doc"] for q in questions} | _all_filings(root))
    log(f"ingesting {len(filings)} filings into {home}, deriving quarters to {target_chunks:,} …")
    settings, store = build_store(home, root, target_chunks, filings)
    log(f"  {store['documents']} documents, {store['chunks']:,} unique chunks")
    queries = shifted_questions(questions)
    work = Path(tempfile.mkdtemp(prefix="filings-score-"))
    with search_client(settings.home, NAMESPACE, answer_cache=False) as client:
        log(f"{len(queries)} queries, agentic and classic alternating …")
        latency, lines = measure(client, queries)
    originals = {q["id"] for q in questions}
    subset = work / "set"
    subset.mkdir()
    (subset / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8"
    )
    shutil.copy(root / "score_pages.py", subset / "score_pages.py")
    scores = {
        name: score_pages(subset, [line for line in found if line["id"] in originals], work, name)
        for name, found in lines.items()
    }
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "store": store,
        "queries": len(queries),
        "latency": latency,
        "scores_original_questions": {name: s["all"] for name, s in scores.items()},
    }


def _all_filings(root: Path) -> set[str]:
    """Every 10-Q of the set, also those without questions (file names `YYYY_QN_TICKER.pdf`)."""
    pattern = re.compile(r"\d{4}_Q\d_[A-Z]+\.pdf")
    return {p.name for p in (root / "docs").glob("*.pdf") if pattern.fullmatch(p.name)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=TARGET_CHUNKS)
    parser.add_argument("--workdir", type=Path, default=None, help="CORPUS_HOME (fresh)")
    parser.add_argument("--set", type=Path, default=REALWORLD, dest="root")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    home = args.workdir or Path(tempfile.mkdtemp(prefix="filings-home-"))
    if home.exists() and any(home.iterdir()):
        parser.error(f"--workdir {home} is not empty (the store is built fresh)")
    result = run(home, args.root, args.chunks)
    write_json(args.out / "filings_store.json", result, indent=2)
    print(json.dumps({k: result[k] for k in ("store", "latency")}, indent=2))
    print(json.dumps(result["scores_original_questions"], indent=2))


if __name__ == "__main__":
    main()
