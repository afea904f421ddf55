"""The shared contracts: importable without Dagster, schemas in sync, Arrow round trip."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pytest

from corpus_pipeline.contracts import PARSED_ROW_SCHEMA, LinkSpan, ParsedRow, RowType
from corpus_pipeline.contracts.export_schemas import ARTIFACT_MODELS, render_schema, schema_file
from corpus_pipeline.contracts.rows import rows_to_table, table_to_rows


def test_contracts_import_neither_dagster_nor_fastapi():
    code = (
        "import sys, corpus_pipeline.contracts, corpus_pipeline.common.settings; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'dagster', 'fastapi'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("artifact", sorted(ARTIFACT_MODELS))
def test_checked_in_json_schema_matches_the_model(artifact):
    checked_in = schema_file(artifact).read_text(encoding="utf-8")
    assert checked_in == render_schema(ARTIFACT_MODELS[artifact]), (
        f"{schema_file(artifact).name} drifted from the model: run `make schemas`"
    )


def test_manifest_schema_names_the_hierarchy_key_in_capitals():
    schema = json.loads(schema_file("manifest.json").read_text(encoding="utf-8"))
    assert "HIERARCHY" in schema["properties"]
    assert "hierarchy" not in schema["properties"]


def test_parsed_rows_round_trip_through_arrow_with_the_contract_schema():
    rows = [
        ParsedRow(
            order=0,
            row_type=RowType.HEADING,
            text="Intro",
            heading_level=1,
            hierarchy_path=["Intro"],
            source_location="lines 1-1",
        ),
        ParsedRow(
            order=1,
            row_type=RowType.PARAGRAPH,
            text="See the docs.",
            hierarchy_path=["Intro"],
            page_numbers=[2],
            source_location="lines 3-3",
            links=[LinkSpan(start=8, end=12, target="https://example.org/docs")],
        ),
    ]
    table = rows_to_table(rows)
    assert table.schema.equals(PARSED_ROW_SCHEMA)
    assert table_to_rows(table) == rows


def test_a_table_with_foreign_columns_is_rejected_by_name():
    table = pa.table({"order": [0], "text": ["x"]})
    with pytest.raises(ValueError, match="do not match the contract"):
        table_to_rows(table)
