"""Deterministic identifiers: document ids from (namespace, source name), chunk ids from content."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")
_SLUG = re.compile(r"[^a-z0-9]+")


def normalize_text(text: str) -> str:
    """NFKC, whitespace collapsed, trimmed: what 'the same content' means for chunk ids."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def chunk_id_for(text: str) -> str:
    """`c` + 32 hex digits of SHA-256 over the normalised text (nothing else goes in)."""
    return "c" + hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()[:32]


def slugify(value: str, max_length: int = 48) -> str:
    ascii_value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG.sub("-", ascii_value.lower()).strip("-")
    return slug[:max_length].strip("-") or "doc"


def document_id_for(namespace: str, source_file_name: str) -> str:
    """Readable slug of the name plus a hash of (namespace, name): stable across re-ingests,
    distinct for two files of the same content under different names, and safe as a Dagster
    partition key (no '/' or ',')."""
    digest = hashlib.sha256(f"{namespace}\0{source_file_name}".encode()).hexdigest()[:12]
    return f"{slugify(source_file_name)}-{digest}"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
