"""Code versions: each per-document asset is versioned by a hash of the code its stage runs, so a
parser change marks exactly the partitions parsed by the old code stale in Dagster."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
import pytest

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.defs.versions import STAGE_SOURCES, code_version, source_hash
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import dagster_instance


def _tree(root: Path) -> Path:
    (root / "parsing").mkdir(parents=True)
    (root / "parsing" / "pdf.py").write_text("def parse(): return 1\n")
    (root / "nav.py").write_text("def nav(): return 2\n")
    return root


def test_a_stage_version_changes_with_its_own_code_only(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = source_hash(root, ["parsing"])
    assert source_hash(root, ["parsing"]) == before, "deterministic"
    (root / "nav.py").write_text("def nav(): return 3\n")
    assert source_hash(root, ["parsing"]) == before, "another stage's change does not count"
    (root / "parsing" / "pdf.py").write_text("def parse(): return 2\n")
    edited = source_hash(root, ["parsing"])
    assert edited != before
    (root / "parsing" / "new.py").write_text("\n")
    assert source_hash(root, ["parsing"]) not in (before, edited), "a new module counts"


def test_every_stage_has_a_version_and_its_sources_exist() -> None:
    package = Path(__file__).resolve().parent.parent / "corpus_pipeline"
    for asset, sources in STAGE_SOURCES.items():
        assert all((package / s).exists() for s in sources), asset
        assert len(code_version(asset)) == 16


@pytest.mark.slow
def test_a_materialisation_records_the_stage_code_version_and_the_source_content(
    tmp_path: Path,
) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Ducks\n\nTufted ducks dive for mussels.\n")
    settings = load_settings(home=tmp_path / "home", ingest_workers=1)
    [result] = ingest([note], settings)
    assert result.status == "ok"
    instance = dagster_instance(settings)
    parsed = instance.get_latest_materialization_event(dg.AssetKey("parsed_document"))
    source = instance.get_latest_materialization_event(dg.AssetKey("source_document"))
    assert parsed is not None and source is not None
    parsed_tags = (parsed.asset_materialization.tags if parsed.asset_materialization else {}) or {}
    source_tags = (source.asset_materialization.tags if source.asset_materialization else {}) or {}
    assert parsed_tags["dagster/code_version"] == code_version("parsed_document")
    assert source_tags["dagster/data_version"] == hashlib.sha256(note.read_bytes()).hexdigest()
