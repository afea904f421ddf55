"""Durable storage of delivered files: a content-addressed object store plus a document
registry, both through fsspec (a local folder by default, S3 when `CORPUS_OBJECT_STORE_URL`
is an s3:// URL)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fsspec

from corpus_pipeline.contracts import SourceKind, SourceRecord
from corpus_pipeline.errors import InvalidInputError
from corpus_pipeline.ids import document_id_for, sha256_bytes


class ObjectStore:
    """Keys are '/'-separated paths below the store's root URL."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        self.url = url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.url, **storage_options)

    def _path(self, key: str) -> str:
        if key.startswith("/") or ".." in key.split("/"):
            raise InvalidInputError("object_key", "must be a relative key without '..'")
        return f"{self.root}/{key}"

    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self._path(key)))

    def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        parent = path.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        tmp = f"{path}.partial"
        self.fs.pipe_file(tmp, data)
        self.fs.mv(tmp, path)

    def get_bytes(self, key: str) -> bytes:
        data: bytes = self.fs.cat_file(self._path(key))
        return data

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix).rstrip("/")
        if not self.fs.exists(base):
            return []
        root = self.root.rstrip("/") + "/"
        return sorted(str(p).removeprefix(root) for p in self.fs.find(base))


class SourceRegistry:
    """Stores source bytes once per SHA-256 and one JSON record per document."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def register(
        self,
        data: bytes,
        source_file_name: str,
        namespace: str,
        source_kind: SourceKind = SourceKind.CLI,
        organizational_unit: str | None = None,
    ) -> SourceRecord:
        """Store the bytes durably, then record the document (bytes first: nothing dangles)."""
        sha = sha256_bytes(data)
        key = f"sources/sha256/{sha[:2]}/{sha}"
        if not self.store.exists(key):
            self.store.put_bytes(key, data)
        record = SourceRecord(
            document_id=document_id_for(namespace, source_file_name),
            namespace=namespace,
            source_file_name=source_file_name,
            object_key=key,
            sha256=sha,
            size_bytes=len(data),
            source_kind=source_kind,
            organizational_unit=organizational_unit,
            received_at=datetime.now(UTC),
        )
        self.store.put_bytes(
            self._record_key(record.document_id), record.model_dump_json(indent=2).encode()
        )
        return record

    def get(self, document_id: str) -> SourceRecord:
        key = self._record_key(document_id)
        if not self.store.exists(key):
            raise InvalidInputError("document_id", f"no document '{document_id}' is registered")
        return SourceRecord.model_validate(json.loads(self.store.get_bytes(key)))

    def records(self) -> list[SourceRecord]:
        return [
            SourceRecord.model_validate(json.loads(self.store.get_bytes(key)))
            for key in self.store.list("registry/documents")
            if key.endswith(".json")
        ]

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
