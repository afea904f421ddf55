"""What every reader of this package shares: where a home's parts are, and frames that keep
their columns when they have no rows (a notebook over a fresh home shows an empty table, not an
error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from corpus_pipeline.common.settings import CorpusSettings, load_settings

# A CORPUS_HOME as a notebook names it.
Home = str | Path
UTC_TIME = pl.Datetime("us", "UTC")


def settings_of(home: Home) -> CorpusSettings:
    """The home's layout (published revisions, Dagster instance, …) as the CLI resolves it."""
    return load_settings(home=Path(home))


def typed_frame(rows: list[dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    """Rows (dicts keyed by the schema's columns) as a frame with exactly these columns."""
    return pl.DataFrame(rows, schema=schema)


def from_arrow(table: pa.Table) -> pl.DataFrame:
    result = pl.from_arrow(table)
    assert isinstance(result, pl.DataFrame)
    return result
