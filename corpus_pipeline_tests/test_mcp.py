"""The MCP tools through real transports: streamable HTTP under /mcp/ and stdio (`corpus mcp`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from datetime import date
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import MCPError
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.enrich.tokens import count_tokens
from query_service.config import ServiceSettings

from .http_service import child_pids, running_service, served_by_cli, write_api_keys
from .support import build_documents, publish_namespaces

pytestmark = pytest.mark.slow

KEYS = {"alice-key": ("alice", ["default", "team"]), "bob-key": ("bob", ["team"])}
TOOLS = {"search", "agentic_search", "read", "outline", "list_documents"}
MISSING_CHUNK = "c" + "0" * 32


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusSettings:
    home = tmp_path_factory.mktemp("mcp")
    settings = load_settings(home=home)
    build_documents(
        settings,
        {
            "ducks.md": "# Ducks\n\n## Diving\n\nTufted ducks dive for mussels.\n\n"
            "## Dabbling\n\nMallards dabble.\n"
        },
        organizational_unit="Field",
        document_date=date(2024, 3, 1),
    )
    build_documents(settings, {"swans.md": "# Swans\n\nMute swans nest by the lake.\n"})
    build_documents(settings, {"geese.md": "# Geese\n\nGeese graze on grass.\n"}, namespace="team")
    publish_namespaces(settings)
    write_api_keys(home, KEYS)
    return settings


@pytest.fixture(scope="module")
def service(corpus: CorpusSettings) -> Iterator[str]:
    with running_service(ServiceSettings(home=corpus.home, reload_seconds=0.2)) as url:
        yield url


def run_with_client(
    url: str,
    key: str,
    body: Callable[[Client], Awaitable[None]],
    bearer: bool = False,
    keep_alive: bool = True,
) -> None:
    """Connect the MCP client to `<url>/mcp/` with an API key and run `body` on it (without
    keep-alive every request opens a new connection, which any server process may accept)."""
    headers = {"Authorization": f"Bearer {key}"} if bearer else {"X-API-Key": key}
    limits = httpx2.Limits() if keep_alive else httpx2.Limits(max_keepalive_connections=0)

    async def main() -> None:
        async with httpx2.AsyncClient(headers=headers, timeout=30, limits=limits) as http:
            transport = streamable_http_client(f"{url}/mcp/", http_client=http)
            async with Client(transport) as client:
                await body(client)

    anyio.run(main)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def test_the_four_tools_are_listed_with_descriptions(service: str) -> None:
    async def body(client: Client) -> None:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == TOOLS and len(tools) == len(TOOLS)
        for tool in tools:
            assert tool.description and len(tool.description) > 20, tool.name
        assert client.instructions and "cite" in client.instructions.lower()

    run_with_client(service, "alice-key", body, bearer=True)


def test_search_outline_read_and_list_documents_over_streamable_http(service: str) -> None:
    async def body(client: Client) -> None:
        found = structured(
            await client.call_tool("search", {"query": "tufted ducks dive", "top_k": 3})
        )
        top = found["results"][0]
        start, end = top["span"]
        assert (
            found["evidence_text"][start:end] == "Ducks\n\nDiving\n\nTufted ducks dive for mussels."
        )
        assert "content" not in top and found["answer_text"] == ""
        assert top["source_file_name"] == "ducks.md"
        assert top["section_path"] == ["Ducks", "Diving"]
        assert top["chunk_id"] and top["document_id"]
        assert found["namespace"] == "default" and found["revision"] >= 1

        outline = structured(await client.call_tool("outline", {"document_id": top["document_id"]}))
        assert outline["source_file_name"] == "ducks.md"
        assert [s["title"] for s in outline["sections"][0]["children"]] == ["Diving", "Dabbling"]

        read = structured(
            await client.call_tool(
                "read",
                {
                    "refs": [
                        {"chunk_id": top["chunk_id"]},
                        {"chunk_id": MISSING_CHUNK},
                        {"document_id": top["document_id"], "section_path": ["Ducks", "Dabbling"]},
                    ]
                },
            )
        )
        assert [i["status"] for i in read["items"]] == ["ok", "not_found", "ok"]
        assert (
            read["items"][0]["chunks"][0]["content"]
            == "Ducks\n\nDiving\n\nTufted ducks dive for mussels."
        )
        assert read["items"][2]["chunks"][0]["content"] == "Dabbling\n\nMallards dabble."

        listed = structured(await client.call_tool("list_documents", {"limit": 1}))
        assert listed["total"] == 2 and len(listed["items"]) == 1
        everything = structured(await client.call_tool("list_documents", {}))
        assert {d["source_file_name"] for d in everything["items"]} == {"ducks.md", "swans.md"}
        team = structured(await client.call_tool("list_documents", {"namespace": "team"}))
        assert [d["source_file_name"] for d in team["items"]] == ["geese.md"]

    run_with_client(service, "alice-key", body)


def tool_text(result: CallToolResult) -> str:
    assert not result.is_error, result.content
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


def test_search_tools_answer_in_the_lean_shape_each_text_once(service: str) -> None:
    """Both search tools answer as `POST /v1/search` agentic does: the passages' text once, in
    `evidence_text`, citations without content; the text the client reads is compact JSON."""

    async def body(client: Client) -> None:
        for tool, arguments in (
            ("search", {"query": "tufted ducks dive", "top_k": 3}),
            ("agentic_search", {"query": "tufted ducks dive", "token_budget": 2000}),
        ):
            result = await client.call_tool(tool, arguments)
            text = tool_text(result)
            assert json.loads(text) == structured(result)
            assert "\n  " not in text  # not indented
            found = structured(result)
            assert found["results"], tool
            passage = found["evidence_text"][slice(*found["results"][0]["span"])]
            assert "Tufted ducks dive for mussels." in passage
            assert text.count("Tufted ducks dive for mussels.") == 1
            assert all("content" not in r and "occurrences" not in r for r in found["results"])

    run_with_client(service, "alice-key", body)


@pytest.mark.parametrize("budget", [512, 1000, 2000, 4000])
def test_an_agentic_tool_text_stays_within_its_budget(service: str, budget: int) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool(
            "agentic_search",
            {"query": "Which ducks dive, and what do swans do?", "token_budget": budget},
        )
        text = tool_text(result)
        assert count_tokens(text) <= budget
        assert structured(result)["results"], "never an empty answer when something matches"

    run_with_client(service, "alice-key", body)


def test_a_forbidden_namespace_answers_exactly_like_a_missing_one(service: str) -> None:
    async def body(client: Client) -> None:
        forbidden = await client.call_tool("search", {"query": "ducks", "namespace": "default"})
        missing = await client.call_tool("search", {"query": "ducks", "namespace": "nowhere"})
        assert error_text(forbidden).replace("default", "X") == error_text(missing).replace(
            "nowhere", "X"
        )
        listed_forbidden = await client.call_tool("list_documents", {"namespace": "default"})
        listed_missing = await client.call_tool("list_documents", {"namespace": "nowhere"})
        assert error_text(listed_forbidden).replace("default", "X") == error_text(
            listed_missing
        ).replace("nowhere", "X")
        own = structured(await client.call_tool("search", {"query": "geese", "namespace": "team"}))
        assert [r["source_file_name"] for r in own["results"]] == ["geese.md"]

    run_with_client(service, "bob-key", body)


def test_mcp_sessions_work_whichever_server_process_answers(corpus: CorpusSettings) -> None:
    """`corpus serve --workers 2`: MCP is stateless, so a session whose requests land on
    different processes (a new connection per request) still works end to end."""

    async def body(client: Client) -> None:
        for _ in range(4):
            found = structured(await client.call_tool("search", {"query": "mallards", "top_k": 1}))
            assert found["results"][0]["section_path"] == ["Ducks", "Dabbling"]
            chunk_id = found["results"][0]["chunk_id"]
            read = structured(await client.call_tool("read", {"refs": [{"chunk_id": chunk_id}]}))
            assert read["items"][0]["chunks"][0]["content"] == "Dabbling\n\nMallards dabble."

    with served_by_cli(corpus.home, workers=2) as (url, pid):
        assert len(child_pids(pid)) >= 2
        # A tool call that carries no session (no initialize, no Mcp-Session-Id) is answered:
        # no process needs state from an earlier request.
        raw = httpx.post(
            f"{url}/mcp/",
            json={
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "mallards", "top_k": 1}},
            },
            headers={"Accept": "application/json, text/event-stream", "X-API-Key": "alice-key"},
            timeout=30,
        )
        assert raw.status_code == 200, raw.text
        assert '"Dabbling"' in raw.text and '"id":7' in raw.text.replace(" ", "")
        run_with_client(url, "alice-key", body, keep_alive=False)
        answer = httpx.post(
            f"{url}/v1/search",
            json={"query": "geese", "namespace": "team"},
            headers={"X-API-Key": "bob-key"},
            timeout=30,
        )
        assert answer.status_code == 200
        assert [r["source_file_name"] for r in answer.json()["results"]] == ["geese.md"]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


@pytest.mark.parametrize("headers", [{}, {"X-API-Key": "nope"}, {"Authorization": "Bearer nope"}])
def test_the_mcp_endpoint_refuses_requests_without_a_valid_key(
    service: str, headers: dict[str, str]
) -> None:
    response = httpx.post(
        f"{service}/mcp/",
        json=INITIALIZE,
        headers={"Accept": "application/json, text/event-stream", **headers},
        timeout=30,
    )
    assert response.status_code == 401
    assert response.json()["field"] == "authorization"


def test_the_mcp_client_fails_to_connect_without_a_key(service: str) -> None:
    async def main() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            transport = streamable_http_client(f"{service}/mcp/", http_client=http)
            async with Client(transport) as client:
                await client.list_tools()

    with pytest.raises(ExceptionGroup) as refused:
        anyio.run(main)
    assert refused.group_contains(MCPError, depth=None)


def test_stdio_server_answers_search(corpus: CorpusSettings) -> None:
    code = (
        "import os; from query_service.api.server import serve_stdio; "
        "from query_service.config import ServiceSettings; "
        "serve_stdio(ServiceSettings(), os.environ.get('CORPUS_API_KEY'))"
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", code],
        env={"CORPUS_HOME": str(corpus.home), "CORPUS_API_KEY": "bob-key"},
        cwd=str(corpus.home),
    )

    async def main() -> None:
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            found = structured(
                await client.call_tool("search", {"query": "geese graze", "namespace": "team"})
            )
            top = found["results"][0]
            assert (top["source_file_name"], top["section_path"]) == ("geese.md", ["Geese"])
            assert top["chunk_id"]
            forbidden = await client.call_tool("search", {"query": "ducks"})
            assert forbidden.is_error

    anyio.run(main)


class _NamedHost(httpx2.AsyncHTTPTransport):
    """A resolver for the test: `name` is this machine (as a compose or Kubernetes service name
    resolves to the service's address); the request keeps its Host header."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.host == self.name:
            request.url = request.url.copy_with(host="127.0.0.1")
        return await super().handle_async_request(request)


def run_by_name(url: str, name: str, key: str, body: Callable[[Client], Awaitable[None]]) -> None:
    """The official MCP client on `http://<name>:<port>/mcp/`."""
    named = url.replace("127.0.0.1", name)

    async def main() -> None:
        async with (
            httpx2.AsyncClient(
                headers={"X-API-Key": key}, timeout=30, transport=_NamedHost(name)
            ) as http,
            Client(streamable_http_client(f"{named}/mcp/", http_client=http)) as client,
        ):
            await body(client)

    anyio.run(main)


def test_mcp_answers_agents_on_the_host_names_it_is_configured_with(corpus: CorpusSettings) -> None:
    settings = ServiceSettings(
        home=corpus.home,
        reload_seconds=0.2,
        mcp_allowed_hosts=["corpus-query"],
        mcp_allowed_origins=["https://agents.example.com"],
    )

    async def body(client: Client) -> None:
        found = structured(await client.call_tool("search", {"query": "mallards", "top_k": 1}))
        assert found["results"][0]["section_path"] == ["Ducks", "Dabbling"]

    with running_service(settings) as url:
        run_by_name(url, "corpus-query", "alice-key", body)
        port = url.rsplit(":", 1)[1]
        headers = {"Accept": "application/json, text/event-stream", "X-API-Key": "alice-key"}
        elsewhere = httpx.post(
            f"{url}/mcp/", json=INITIALIZE, headers={**headers, "Host": f"evil.example:{port}"}
        )
        assert elsewhere.status_code == 421
        cross_site = httpx.post(
            f"{url}/mcp/",
            json=INITIALIZE,
            headers={**headers, "Host": f"corpus-query:{port}", "Origin": "http://evil.example"},
        )
        assert cross_site.status_code == 403
        named_origin = httpx.post(
            f"{url}/mcp/",
            json=INITIALIZE,
            headers={
                **headers,
                "Host": f"corpus-query:{port}",
                "Origin": "https://agents.example.com",
            },
        )
        assert named_origin.status_code == 200, named_origin.text


def test_by_default_mcp_answers_only_local_host_names(service: str) -> None:
    async def body(client: Client) -> None:
        await client.list_tools()

    with pytest.raises(ExceptionGroup) as refused:
        run_by_name(service, "corpus-query", "alice-key", body)
    assert refused.group_contains(httpx2.HTTPStatusError, depth=None) or refused.group_contains(
        MCPError, depth=None
    )
