"""Publishing from settings: which namespaces, which documents (the registry decides)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.embeddings.vectors import embedder_for, vectors_path
from corpus_pipeline.publish.mirror import push
from corpus_pipeline.publish.publisher import PublishReport, publish_items_for, publish_namespace
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry


def known_namespaces(settings: CorpusSettings) -> list[str]:
    """Namespaces with registered documents or an existing published revision."""
    registry = SourceRegistry(ObjectStore(settings.object_store))
    names = {r.namespace for r in registry.records()}
    if settings.published_dir.is_dir():
        names |= {
            p.name for p in settings.published_dir.iterdir() if (p / "CURRENT.json").is_file()
        }
    return sorted(names)


def vector_files(settings: CorpusSettings) -> Callable[[str], Path | None] | None:
    """Document id → its vector file of the configured space, when the dense channel is on
    (documents not embedded yet are published without vectors and gain them later)."""
    embedder = embedder_for(settings)
    if embedder is None:
        return None
    spec = embedder.spec

    def find(document_id: str) -> Path | None:
        path = vectors_path(settings, document_id, spec)
        return path if path.is_file() else None

    return find


def publish(settings: CorpusSettings, namespaces: list[str] | None = None) -> list[PublishReport]:
    """One new revision per namespace whose documents changed (none when nothing changed).

    With a remote object store (S3) each namespace's current revision is then mirrored into it
    for the query replicas, also when nothing changed but an earlier push was cut short.
    """
    store = ObjectStore(settings.object_store)
    records = SourceRegistry(store).records()
    vectors_for = vector_files(settings)
    reports = []
    for namespace in namespaces or known_namespaces(settings):
        items = publish_items_for(settings.artifacts_dir, records, namespace, vectors_for)
        report = publish_namespace(settings.published_dir, namespace, items)
        if not store.is_local:
            pushed = push(store, settings.published_dir, namespace)
            report.mirrored_files = pushed.uploaded if pushed else 0
        reports.append(report)
    return reports
