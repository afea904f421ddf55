"""One dynamic partition per document (keys are document ids: slug + hash, no '/' or ','), and
one per namespace for its published revision (keys are namespace names)."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

DOCUMENTS_PARTITION = "documents"
documents_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENTS_PARTITION)
NAMESPACES_PARTITION = "namespaces"
namespaces_partitions = dg.DynamicPartitionsDefinition(name=NAMESPACES_PARTITION)

# Documents one run may take (a contiguous range of partitions). A run costs ~10 s before its
# first document (process start, definitions, the parse forkserver) against well under a second
# of work for a small file, so sensors and UI backfills batch; a failed document fails its run
# but not the other documents of the batch (benchmarks/sensor_ingest.py measures the trade).
DOCUMENTS_PER_RUN = 25
# Document runs the run queue admits at once (dagster.yaml, `corpus/stage: document`): a tick
# with few documents is spread over this many runs so both cores work.
DOCUMENT_RUN_SLOTS = 2


def partition_ranges(
    order: list[str], keys: list[str], runs: int = DOCUMENT_RUN_SLOTS
) -> list[tuple[str, str, int]]:
    """The requested `keys` as runs of at most `DOCUMENTS_PER_RUN` contiguous partitions of
    `order` (the dynamic partitions in insertion order): `(first, last, count)` each.

    Keys are spread over at least `runs` runs when there are that many (the parallel slots,
    so that every core works); a key missing from `order` is an error (its partition must be
    added first)."""
    position = {key: i for i, key in enumerate(order)}
    wanted = sorted({position[key] for key in keys})
    if not wanted:
        return []
    per_run = max(1, min(DOCUMENTS_PER_RUN, -(-len(wanted) // max(1, runs))))
    ranges: list[tuple[str, str, int]] = []
    start = previous = wanted[0]
    for index in [*wanted[1:], -1]:
        if index != previous + 1 or previous - start + 1 >= per_run:
            ranges.append((order[start], order[previous], previous - start + 1))
            start = index
        previous = index
    return ranges


def add_partitions(
    instance: dg.DagsterInstance,
    documents: Sequence[str] = (),
    namespaces: Sequence[str] = (),
) -> None:
    """Register document and namespace partitions the instance does not know yet (a namespace's
    partition exists from its first document on, so the UI lists its revision)."""
    for name, keys in ((DOCUMENTS_PARTITION, documents), (NAMESPACES_PARTITION, namespaces)):
        new = [k for k in dict.fromkeys(keys) if not instance.has_dynamic_partition(name, k)]
        if new:
            instance.add_dynamic_partitions(name, new)
