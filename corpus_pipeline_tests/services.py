"""Real services for integration tests: a throwaway `moto_server` (S3) and a throwaway
PostgreSQL database on the local server. Each helper cleans up after itself."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import psycopg2  # type: ignore[import-untyped]
from psycopg2 import sql

MOTO_SERVER = Path(sys.executable).with_name("moto_server")
PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USER = "postgres"
# Dummy credentials for moto: it accepts any, and they must never show up in a message.
AWS_DUMMY_KEY_ID = "corpus-test-key-id"
AWS_DUMMY_SECRET = "corpus-test-secret"


def free_port() -> int:
    """A loopback port that is free right now (the OS picks it)."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with code {process.returncode} on start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"moto_server did not listen on port {port} within {timeout} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextmanager
def moto_server(timeout: float = 20.0, attempts: int = 3) -> Iterator[str]:
    """Start `moto_server` on a free loopback port; yield its endpoint URL; stop it after.

    The port is picked before the server binds it, so a rare race with another process is
    retried on a fresh port."""
    if not MOTO_SERVER.exists():
        raise FileNotFoundError(f"{MOTO_SERVER} is missing (install the dev group)")
    for attempt in range(1, attempts + 1):
        port = free_port()
        process = subprocess.Popen(
            [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_port(port, process, timeout)
        except (RuntimeError, TimeoutError):
            _stop(process)
            if attempt == attempts:
                raise
            continue
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            _stop(process)
        return


def _admin_connection() -> Any:
    conn = psycopg2.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", connect_timeout=5
    )
    conn.autocommit = True  # CREATE/DROP DATABASE cannot run inside a transaction
    return conn


def drop_database(name: str) -> None:
    """Terminate every connection to the database, then drop it (if it exists)."""
    with closing(_admin_connection()) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        cur.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@contextmanager
def postgres_database(prefix: str = "corpus_test") -> Iterator[str]:
    """Create a uniquely named database on the local server; yield its name; drop it after."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with closing(_admin_connection()) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        drop_database(name)


def query(dbname: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of one read-only query against a database on the local server."""
    with (
        closing(
            psycopg2.connect(
                host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname, connect_timeout=5
            )
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(statement, params)
        rows: list[tuple[Any, ...]] = cur.fetchall()
        return rows


def database_exists(name: str) -> bool:
    with closing(_admin_connection()) as conn, conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
        return cur.fetchone() is not None


def use_moto(endpoint: str, scratch: Path, monkeypatch: Any) -> None:
    """Point boto3/s3fs at `endpoint` with dummy credentials and no user AWS config (undone by
    `monkeypatch`); clears fsspec's cached S3 clients."""
    import s3fs

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(scratch / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(scratch / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_DUMMY_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_DUMMY_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    s3fs.S3FileSystem.clear_instance_cache()
