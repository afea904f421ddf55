"""The pipeline's stages as plain functions (no Dagster): profile → parse (+ hierarchy) →
chunks → nav → manifest + atomic commit of the document directory.

Dagster assets, `corpus debug` and tests all call these, so a stage behaves the same
everywhere. Each stage writes into its own job-local folder under `work/<document_id>/` and
returns a small record with paths and counts; only `commit_document` touches the artifacts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from corpus_pipeline.common.errors import NoTextError
from corpus_pipeline.common.secrets import get_password
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.contracts import (
    Chunk,
    ChunksFile,
    ChunkType,
    Conversion,
    Diagnostic,
    DiagnosticsFile,
    DocNav,
    DocumentProfile,
    DocumentSubject,
    FileFormat,
    HeadingsFile,
    Manifest,
    ParsedRow,
    ResourceEntry,
    RowType,
    SectionNode,
    SourceInfo,
    SourceRecord,
    Statistics,
)
from corpus_pipeline.contracts.artifacts import is_textless_image
from corpus_pipeline.contracts.rows import rows_to_table, table_to_rows
from corpus_pipeline.enrich.llm import ChatModel, ImageDescriber, LLMSummarizer, make_summarizer
from corpus_pipeline.finance.structure import filing_structure
from corpus_pipeline.finance.subject import document_subject
from corpus_pipeline.parsing.base import DiagnosticSink, ParseContext
from corpus_pipeline.parsing.router import parser_for
from corpus_pipeline.profiling import Profiled, profile_source
from corpus_pipeline.structure.chunking import ChunkingOptions, ChunkingResult, build_chunks
from corpus_pipeline.structure.hierarchy import assign_hierarchy, compact_hierarchy, heading_tree
from corpus_pipeline.structure.nav import build_nav
from corpus_pipeline.structure.titles import document_title

PIPELINE_VERSION = "0.1.0"
STAGES = ("profile", "parse", "hierarchy", "chunks")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class ParseOutput(_Record):
    """What the parse stage left in its folder."""

    stage_dir: str
    rows_path: str
    title: str
    rows: int
    headings: int
    tables: int
    images: int
    image_files: int
    diagnostics: list[Diagnostic]
    seconds: float
    pages_parsed: int | None = None
    truncated: bool = False
    declared_date: str | None = None
    page_labels: list[str] = []
    running_text: list[str] = []
    subject: DocumentSubject = DocumentSubject()
    conversion: Conversion | None = None


class ChunksOutput(_Record):
    stage_dir: str
    chunks_path: str
    resources: list[ResourceEntry]
    counts: dict[str, int]
    diagnostics: list[Diagnostic]
    seconds: float


class NavOutput(_Record):
    nav_path: str
    sections: int
    seconds: float


def write_json(path: Path, model: BaseModel) -> None:
    """Deterministic JSON: field order from the model, 2-space indent, UTF-8, final newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model.model_dump_json(indent=2, by_alias=True) + "\n", encoding="utf-8")


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def stage_dir(settings: CorpusSettings, document_id: str, stage: str) -> Path:
    return settings.work_dir / document_id / stage


def run_profile(
    source_path: Path,
    source_file_name: str,
    document_id: str | None = None,
    settings: CorpusSettings | None = None,
) -> Profiled:
    """Profile a file (with the page reads its parse can use); an encrypted PDF is opened with
    the document's in-memory password, which the result carries on to the parse."""
    return profile_source(
        source_path,
        source_file_name,
        password=get_password(document_id),
        settings=settings,
    )


def parse_rows(
    source: Profiled, workdir: Path, settings: CorpusSettings | None = None
) -> ParseContext:
    """Run the routed parser strategy; rows come back without hierarchy paths. The parser
    reuses what profiling the file read (`source.reads`) instead of reading it again."""
    parser = parser_for(source.profile)
    ctx = ParseContext(
        source_path=source.source_path,
        source_file_name=source.source_file_name,
        profile=source.profile,
        workdir=workdir,
        settings=settings,
        password=source.password,
        prior_reads=source.reads,
    )
    parser(ctx)
    return ctx


def structure_rows(rows: list[ParsedRow]) -> list[ParsedRow]:
    """A parser's rows with their outline: a filing's parts, items and statements set in place
    (`finance.structure`), then every row's heading path."""
    return assign_hierarchy(filing_structure(rows))


