"""Durable storage of delivered files: a content-addressed object store plus a document
registry, both through fsspec (a local folder by default, S3 when `CORPUS_OBJECT_STORE_URL`
is an s3:// URL)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import fsspec

from corpus_pipeline.common.errors import CorpusError, InvalidInputError, StorageError
from corpus_pipeline.common.ids import document_id_for, sha256_bytes
from corpus_pipeline.contracts import SourceKind, SourceRecord


class ObjectStore:
    """Keys are '/'-separated paths below the store's root URL."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        self.url = url.rstrip("/")
        # No listings cache: other processes write to the same store, and a cached listing
        # would hide their objects from `exists`/`cat_file` (s3fs caches listings per instance).
        storage_options.setdefault("use_listings_cache", False)
        self.fs, self.root = fsspec.core.url_to_fs(self.url, **storage_options)
        self._local = "file" in (
            self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        )

    @property
    def is_local(self) -> bool:
        """A folder on this machine (nothing to mirror to other machines)."""
        return self._local

    def _path(self, key: str) -> str:
        if key.startswith("/") or ".." in key.split("/"):
            raise InvalidInputError("object_key", "must be a relative key without '..'")
        return f"{self.root}/{key}"

    @contextmanager
    def _operation(self, name: str, key: str) -> Iterator[None]:
        """Backends raise many exception types (OSError, botocore, aiohttp), some with the
        endpoint in their text: surface one safe StorageError instead."""
        try:
            yield
        except CorpusError:
            raise
        except Exception as exc:
            raise StorageError(name, key, exc) from exc

    def exists(self, key: str) -> bool:
        with self._operation("lookup", key):
            return bool(self.fs.exists(self._path(key)))

    def put_bytes(self, key: str, data: bytes) -> None:
        """Write atomically (temporary key, then move). Only a local store creates folders:
        on S3 `makedirs` would silently create a missing bucket."""
        path = self._path(key)
        with self._operation("write", key):
            if self._local:
                self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            tmp = f"{path}.partial"
            self.fs.pipe_file(tmp, data)
            self.fs.mv(tmp, path)

    def get_bytes(self, key: str) -> bytes:
        with self._operation("read", key):
            data: bytes = self.fs.cat_file(self._path(key))
        return data

    def put_file(self, source: Path, key: str) -> None:
        """Upload a local file, streamed (an index file can be large); atomic like put_bytes."""
        path = self._path(key)
        with self._operation("write", key):
            if self._local:
                self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
                self.fs.put_file(str(source), f"{path}.partial")
                self.fs.mv(f"{path}.partial", path)
            else:
                self.fs.put_file(str(source), path)  # one S3 PUT: visible whole or not at all

    def get_file(self, key: str, target: Path) -> None:
        """Download to a local file, streamed."""
        with self._operation("read", key):
            self.fs.get_file(self._path(key), str(target))

    def children(self, prefix: str) -> list[str]:
        """Names directly below a prefix (one listing, not a recursive walk)."""
        base = self._path(prefix).rstrip("/")
        with self._operation("list", prefix):
            if not self.fs.exists(base):
                return []
            return sorted(
                str(p).rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(base, detail=False)
            )

    def stat(self, key: str) -> tuple[int, datetime | None]:
        """The object's size and when it was last written (None when the backend does not
        say: a local file's mtime, S3's LastModified)."""
        with self._operation("lookup", key):
            info = self.fs.info(self._path(key))
        size = int(info.get("size") or 0)
        value = info.get("mtime", info.get("LastModified"))
        if isinstance(value, datetime):
            return size, value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, int | float):
            return size, datetime.fromtimestamp(value, UTC)
        return size, None

    def delete(self, key: str) -> None:
        with self._operation("delete", key):
            self.fs.rm(self._path(key))

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix).rstrip("/")
        with self._operation("list", prefix):
            if not self.fs.exists(base):
                return []
            root = self.root.rstrip("/") + "/"
            return sorted(str(p).removeprefix(root) for p in self.fs.find(base))


SOURCES_PREFIX = "sources/sha256"


def blob_key(sha256: str) -> str:
    """Where bytes of this SHA-256 are stored (content-addressed: one object per content)."""
    return f"{SOURCES_PREFIX}/{sha256[:2]}/{sha256}"


