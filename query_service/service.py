"""The query service's core, independent of transport: HTTP routes and MCP tools both call it.

It resolves a principal's access to a namespace (a namespace it may not read is reported
exactly like a missing one), serves from the current snapshot, caches complete answers and
records access statistics off the request path. Methods are blocking: callers run them in the
service's bounded worker pool.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from corpus_pipeline.access.keys import KeyResolver, may_read
from corpus_pipeline.contracts.agentic import AgenticRequest
from corpus_pipeline.contracts.api import (
    CacheStats,
    DocumentDetail,
    DocumentList,
    FilterValues,
    NamespaceCache,
    NamespaceInfo,
    Namespaces,
    Neighbors,
    Outline,
    ReadRequest,
    ReadResponse,
)
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.contracts.search import SearchRequest, SearchResponse
from query_service.config import ServiceSettings
from query_service.retrieval.agentic import agentic_search
from query_service.retrieval.classic import classic_search
from query_service.retrieval.planner import make_navigator, make_planner
from query_service.snapshot import store
from query_service.snapshot.cache import AnswerCache, CacheCounts, CacheKey
from query_service.snapshot.records import RunRecorder
from query_service.snapshot.revision import NamespaceNotFound, Revision
from query_service.snapshot.snapshots import SnapshotManager, remote_revisions
from query_service.snapshot.stats import AccessStats


class QueryService:
    def __init__(self, settings: ServiceSettings, snapshots: SnapshotManager | None = None) -> None:
        self.settings = settings
        self.keys = KeyResolver(
            settings.keys_file, open_access=settings.open_access, home=settings.home
        )
        self.snapshots = snapshots or SnapshotManager(
            settings.published_dir,
            settings.reload_seconds,
            remote=remote_revisions(
                settings.object_store_url, settings.published_dir, settings.mirror_poll_seconds
            ),
        )
        self.cache = AnswerCache(settings.cache_max_entries, settings.cache_max_bytes)
        self.stats = AccessStats(settings.published_dir, settings.stats_flush_seconds)
        self.executor = ThreadPoolExecutor(
            max_workers=settings.service_workers, thread_name_prefix="query"
        )
        self._planner, self._model_tokens = make_planner(settings)
        self._navigator = make_navigator(settings)

    def start(self) -> None:
        self.snapshots.start()
        for namespace in self.snapshots.all():
            self.stats.load(namespace)
        self.stats.start()

    def stop(self) -> None:
        self.snapshots.stop()
        self.stats.stop()
        self.executor.shutdown(wait=True, cancel_futures=True)

    def revision(self, principal: Principal, namespace: str) -> Revision:
        """The served revision, or NamespaceNotFound — also when the principal may not read it."""
        if not may_read(principal, namespace):  # logged as a denial
            raise NamespaceNotFound(namespace)
        return self.snapshots.current(namespace)

    def search(self, principal: Principal, request: SearchRequest | AgenticRequest) -> bytes:
        """The JSON answer (cached by principal, namespace, revision and the whole request)."""
        return self.search_with_revision(principal, request)[0]

    def search_with_revision(
        self, principal: Principal, request: SearchRequest | AgenticRequest
    ) -> tuple[bytes, int]:
        """The answer and the revision it was computed on (one snapshot for both)."""
        revision = self.revision(principal, request.namespace)
        key = CacheKey(
            principal.name,
            request.namespace,
            revision.number,
            request.mode,
            request.model_dump_json(),
        )
        cached = self.cache.get(key)
        if cached is not None:
            return cached, revision.number
        hits: list[tuple[str, str]]
        if isinstance(request, AgenticRequest):
            recorder = RunRecorder(self.settings.home / "runs", request.namespace)
            answer = agentic_search(
                revision, request, self._planner, recorder, self._model_tokens, self._navigator
            )
            recorder.write()
            hits = [(r.chunk_id, r.document_id) for r in answer.results]
            body = answer.model_dump_json().encode()
        else:
            response = self._apply_prior(classic_search(revision, request))
            hits = [(r.chunk_id, r.document_id) for r in response.results]
            body = response.model_dump_json().encode()
        self.cache.put(key, body)
        self.stats.record(request.namespace, hits)
        return body, revision.number

    def _apply_prior(self, response: SearchResponse) -> SearchResponse:
        weight = self.settings.access_prior_weight
        if weight <= 0 or response.small_corpus:
            return response
        boosted = [
            r.model_copy(
                update={
                    "score": round(
                        r.score + weight * self.stats.prior(response.namespace, r.chunk_id), 8
                    )
                }
            )
            for r in response.results
        ]
        boosted.sort(key=lambda r: -r.score)
        return response.model_copy(update={"results": boosted})

    def read(self, principal: Principal, request: ReadRequest) -> ReadResponse:
        revision = self.revision(principal, request.namespace)
        response = store.read(revision, request)
        self.stats.record(
            request.namespace,
            [(c.chunk_id, c.document_id) for item in response.items for c in item.chunks],
        )
        return response

    def documents(
        self, principal: Principal, namespace: str, offset: int, limit: int
    ) -> DocumentList:
        return store.list_documents(self.revision(principal, namespace), offset, limit)

    def document(self, principal: Principal, namespace: str, document_id: str) -> DocumentDetail:
        return store.document_detail(self.revision(principal, namespace), document_id)

    def outline(self, principal: Principal, namespace: str, document_id: str) -> Outline:
        return store.outline(self.revision(principal, namespace), document_id)

    def neighbors(self, principal: Principal, namespace: str, document_id: str) -> Neighbors:
        return store.neighbors(self.revision(principal, namespace), document_id)

    def resource(
        self, principal: Principal, namespace: str, document_id: str, ref: str
    ) -> store.ResourceFile:
        return store.resource_file(self.revision(principal, namespace), document_id, ref)

    def filter_values(self, principal: Principal, namespace: str) -> FilterValues:
        return store.filter_values(self.revision(principal, namespace))

    def cache_stats(self, principal: Principal) -> CacheStats:
        """This process's answer cache, counted only for the namespaces the principal reads."""
        counts = self.cache.counts()
        names = sorted(n for n in set(counts) | set(self.snapshots.all()) if principal.may_read(n))
        return CacheStats(
            namespaces=[
                NamespaceCache(namespace=n, **asdict(counts.get(n, CacheCounts()))) for n in names
            ],
            max_entries=self.cache.max_entries,
            max_bytes=self.cache.max_bytes,
        )

    def namespaces(self, principal: Principal) -> Namespaces:
        return Namespaces(
            namespaces=[
                NamespaceInfo(
                    namespace=name,
                    revision=rev.number,
                    documents=rev.pointer.documents,
                    chunks=rev.pointer.chunks,
                    published_at=rev.pointer.created_at,
                )
                for name, rev in sorted(self.snapshots.all().items())
                if principal.may_read(name)
            ]
        )
