"""One dynamic partition per document; keys are document ids (slug + hash, no '/' or ',')."""

from __future__ import annotations

import dagster as dg

DOCUMENTS_PARTITION = "documents"
documents_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENTS_PARTITION)
