"""The upload API under upload load: `/readyz` latency while large uploads are read and checked,
and the server's memory before, at its peak and after.

    python -m benchmarks.upload_door [--uploads 10] [--mb 25]

1. Generates `--uploads` PDFs of about `--mb` MB each (pages of random-noise images: what a
   scanned report weighs) under a temporary folder.
2. Starts `corpus ingest-api` as its own process on a free loopback port, with a fresh home,
   one writer key (`corpus keys create`) and `CORPUS_MAX_UPLOADS_PER_KEY` high enough for all
   uploads at once.
3. Measures `GET /readyz` alone (idle, 200 requests), then sends every upload at once, each
   from its own thread, while a process of its own asks `/readyz` and `/healthz` every 5 ms
   (in this process it would time its own wait for the GIL behind the senders); the server's RSS
   (VmRSS of the API process, its job workers aside) is sampled every 100 ms, from after one
   small warm-up upload (first-use imports are start-up, not load).
4. Writes benchmarks/results/upload_door.json: readyz p50/p99/max idle and under load side by
   side, their ratio, the upload statuses and wall time, RSS at start, peak and 10 s after the
   last upload answered. Target: readyz under load p99 ≤ 50 ms; RSS after ≤ start + 10 %.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pymupdf

from benchmarks.harness import (
    RESULTS,
    create_key,
    free_port,
    home_env,
    nearest_rank,
    rss_mb,
    start_service,
    stop_service,
    wait_ready,
    write_json,
)

_mupdf: Any = pymupdf  # only partly annotated


def make_pdf(path: Path, megabytes: int, seed: int) -> None:
    """A PDF of noise images (incompressible) of about `megabytes` MB, with a text line per
    page so the door sees a document."""
    rng = random.Random(seed)
    doc = _mupdf.open()
    side = 600
    pages = max(1, megabytes * 1024 * 1024 // (side * side * 3))  # noise does not compress
    for number in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"Page {number + 1} of scanned report {seed}")
        noise = _mupdf.Pixmap(_mupdf.csRGB, side, side, rng.randbytes(side * side * 3), False)
        page.insert_image(_mupdf.Rect(72, 100, 540, 568), pixmap=noise)
    doc.save(path)


def poll(base: str, stop: Any, results: Any) -> None:
    """`/readyz` and `/healthz` (the event loop alone, no job store) every 5 ms until `stop`;
    their latencies in ms go back through `results`."""
    loaded: list[float] = []
    alive: list[float] = []
    with httpx.Client(base_url=base, timeout=60) as client:
        readyz(client)
        results.send("ready")
        while not stop.is_set():
            loaded.append(readyz(client))
            alive.append(readyz(client, "/healthz"))
            time.sleep(0.005)
    results.send((loaded, alive))


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 2),
        "p99_ms": nearest_rank(values, 0.99),
        "max_ms": round(max(values), 2),
    }


def readyz(client: httpx.Client, path: str = "/readyz") -> float:
    started = time.perf_counter()
    response = client.get(path)
    assert response.status_code == 200, response.text
    return (time.perf_counter() - started) * 1000


def run(uploads: int, megabytes: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="upload-door-"))
    files = []
    for n in range(uploads):
        path = work / f"scan-{n}.pdf"
        make_pdf(path, megabytes, n)
        files.append(path)
    home = work / "home"
    home.mkdir()
    env = home_env(
        home,
        CORPUS_MAX_UPLOADS_PER_KEY=str(uploads),
        CORPUS_MAX_UPLOAD_MB=str(megabytes * 2),
        CORPUS_MAX_REQUEST_MB=str(megabytes * 2),
    )
    key = create_key(env, "bench", read=["*"], write=["*"])
    port = free_port()
    # Not a process group: the server is stopped as `kill PID` stops it.
    server = start_service(["ingest-api", "--port", str(port)], env, work / "server.log", False)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server)
        with httpx.Client(base_url=base, timeout=600) as client:
            # One small upload first: what the first upload imports and opens (door processes,
            # the object store, the job workers) is start-up, not load.
            warm = client.post(
                "/v1/documents",
                files={"files": ("warm-up.md", b"# Warm-up\n\nOne line.\n")},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert warm.status_code == 202, warm.text
            time.sleep(5)
            rss_start = rss_mb([server.pid])
            idle = [readyz(client) for _ in range(200)]
            statuses: list[int] = []
            rss: list[float] = []
            done = threading.Event()

            def send(path: Path) -> None:
                with httpx.Client(base_url=base, timeout=600) as own:
                    response = own.post(
                        "/v1/documents",
                        files={"files": (path.name, path.read_bytes())},
                        headers={"Authorization": f"Bearer {key}"},
                    )
                    statuses.append(response.status_code)

            def sample() -> None:
                while not done.is_set():
                    rss.append(rss_mb([server.pid]))
                    time.sleep(0.1)

            # The poller is a process of its own: in this one it would wait for the GIL behind
            # the ten senders encoding their bodies, and time them, not the server.
            context = multiprocessing.get_context("spawn")
            stop_polling = context.Event()
            receiver, sender = context.Pipe(duplex=False)
            poller = context.Process(target=poll, args=(base, stop_polling, sender))
            poller.start()
            assert receiver.recv() == "ready"
            watchers = [threading.Thread(target=sample)]
            for thread in watchers:
                thread.start()
            started = time.perf_counter()
            senders = [threading.Thread(target=send, args=(p,)) for p in files]
            for thread in senders:
                thread.start()
            for thread in senders:
                thread.join()
            wall = time.perf_counter() - started
            done.set()
            stop_polling.set()
            loaded, alive = receiver.recv()
            poller.join()
            for thread in watchers:
                thread.join()
            time.sleep(10)
            rss_after = rss_mb([server.pid])
    finally:
        stop_service(server, group=False)
    under_load = summary(loaded)
    idle_summary = summary(idle)
    return {
        "uploads": uploads,
        "upload_mb": round(sum(p.stat().st_size for p in files) / uploads / 1024 / 1024, 1),
        "statuses": sorted(statuses),
        "upload_wall_s": round(wall, 2),
        "readyz_idle": idle_summary,
        "readyz_under_load": under_load,
        "readyz_p99_ratio": round(under_load["p99_ms"] / idle_summary["p99_ms"], 1),
        "healthz_under_load": summary(alive),
        "target_readyz_p99_ms": 50,
        "rss_mb": {"start": rss_start, "peak": max(rss, default=0.0), "after": rss_after},
        "rss_after_over_start": round(rss_after / rss_start, 3) if rss_start else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--uploads", type=int, default=10)
    parser.add_argument("--mb", type=int, default=25)
    args = parser.parse_args(argv)
    result = run(args.uploads, args.mb)
    write_json(RESULTS / "upload_door.json", result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
