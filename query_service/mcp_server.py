"""MCP tools over the same QueryService: search, read, outline, list_documents.

Served as streamable HTTP under /mcp of the API (same API keys), and over stdio by
`corpus mcp`. The tool descriptions tell an agent how the tools work together.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from corpus_pipeline.contracts.agentic import AgenticRequest
from corpus_pipeline.contracts.api import ReadRef, ReadRequest
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest
from query_service.service import QueryService

INSTRUCTIONS = """\
This server retrieves cited evidence from a document corpus; it never writes answers.
Typical flow: `search` for passages (each result has document_id, chunk_id, source_file_name and
section_path/section_id to cite); `outline` a promising document to see its sections with summaries;
`read` several refs at once (chunk ids, or a document_id with a section_path) to get full text
with tables as HTML; `list_documents` to see what a namespace holds. A table or image names its
`resource` by document_id and relative ref; its `url` downloads the file over HTTP with the same
API key. Cite document_id, chunk_id, source_file_name and section_path of what you use."""


def build_mcp(service: QueryService, fixed_principal: Principal | None = None) -> MCPServer:
    mcp = MCPServer(name="corpus", instructions=INSTRUCTIONS)

    def principal_of(ctx: Context) -> Principal:
        if fixed_principal is not None:
            return fixed_principal
        request = ctx.request_context.request
        state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
        principal = state.get("principal")
        if principal is None:
            raise PermissionError("missing or invalid API key")
        assert isinstance(principal, Principal)
        return principal

    async def blocking(fn: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(service.executor, functools.partial(fn, *args))

    @mcp.tool(
        description=(
            "Search the corpus (classic mode: path, content and exact-term channels fused). Returns "
            "ranked passages with citations. Use `read` on chunk ids or sections to see more context."
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
        request = SearchRequest.model_validate(
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
        )
        body: bytes = await blocking(service.search, principal_of(ctx), request)
        result: dict[str, Any] = json.loads(body)
        return result

    @mcp.tool(
        description=(
            "Agentic retrieval: plans sub-queries (comparisons, multi-part questions), discovers, "
            "navigates the section tree and returns `evidence_text` grouped by document and section "
            "with citations, never exceeding `token_budget` tokens (the whole response counts). "
            "It returns evidence, not an answer: decide yourself whether it suffices."
        )
    )
    async def agentic_search(
        ctx: Context,
        query: str,
        namespace: str = "default",
        token_budget: int = 8000,
        top_k: int = 10,
    ) -> dict[str, Any]:
        request = AgenticRequest(
            mode="agentic", query=query, namespace=namespace, token_budget=token_budget, top_k=top_k
        )
        body: bytes = await blocking(service.search, principal_of(ctx), request)
        result: dict[str, Any] = json.loads(body)
        return result

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
        request = ReadRequest(namespace=namespace, refs=[ReadRef.model_validate(r) for r in refs])
        response = await blocking(service.read, principal_of(ctx), request)
        dumped: dict[str, Any] = response.model_dump(mode="json")
        return dumped

    @mcp.tool(
        description=(
            "The section tree of one document: titles, paths and summaries. Use it to decide which "
            "sections to `read` instead of reading a whole document."
        )
    )
    async def outline(ctx: Context, document_id: str, namespace: str = "default") -> dict[str, Any]:
        response = await blocking(service.outline, principal_of(ctx), namespace, document_id)
        dumped: dict[str, Any] = response.model_dump(mode="json")
        return dumped

    @mcp.tool(description="List the documents of a namespace (paginated: offset, limit ≤ 500).")
    async def list_documents(
        ctx: Context, namespace: str = "default", offset: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        response = await blocking(
            service.documents, principal_of(ctx), namespace, offset, min(max(limit, 1), 500)
        )
        dumped: dict[str, Any] = response.model_dump(mode="json")
        return dumped

    return mcp
