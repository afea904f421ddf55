"""`corpus doctor`: one line per supporting part of the current configuration, before anyone
debugs a higher layer. Each check says what it found and, when something is missing, what that
disables; required parts (Dagster storage, the object store) fail the command. Lines never
carry secrets: endpoints are shown by scheme and host only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from corpus_pipeline.common.settings import CorpusSettings

_TIMEOUT = 5.0


@dataclass(frozen=True)
class Check:
    part: str
    ok: bool
    detail: str
    required: bool = False


def host_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, without user, password, path or query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}" if parts.scheme else host


def run_checks(settings: CorpusSettings, query_url: str, ingest_url: str) -> Iterator[Check]:
    checks: list[tuple[str, bool, Callable[[], Check]]] = [
        ("dagster storage", True, lambda: dagster_storage(settings)),
        ("object store", True, lambda: object_store(settings)),
        ("published revision", False, lambda: published_revisions(settings)),
        ("revision mirror", False, lambda: revision_mirror(settings)),
        ("query service", False, lambda: api("query service", query_url)),
        ("upload API", False, lambda: api("upload API", ingest_url)),
        ("tesseract", False, tesseract),
        ("libreoffice", False, lambda: libreoffice(settings)),
        *[
            (f"model: {role}", False, lambda role=role: model_endpoint(settings, role))
            for role in _ROLES
        ],
        ("dense channel", False, lambda: dense_channel(settings)),
    ]
    for part, required, check in checks:
        try:
            yield check()
        except Exception as exc:  # a check that breaks is a finding, not a crash
            yield Check(part, False, f"unavailable ({type(exc).__name__})", required)


def dagster_storage(settings: CorpusSettings) -> Check:
    from corpus_pipeline.orchestration.runs import dagster_instance

    instance = dagster_instance(settings)
    runs = instance.get_runs_count()
    kind = type(instance.run_storage).__name__.replace("RunStorage", "") or "unknown"
    return Check("dagster storage", True, f"{kind} run storage, {runs} runs", required=True)


def object_store(settings: CorpusSettings) -> Check:
    from corpus_pipeline.storage.store import ObjectStore

    store = ObjectStore(settings.object_store)
    key = f"doctor/probe-{uuid.uuid4().hex}"
    store.put_bytes(key, b"probe")
    ok = store.get_bytes(key) == b"probe"
    store.delete(key)
    url = settings.object_store
    where = "local folder" if url.startswith("file://") or "://" not in url else host_of(url)
    detail = f"{where}: written, read back and removed" if ok else f"{where}: read back differs"
    return Check("object store", ok, detail, required=True)


def published_revisions(settings: CorpusSettings) -> Check:
    from corpus_pipeline.publish.publisher import read_pointer
    from query_service.snapshot.revision import open_revision

    root = settings.published_dir
    namespaces = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    found = []
    for ns in namespaces:
        if read_pointer(root / ns) is None:
            continue
        revision = open_revision(root, ns)
        found.append(f"{ns} r{revision.number}")
    if not found:
        return Check("published revision", False, "none yet: `corpus ingest` publishes one")
    return Check("published revision", True, "loadable: " + ", ".join(found))


def revision_mirror(settings: CorpusSettings) -> Check:
    """Whether the store's copy of each namespace (what query replicas pull) is current."""
    from corpus_pipeline.publish.publisher import read_pointer
    from corpus_pipeline.storage.mirror import REMOTE_ROOT, remote_pointer
    from corpus_pipeline.storage.store import ObjectStore

    store = ObjectStore(settings.object_store)
    if store.is_local:
        return Check("revision mirror", True, "not used: query services read the local folder")
    root = settings.published_dir
    local = (
        {p.name for p in root.iterdir() if (p / "CURRENT.json").is_file()}
        if root.is_dir()
        else set()
    )
    states, current = [], True
    for ns in sorted(local | set(store.children(REMOTE_ROOT))):
        here, there = read_pointer(root / ns), remote_pointer(store, ns)
        if here is not None and (there is None or there.revision != here.revision):
            current = False
            states.append(
                f"{ns} r{here.revision} here, {f'r{there.revision}' if there else 'none'} in the store"
            )
        else:
            states.append(f"{ns} r{there.revision if there else '?'} in the store")
    if not states:
        return Check("revision mirror", False, "no revision in the store yet")
    return Check("revision mirror", current, "; ".join(states))


def api(name: str, url: str) -> Check:
    try:
        response = httpx.get(url.rstrip("/") + "/readyz", timeout=_TIMEOUT)
    except httpx.HTTPError as exc:
        return Check(name, False, f"{host_of(url)} not answering ({type(exc).__name__})")
    ok = response.status_code == 200
    return Check(name, ok, f"{host_of(url)} /readyz {response.status_code}")


def tesseract() -> Check:
    from corpus_pipeline.parsing.pdf.ocr import tesseract_version

    version = tesseract_version()
    if version is None:
        return Check("tesseract", False, "missing: scanned pages and images get no text (OCR off)")
    return Check("tesseract", True, f"{version}: OCR of scans and images on")


def libreoffice(settings: CorpusSettings) -> Check:
    """The LibreOffice the door and the legacy parser use (`parsing.legacy`, with
    CORPUS_LIBREOFFICE_PATH), and what its absence disables."""
    from corpus_pipeline.parsing.legacy import (
        INSTALL_HINT,
        libreoffice_binary,
        libreoffice_version,
    )

    binary = libreoffice_binary(settings)
    if binary is None:
        return Check(
            "libreoffice",
            False,
            f"missing: legacy .doc, .ppt and the .xls files xlrd cannot read are refused at the "
            f"door ({INSTALL_HINT})",
        )
    version = libreoffice_version(binary, settings.work_dir / "libreoffice")
    return Check(
        "libreoffice",
        True,
        f"LibreOffice {version or '(version unknown)'}: legacy .doc and .ppt files (and .xls files "
        "xlrd cannot read) are converted",
    )


_ROLES = ("summary", "hierarchy", "image_description", "ocr", "classification")


def model_endpoint(settings: CorpusSettings, role: str) -> Check:
    config = getattr(settings, role)
    if not config.model:
        return Check(f"model: {role}", True, "not configured (offline default in use)")
    base = config.base_url or settings.llm_base_url
    key = (config.api_key.get_secret_value() if config.api_key else "") or (
        settings.llm_api_key.get_secret_value()
    )
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = httpx.get(base.rstrip("/") + "/models", headers=headers, timeout=_TIMEOUT)
    except httpx.HTTPError as exc:
        return Check(
            f"model: {role}", False, f"{host_of(base)} not reachable ({type(exc).__name__})"
        )
    ok = response.status_code < 400
    return Check(
        f"model: {role}", ok, f"{config.model} at {host_of(base)}: HTTP {response.status_code}"
    )


def dense_channel(settings: CorpusSettings) -> Check:
    """The vectors' model: off, the local model (loaded and run once), or the endpoint."""
    part = "dense channel"
    if settings.dense == "off":
        return Check(part, True, "off (CORPUS_DENSE; lexical channels only)")
    if settings.dense == "endpoint":
        check = model_endpoint(settings, "embeddings")
        return Check(part, check.ok, f"endpoint: {check.detail}")
    from corpus_pipeline.embeddings.vectors import EmbeddingError, LocalMiniLM

    model = LocalMiniLM()
    try:
        model.embed(["corpus doctor"])
    except EmbeddingError as exc:
        return Check(part, False, f"local model unusable: {exc}")
    return Check(part, True, f"local {model.spec.model} ({model.spec.dimension} dimensions)")
