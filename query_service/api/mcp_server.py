"""MCP tools over the same QueryService: search, read, outline, list_documents.

Served as streamable HTTP under /mcp of the API (same API keys), and over stdio by
`corpus mcp`. The tool descriptions tell an agent how the tools work together.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from corpus_pipeline.access.keys import AccessDenied
from corpus_pipeline.contracts.agentic import AgenticRequest
from corpus_pipeline.contracts.api import ReadRef, ReadRequest
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest, SearchResponse
from query_service.api.deps import key_principal
from query_service.retrieval.agentic import BudgetTooSmall
from query_service.retrieval.evidence import classic_evidence
from query_service.service import QueryService
from query_service.snapshot.revision import NamespaceNotFound
from query_service.snapshot.store import DocumentNotFound

# What a caller is told in words (a refusal is logged once, where it is decided); anything
# else is a fault, and the SDK logs its traceback.
_TOLD = (AccessDenied, ValidationError, NamespaceNotFound, DocumentNotFound, BudgetTooSmall)

INSTRUCTIONS = """\
This server retrieves cited evidence from a document corpus; it never writes answers.
`search` and `agentic_search` answer with `evidence_text`: passages, each under a `[n]` line
naming its file, pages and section; `results[n-1]` cites passage n (document_id, chunk_id,
source_file_name, section_path, pages). `agentic_search` spends a token budget on evidence
(split questions get evidence for each part); a passage marked cut continues in `read`.
`outline` a document to see its sections with summaries; `read` several refs at once (chunk ids,
or a document_id with a section_id) for full text with tables as HTML; `list_documents` shows a
namespace. A citation's `resource` downloads its table or image over HTTP with the same API
key. Cite document_id, chunk_id, source_file_name and section_path of what you use."""


def transport_security(hosts: list[str], origins: list[str]) -> TransportSecuritySettings:
    """DNS rebinding protection for the host names agents reach the service by: a name without
    a port matches any port; browser origins on those names pass, and the `origins` named
    besides; `*` turns the check off."""
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = [n for host in hosts for n in ([host] if _has_port(host) else [host, f"{host}:*"])]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=names,
        allowed_origins=[
            *(f"{scheme}://{n}" for n in names for scheme in ("http", "https")),
            *origins,
        ],
    )


def _has_port(host: str) -> bool:
    head, _, port = host.rpartition(":")
    return bool(head) and port.isdigit() and not host.endswith("]")


def build_mcp(service: QueryService, stdio: bool = False, api_key: str | None = None) -> MCPServer:
    """The tools; over stdio `api_key` is resolved on every call (a revoked key stops
    working), over HTTP the /mcp endpoint resolved the request's key already."""
    mcp = MCPServer(name="corpus", instructions=INSTRUCTIONS)
    caller = _Caller(service, stdio, api_key)
    _search_tools(mcp, caller)
    _read_tools(mcp, caller)
    return mcp


class _Caller:
    """A tool call's principal, and its work run for it in the service's pool."""

    def __init__(self, service: QueryService, stdio: bool, api_key: str | None) -> None:
        self.service = service
        self.stdio = stdio
        self.api_key = api_key

    def principal_of(self, ctx: Context) -> Principal:
        if self.stdio:
            return key_principal(self.service.keys, self.api_key, "corpus mcp tool call")
        request = ctx.request_context.request
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        principal = state.get("principal")
        if not isinstance(principal, Principal):
            raise AccessDenied(401, "missing or invalid API key")
        return principal

    async def run(
        self, ctx: Context, work: Callable[[Principal], Any]
    ) -> tuple[Any, dict[str, Any] | None]:
        """`work` for the caller's principal in the service's pool: (its result, None), or
        (None, the error result) for what the caller is told in words. It comes back as an
        error result, not raised: the SDK logs a traceback for any exception a tool raises,
        and a refusal is already logged in one line."""
        try:
            principal = self.principal_of(ctx)
            done = await asyncio.get_running_loop().run_in_executor(
                self.service.executor, work, principal
            )
        except _TOLD as exc:
            return None, _error(exc)
        return done, None

    async def answer(
        self, ctx: Context, work: Callable[[Principal], bytes | BaseModel]
    ) -> dict[str, Any]:
        """`work`'s result as the tool's result (or the error result)."""
        result, error = await self.run(ctx, work)
        if error is not None:
            return error
        if isinstance(result, bytes):
            loaded: dict[str, Any] = json.loads(result)
            return loaded
        dumped: dict[str, Any] = result.model_dump(mode="json")
        return dumped

    async def search(
        self, ctx: Context, request: Callable[[], SearchRequest | AgenticRequest]
    ) -> dict[str, Any]:
        """A search tool's answer in the lean evidence shape (each chunk's text once): `request`
        built from the tool's arguments in the pool (an invalid one is told like any refusal),
        searched for the caller's principal. The text the client reads is the compact JSON the
        HTTP API answers (an agentic one within its budget); the same object is the tool's
        structured content."""

        def work(principal: Principal) -> bytes:
            asked = request()
            body = self.service.search(principal, asked)
            if isinstance(asked, AgenticRequest):
                return body
            lean = classic_evidence(SearchResponse.model_validate_json(body))
            return lean.model_dump_json().encode()

        body, error = await self.run(ctx, work)
        if error is not None:
            return error
        text = body.decode()
        result = CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=json.loads(text)
        )
        return cast(dict[str, Any], result)


