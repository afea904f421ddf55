"""Asset checks: each document's artifacts validated against the contracts.

A failed check's description names it in words with its first problems ("section tree
invalid: …"), so `corpus ingest` and the Dagster UI show what is wrong, not a step name.
"""

from pathlib import Path

import dagster as dg

from corpus_pipeline import pipeline, validation
from corpus_pipeline.contracts import Manifest
from corpus_pipeline.defs.documents import document_chunks, document_manifest, document_nav
from corpus_pipeline.defs.partitions import documents_partitions
from corpus_pipeline.defs.resources import (
    CorpusRootResource,
    ModelSettingsResource,
    ObjectStoreResource,
    resolve_settings,
)
from corpus_pipeline.errors import sanitize

# What each check guards, in words: the start of its failure message.
CHECK_LABELS = {
    "chunks_honour_contract": "chunks invalid",
    "nav_honours_contract": "section tree invalid",
    "document_directory_honours_contract": "document directory invalid",
}
SHOWN_PROBLEMS = 3


def describe_problems(label: str, problems: list[str]) -> str:
    """'section tree invalid: a; b; c (+4 more)' with paths and hosts stripped."""
    shown = "; ".join(sanitize(p, 300) for p in problems[:SHOWN_PROBLEMS])
    more = len(problems) - SHOWN_PROBLEMS
    return f"{label}: {shown}" + (f" (+{more} more)" if more > 0 else "")


def _result(check: str, problems: list[str]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not problems,
        description=describe_problems(CHECK_LABELS[check], problems) if problems else None,
        metadata={"problems": len(problems), "first_problems": "\n".join(problems[:10]) or "none"},
    )


@dg.asset_check(
    asset=document_chunks,
    partitions_def=documents_partitions,
    blocking=True,
    description="chunks.json validates; ids are content hashes; connections point inside content.",
)
def chunks_honour_contract(document_chunks: pipeline.ChunksOutput) -> dg.AssetCheckResult:
    return _result(
        "chunks_honour_contract", validation.check_chunks(Path(document_chunks.chunks_path))
    )


@dg.asset_check(
    asset=document_nav,
    partitions_def=documents_partitions,
    blocking=True,
    additional_ins={"document_chunks": dg.AssetIn("document_chunks")},
    description="doc_nav.json validates and every resource points at a chunk.",
)
def nav_honours_contract(
    document_nav: pipeline.NavOutput, document_chunks: pipeline.ChunksOutput
) -> dg.AssetCheckResult:
    return _result(
        "nav_honours_contract",
        validation.check_nav(Path(document_nav.nav_path), Path(document_chunks.chunks_path)),
    )


@dg.asset_check(
    asset=document_manifest,
    partitions_def=documents_partitions,
    description="The committed directory matches its manifest (files and hashes) and the contracts.",
)
def document_directory_honours_contract(
    document_manifest: Manifest,
    corpus: CorpusRootResource,
    object_store: ObjectStoreResource,
    models: ModelSettingsResource,
) -> dg.AssetCheckResult:
    settings = resolve_settings(corpus, object_store, models)
    return _result(
        "document_directory_honours_contract",
        validation.check_manifest(pipeline.document_dir(settings, document_manifest.document_id)),
    )
