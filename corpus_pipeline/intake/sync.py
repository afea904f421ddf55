"""Source sync: what a listing of a watched folder (or bucket) means for the corpus.

A synced document's identity is its address (the path under the watched folder, or the bucket
key), never its base name, and its change signal is a content hash (a bucket's ETag), read
before anything is downloaded or parsed. The plan is a pure function of the listing, what the
previous tick knew, the sync mode and whether the listing was complete: an address missing
from an incomplete listing (a folder that could not be read) is never taken for a deletion.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class SyncMode(StrEnum):
    NEW_ONLY = "new_only"  # only addresses never seen: nothing is updated or removed
    UPDATE_ONLY = "update_only"  # only known addresses whose content changed
    FULL = "full"  # new, changed and (after a complete listing) removed


@dataclass(frozen=True)
class SyncPlan:
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # changes the mode leaves alone


def plan_sync(
    listing: Mapping[str, str], known: Mapping[str, str], mode: SyncMode, complete: bool
) -> SyncPlan:
    """`listing` and `known` map address → change signal; addresses in sorted order."""
    plan = SyncPlan()
    for address in sorted(listing):
        signal = listing[address]
        if address not in known:
            (plan.ignored if mode is SyncMode.UPDATE_ONLY else plan.new).append(address)
        elif known[address] != signal:
            (plan.ignored if mode is SyncMode.NEW_ONLY else plan.updated).append(address)
        else:
            plan.unchanged.append(address)
    if mode is SyncMode.FULL and complete:
        plan.removed.extend(sorted(a for a in known if a not in listing))
    return plan


@dataclass(frozen=True)
class FolderEntry:
    path: Path
    mtime_ns: int
    size: int
    sha256: str


def scan_folder(
    root: Path, previous: Mapping[str, FolderEntry]
) -> tuple[dict[str, FolderEntry], bool]:
    """Files under `root` by '/'-separated relative path, and whether the walk was complete.

    A file whose modification time and size are those of the previous tick keeps its hash
    without being read. Hidden files and folders and partial downloads (`*.part`, `*.tmp`,
    `*.crdownload`) are not listed.
    """
    entries: dict[str, FolderEntry] = {}
    complete = True

    def failed(_: OSError) -> None:
        nonlocal complete
        complete = False

    if not root.is_dir():
        return entries, False
    for folder, dirs, files in os.walk(root, onerror=failed):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or name.endswith((".part", ".tmp", ".crdownload")):
                continue
            path = Path(folder) / name
            address = path.relative_to(root).as_posix()
            try:
                stat = path.stat()
                seen = previous.get(address)
                if seen is not None and (seen.mtime_ns, seen.size) == (
                    stat.st_mtime_ns,
                    stat.st_size,
                ):
                    sha = seen.sha256
                else:
                    sha = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                complete = False
                continue
            entries[address] = FolderEntry(path, stat.st_mtime_ns, stat.st_size, sha)
    return entries, complete


def scan_bucket(url: str) -> tuple[dict[str, str], bool]:
    """Objects under an `s3://bucket/prefix` URL as address → ETag (the change signal, read from
    the listing before any download), and whether the listing was complete."""
    import fsspec

    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    root = url.removeprefix("s3://").rstrip("/")
    try:
        found = fs.find(root, detail=True)
    except (OSError, ValueError):  # the bucket cannot be listed: nothing may be removed
        return {}, False
    out: dict[str, str] = {}
    for key, info in sorted(found.items()):
        name = key.rsplit("/", 1)[-1]
        if info.get("type") == "directory" or name.startswith(".") or name.endswith(".part"):
            continue
        etag = str(info.get("ETag") or info.get("etag") or info.get("size"))
        out[f"s3://{key}"] = etag.strip('"')
    return out, True


def read_object(address: str) -> bytes:
    import fsspec

    with fsspec.open(address, "rb") as handle:
        data: bytes = handle.read()
    return data
