"""API keys: the key file both services read, and the principal a key stands for.

The query service (reads) and the pipeline's upload API (writes) share one key file
(`CORPUS_API_KEYS_FILE`, default `$CORPUS_HOME/service/api_keys.json`): `{"keys":
[{"key_sha256": "...", "principal": "...", "namespaces": ["default"], "write_namespaces":
["default"], "created_at": "..."}]}`; `"key"` in clear is accepted instead of its hash (and
replaced by it the next time `corpus keys` writes the file), `"*"` means every namespace, and
`write_namespaces` (default none: read-only) is what the upload API lets the key change. Only
hashes are compared and kept in memory. Resolving a request's key at run time, and managing
the file, is `corpus_pipeline.access.keys`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from corpus_pipeline.contracts.base import FrozenModel


class KeyEntry(BaseModel):
    """One key of the key file: its hash (or the key in clear) and what it may do."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = Field(default=None, min_length=1, repr=False)
    key_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$", repr=False)
    principal: str = Field(min_length=1, description="Who the key stands for; its name.")
    namespaces: list[str] = Field(default_factory=list)
    write_namespaces: list[str] = Field(default_factory=list)
    created_at: datetime | None = None

    @model_validator(mode="after")
    def _one_key(self) -> KeyEntry:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("give exactly one of 'key' and 'key_sha256'")
        return self

    @property
    def digest(self) -> str:
        return self.key_sha256 or hash_key(self.key or "")


class KeyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[KeyEntry] = Field(default_factory=list)


class KeyFileError(ValueError):
    """The key file cannot be used; the message names the file and the field."""


class Principal(FrozenModel):
    """Who a request is, and the namespaces it may read and change."""

    name: str
    namespaces: frozenset[str]
    writes: frozenset[str] = frozenset()

    def may_read(self, namespace: str) -> bool:
        return "*" in self.namespaces or namespace in self.namespaces

    def may_write(self, namespace: str) -> bool:
        return self.may_read(namespace) and ("*" in self.writes or namespace in self.writes)


def parse_key_file(text: str, name: str) -> KeyFile:
    """The key file's contents (blank text: no keys); `KeyFileError` names the file (`name`)
    and the first problem, never a key."""
    if not text.strip():
        return KeyFile()
    try:
        return KeyFile.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise KeyFileError(f"key file {name}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "file"
        raise KeyFileError(f"key file {name}: {field}: {error['msg']}") from None


class KeyRing:
    """The principals of one reading of a key file, by key hash."""

    def __init__(self, entries: dict[str, Principal]) -> None:
        self._by_hash = entries

    @property
    def enabled(self) -> bool:
        return bool(self._by_hash)

    def __len__(self) -> int:
        return len(self._by_hash)

    @classmethod
    def parse(cls, text: str, name: str) -> KeyRing:
        return cls(
            {
                entry.digest: Principal(
                    name=entry.principal,
                    namespaces=frozenset(entry.namespaces),
                    writes=frozenset(entry.write_namespaces),
                )
                for entry in parse_key_file(text, name).keys
            }
        )

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        """The key file's principals (none when it does not exist or is blank)."""
        if not path.is_file():
            return cls({})
        return cls.parse(path.read_text(encoding="utf-8"), path.name)

    def principal_for(self, api_key: str | None) -> Principal | None:
        """The key's principal; None for no key or an unknown one (never a default principal:
        what a service does without keys is decided by `access.KeyResolver`)."""
        if not api_key:
            return None
        digest = hash_key(api_key)
        for known, principal in self._by_hash.items():
            if hmac.compare_digest(known, digest):
                return principal
        return None


def api_key_from(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request presents: `Authorization: Bearer <key>`, else `X-API-Key`."""
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    return x_api_key


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()
