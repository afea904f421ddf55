"""The dense channel: the revision's chunk vectors ranked by cosine to the query's vector.

A revision's vectors (the `vectors` table, one space per model) are read once per revision into
one float32 matrix of unique chunks; a query is embedded by the model of that space (the local
ONNX model, or the endpoint of the `embeddings` role) and ranked by exact dot product (vectors
have unit length): exactly up to EXACT_UP_TO vectors, above that over candidates chosen by their
sign bits (binary quantisation with exact rescoring; LanceDB's IVF_PQ was measured at 14–23 ms
per query at 100k here and not taken). What a filter excludes is removed afterwards by the
caller exactly as for the lexical channels.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from corpus_pipeline.contracts.embeddings import EmbeddingSpec
from corpus_pipeline.contracts.published import VECTORS
from corpus_pipeline.embeddings.vectors import Embedder, EndpointEmbedder, LocalMiniLM
from query_service.snapshot.revision import Revision

# Above this many vectors the exact scan is no longer a few milliseconds (memory-bound: 150 MB
# per query at 100k × 384 float32): candidates are chosen first by the Hamming distance of the
# vectors' sign bits (48 bytes a vector), then scored exactly. A twentieth of the set (at least
# CANDIDATES_PER_RESULT per result asked) is rescored: on the real-world set's MiniLM vectors a
# pool of 7 % keeps 92 % of the exact top 100 (benchmarks/dense_latency reports its recall).
EXACT_UP_TO = 50_000
CANDIDATE_SHARE = 0.05
CANDIDATES_PER_RESULT = 20


def sign_codes(matrix: np.ndarray) -> np.ndarray:
    """One bit per dimension (its sign), packed into 64-bit words: (rows, ceil(dim / 64))."""
    bits = np.packbits(matrix > 0, axis=1)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits).view(np.uint64)


@dataclass(frozen=True)
class DenseIndex:
    spec: EmbeddingSpec
    chunk_ids: list[str]
    matrix: np.ndarray  # (chunks, dimension), rows of unit length
    codes: np.ndarray | None = None  # sign codes of the rows, for sets above EXACT_UP_TO
    rows: dict[str, int] = field(default_factory=dict)  # chunk id → row

    @classmethod
    def build(cls, spec: EmbeddingSpec, chunk_ids: list[str], matrix: np.ndarray) -> DenseIndex:
        codes = sign_codes(matrix) if len(chunk_ids) > EXACT_UP_TO else None
        rows = {chunk_id: row for row, chunk_id in enumerate(chunk_ids)}
        return cls(spec, chunk_ids, matrix, codes, rows)

    def similarity(self, query: np.ndarray, chunk_ids: list[str]) -> list[float | None]:
        """Cosine of each chunk to the query vector (None: the chunk has no vector yet)."""
        found = [self.rows.get(chunk_id) for chunk_id in chunk_ids]
        known = [row for row in found if row is not None]
        scores = iter((self.matrix[known] @ query.astype(np.float32)).tolist())
        return [None if row is None else float(next(scores)) for row in found]

    def candidates(self, query: np.ndarray, limit: int) -> np.ndarray | None:
        """Rows whose sign codes are nearest the query's (None: score every row)."""
        if self.codes is None:
            return None
        pool = max(int(CANDIDATE_SHARE * len(self.chunk_ids)), CANDIDATES_PER_RESULT * limit)
        if pool >= len(self.chunk_ids):
            return None
        distance = np.bitwise_count(self.codes ^ sign_codes(query[None, :])).sum(
            axis=1, dtype=np.uint16
        )
        return np.argpartition(distance, pool - 1)[:pool]

    def rank(self, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """The `limit` chunks closest to the query vector (ties by chunk id)."""
        if not self.chunk_ids or limit <= 0:
            return []
        query = query.astype(np.float32)
        rows = self.candidates(query, limit)
        scores = (self.matrix if rows is None else self.matrix[rows]) @ query
        limit = min(limit, len(scores))
        top = np.argpartition(-scores, limit - 1)[:limit]
        found = [(int(i if rows is None else rows[i]), float(scores[i])) for i in top]
        found.sort(key=lambda item: (-item[1], self.chunk_ids[item[0]]))
        return [(self.chunk_ids[i], score) for i, score in found]


def _space(key: str) -> EmbeddingSpec:
    provider, rest = key.split(":", 1)
    model, dimension = rest.rsplit(":", 1)
    return EmbeddingSpec(provider=provider, model=model, dimension=int(dimension))  # type: ignore[arg-type]


def _count(counts: list[dict[str, object]], value: object) -> int:
    return next(int(str(c["counts"])) for c in counts if c["values"] == value)


def dense_index(revision: Revision) -> DenseIndex | None:
    """The revision's vectors (None when it has none). With vectors of several spaces (a model
    change half way through a re-embedding backfill), the space holding most chunks is used."""

    def load() -> DenseIndex | None:
        import pyarrow.compute as pc

        if VECTORS not in revision.pointer.lance_versions:
            return None
        table = revision.table(VECTORS).to_arrow().select(["chunk_id", "space", "vector"])
        if table.num_rows == 0:
            return None
        counts = pc.value_counts(table.column("space")).to_pylist()
        space = max(sorted(c["values"] for c in counts), key=lambda v: _count(counts, v))
        spec = _space(space)
        table = table.filter(pc.equal(table.column("space"), space))
        ids = np.asarray(table.column("chunk_id").to_pylist(), dtype=object)
        vectors = table.column("vector").combine_chunks()
        flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        if len(flat) != len(ids) * spec.dimension:
            return None  # rows of another length than the space's: not a set to compare
        # A chunk held by several documents has one row per document: keep one.
        unique, first = np.unique(ids, return_index=True)
        matrix = flat.reshape(len(ids), spec.dimension)[first]
        return DenseIndex.build(spec, [str(c) for c in unique], np.ascontiguousarray(matrix))

    result: DenseIndex | None = revision.memo("dense_index", load)
    return result


_EMBEDDERS: dict[str, Embedder] = {}
_LOCK = threading.Lock()


def query_embedder(spec: EmbeddingSpec) -> Embedder:
    """The model of a space, built once per process: the local model, or the endpoint of the
    `embeddings` role from the environment (`CORPUS_EMBEDDINGS__*`)."""
    with _LOCK:
        if spec.key not in _EMBEDDERS:
            if spec.provider == "local":
                _EMBEDDERS[spec.key] = LocalMiniLM()
            else:
                from corpus_pipeline.common.settings import load_settings

                settings = load_settings()
                role = settings.role("embeddings").model_copy(update={"model": spec.model})
                _EMBEDDERS[spec.key] = EndpointEmbedder(
                    role, spec.dimension, settings.llm_timeout_seconds
                )
        return _EMBEDDERS[spec.key]


def query_vector(revision: Revision, query: str) -> tuple[DenseIndex, np.ndarray] | None:
    """The revision's vectors and the query embedded in their space (None without vectors)."""
    index = dense_index(revision)
    if index is None or not query.strip():
        return None
    return index, query_embedding(index.spec, query)


@lru_cache(maxsize=2048)
def query_embedding(spec: EmbeddingSpec, query: str) -> np.ndarray:
    """A query's vector in a space, remembered: an agentic request asks the same question in
    several steps (each a classic search that reranks by it), and agents repeat questions."""
    vector: np.ndarray = query_embedder(spec).embed([query])[0]
    vector.setflags(write=False)
    return vector


def dense_ranking(revision: Revision, query: str, limit: int) -> list[tuple[str, float]]:
    """Chunk ids closest to the query, best first (empty when the revision has no vectors)."""
    found = query_vector(revision, query)
    return [] if found is None else found[0].rank(found[1], limit)