def run_parse(
    document_id: str, source: Profiled, out_dir: Path, settings: CorpusSettings | None = None
) -> ParseOutput:
    """Parse, assign the heading hierarchy, and persist the parsed table and heading tree."""
    started = time.perf_counter()
    fresh_dir(out_dir)
    ctx = parse_rows(source, out_dir, settings)
    rows = structure_rows(ctx.rows)
    if not rows:
        ctx.diagnostics.add("parse", "parse.empty", "the document has no extractable content")
    pq.write_table(rows_to_table(rows), out_dir / "parsed.parquet", compression="zstd")
    tree = heading_tree(rows)
    write_json(out_dir / "headings.json", HeadingsFile(document_id=document_id, headings=tree))
    headings = [r for r in rows if r.row_type is RowType.HEADING]
    title = document_title(rows, source.source_file_name, ctx.declared_title)
    return ParseOutput(
        stage_dir=str(out_dir),
        rows_path=str(out_dir / "parsed.parquet"),
        title=title,
        rows=len(rows),
        headings=len(headings),
        tables=sum(r.row_type is RowType.TABLE for r in rows),
        images=sum(r.row_type is RowType.IMAGE for r in rows),
        image_files=len(ctx.resources.stored_images),
        diagnostics=ctx.diagnostics.items,
        seconds=time.perf_counter() - started,
        pages_parsed=max((p for r in rows for p in r.page_numbers), default=None),
        truncated=any(d.code == "parse.budget_exceeded" for d in ctx.diagnostics.items),
        declared_date=ctx.declared_date.isoformat() if ctx.declared_date else None,
        page_labels=ctx.page_labels,
        running_text=ctx.running_text,
        subject=document_subject(rows, source.source_file_name, title, ctx.running_text),
        conversion=ctx.conversion,
    )


def read_rows(rows_path: str | Path) -> list[ParsedRow]:
    return table_to_rows(pq.read_table(rows_path))


def chunk_document(
    rows: list[ParsedRow],
    profile: DocumentProfile,
    settings: CorpusSettings,
    resources_dir: Path | None = None,
) -> tuple[ChunkingResult, list[Diagnostic]]:
    """Rows → chunks; with the `image_description` role configured and the parse stage's
    resource folder given, stored images first get a vision model's description."""
    sink = DiagnosticSink()
    model = ChatModel.for_role(settings, "image_description")
    if model is not None and resources_dir is not None:
        describer = ImageDescriber(model, settings.image_description_max_images)
        rows = describe_images(rows, resources_dir, describer)
        for message in sorted(set(describer.errors)):
            sink.add("chunks", "image_description.failed", message)
        if describer.skipped:
            sink.add(
                "chunks",
                "image_description.limited",
                f"{describer.skipped} image occurrence(s) left undescribed: more than "
                f"{describer.limit} distinct images (CORPUS_IMAGE_DESCRIPTION_MAX_IMAGES)",
            )
    summarize = make_summarizer(settings, profile.language)
    options = ChunkingOptions(
        max_tokens=settings.chunk_max_tokens,
        keywords_per_chunk=settings.keywords_per_chunk,
        language=profile.language,
        summarize=summarize,
    )
    result = build_chunks(rows, options)
    if isinstance(summarize, LLMSummarizer):
        for message in sorted(set(summarize.errors)):
            sink.add("chunks", "summary.fallback", message)
    return result, sink.items


def describe_images(
    rows: list[ParsedRow], resources_dir: Path, describe: ImageDescriber
) -> list[ParsedRow]:
    """Image rows with the model's description after their own text (alt text, caption), so
    the description is the image segment's content: indexed, cited and hashed with it."""
    out: list[ParsedRow] = []
    for row in rows:
        if row.row_type is RowType.IMAGE and row.resource_path:
            path = resources_dir / row.resource_path
            description = describe(path, row.text) if path.is_file() else None
            if description:
                text = f"{row.text.strip()}\n{description}".strip()
                row = row.model_copy(update={"text": text})
        out.append(row)
    return out


def run_chunks(
    document_id: str,
    parsed: ParseOutput,
    profile: DocumentProfile,
    settings: CorpusSettings,
    out_dir: Path,
) -> ChunksOutput:
    started = time.perf_counter()
    fresh_dir(out_dir)
    result, diagnostics = chunk_document(
        read_rows(parsed.rows_path), profile, settings, Path(parsed.stage_dir)
    )
    path = out_dir / "chunks.json"
    write_json(path, ChunksFile(document_id=document_id, chunks=result.chunks))
    counts = Counter(c.chunk_type.value for c in result.chunks)
    return ChunksOutput(
        stage_dir=str(out_dir),
        chunks_path=str(path),
        resources=result.resources,
        counts={t.value: counts.get(t.value, 0) for t in ChunkType},
        diagnostics=diagnostics,
        seconds=time.perf_counter() - started,
    )


