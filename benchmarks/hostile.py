"""Hostile input, as an outside tester sends it: per case the outcome, the time and the peak
memory of the process it hits.

Query service cases run against `corpus serve` (one process, restarted per case so its peak
resident memory, VmHWM, belongs to that case alone): oversized filters, duplicated read refs, an
anonymous 300 MB body, a declared 10 GB body that never comes. Ingest cases run `corpus ingest`
on one file each in a fresh home, under `CORPUS_PARSE_MAX_MEMORY_MB=1024`, and record the peak
memory of every process involved (the largest resident memory that `corpus ingest` or any
process below it reached, sampled every 50 ms). Upload cases send one file to the upload API.

Run: `python -m benchmarks.hostile [--cases NAME,…]`; writes `benchmarks/results/hostile.json`
(keeping its `before`: the same script run on the code before the bounds, for comparison).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import (
    CORPUS_CLI,
    RESULTS,
    create_key,
    free_port,
    home_env,
    log,
    machine_facts,
    running_service,
    wait_ready,
    write_json,
)

Row = dict[str, Any]
PARSE_MEMORY_MB = 1024
MIB = 1 << 20


# -- files -------------------------------------------------------------------------------------


def nested_messages(depth: int) -> bytes:
    inner = (
        "From: a@example.com\nTo: b@example.com\nSubject: core\nContent-Type: text/plain\n\nhi\n"
    )
    for level in range(depth):
        inner = (
            f"From: a@example.com\nTo: b@example.com\nSubject: level {level}\n"
            f"Content-Type: message/rfc822\n\n{inner}"
        )
    return inner.encode()


def nested_multiparts(depth: int) -> bytes:
    body = "Content-Type: text/plain\n\nleaf\n"
    for level in range(depth):
        b = f"b{level}"
        body = f'Content-Type: multipart/mixed; boundary="{b}"\n\n--{b}\n{body}\n--{b}--\n'
    return ("From: a@example.com\nTo: b@example.com\nSubject: deep\n" + body).encode()


def mail_with_attachments(count: int) -> bytes:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "a@example.com", "b@example.com", "Logs"
    message.set_content("Logs attached.")
    for n in range(count):
        message.add_attachment(f"log line {n}\n", filename=f"log-{n:04d}.txt")
    return message.as_bytes()


PARAGRAPH = b"<w:p><w:r><w:t>The same sentence again and again.</w:t></w:r></w:p>"


def docx_bomb(path: Path, expanded: int) -> None:
    """A DOCX whose document.xml expands to `expanded` bytes of one repeated paragraph (whole
    blocks of 10,000 PARAGRAPHs: a few hundred KB hold a GiB)."""
    word = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    block = PARAGRAPH * 10_000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats'
            '-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        with zf.open("word/document.xml", "w") as out:
            out.write(f'<w:document xmlns:w="{word}"><w:body>'.encode())
            for _ in range(expanded // len(block)):
                out.write(block)
            out.write(b"</w:body></w:document>")


def wide_csv(columns: int) -> bytes:
    head = ",".join(f"reading {i}" for i in range(columns))
    return (head + "\n" + ",".join(str(i * 7) for i in range(columns)) + "\n").encode()


def spaceless_text(megabytes: int) -> bytes:
    digest = b"".join(hashlib.sha256(str(i).encode()).hexdigest().encode() for i in range(1000))
    return b"Attachment: " + (digest * (megabytes * MIB // len(digest) + 1))[: megabytes * MIB]


def nested_list(depth: int) -> bytes:
    return ("# Deep\n\n" + "".join("  " * i + f"- item {i}\n" for i in range(depth))).encode()


INGEST_FILES: dict[str, tuple[str, Callable[[Path], object]]] = {
    "docx expanding to 2 GiB": (
        "bomb.docx",
        lambda p: docx_bomb(p, 2 << 30),
    ),
    "e-mail attaching messages 2,000 deep": (
        "deep.eml",
        lambda p: p.write_bytes(nested_messages(2000)),
    ),
    "e-mail of 3,000 nested multiparts": (
        "multipart.eml",
        lambda p: p.write_bytes(nested_multiparts(3000)),
    ),
    "markdown list nested 3,000 deep": ("deep.md", lambda p: p.write_bytes(nested_list(3000))),
    "csv of one row and 200,000 columns": ("wide.csv", lambda p: p.write_bytes(wide_csv(200_000))),
    "8 MB of text without a space": ("blob.txt", lambda p: p.write_bytes(spaceless_text(8))),
}


# -- measuring ---------------------------------------------------------------------------------


def _status(pid: int, field: str) -> int:
    """A /proc/<pid>/status field in KiB (0 once the process is gone)."""
    with suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, IndexError, ValueError):
            if int(stat.read_bytes().rsplit(b")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _tree(root: int) -> list[int]:
    """`root` and every process below it (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, IndexError, ValueError):
            parents[int(stat.parent.name)] = int(stat.read_bytes().rsplit(b")", 1)[1].split()[1])
    below, frontier = [root], [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in below:
                below.append(pid)
                frontier.append(pid)
    return below


def measured_run(args: list[str], env: dict[str, str], timeout: float) -> Row:
    """Run a command, sampling every 50 ms the resident memory of it and of every process
    below it (the forkserver, pool and parse workers, OCR): its time, output and the largest
    resident memory any one of them reached (MiB)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak = 0
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pumps = [
            threading.Thread(target=lambda s=src, d=dst: d.write(s.read()), daemon=True)
            for src, dst in ((process.stdout, out), (process.stderr, err))
        ]
        for pump in pumps:
            pump.start()
        while process.poll() is None:
            for pid in _tree(process.pid):
                peak = max(peak, _status(pid, "VmRSS"))
            if time.perf_counter() - started > timeout:
                process.kill()
            time.sleep(0.05)
        for pump in pumps:
            pump.join()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "peak_process_mb": round(peak / 1024),
        "returncode": process.returncode,
        "stdout": stdout,
        "stderr_lines": len(stderr.splitlines()),
        "traceback": "Traceback" in stderr,
    }


def ingest_case(name: str, work: Path) -> Row:
    """`corpus ingest` of one hostile file beside a valid one, in a fresh home."""
    file_name, make = INGEST_FILES[name]
    home, inbox = work / "home", work / "inbox"
    inbox.mkdir(parents=True)
    make(inbox / file_name)
    (inbox / "valid.md").write_text("# Valid\n\nThe heron waits at the weir.\n")
    env = home_env(home, CORPUS_PARSE_MAX_MEMORY_MB=str(PARSE_MEMORY_MB))
    result = measured_run([str(CORPUS_CLI), "ingest", str(inbox), "--json"], env, 3600)
    lines = [json.loads(line) for line in result.pop("stdout").splitlines() if line.startswith("{")]
    by_file = {line["file"]: line for line in lines if "file" in line}
    hostile = by_file.get(file_name, {})
    return {
        "file_bytes": (inbox / file_name).stat().st_size,
        "outcome": hostile.get("status", "no line (the batch crashed)"),
        "error": hostile.get("error"),
        "chunks": hostile.get("chunks"),
        "largest_chunk_tokens": _largest_chunk(home),
        "valid_file_of_the_batch": by_file.get("valid.md", {}).get("status", "not ingested"),
        **result,
    }


def _largest_chunk(home: Path) -> int | None:
    from corpus_pipeline.enrich.tokens import count_tokens

    sizes = [
        count_tokens(chunk["content"])
        for path in home.glob("**/chunks.json")
        for chunk in json.loads(path.read_text())["chunks"]
    ]
    return max(sizes, default=None)


@contextmanager
def query_service(home: Path) -> Iterator[tuple[str, str, int]]:
    """`corpus serve` over `home`: its URL, a read key, and the pid of its process."""
    env = home_env(home)
    key = create_key(env, "hostile", read=["default"])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running_service(
        ["serve", "--port", str(port), "--workers", "1"], env, home / "serve.log"
    ) as process:
        wait_ready(url, process)
        pids = [process.pid, *_children(process.pid)]
        yield url, key, max(pids, key=lambda pid: _status(pid, "VmRSS"))


def query_case(
    home: Path, send: Callable[[str, str, str], tuple[int, int]], document_id: str
) -> Row:
    """One request to a fresh query service: its answer, time and the server's memory."""
    with query_service(home) as (url, key, pid):
        _post(url, key, "/v1/search", {"query": "heron at the weir"})  # caches warmed first
        before = _status(pid, "VmRSS")
        started = time.perf_counter()
        status, size = send(url, key, document_id)
        seconds = time.perf_counter() - started
        time.sleep(0.5)
        return {
            "status": status,
            "response_bytes": size,
            "seconds": round(seconds, 2),
            "server_rss_growth_mb": round((_status(pid, "VmRSS") - before) / 1024),
            "server_peak_growth_mb": round((_status(pid, "VmHWM") - before) / 1024),
        }


def _post(url: str, key: str | None, path: str, body: Any) -> tuple[int, int]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(timeout=600) as client:
        response = client.post(f"{url}{path}", json=body, headers=headers)
    return response.status_code, len(response.content)


def _stream_anonymous(url: str, megabytes: int) -> tuple[int, int]:
    def body() -> Iterator[bytes]:
        yield b'{"query": "'
        for _ in range(megabytes):
            yield b"a" * MIB
        yield b'"}'

    with httpx.Client(timeout=600) as client, suppress(httpx.TransportError):
        response = client.post(
            f"{url}/v1/search", content=body(), headers={"Content-Type": "application/json"}
        )
        return response.status_code, len(response.content)
    return 0, 0  # the server closed the connection before the body was sent


def _declared_only(url: str, key: str) -> tuple[int, int]:
    """Headers (with a valid key) declaring 10 GB and no body: the answer, or 0 when none came
    within 30 s."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
            + b"Content-Length: 10000000000\r\n\r\n"
        )
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return 0, 0
    return int(data.split(b" ", 2)[1]), len(data)


QUERY_CASES: dict[str, Callable[[str, str, str], tuple[int, int]]] = {
    "path_prefix: 10,000 values of 200 characters (2 MB)": lambda url, key, doc: _post(
        url, key, "/v1/search", {"query": "heron", "filters": {"path_prefix": ["p" * 200] * 10_000}}
    ),
    "path_prefix: 100 values of 200 characters": lambda url, key, doc: _post(
        url, key, "/v1/search", {"query": "heron", "filters": {"path_prefix": ["p" * 200] * 100}}
    ),
    "read: 100 identical refs to a whole document": lambda url, key, doc: _post(
        url, key, "/v1/read", {"refs": [{"document_id": doc}] * 100, "max_chunks_per_ref": 500}
    ),
    "anonymous 300 MB body": lambda url, key, doc: _stream_anonymous(url, 300),
    "Content-Length 10 GB with a key, no body": lambda url, key, doc: _declared_only(url, key),
}


def query_home(work: Path) -> tuple[Path, str]:
    """A home with one long document published (what `read` and search reach)."""
    home, inbox = work / "query-home", work / "query-inbox"
    inbox.mkdir(parents=True)
    sections = "".join(
        f"## Pond {i}\n\n" + f"The heron waits at weir {i} while mallards dabble nearby. " * 20
        for i in range(400)
    )
    (inbox / "ponds.md").write_text("# Ponds\n\n" + sections)
    out = subprocess.run(
        [str(CORPUS_CLI), "ingest", str(inbox), "--json"],
        env=home_env(home),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    [line] = [json.loads(x) for x in out.splitlines() if '"file"' in x]
    return home, line["document_id"]


ORACLE = "no oracle: unreadable against missing (timing)"


def oracle_case(home: Path, document_id: str, rounds: int = 200) -> Row:
    """A key that reads only `team` asks about the `default` document and about a made-up id
    (and a namespace it cannot read against one that does not exist), alternating: the answers'
    statuses and the median and p95 time of each, which should differ by noise only."""
    inbox = home.parent / "team-inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "geese.md").write_text("# Geese\n\nGreylag geese graze in wet meadows.\n")
    env = home_env(home)
    subprocess.run(
        [str(CORPUS_CLI), "ingest", str(inbox), "-n", "team", "--json"],
        env=env,
        capture_output=True,
        check=True,
    )
    key = create_key(env, "other-namespace", read=["team"])
    pairs: dict[str, tuple[tuple[str, str, dict[str, Any]], ...]] = {
        "document": (
            ("GET", f"/v1/documents/{document_id}", {"params": {"namespace": "team"}}),
            ("GET", "/v1/documents/made-up-md-0123456789ab", {"params": {"namespace": "team"}}),
        ),
        "namespace": (
            ("POST", "/v1/search", {"json": {"query": "heron", "namespace": "default"}}),
            ("POST", "/v1/search", {"json": {"query": "heron", "namespace": "nowhere"}}),
        ),
    }
    out: Row = {}
    with (
        query_service(home) as (url, _, _pid),
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as client,
    ):
        for name, (real, fake) in pairs.items():
            times: dict[str, list[float]] = {"unreadable": [], "missing": []}
            statuses: dict[str, set[int]] = {"unreadable": set(), "missing": set()}
            for n in range(rounds):
                order = (("unreadable", real), ("missing", fake))
                for label, (method, path, kwargs) in order if n % 2 else order[::-1]:
                    started = time.perf_counter()
                    response = client.request(method, path, **kwargs)
                    times[label].append((time.perf_counter() - started) * 1000)
                    statuses[label].add(response.status_code)
            out[name] = {
                label: {
                    "statuses": sorted(statuses[label]),
                    "p50_ms": round(statistics.median(t), 2),
                    "p95_ms": round(sorted(t)[int(0.95 * len(t))], 2),
                }
                for label, t in times.items()
            }
    return out


def upload_case(work: Path, attachments: int) -> Row:
    """One e-mail of many attachments to the upload API: its answer and the jobs it queued."""
    home = work / "upload-home"
    env = home_env(home, CORPUS_INGEST_WORKERS="1")
    key = create_key(env, "uploader", read=["default"], write=["default"])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with running_service(["ingest-api", "--port", str(port)], env, home / "upload.log") as process:
        wait_ready(url, process)
        started = time.perf_counter()
        with httpx.Client(timeout=600, headers={"Authorization": f"Bearer {key}"}) as client:
            response = client.post(
                f"{url}/v1/documents",
                files={"files": ("logs.eml", mail_with_attachments(attachments))},
            )
            queued = client.get(f"{url}/v1/namespaces/default/ingestion").json()
    return {
        "status": response.status_code,
        "detail": response.json().get("detail") if response.status_code >= 400 else None,
        "jobs_queued": queued.get("counts", {}).get("queued", 0),
        "seconds": round(time.perf_counter() - started, 2),
    }


FAIRNESS = "another key's one file while one key's 1,000 documents are processed"


def fairness_case(
    work: Path, uploads: int = 2, attachments: int = 499, patience: float = 180.0
) -> Row:
    """Key A uploads `uploads` e-mails of `attachments` attachments each (1,000 documents: the
    most one upload may expand into is 500); once its first job runs, key B uploads one file
    to another namespace: how long B's job waits to start."""
    home = work / "fair-home"
    env = home_env(home, CORPUS_INGEST_WORKERS="1")
    bulk = create_key(env, "bulk", read=["default"], write=["default"])
    single = create_key(env, "single", read=["team"], write=["team"])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (
        running_service(["ingest-api", "--port", str(port)], env, home / "upload.log") as process,
        httpx.Client(base_url=url, timeout=600) as client,
    ):
        wait_ready(url, process)
        statuses = [
            client.post(
                "/v1/documents",
                files={"files": (f"logs-{n}.eml", mail_with_attachments(attachments))},
                headers={"Authorization": f"Bearer {bulk}"},
            ).status_code
            for n in range(uploads)
        ]
        while (
            client.get(
                "/v1/namespaces/default/ingestion", headers={"Authorization": f"Bearer {bulk}"}
            )
            .json()
            .get("counts", {})
            .get("processing", 0)
            == 0
        ):
            time.sleep(0.2)
        auth = {"Authorization": f"Bearer {single}"}
        queued_at = time.perf_counter()
        b = client.post(
            "/v1/documents",
            files={"files": ("memo.md", b"# Memo\n\nThe weir is open.\n")},
            data={"namespace": "team"},
            headers=auth,
        )
        [job] = b.json()["files"]
        waited = None
        while time.perf_counter() - queued_at < patience:
            if client.get(f"/v1/jobs/{job['job_id']}", headers=auth).json()["status"] != "queued":
                waited = round(time.perf_counter() - queued_at, 1)
                break
            time.sleep(0.2)
    return {
        "bulk_upload_status": statuses,
        "bulk_documents": uploads * (attachments + 1),
        "other_upload_status": b.status_code,
        "other_job_started_after_s": waited if waited is not None else f"> {patience:.0f}",
    }


def run(wanted: set[str] | None) -> Row:
    out: Row = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds")}
    out["machine"] = machine_facts()
    out["parse_max_memory_mb"] = PARSE_MEMORY_MB
    cases: Row = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        home, document_id = query_home(work)
        for name, send in QUERY_CASES.items():
            if wanted is None or name in wanted:
                log(f"query: {name}")
                cases[name] = {"service": "query", **query_case(home, send, document_id)}
        if wanted is None or ORACLE in wanted:
            log(f"query: {ORACLE}")
            cases[ORACLE] = {"service": "query", **oracle_case(home, document_id)}
        for n, name in enumerate(INGEST_FILES):
            if wanted is None or name in wanted:
                log(f"ingest: {name}")
                cases[name] = {"service": "ingest", **ingest_case(name, work / f"ingest-{n}")}
        name = "e-mail with 1,000 attachments"
        if wanted is None or name in wanted:
            log(f"upload: {name}")
            cases[name] = {"service": "upload", **upload_case(work, 1000)}
        if wanted is None or FAIRNESS in wanted:
            log(f"upload: {FAIRNESS}")
            cases[FAIRNESS] = {"service": "upload", **fairness_case(work)}
    out["cases"] = cases
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--out", type=Path, default=RESULTS / "hostile.json")
    args = parser.parse_args(argv)
    wanted = {c.strip() for c in args.cases.split(",") if c.strip()} or None
    result = run(wanted)
    if args.out.is_file():  # the earlier code's figures stay beside the new ones
        earlier = json.loads(args.out.read_text(encoding="utf-8")).get("before")
        if earlier:
            result["before"] = earlier
    write_json(args.out, result)
    for name, case in result["cases"].items():
        print(f"{name}: {json.dumps(case)}")


if __name__ == "__main__":
    main()
