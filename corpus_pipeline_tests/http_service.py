"""Run the real query service (uvicorn on a free loopback port) for HTTP tests."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from query_service.app import create_app
from query_service.auth import hash_key
from query_service.config import ServiceSettings


def write_api_keys(home: Path, keys: dict[str, tuple[str, list[str]]]) -> Path:
    """The service's key file under <home>/service: key → (principal, readable namespaces),
    stored hashed as the service expects."""
    path = home / "service" / "api_keys.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {"key_sha256": hash_key(k), "principal": p, "namespaces": ns} for k, (p, ns) in keys.items()
    ]
    path.write_text(json.dumps({"keys": entries}))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running_service(settings: ServiceSettings) -> Iterator[str]:
    """Start the app in a background thread; yield its base URL; stop it on exit."""
    app = create_app(settings)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("query service did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
