"""Running the service: `corpus serve` (uvicorn) and `corpus mcp` (stdio)."""

from __future__ import annotations

import ipaddress
import logging
import os
from typing import Any

from corpus_pipeline.contracts.keys import KeyRing, Principal
from query_service.config import ServiceSettings

log = logging.getLogger("corpus.query_service")


class UnsafeBinding(ValueError):
    """Refusing to expose an unauthenticated service beyond loopback."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(settings: ServiceSettings, host: str) -> str:
    """The start-up notice; raises UnsafeBinding for a keyless service on a non-loopback host."""
    keys = KeyRing.load(settings.keys_file)
    if keys.enabled:
        return f"API keys loaded from {settings.keys_file}"
    if not is_loopback(host):
        raise UnsafeBinding(
            f"no API keys configured ({settings.keys_file}): refusing to listen on {host}; "
            "bind to 127.0.0.1 or create keys with `corpus keys create`"
        )
    return "no API keys configured: serving on loopback only, every namespace readable by the local user"


def create_default_app() -> Any:
    """App factory for uvicorn worker processes (settings from the environment)."""
    from query_service.app import create_app

    return create_app(ServiceSettings())


def default_workers() -> int:
    """One server process per CPU core this process may run on (at most 8).

    A process's Python work (HTTP, validation, fusion, JSON) holds one interpreter lock, so one
    process tops out at about one core; the index search itself releases the lock. Each
    process maps the same index files (shared page cache) and polls for new revisions itself.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def serve(
    settings: ServiceSettings, host: str, port: int, workers: int = 1, access_log: bool = False
) -> None:
    """Run uvicorn with `workers` processes (MCP is stateless, so any process answers any
    request). The per-request access log is off by default: it costs ~1 ms on the event loop."""
    import uvicorn

    notice = check_binding(settings, host)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log.info(notice)
    log.info("starting %d server process(es) on %s:%d", workers, host, port)
    os.environ["CORPUS_HOME"] = str(settings.home)
    uvicorn.run(
        "query_service.server:create_default_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=access_log,
    )


def serve_stdio(settings: ServiceSettings, api_key: str | None) -> None:
    """MCP over stdio for a local agent; with keys configured, CORPUS_API_KEY picks the principal."""
    from query_service.mcp_server import build_mcp
    from query_service.service import QueryService

    service = QueryService(settings)
    principal: Principal | None = service.keys.principal_for(api_key)
    if principal is None:
        raise UnsafeBinding(
            "API keys are configured: set CORPUS_API_KEY to a valid key for `corpus mcp`"
        )
    service.start()
    try:
        build_mcp(service, fixed_principal=principal).run("stdio")
    finally:
        service.stop()
