"""Configurable resources: object store root, corpus root and model settings.

Each falls back to the `CORPUS_*` environment (see `.env.example`), so the UI, the CLI and
tests share one source of configuration; explicit resource config wins.
"""

from __future__ import annotations

import dagster as dg
from pydantic import Field

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry


class CorpusRootResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Root of the runtime folders (artifacts, work, published revisions)."""

    home: str = Field(default="", description="CORPUS_HOME override; empty = environment.")


class ObjectStoreResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Where delivered files are stored durably (fsspec URL: file://… or s3://…)."""

    url: str = Field(
        default="", description="CORPUS_OBJECT_STORE_URL override; empty = environment."
    )


class ModelSettingsResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Per-role LLM model names; empty = the offline default for that role."""

    summary_model: str = ""
    hierarchy_model: str = ""
    image_description_model: str = ""
    ocr_model: str = ""
    classification_model: str = ""
    dense: str = Field(
        default="", description="CORPUS_DENSE override (off, local, endpoint); empty = environment."
    )
    embeddings_model: str = ""


def resolve_settings(
    corpus: CorpusRootResource, store: ObjectStoreResource, models: ModelSettingsResource
) -> CorpusSettings:
    """Environment settings with the resources' explicit values applied on top."""
    base = load_settings(**({"home": corpus.home} if corpus.home else {}))
    updates: dict[str, object] = {}
    if store.url:
        updates["object_store_url"] = store.url
    if models.dense:
        if models.dense not in ("off", "local", "endpoint"):
            raise ValueError(f"models.dense: '{models.dense}' is not one of off, local, endpoint")
        updates["dense"] = models.dense
    for role in (
        "summary",
        "hierarchy",
        "image_description",
        "ocr",
        "classification",
        "embeddings",
    ):
        model = getattr(models, f"{role}_model")
        if model:
            updates[role] = getattr(base, role).model_copy(update={"model": model})
    return base.model_copy(update=updates) if updates else base


def registry_for(settings: CorpusSettings) -> SourceRegistry:
    return SourceRegistry(ObjectStore(settings.object_store))


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "corpus": CorpusRootResource(),
            "object_store": ObjectStoreResource(),
            "models": ModelSettingsResource(),
        }
    )