def require_text(
    source_file_name: str, profile: DocumentProfile, parsed: ParseOutput, chunks: ChunksOutput
) -> None:
    """Refuse a document without text (`NoTextError`): published with no chunk a reader can
    use, it would only look ingested. Images count only with text of their own (alt text,
    caption, OCR, a description); the message says why there is none and what to do."""
    if chunks.counts.get(ChunkType.TEXT.value) or chunks.counts.get(ChunkType.TABLE.value):
        return
    if any(
        not is_textless_image(c.chunk_type.value, c.content)
        for c in read_chunks(chunks.chunks_path).chunks
    ):
        return
    codes = Counter(d.code for d in parsed.diagnostics)
    pages = profile.page_count or 0
    unit = {FileFormat.PDF: "page", FileFormat.PPTX: "slide"}.get(profile.format)
    if codes["ocr.unavailable"]:
        reason = (
            "its pages are scanned images and OCR is unavailable (Tesseract is not installed); "
            "install it (`make system-deps`, or the tesseract-ocr package) and process the "
            "file again"
        )
    elif codes["ocr.failed"]:
        reason = (
            f"its pages are scanned images and OCR failed on {codes['ocr.failed']} of them; "
            "check the scan's quality, or send a copy with a text layer"
        )
    elif parsed.images:
        reason = (
            f"it holds only images ({parsed.images}) with no text of their own (no caption, "
            "alt text or text OCR could read); send a version with text, or set "
            "CORPUS_IMAGE_DESCRIPTION__MODEL to have a vision model describe them"
        )
    elif unit and pages:
        reason = f"its {pages} {unit}s are blank" if pages > 1 else f"its {unit} is blank"
    else:
        reason = "it is empty (no text, tables or images)"
    raise NoTextError(source_file_name, reason)


def read_chunks(path: str | Path) -> ChunksFile:
    return ChunksFile.model_validate_json(Path(path).read_text(encoding="utf-8"))


def read_headings(stage: str | Path) -> HeadingsFile:
    return HeadingsFile.model_validate_json(
        (Path(stage) / "headings.json").read_text(encoding="utf-8")
    )


def run_nav(
    document_id: str,
    parsed: ParseOutput,
    chunks: ChunksOutput,
    profile: DocumentProfile,
    settings: CorpusSettings,
    out_dir: Path,
) -> NavOutput:
    started = time.perf_counter()
    fresh_dir(out_dir)
    nav = build_nav(
        document_id,
        parsed.title,
        read_headings(parsed.stage_dir).headings,
        read_chunks(chunks.chunks_path).chunks,
        chunks.resources,
        make_summarizer(settings, profile.language),
    )
    path = out_dir / "doc_nav.json"
    write_json(path, nav)
    return NavOutput(
        nav_path=str(path), sections=_count_sections(nav), seconds=time.perf_counter() - started
    )


def _count_sections(nav: DocNav) -> int:
    def count(nodes: list[SectionNode]) -> int:
        return sum(1 + count(n.children) for n in nodes)

    return count(list(nav.sections))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_document(
    record: SourceRecord,
    source_path: Path,
    profile: DocumentProfile,
    parsed: ParseOutput,
    chunks: ChunksOutput,
    nav: NavOutput,
    timings: dict[str, float],
    staging: Path,
) -> Manifest:
    """Lay out the fixed directory format in `staging` and write its manifest last."""
    archived = _lay_out(staging, record, source_path, parsed, chunks, nav)
    diagnostics = [*parsed.diagnostics, *chunks.diagnostics]
    write_json(
        staging / "diagnostics.json",
        DiagnosticsFile(document_id=record.document_id, diagnostics=diagnostics),
    )
    chunk_list: list[Chunk] = read_chunks(chunks.chunks_path).chunks
    files = _file_digests(staging)
    headings = read_headings(parsed.stage_dir).headings
    source_date = record.document_date.isoformat() if record.document_date else None
    manifest = Manifest(
        document_id=record.document_id,
        namespace=record.namespace,
        source_file_name=record.source_file_name,
        title=parsed.title,
        document_date=source_date or parsed.declared_date,
        document_date_source="upload" if source_date else "file" if parsed.declared_date else None,
        source=_source_info(record, profile, archived, source_date),
        profile=profile,
        parser=profile.routing.strategy,
        conversion=parsed.conversion,
        pipeline_version=PIPELINE_VERSION,
        timings={k: round(v, 4) for k, v in timings.items()},
        statistics=_statistics(profile, parsed, chunks, nav, chunk_list),
        page_labels=parsed.page_labels,
        running_text=parsed.running_text,
        subject=parsed.subject,
        files=files,
        hierarchy=compact_hierarchy(headings),
        diagnostics_count=dict(sorted(Counter(d.level for d in diagnostics).items())),
    )
    write_json(staging / "manifest.json", manifest)
    return manifest