def _search_tools(mcp: MCPServer, caller: _Caller) -> None:
    @mcp.tool(
        description=(
            "Search the corpus (classic mode: path, content and exact-term channels fused). Returns "
            "`evidence_text` (the top_k passages, best first, each under a `[n]` line) and "
            "`results` (citation n for passage n). Use `read` on chunk ids or sections for more."
        )
    )
    async def search(
        ctx: Context,
        query: str,
        namespace: str = "default",
        top_k: int = 10,
        chunk_types: list[str] | None = None,
        document_ids: list[str] | None = None,
        exclude_document_ids: list[str] | None = None,
    ) -> dict[str, Any]:
        return await caller.search(
            ctx,
            lambda: SearchRequest.model_validate(
                {
                    "query": query,
                    "namespace": namespace,
                    "top_k": top_k,
                    **({"chunk_types": chunk_types} if chunk_types else {}),
                    "filters": SearchFilters(document_ids=document_ids)
                    if document_ids
                    else SearchFilters(),
                    "exclude_document_ids": exclude_document_ids or [],
                }
            ),
        )

    @mcp.tool(
        description=(
            "Agentic retrieval: plans sub-queries (comparisons, multi-part questions), discovers, "
            "reads on around the hits and returns `evidence_text` (passages under `[n]` lines, the "
            "best first) with `results` (citation n for passage n), never exceeding "
            "`token_budget` tokens (the whole response counts). It returns evidence, not an "
            "answer: decide yourself whether it suffices."
        )
    )
    async def agentic_search(
        ctx: Context,
        query: str,
        namespace: str = "default",
        token_budget: int = 8000,
        top_k: int = 10,
    ) -> dict[str, Any]:
        return await caller.search(
            ctx,
            lambda: AgenticRequest(
                mode="agentic",
                query=query,
                namespace=namespace,
                token_budget=token_budget,
                top_k=top_k,
            ),
        )


def _read_tools(mcp: MCPServer, caller: _Caller) -> None:
    service = caller.service

    @mcp.tool(
        description=(
            "Read full content for several refs at once. Each ref is {chunk_id} or {document_id, "
            "section_id?} (the section_id of a result or an outline entry: exactly that section; "
            "section_path instead selects every section with that heading path); a section returns "
            "its chunks (and its subsections') in order with tables embedded as HTML. Each ref gets "
            "its own status, so one bad ref does not hide the others."
        )
    )
    async def read(
        ctx: Context, refs: list[dict[str, Any]], namespace: str = "default"
    ) -> dict[str, Any]:
        def work(principal: Principal) -> BaseModel:
            refs_ = [ReadRef.model_validate(r) for r in refs]
            return service.read(principal, ReadRequest(namespace=namespace, refs=refs_))

        return await caller.answer(ctx, work)

    @mcp.tool(
        description=(
            "The section tree of one document: titles, paths and summaries. Use it to decide which "
            "sections to `read` instead of reading a whole document."
        )
    )
    async def outline(ctx: Context, document_id: str, namespace: str = "default") -> dict[str, Any]:
        return await caller.answer(ctx, lambda p: service.outline(p, namespace, document_id))

    @mcp.tool(description="List the documents of a namespace (paginated: offset, limit ≤ 500).")
    async def list_documents(
        ctx: Context, namespace: str = "default", offset: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        limit = min(max(limit, 1), 500)
        return await caller.answer(ctx, lambda p: service.documents(p, namespace, offset, limit))


def _error(exc: Exception) -> dict[str, Any]:
    """The tool's error result, in words. The SDK passes a returned CallToolResult through as
    it is (the tools' declared dict type stays their output schema)."""
    if isinstance(exc, AccessDenied):
        message = exc.detail
    elif isinstance(exc, ValidationError):
        first = exc.errors()[0]
        message = f"{'.'.join(str(p) for p in first['loc']) or 'arguments'}: {first['msg']}"
    else:
        message = str(exc)
    result = CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)
    return cast(dict[str, Any], result)
