"""The only place this project imports Dagster internals, for one gap in the public API.

- Provenance of a recorded materialisation. A range run records each document's assets as
  `dg.AssetMaterialization` events itself, and staleness after a code change must be per
  document as in a one-partition run, so each event carries the code version, input data
  versions and data version tags Dagster writes for its own materialisations; there is no public
  way to set them: dagster-io/dagster#21436 ("enable setting asset provenance when
  materializing an asset", open). Dagster reads them back through the public
  `dg.DataProvenance.from_tags`.

`corpus_pipeline_tests/test_dagster_internals.py` checks the round trip through the public reader,
so a Dagster upgrade that changes it fails there first.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from dagster._core.definitions.data_version import (
    CODE_VERSION_TAG,
    DATA_VERSION_IS_USER_PROVIDED_TAG,
    DATA_VERSION_TAG,
    NULL_EVENT_POINTER,
    compute_logical_data_version,
    get_input_data_version_tag,
    get_input_event_pointer_tag,
)

__all__ = ["provenance_tags"]


def provenance_tags(
    code_version: str, inputs: Mapping[str, str], data_version: str | None
) -> tuple[dict[str, str], str]:
    """The tags of a materialisation made by `code_version` from inputs {asset key: data
    version}, and its data version: `data_version` when the asset sets its own (user provided),
    else the logical version Dagster computes from the code and input versions."""
    tags = {CODE_VERSION_TAG: code_version}
    for dep, version in inputs.items():
        tags[get_input_data_version_tag(dg.AssetKey(dep))] = version
        tags[get_input_event_pointer_tag(dg.AssetKey(dep))] = NULL_EVENT_POINTER
    if data_version is not None:
        tags[DATA_VERSION_IS_USER_PROVIDED_TAG] = "true"
        version = data_version
    else:
        version = compute_logical_data_version(
            code_version, {dg.AssetKey(dep): dg.DataVersion(v) for dep, v in inputs.items()}
        ).value
    tags[DATA_VERSION_TAG] = version
    return tags, version
