"""API keys: the key file both services read, and the principal a key stands for.

The query service (reads) and the pipeline's upload API (writes) share one key file
(`CORPUS_KEYS_FILE`): `{"keys": [{"key_sha256": "...", "principal": "...", "namespaces":
["default"], "write_namespaces": ["default"]}]}`; `"key"` in clear is accepted instead of its
hash, `"*"` means every namespace, and `write_namespaces` (default none: read-only) is what the
upload API lets the key change. Only hashes are compared and kept in memory. With no key
configured a service serves a single local principal and must bind to loopback only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

ANONYMOUS = "local"


class KeyEntry(BaseModel):
    """One key of the key file: its hash (or the key in clear) and what it may do."""

    model_config = ConfigDict(extra="forbid")

    key: str | None = Field(default=None, min_length=1, repr=False)
    key_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    principal: str = Field(min_length=1)
    namespaces: list[str] = Field(default_factory=list)
    write_namespaces: list[str] = Field(default_factory=list)

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


class Principal(BaseModel):
    """Who a request is, and the namespaces it may read and change."""

    model_config = ConfigDict(frozen=True)

    name: str
    namespaces: frozenset[str]
    writes: frozenset[str] = frozenset()

    def may_read(self, namespace: str) -> bool:
        return "*" in self.namespaces or namespace in self.namespaces

    def may_write(self, namespace: str) -> bool:
        return self.may_read(namespace) and ("*" in self.writes or namespace in self.writes)


class KeyRing:
    """The principals of a key file, by key hash."""

    def __init__(self, entries: dict[str, Principal]) -> None:
        self._by_hash = entries

    @property
    def enabled(self) -> bool:
        return bool(self._by_hash)

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        """The key file's principals (none when it does not exist); `KeyFileError` names the
        file and the first problem when it is not valid JSON or not a key file."""
        if not path.is_file():
            return cls({})
        try:
            parsed = KeyFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as exc:
            message = f"key file {path.name}: not JSON ({exc.msg}, line {exc.lineno})"
            raise KeyFileError(message) from None
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "file"
            raise KeyFileError(f"key file {path.name}: {field}: {error['msg']}") from None
        return cls(
            {
                entry.digest: Principal(
                    name=entry.principal,
                    namespaces=frozenset(entry.namespaces),
                    writes=frozenset(entry.write_namespaces),
                )
                for entry in parsed.keys
            }
        )

    def principal_for(self, api_key: str | None) -> Principal | None:
        if not self.enabled:
            return Principal(name=ANONYMOUS, namespaces=frozenset({"*"}), writes=frozenset({"*"}))
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


def create_local_key(
    path: Path, principal: str = "local-dev", namespaces: tuple[str, ...] = ("*",)
) -> str | None:
    """Create a key file with one fresh key (returned once, stored only as a hash);
    None when the file already exists."""
    if path.exists():
        return None
    key = "ck_" + secrets.token_urlsafe(24)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = KeyEntry(key_sha256=hash_key(key), principal=principal, namespaces=list(namespaces))
    payload = KeyFile(keys=[entry]).model_dump(mode="json", exclude_none=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return key
