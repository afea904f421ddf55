"""Running the service: `corpus serve` (uvicorn) and `corpus mcp` (stdio)."""

from __future__ import annotations

import logging
import os
from typing import Any

from corpus_pipeline.access.keys import AccessDenied, UnsafeBinding, check_binding
from query_service.config import ServiceSettings

log = logging.getLogger("corpus.query_service")


def create_default_app() -> Any:
    """App factory for uvicorn worker processes (settings from the environment)."""
    from query_service.api.app import create_app

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

    notice = check_binding(settings.keys_file, settings.open_access, host)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    log.info(notice)
    log.info("starting %d server process(es) on %s:%d", workers, host, port)
    # Worker processes read their settings from the environment: the ones checked above.
    os.environ["CORPUS_HOME"] = str(settings.home)
    os.environ["CORPUS_API_KEYS_FILE"] = str(settings.keys_file)
    os.environ["CORPUS_OPEN_ACCESS"] = "true" if settings.open_access else "false"
    # Two malloc arenas per worker process (glibc's default is eight per core): the request
    # threads share them, and what a revision swap frees is reused instead of kept per thread
    # (10-minute soak: RSS after the load 1.107× its start with the default).
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    uvicorn.run(
        "query_service.api.server:create_default_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=access_log,
    )


def serve_stdio(settings: ServiceSettings, api_key: str | None) -> None:
    """MCP over stdio for a local agent as CORPUS_API_KEY's principal, resolved again on every
    call (a revoked key stops working); refused at start when the key gives no access."""
    from query_service.api.deps import key_principal
    from query_service.api.mcp_server import build_mcp
    from query_service.service import QueryService

    service = QueryService(settings)
    try:
        key_principal(service.keys, api_key, "corpus mcp")
    except AccessDenied as exc:
        raise UnsafeBinding(
            f"corpus mcp: {exc.detail} (the key comes from CORPUS_API_KEY)"
        ) from None
    service.start()
    try:
        build_mcp(service, stdio=True, api_key=api_key).run("stdio")
    finally:
        service.stop()