class SourceRegistry:
    """Stores source bytes once per SHA-256 and one JSON record per document."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def register(
        self,
        data: bytes | Path,
        source_file_name: str,
        namespace: str,
        source_kind: SourceKind = SourceKind.CLI,
        organizational_unit: str | None = None,
        document_date: date | None = None,
        *,
        document_id: str | None = None,
        attached_to: str | None = None,
    ) -> SourceRecord:
        """Store the bytes durably, then record the document (bytes first: nothing dangles).
        `data` is the bytes, or a local file, hashed and stored as a stream (the upload API:
        its memory holds no document's bytes). `attached_to`: the id of the e-mail the file
        was attached to.

        The id is `document_id` when given (an explicit replacement), else derived from
        (namespace, name): registering a name again replaces its document. A replaced
        document's previous bytes are released (deleted unless another document holds them),
        so a replacement never leaves an unreferenced blob behind."""
        sha, size, write = self._content(data)
        key = blob_key(sha)
        if not self.store.exists(key):
            write(key)
        record = SourceRecord(
            document_id=document_id or document_id_for(namespace, source_file_name),
            namespace=namespace,
            source_file_name=source_file_name,
            object_key=key,
            sha256=sha,
            size_bytes=size,
            source_kind=source_kind,
            organizational_unit=organizational_unit,
            document_date=document_date,
            received_at=datetime.now(UTC),
            attached_to=attached_to,
        )
        previous = self.find(record.document_id)
        self.store.put_bytes(
            self._record_key(record.document_id), record.model_dump_json(indent=2).encode()
        )
        if not self.store.exists(key):
            # Released meanwhile by another document's replacement or by `corpus gc`, which
            # scanned the records before this one was written: stored again, never dangling.
            write(key)
        if previous is not None and previous.object_key != key:
            self._release(previous)
        return record

    def _content(self, data: bytes | Path) -> tuple[str, int, Callable[[str], None]]:
        """The SHA-256 and size of the bytes or of the local file, and how to store them."""
        if isinstance(data, Path):
            with data.open("rb") as handle:
                sha = hashlib.file_digest(handle, "sha256").hexdigest()
            return sha, data.stat().st_size, lambda key: self.store.put_file(data, key)
        return sha256_bytes(data), len(data), lambda key: self.store.put_bytes(key, data)

    def find(self, document_id: str) -> SourceRecord | None:
        """The document's record, or None when it is not registered."""
        key = self._record_key(document_id)
        if not self.store.exists(key):
            return None
        return SourceRecord.model_validate(json.loads(self.store.get_bytes(key)))

    def get(self, document_id: str) -> SourceRecord:
        record = self.find(document_id)
        if record is None:
            raise InvalidInputError("document_id", f"no document '{document_id}' is registered")
        return record

    def records(self) -> list[SourceRecord]:
        return [
            SourceRecord.model_validate(json.loads(self.store.get_bytes(key)))
            for key in self.store.list("registry/documents")
            if key.endswith(".json")
        ]

    def delete(self, document_id: str) -> SourceRecord:
        """Forget a document: its record, and its stored bytes unless another document holds the
        same content (bytes are stored once per SHA-256); the next publish removes it from
        every table. Record first: a failure between the two leaves bytes without a record
        (found again by the same content), never a record without its bytes."""
        record = self.get(document_id)
        self.store.delete(self._record_key(document_id))
        self._release(record)
        return record

    def _release(self, record: SourceRecord) -> None:
        """Delete the bytes a record no longer in the registry pointed at, unless another
        document holds the same content."""
        if any(r.object_key == record.object_key for r in self.records()):
            return
        if self.store.exists(record.object_key):
            self.store.delete(record.object_key)

    def fetch_source(self, record: SourceRecord, target_dir: Path) -> Path:
        """Copy the stored bytes to a local working file and verify their hash."""
        data = self.store.get_bytes(record.object_key)
        if sha256_bytes(data) != record.sha256:
            raise InvalidInputError(
                "object_key", f"stored object for '{record.document_id}' fails its checksum"
            )
        target_dir.mkdir(parents=True, exist_ok=True)
        path = target_dir / Path(record.source_file_name).name
        path.write_bytes(data)
        return path

    @staticmethod
    def _record_key(document_id: str) -> str:
        return f"registry/documents/{document_id}.json"
