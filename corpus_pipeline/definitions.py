"""The Dagster code location: every module under `defs/` is discovered by `dg`."""

from __future__ import annotations

from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
