"""Dense vectors: which model made a vector set (shared by the pipeline and the query service).

Vectors of different models live in different spaces: a set is recorded with its provider,
model and dimension, and a query is embedded by the same model before the sets are compared.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from corpus_pipeline.contracts.base import FrozenModel

EMBEDDINGS_FILE = "embeddings.parquet"  # in a document's directory: chunk_id, vector


class EmbeddingSpec(FrozenModel):
    provider: Literal["local", "endpoint"]
    model: str = Field(min_length=1)
    dimension: int = Field(gt=0)

    @property
    def key(self) -> str:
        """One string per vector space (the published table's name carries it)."""
        return f"{self.provider}:{self.model}:{self.dimension}"
