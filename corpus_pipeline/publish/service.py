"""Publishing from settings: which namespaces, which documents (the registry decides)."""

from __future__ import annotations

from corpus_pipeline.publish.publisher import PublishReport, publish_items_for, publish_namespace
from corpus_pipeline.settings import CorpusSettings
from corpus_pipeline.storage import ObjectStore, SourceRegistry


def known_namespaces(settings: CorpusSettings) -> list[str]:
    """Namespaces with registered documents or an existing published revision."""
    registry = SourceRegistry(ObjectStore(settings.object_store))
    names = {r.namespace for r in registry.records()}
    if settings.published_dir.is_dir():
        names |= {
            p.name for p in settings.published_dir.iterdir() if (p / "CURRENT.json").is_file()
        }
    return sorted(names)


def publish(settings: CorpusSettings, namespaces: list[str] | None = None) -> list[PublishReport]:
    """One new revision per namespace whose documents changed (none when nothing changed)."""
    registry = SourceRegistry(ObjectStore(settings.object_store))
    records = registry.records()
    reports = []
    for namespace in namespaces or known_namespaces(settings):
        items = publish_items_for(settings.artifacts_dir, records, namespace)
        reports.append(publish_namespace(settings.published_dir, namespace, items))
    return reports
