"""API keys → principals and the namespaces each may read.

Keys live in a JSON file (`{"keys": [{"key_sha256": "...", "principal": "...",
"namespaces": ["default"], "write_namespaces": ["default"]}]}`; `"key"` in clear is accepted
too, `"*"` means every namespace). `write_namespaces` (default none: read-only) is what the
pipeline's upload API lets the key change.
Only hashes are compared and kept in memory. With no key configured the service serves a
single local principal and must bind to loopback only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

ANONYMOUS = "local"


@dataclass(frozen=True)
class Principal:
    name: str
    namespaces: frozenset[str]
    writes: frozenset[str] = frozenset()

    def may_read(self, namespace: str) -> bool:
        return "*" in self.namespaces or namespace in self.namespaces

    def may_write(self, namespace: str) -> bool:
        return self.may_read(namespace) and ("*" in self.writes or namespace in self.writes)


class KeyRing:
    def __init__(self, entries: dict[str, Principal]) -> None:
        self._by_hash = entries

    @property
    def enabled(self) -> bool:
        return bool(self._by_hash)

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        if not path.is_file():
            return cls({})
        data = json.loads(path.read_text(encoding="utf-8"))
        entries: dict[str, Principal] = {}
        for item in data.get("keys", []):
            digest = item.get("key_sha256") or hash_key(item["key"])
            entries[digest] = Principal(
                item["principal"],
                frozenset(item.get("namespaces", [])),
                frozenset(item.get("write_namespaces", [])),
            )
        return cls(entries)

    def principal_for(self, api_key: str | None) -> Principal | None:
        if not self.enabled:
            return Principal(ANONYMOUS, frozenset({"*"}), frozenset({"*"}))
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
    payload = {
        "keys": [
            {"key_sha256": hash_key(key), "principal": principal, "namespaces": list(namespaces)}
        ]
    }
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return key
