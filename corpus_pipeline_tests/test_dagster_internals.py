"""The Dagster tags and internals this project relies on (`defs/tags.py`,
`defs/dagster_internals.py`) still mean what Dagster's public readers read: an upgrade that
changes either fails here first."""

from __future__ import annotations

import ast
from pathlib import Path

import dagster as dg

from corpus_pipeline.defs.dagster_internals import provenance_tags
from corpus_pipeline.defs.tags import run_tags

PACKAGE = Path(__file__).resolve().parent.parent / "corpus_pipeline"


def test_range_tags_are_read_back_as_the_runs_partition_range() -> None:
    request = dg.RunRequest(tags=run_tags("document", "test", span=("doc-a", "doc-f", 6)))

    assert request.partition_key_range == dg.PartitionKeyRange("doc-a", "doc-f")


def test_provenance_tags_are_read_back_as_the_materialisations_provenance() -> None:
    tags, version = provenance_tags("code-7", {"document_profile": "p1", "source": "s1"}, None)

    provenance = dg.DataProvenance.from_tags(tags)
    assert provenance is not None
    assert provenance.code_version == "code-7"
    assert provenance.input_data_versions == {
        dg.AssetKey("document_profile"): dg.DataVersion("p1"),
        dg.AssetKey("source"): dg.DataVersion("s1"),
    }
    assert not provenance.is_user_provided
    assert version == tags["dagster/data_version"]


def test_the_logical_data_version_changes_with_the_code_and_the_inputs() -> None:
    _, base = provenance_tags("code-7", {"source": "s1"}, None)

    assert provenance_tags("code-7", {"source": "s1"}, None)[1] == base
    assert provenance_tags("code-8", {"source": "s1"}, None)[1] != base
    assert provenance_tags("code-7", {"source": "s2"}, None)[1] != base


def test_a_data_version_the_asset_sets_is_kept_and_marked_user_provided() -> None:
    tags, version = provenance_tags("code-7", {}, "sha-of-the-bytes")

    provenance = dg.DataProvenance.from_tags(tags)
    assert version == "sha-of-the-bytes"
    assert provenance is not None and provenance.is_user_provided


def test_no_other_module_imports_dagster_internals() -> None:
    private = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "dagster_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            private += [f"{path.name}: {n}" for n in names if n.startswith("dagster._")]

    assert private == []
