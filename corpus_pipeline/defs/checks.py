"""Contract checks on each document's artifacts, run inside the document's step.

A failed check's description names it in words with its first problems ("section tree
invalid: …"), so `corpus ingest` and the Dagster UI show what is wrong, not a step name. The
chunk and section-tree checks block: the stages after them would build on a broken artifact,
so the step stops there. The directory check runs after the commit and only reports.
"""

import warnings
from pathlib import Path

import dagster as dg

from corpus_pipeline.common.errors import sanitize
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.defs.partitions import documents_partitions
from corpus_pipeline.pipeline import stages as pipeline
from corpus_pipeline.quality import artifacts as validation

# What each check guards, in words: the start of its failure message.
CHECK_LABELS = {
    "chunks_honour_contract": "chunks invalid",
    "nav_honours_contract": "section tree invalid",
    "document_directory_honours_contract": "document directory invalid",
}
SHOWN_PROBLEMS = 3


def check_specs() -> list[dg.AssetCheckSpec]:
    """The checks of each document's step (a function, like the asset specs).

    Partitioned check specs are a Dagster preview; its warning, printed on every import of the
    definitions (each `corpus` command, each ingest worker), is silenced here and only here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return _check_specs()


def _check_specs() -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            "chunks_honour_contract",
            asset="document_chunks",
            blocking=True,
            partitions_def=documents_partitions,
            description="chunks.json validates; ids are content hashes; connections point inside content.",
        ),
        dg.AssetCheckSpec(
            "nav_honours_contract",
            asset="document_nav",
            blocking=True,
            partitions_def=documents_partitions,
            description="doc_nav.json validates and every resource points at a chunk.",
        ),
        dg.AssetCheckSpec(
            "document_directory_honours_contract",
            asset="document_manifest",
            partitions_def=documents_partitions,
            description="The committed directory matches its manifest (files and hashes) and the contracts.",
        ),
    ]


def describe_problems(label: str, problems: list[str]) -> str:
    """'section tree invalid: a; b; c (+4 more)' with paths and hosts stripped."""
    shown = "; ".join(sanitize(p, 300) for p in problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return f"{label}: {shown}" + (f" (+{more} more)" if more > 0 else "")


def _result(check: str, asset: str, problems: list[str]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=check,
        passed=not problems,
        description=describe_problems(CHECK_LABELS[check], problems) if problems else None,
        metadata={"problems": len(problems), "first_problems": "\n".join(problems[:10]) or "none"},
    )


def check_chunks(chunks: pipeline.ChunksOutput) -> dg.AssetCheckResult:
    problems = validation.check_chunks(Path(chunks.chunks_path))
    return _result("chunks_honour_contract", "document_chunks", problems)


def check_nav(nav: pipeline.NavOutput, chunks: pipeline.ChunksOutput) -> dg.AssetCheckResult:
    problems = validation.check_nav(Path(nav.nav_path), Path(chunks.chunks_path))
    return _result("nav_honours_contract", "document_nav", problems)


def check_directory(settings: CorpusSettings, document_id: str) -> dg.AssetCheckResult:
    problems = validation.check_manifest(pipeline.document_dir(settings, document_id))
    return _result("document_directory_honours_contract", "document_manifest", problems)