def _lay_out(
    staging: Path,
    record: SourceRecord,
    source_path: Path,
    parsed: ParseOutput,
    chunks: ChunksOutput,
    nav: NavOutput,
) -> Path:
    """The stages' files and the source copied into a fresh `staging`; the source's path in
    it (`source/<file name>`)."""
    fresh_dir(staging)
    parse_dir = Path(parsed.stage_dir)
    for sub in ("tables", "images"):
        src = parse_dir / sub
        if src.exists():
            shutil.copytree(src, staging / sub)
        else:
            (staging / sub).mkdir()
    shutil.copy2(parse_dir / "parsed.parquet", staging / "parsed.parquet")
    shutil.copy2(parse_dir / "headings.json", staging / "headings.json")
    shutil.copy2(chunks.chunks_path, staging / "chunks.json")
    shutil.copy2(nav.nav_path, staging / "doc_nav.json")
    archived = Path("source") / Path(record.source_file_name).name
    (staging / "source").mkdir()
    shutil.copy2(source_path, staging / archived)
    return archived


def _file_digests(staging: Path) -> dict[str, str]:
    """Relative path → sha256 of every file under `staging`, in path order."""
    return {
        p.relative_to(staging).as_posix(): _sha256_file(p)
        for p in sorted(staging.rglob("*"))
        if p.is_file()
    }


def _source_info(
    record: SourceRecord, profile: DocumentProfile, archived: Path, source_date: str | None
) -> SourceInfo:
    return SourceInfo(
        source_file_name=record.source_file_name,
        namespace=record.namespace,
        object_key=record.object_key,
        archived_path=archived.as_posix(),
        sha256=record.sha256,
        size_bytes=record.size_bytes,
        media_type=profile.media_type,
        format=profile.format.value,
        source_kind=record.source_kind.value,
        organizational_unit=record.organizational_unit,
        document_date=source_date,
    )


def _statistics(
    profile: DocumentProfile,
    parsed: ParseOutput,
    chunks: ChunksOutput,
    nav: NavOutput,
    chunk_list: list[Chunk],
) -> Statistics:
    return Statistics(
        chunks=len(chunk_list),
        text_chunks=chunks.counts.get("text", 0),
        table_chunks=chunks.counts.get("table", 0),
        image_chunks=chunks.counts.get("image", 0),
        sections=nav.sections,
        headings=parsed.headings,
        tables=parsed.tables,
        images=parsed.images,
        image_files=parsed.image_files,
        tokens=sum(c.metadata.tokens for c in chunk_list),
        characters=sum(c.metadata.length for c in chunk_list),
        rows=parsed.rows,
        pages=profile.page_count,
        pages_parsed=parsed.pages_parsed,
        truncated=parsed.truncated,
    )


def commit_document(staging: Path, final: Path) -> None:
    """Swap the finished staging directory into place: the old directory stays whole until the
    new one is complete, and a failure before this point leaves no partial directory."""
    final.parent.mkdir(parents=True, exist_ok=True)
    trash = final.parent / f".trash-{final.name}-{uuid.uuid4().hex[:8]}"
    if final.exists():
        os.replace(final, trash)
    os.replace(staging, final)
    if trash.exists():
        shutil.rmtree(trash)


def document_dir(settings: CorpusSettings, document_id: str) -> Path:
    return settings.artifacts_dir / document_id


def staging_dir(settings: CorpusSettings, document_id: str) -> Path:
    return settings.artifacts_dir / f".staging-{document_id}-{uuid.uuid4().hex[:8]}"
