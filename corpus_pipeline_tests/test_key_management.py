"""API keys fail closed and are managed: without a usable key file the upload API, HTTP search
and MCP answer 503 naming the file and the command that creates a key; open access is for
loopback only; `corpus keys create/list/revoke/rotate` change what running servers accept
within seconds, without a restart; strangers learn only "ok" (issue 37, points 2 and 6).

Servers are real (uvicorn in a thread, or `corpus serve` as its own process) and `corpus keys`
runs as the command a user types. Each test keeps its keys in a file of its own
(`CORPUS_API_KEYS_FILE`) over one published corpus whose home holds no key file.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.keys import hash_key
from query_service.config import ServiceSettings

from .http_service import CORPUS_CLI, running_service, served, served_by_cli
from .services import free_port
from .support import build_documents, publish_namespaces

pytestmark = pytest.mark.slow

CREATE = "corpus keys create NAME --read NAMESPACE"
NO_KEY_FILE = (
    f"no API keys: $CORPUS_HOME/service/api_keys.json does not exist; create a key with `{CREATE}`"
)
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
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


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> CorpusSettings:
    """Ducks in `default`, geese in `team`, published; no key file in this home."""
    settings = load_settings(home=tmp_path_factory.mktemp("keys"))
    build_documents(settings, {"ducks.md": "# Ducks\n\nTufted ducks dive for mussels.\n"})
    build_documents(settings, {"geese.md": "# Geese\n\nGeese graze on grass.\n"}, namespace="team")
    publish_namespaces(settings)
    return settings


def corpus_keys(keys_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`corpus keys ARGS` as a user runs it, on `keys_file`."""
    return subprocess.run(
        [str(CORPUS_CLI), "keys", *args],
        env={**os.environ, "CORPUS_API_KEYS_FILE": str(keys_file)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def new_key(keys_file: Path, name: str, *scopes: str) -> str:
    done = corpus_keys(keys_file, "create", name, *scopes)
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert key.startswith("ck_") and "\n" not in key
    return key


def search(url: str, key: str | None, namespace: str = "team") -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"query": "geese graze", "namespace": namespace, "top_k": 1}
    return httpx.post(f"{url}/v1/search", json=body, headers=headers, timeout=30)


def mcp_post(url: str, key: str | None, message: dict[str, Any]) -> httpx.Response:
    headers = {**MCP_HEADERS, **({"X-API-Key": key} if key else {})}
    return httpx.post(f"{url}/mcp/", json=message, headers=headers, timeout=30)


def mcp_tool(url: str, key: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One stateless `tools/call`; its JSON-RPC result (from the event stream's data line)."""
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    response = mcp_post(url, key, message)
    assert response.status_code == 200, response.text
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    result: dict[str, Any] = json.loads(data[-1] if data else response.text)["result"]
    return result


def last_used(keys_file: Path, name: str) -> str:
    """The last-used column of `name` in `corpus keys list` ("-" when never used)."""
    done = corpus_keys(keys_file, "list")
    assert done.returncode == 0, done.stderr
    [row] = [line for line in done.stdout.splitlines() if line.split()[0] == name]
    return row[done.stdout.splitlines()[0].index("last used") :].strip()


def eventually(check: Callable[[], bool], seconds: float = 8.0) -> bool:
    """Whether `check` holds within `seconds` (servers look at the key file once a second)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@contextmanager
def query_service(corpus: CorpusSettings, keys_file: Path, **settings: Any) -> Iterator[str]:
    with running_service(
        ServiceSettings(home=corpus.home, api_keys_file=keys_file, reload_seconds=0.2, **settings)
    ) as url:
        yield url


@contextmanager
def upload_api(home: Path, keys_file: Path | None = None) -> Iterator[httpx.Client]:
    with served(load_settings(home=home, api_keys_file=keys_file), worker=False) as client:
        yield client


@pytest.fixture(scope="module")
def keyless(
    corpus: CorpusSettings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, httpx.Client]]:
    """The query service and the upload API, each on a home without a key file."""
    with (
        running_service(ServiceSettings(home=corpus.home, reload_seconds=0.2)) as url,
        upload_api(tmp_path_factory.mktemp("upload")) as client,
    ):
        yield url, client


def _upload(client: httpx.Client, key: str | None = None) -> httpx.Response:
    headers = {"X-API-Key": key} if key else {}
    files = {"files": ("n.md", b"# N\n\ntext\n")}
    return client.post("/v1/documents", files=files, data={"namespace": "team"}, headers=headers)


ENTRY_POINTS: dict[str, Callable[[str, httpx.Client, str | None], httpx.Response]] = {
    "upload": lambda _, client, key: _upload(client, key),
    "http search": lambda url, _, key: search(url, key),
    "mcp": lambda url, _, key: mcp_post(url, key, INITIALIZE),
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("key", [None, "ck_some_key"])
def test_without_a_key_file_each_entry_point_answers_503_naming_the_file_and_the_command(
    keyless: tuple[str, httpx.Client], entry: str, key: str | None
) -> None:
    url, client = keyless
    response = ENTRY_POINTS[entry](url, client, key)
    assert response.status_code == 503
    assert response.json() == {"detail": NO_KEY_FILE, "field": "authorization"}


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        ("", f"no API keys: keys.json holds none; create a key with `{CREATE}`"),
        ('{"keys": []}', f"no API keys: keys.json holds none; create a key with `{CREATE}`"),
        (
            '{"keys": [',
            "key file keys.json: not JSON (Expecting value, line 1); "
            f"fix it, or move it away and create a key with `{CREATE}`",
        ),
        (
            '{"keys": [{"key_sha256": "abc", "principal": "p"}]}',
            "key file keys.json: keys.0.key_sha256: String should match pattern "
            f"'^[0-9a-f]{{64}}$'; fix it, or move it away and create a key with `{CREATE}`",
        ),
    ],
    ids=["blank", "no keys", "not JSON", "bad entry"],
)
def test_an_empty_or_malformed_key_file_is_a_503_naming_it_never_a_500(
    corpus: CorpusSettings, tmp_path: Path, content: str, detail: str
) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(content, encoding="utf-8")
    with query_service(corpus, keys_file) as url, upload_api(tmp_path / "up", keys_file) as client:
        for response in (search(url, "ck_some_key"), _upload(client, "ck_some_key")):
            assert response.status_code == 503
            assert response.json() == {"detail": detail, "field": "authorization"}


def test_a_key_file_that_cannot_be_read_is_a_503_naming_it(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    keys_file.mkdir()  # unreadable as a file, even for root
    with query_service(corpus, keys_file) as url:
        response = search(url, "ck_some_key")
    assert response.status_code == 503
    assert response.json()["detail"] == "key file keys.json cannot be read (Is a directory)"


def test_a_key_file_broken_after_a_good_one_fails_closed_until_it_is_fixed(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    key = new_key(keys_file, "alice", "--read", "team")
    good = keys_file.read_text(encoding="utf-8")
    with query_service(corpus, keys_file) as url:
        assert search(url, key).json()["results"][0]["source_file_name"] == "geese.md"
        keys_file.write_text(good[: len(good) // 2], encoding="utf-8")  # a half-written edit
        assert eventually(lambda: search(url, key).status_code == 503)
        detail = search(url, key).json()["detail"]
        assert detail.startswith("key file keys.json: not JSON (") and key not in detail
        keys_file.write_text(good, encoding="utf-8")
        assert eventually(lambda: search(url, key).status_code == 200)


@pytest.mark.parametrize("command", ["serve", "ingest-api"])
def test_open_access_is_refused_on_a_host_beyond_loopback(tmp_path: Path, command: str) -> None:
    """Refused before anything listens (a server that started would time the run out)."""
    done = subprocess.run(
        [str(CORPUS_CLI), command, "--host", "0.0.0.0", "--port", str(free_port())],
        env={**os.environ, "CORPUS_HOME": str(tmp_path), "CORPUS_OPEN_ACCESS": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "CORPUS_OPEN_ACCESS is set: refusing to listen on 0.0.0.0" in done.stderr


def test_open_access_serves_the_local_user_only_while_there_are_no_keys(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    with query_service(corpus, keys_file, open_access=True) as url:
        assert search(url, None).json()["results"][0]["source_file_name"] == "geese.md"
        key = new_key(keys_file, "alice", "--read", "team")
        assert eventually(lambda: search(url, None).status_code == 401), "keys now decide"
        assert search(url, key).status_code == 200
        keys_file.write_text("{broken", encoding="utf-8")
        assert eventually(lambda: search(url, None).status_code == 503), "never open when broken"


# -- `corpus keys` -------------------------------------------------------------------------


def test_keys_create_prints_the_key_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    keys_file = tmp_path / "service" / "keys.json"
    key = new_key(keys_file, "alice", "--read", "default", "--write", "team")
    stored = keys_file.read_text(encoding="utf-8")
    assert key not in stored and hash_key(key) in stored
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    [entry] = json.loads(stored)["keys"]
    assert (entry["principal"], entry["namespaces"], entry["write_namespaces"]) == (
        "alice",
        ["default", "team"],
        ["team"],
    )
    assert entry["created_at"]
    assert not [p.name for p in keys_file.parent.iterdir() if p.name.endswith(".tmp")]
    again = corpus_keys(keys_file, "create", "alice", "--read", "default")
    assert again.returncode == 1 and again.stdout == ""
    assert f"{keys_file}: a key named 'alice' exists" in again.stderr


def test_keys_list_shows_names_scopes_and_times_but_never_a_key_or_its_hash(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    alice = new_key(keys_file, "alice", "--read", "default,team", "--write", "team")
    bob = new_key(keys_file, "bob", "--read", "team")
    with query_service(corpus, keys_file) as url:
        assert search(url, alice).status_code == 200
        assert eventually(lambda: last_used(keys_file, "alice") != "-")
    done = corpus_keys(keys_file, "list")
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["name", "read", "write", "created", "last", "used"]
    assert lines[1].split()[:3] == ["alice", "default,team", "team"]
    assert lines[2].split()[:3] == ["bob", "team", "-"] and last_used(keys_file, "bob") == "-"
    assert last_used(keys_file, "alice")[:2] == "20" and lines[1].split()[3][:2] == "20"
    for secret in (alice, bob, hash_key(alice), hash_key(bob)):
        assert secret not in done.stdout + done.stderr


def test_a_key_use_is_recorded_at_most_once_a_minute_not_per_request(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    alice = new_key(keys_file, "alice", "--read", "team")
    usage = tmp_path / "keys.last_used.sqlite"
    with query_service(corpus, keys_file) as url:
        assert search(url, alice).status_code == 200
        assert eventually(lambda: last_used(keys_file, "alice") != "-")
        written = usage.stat().st_mtime_ns
        for _ in range(20):
            assert search(url, alice).status_code == 200
        time.sleep(0.5)
        assert usage.stat().st_mtime_ns == written


def test_revoking_an_unknown_name_fails_naming_the_file(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    new_key(keys_file, "alice", "--read", "team")
    done = corpus_keys(keys_file, "revoke", "bob")
    assert done.returncode == 1
    assert done.stderr.strip() == f"Error: {keys_file}: no key named 'bob'"


def test_keys_created_at_the_same_time_are_all_kept(tmp_path: Path) -> None:
    """Each `corpus keys` change holds the file's lock: none overwrites another's."""
    keys_file = tmp_path / "keys.json"
    env = {**os.environ, "CORPUS_API_KEYS_FILE": str(keys_file)}
    names = [f"k{i}" for i in range(6)]
    processes = [
        subprocess.Popen(
            [str(CORPUS_CLI), "keys", "create", name, "--read", "team"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for name in names
    ]
    keys = [p.communicate(timeout=60)[0].decode().strip() for p in processes]
    assert [p.returncode for p in processes] == [0] * len(names)
    stored = json.loads(keys_file.read_text(encoding="utf-8"))["keys"]
    assert sorted(e["principal"] for e in stored) == names
    assert {e["key_sha256"] for e in stored} == {hash_key(k) for k in keys}


# -- a running `corpus serve` sees key changes without a restart --------------------------


@pytest.fixture(scope="module")
def serving(
    corpus: CorpusSettings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """`corpus serve` (its own process), started before any key exists; its key file."""
    keys_file = tmp_path_factory.mktemp("served") / "keys.json"
    env = {"CORPUS_API_KEYS_FILE": str(keys_file)}
    with served_by_cli(corpus.home, workers=1, env=env) as (url, _):
        yield url, keys_file


def test_a_running_server_accepts_a_new_key_and_refuses_it_once_revoked(
    serving: tuple[str, Path],
) -> None:
    url, keys_file = serving
    key = new_key(keys_file, "carol", "--read", "team")
    other = new_key(keys_file, "erin", "--read", "team")
    assert eventually(lambda: search(url, key).status_code == 200)
    assert search(url, key).json()["results"][0]["source_file_name"] == "geese.md"
    assert mcp_post(url, key, INITIALIZE).status_code == 200
    assert corpus_keys(keys_file, "revoke", "carol").returncode == 0
    assert eventually(lambda: search(url, key).status_code == 401)
    assert mcp_post(url, key, INITIALIZE).status_code == 401
    assert search(url, other).status_code == 200, "only the revoked key is refused"


def test_a_running_server_takes_a_rotated_key_in_place_of_the_old_one(
    serving: tuple[str, Path],
) -> None:
    url, keys_file = serving
    old = new_key(keys_file, "dave", "--read", "team")
    assert eventually(lambda: search(url, old).status_code == 200)
    rotated = corpus_keys(keys_file, "rotate", "dave")
    assert rotated.returncode == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert new.startswith("ck_") and new != old
    assert eventually(lambda: search(url, new).status_code == 200)
    assert search(url, old).status_code == 401
    assert search(url, new, namespace="default").status_code == 404, "same namespaces as before"


# -- strangers learn "ok"; a key sees its own namespaces -----------------------------------


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
@pytest.mark.parametrize("service", ["query", "upload"])
def test_health_and_readiness_say_ok_and_nothing_else(
    keyless: tuple[str, httpx.Client], service: str, path: str
) -> None:
    url, client = keyless
    response = httpx.get(f"{url}{path}", timeout=30) if service == "query" else client.get(path)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_cache_statistics_need_a_key_and_count_only_its_namespaces(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    alice = new_key(keys_file, "alice", "--read", "default,team")
    bob = new_key(keys_file, "bob", "--read", "team")
    with query_service(corpus, keys_file) as url:
        assert httpx.get(f"{url}/v1/cache", timeout=30).status_code == 401
        assert search(url, alice, namespace="default").status_code == 200
        mine = httpx.get(f"{url}/v1/cache", headers={"X-API-Key": bob}, timeout=30).json()
        theirs = httpx.get(f"{url}/v1/cache", headers={"X-API-Key": alice}, timeout=30).json()
    assert set(mine) == {"namespaces", "max_entries", "max_bytes"}, "no process id"
    assert mine["namespaces"] == [
        {"namespace": "team", "entries": 0, "bytes": 0, "hits": 0, "misses": 0}
    ]
    [default] = [n for n in theirs["namespaces"] if n["namespace"] == "default"]
    assert default["misses"] == 1 and default["entries"] == 1


def test_a_namespace_listing_shows_only_the_keys_namespaces(
    corpus: CorpusSettings, tmp_path: Path
) -> None:
    keys_file = tmp_path / "keys.json"
    bob = new_key(keys_file, "bob", "--read", "team")
    with query_service(corpus, keys_file) as url:
        assert httpx.get(f"{url}/v1/namespaces", timeout=30).status_code == 401
        listed = httpx.get(f"{url}/v1/namespaces", headers={"X-API-Key": bob}, timeout=30)
    assert [n["namespace"] for n in listed.json()["namespaces"]] == ["team"]


# -- a refusal is one log line: who, what, why ---------------------------------------------


def test_a_denied_mcp_call_logs_one_line_and_no_traceback(
    corpus: CorpusSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys_file = tmp_path / "keys.json"
    bob = new_key(keys_file, "bob", "--read", "team")
    with query_service(corpus, keys_file) as url:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            result = mcp_tool(url, bob, "search", {"query": "ducks", "namespace": "default"})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "namespace 'default' has no published revision"
    assert [r for r in caplog.records if r.exc_info] == []
    [denial] = [m for r in caplog.records if (m := r.getMessage()).startswith("denied")]
    assert denial == "denied: bob, namespace 'default': not among its namespaces"


def test_a_refused_key_logs_one_line_without_the_key(
    corpus: CorpusSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys_file = tmp_path / "keys.json"
    new_key(keys_file, "bob", "--read", "team")
    with query_service(corpus, keys_file) as url:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert search(url, "ck_guessed").status_code == 401
    [denial] = [m for r in caplog.records if (m := r.getMessage()).startswith("denied")]
    assert denial == (
        "denied: an unknown key (127.0.0.1), POST /v1/search: missing or invalid API key"
    )


def test_a_refused_upload_logs_one_line_naming_the_principal_and_the_namespace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys_file = tmp_path / "keys.json"
    reader = new_key(keys_file, "reader", "--read", "team", "--write", "other")
    with upload_api(tmp_path / "up", keys_file) as client:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert _upload(client, reader).status_code == 403
    [denial] = [m for r in caplog.records if (m := r.getMessage()).startswith("denied")]
    assert denial == "denied: reader, writing namespace 'team': not a write namespace"


def test_a_key_that_may_write_nowhere_is_refused_in_one_line_before_the_body(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keys_file = tmp_path / "keys.json"
    reader = new_key(keys_file, "reader", "--read", "team")
    with upload_api(tmp_path / "up", keys_file) as client:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert _upload(client, reader).status_code == 403
    [denial] = [m for r in caplog.records if (m := r.getMessage()).startswith("denied")]
    assert denial == "denied: reader, uploading: may write to no namespace"
