"""How `corpus ingest` reports each file as it finishes, for a person or for a program.

On a terminal: a progress bar (files done/total, pages/s, time left) with one line per file
printed above it as the file finishes, and a one-line summary on stderr at the end. When stdout is not
a terminal, or with `--json`: one JSON object per line on stdout, flushed as each file
finishes, then one last line `{"publish": …}` when the batch published its namespace; nothing
else on stdout, so `corpus ingest … | jq` reads every line.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from corpus_pipeline.cli.output import console, echo_json_line, err_console

if TYPE_CHECKING:
    from corpus_pipeline.orchestration.runs import EmbedOutcome, IngestResult, PublishOutcome

# `IngestResult.status` as the user reads it.
STATUS = {"ok": "ingested", "unchanged": "unchanged", "skipped": "skipped", "failed": "failed"}
_COLOURS = {"ingested": "green", "unchanged": "cyan", "skipped": "yellow", "failed": "red"}
CHUNK_TYPES = ("text", "table", "image")


def file_record(result: IngestResult) -> dict[str, Any]:
    """A file's JSON line: `file`, `document_id`, `status` (ingested, unchanged, skipped or
    failed), `pages` (null for formats without pages), `chunks`, `seconds`; the chunk types,
    sections and lost parts once committed; `error` when it failed or was skipped."""
    record: dict[str, Any] = {
        "file": result.source_file_name,
        "document_id": result.document_id,
        "status": STATUS.get(result.status, result.status),
        "pages": result.pages,
        "chunks": sum(result.counts.get(kind, 0) for kind in CHUNK_TYPES),
        "seconds": round(result.seconds, 3),
    }
    if result.counts:
        record["chunk_types"] = {kind: result.counts.get(kind, 0) for kind in CHUNK_TYPES}
        record["sections"] = result.counts.get("sections", 0)
    if result.skipped:
        record["lost_parts"] = dict(result.skipped)
    if result.error is not None:
        record["error"] = result.error
    return record


def publish_record(published: PublishOutcome, dense: EmbedOutcome | None) -> dict[str, Any]:
    """The batch's last JSON line: what the publish made of the namespace (and the vectors
    embedded when the dense channel is on)."""
    outcome: dict[str, Any] = {
        "namespace": published.namespace,
        "revision": published.revision,
        "documents": published.documents,
        "chunks": published.chunks,
        "published": published.published,
        "removed": published.removed,
        "unchanged": published.unchanged,
        "seconds": round(published.seconds, 3),
    }
    if published.error is not None:
        outcome["error"] = published.error
    if dense is not None:
        outcome["dense"] = {
            "documents": dense.documents,
            "chunks": dense.chunks,
            "embedded": dense.embedded,
            "errors": dense.errors,
        }
    return {"publish": outcome}


@dataclass(frozen=True)
class Batch:
    """What a batch came to, reported at its end: each file's result, the namespace's publish
    (None when no file was processed or unchanged) and the embedding (None unless the dense
    channel ran)."""

    results: Sequence[IngestResult]
    published: PublishOutcome | None
    dense: EmbedOutcome | None


class Report(ABC):
    """A batch's report, in the order `corpus ingest` calls it: `running` around the files
    (`file_done` as each finishes), `publishing` around the publish, then `finish`."""

    def running(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    @abstractmethod
    def file_done(self, result: IngestResult) -> None: ...

    def publishing(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    @abstractmethod
    def finish(self, batch: Batch) -> None: ...


class JsonLines(Report):
    """The report for programs: one JSON line per file, then the publish line."""

    def file_done(self, result: IngestResult) -> None:
        echo_json_line(file_record(result))

    def finish(self, batch: Batch) -> None:
        if batch.published is not None:
            echo_json_line(publish_record(batch.published, batch.dense))


class _PagesPerSecond(ProgressColumn):
    """Pages of the finished files per second of the batch ('-' until a file with pages)."""

    def render(self, task: Task) -> Text:
        pages = int(task.fields.get("pages", 0))
        if not pages or not task.elapsed:
            return Text("- pages/s", style="progress.data.speed")
        return Text(f"{pages / task.elapsed:.1f} pages/s", style="progress.data.speed")


class Terminal(Report):
    """The report for a person: the progress bar, a line per file, and the summary."""

    def __init__(self, total: int) -> None:
        self.started = time.perf_counter()
        self.pages = 0
        self.progress = Progress(
            TextColumn("[bold]ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("files"),
            _PagesPerSecond(),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
            console=console,  # the file lines print above it through the same console
            transient=True,
        )
        self.task = self.progress.add_task("", total=total, pages=0)

    def running(self) -> contextlib.AbstractContextManager[object]:
        return self.progress

    def file_done(self, result: IngestResult) -> None:
        self.pages += result.pages or 0
        task = self.progress.tasks[0]
        if task.total is not None and task.completed >= task.total:
            # An archive delivers more documents than the files counted up front.
            self.progress.update(self.task, total=task.completed + 1)
        self.progress.update(
            self.task, advance=1, pages=self.pages, description=escape(result.source_file_name)
        )
        self.progress.console.print(file_line(result))

    def publishing(self) -> contextlib.AbstractContextManager[object]:
        return err_console.status("publishing …")

    def finish(self, batch: Batch) -> None:
        seconds = time.perf_counter() - self.started
        err_console.print(summary_line(batch.results, seconds, batch.published), soft_wrap=True)
        if (dense := batch.dense) is not None:
            err_console.print(
                f"dense: {dense.documents} documents, {dense.chunks} chunk vectors "
                f"({dense.embedded} embedded now) in {dense.seconds:.1f}s"
            )
            for document_id, message in dense.errors.items():
                err_console.print(f"[red]not embedded[/] {document_id}  {escape(message)}")


def file_line(result: IngestResult) -> str:
    """A file's line on a terminal: its status, name, pages, chunks and time, or the reason
    it failed or was skipped (rich markup)."""
    status = STATUS.get(result.status, result.status)
    head = f"[{_COLOURS.get(status, 'white')}]{status:<9}[/] {escape(result.source_file_name)}"
    if result.status in ("failed", "skipped"):
        return f"{head}  {escape(result.error or '')}"
    record = file_record(result)
    pages = f"{_count(result.pages, 'page')}, " if result.pages else ""
    kinds = ", ".join(f"{kind} {n}" for kind, n in record["chunk_types"].items() if n)
    return (
        f"{head}  [dim]{result.document_id}[/]  {pages}{_count(record['chunks'], 'chunk')}"
        f"{f' ({kinds})' if kinds else ''}, {_count(record['sections'], 'section')}  "
        f"({result.seconds:.1f}s{lost_note(result.skipped)})"
    )


def lost_note(skipped: dict[str, int]) -> str:
    """'; 3 parts lost: image ×2, table ×1' for a file's line ('' when nothing was lost)."""
    if not skipped:
        return ""
    parts = ", ".join(f"{escape(kind)} ×{n}" for kind, n in skipped.items())
    return f"; {_count(sum(skipped.values()), 'part')} lost: {parts}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def summary_line(
    results: Sequence[IngestResult], seconds: float, published: PublishOutcome | None
) -> str:
    """The batch in one line: files by status, pages per second, and what was published."""
    counts = Counter(STATUS.get(r.status, r.status) for r in results)
    shown = ", ".join(
        f"{counts[s]} {s}" for s in ("ingested", "unchanged", "skipped", "failed") if counts[s]
    )
    pages = sum(r.pages or 0 for r in results if r.status == "ok")
    rate = f", {pages} pages at {pages / seconds:.1f} pages/s" if pages and seconds else ""
    line = f"{_count(len(results), 'file')}: {shown or 'none'} in {seconds:.1f}s{rate}"
    if published is None:
        return f"{line}; nothing to publish"
    if published.error is not None:
        return f"{line}; not published"
    return (
        f"{line}; namespace '{published.namespace}' at revision {published.revision} "
        f"({_count(published.documents, 'document')}, {published.chunks} unique chunks)"
    )
