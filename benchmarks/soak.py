"""Soak under load and faults: query clients and uploading clients against the real services,
with a `kill -9` of a parse worker and of the upload API in the middle and a key revoked.

    python -m benchmarks.soak [--minutes 10] [--query-clients 30] [--upload-clients 10]

1. A fresh home: the sample documents (`data/sample`) ingested into namespace "soak" with
   `corpus ingest`, keys made with `corpus keys create` (a reader, a writer, and a "victim"
   reader that is revoked during the run).
2. `corpus serve` and `corpus ingest-api` started as their own process groups, as an operator
   starts them (short job leases, so interrupted jobs come back within the run).
3. Query clients (threads, keep-alive) ask `POST /v1/search` in a closed loop; one more client
   asks with the victim key. Uploading clients each upload a new small document, wait for its
   job to end (at most one job lease: a job the killed worker held comes back only after its
   lease, and the client must not stall on it), and upload the next (a refused connection
   while the upload API is down is retried and not counted as accepted).
4. At 30 % of the run a parse worker (the upload API's ingest process) is killed with SIGKILL;
   at 50 % the upload API itself, and it is started again 2 s later; at 70 % the victim key is
   revoked with `corpus keys revoke`.
5. After the run: every accepted job must end `done` or `error`; no process of the killed API
   may be left; RSS (the upload API process; the query service's processes together) is read
   after a warm-up (one upload processed and published, its revision served, the queries
   asked once) before the load and 10 s after the last job ended.

`run_soak` is also what the short soak of the test suite runs (`test_soak.py`); the
benchmark writes benchmarks/results/soak.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import tempfile
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import (
    REPO,
    RESULTS,
    corpus,
    create_key,
    free_port,
    home_env,
    rss_mb,
    running_service,
    start_service,
    stop_service,
    wait_ready,
    write_json,
)
from corpus_pipeline.pipeline.processes import cmdline, start_time

NAMESPACE = "soak"
QUERIES = [
    "How do tufted ducks feed?",
    "diving ducks",
    "table of results",
    "What does the wiki say about history?",
    "field notes",
    "mallards in winter",
]


@dataclass
class SoakConfig:
    seconds: float = 600.0
    query_clients: int = 30
    upload_clients: int = 10
    job_lease_seconds: int = 15
    job_heartbeat_seconds: int = 3


@dataclass
class _Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    query_ms: list[float] = field(default_factory=list)
    query_failures: list[str] = field(default_factory=list)
    accepted: dict[str, float] = field(default_factory=dict)  # job id → when accepted
    refused_while_down: int = 0
    victim: list[tuple[float, int]] = field(default_factory=list)  # (time, status)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, IndexError, ValueError):
            ppid = int(stat.read_bytes().rsplit(b")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(stat.parent.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree = _children()
    out: list[int] = []
    frontier = [pid]
    while frontier:
        for child in tree.get(frontier.pop(), []):
            out.append(child)
            frontier.append(child)
    return out


def cpu_ticks(pid: int) -> int:
    """User and system time of a process so far (clock ticks; 0 when it is gone)."""
    with suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    return 0


def _document(rng: random.Random, client: int, number: int) -> tuple[str, bytes]:
    birds = ["mallard", "goldeneye", "teal", "wigeon", "pintail", "scaup", "eider", "smew"]
    bird = rng.choice(birds)
    text = (
        f"# Survey {client}-{number}: the {bird}\n\n## Counts\n\n"
        f"{rng.randint(2, 400)} {bird}s were counted on lake {rng.randint(1, 90)} "
        f"in week {number}.\n\n## Notes\n\nThe {bird} fed on "
        f"{rng.choice(['pondweed', 'mussels', 'seeds', 'insects'])} near the shore.\n"
    )
    return f"survey-{client}-{number}.md", text.encode()


def run_soak(config: SoakConfig, home: Path | None = None) -> dict[str, Any]:
    home = home or Path(tempfile.mkdtemp(prefix="soak-"))
    env = home_env(
        home,
        CORPUS_NAMESPACE=NAMESPACE,
        CORPUS_JOB_LEASE_SECONDS=str(config.job_lease_seconds),
        CORPUS_JOB_HEARTBEAT_SECONDS=str(config.job_heartbeat_seconds),
        CORPUS_RELOAD_SECONDS="1",
        CORPUS_MAX_UPLOADS_PER_KEY=str(max(4, config.upload_clients)),
    )
    corpus(env, "ingest", str(REPO / "data" / "sample"))
    reader = create_key(env, "reader", read=[NAMESPACE])
    writer = create_key(env, "writer", write=[NAMESPACE])
    victim = create_key(env, "victim", read=[NAMESPACE])
    query_url = f"http://127.0.0.1:{free_port()}"
    ingest_port = free_port()
    ingest_url = f"http://127.0.0.1:{ingest_port}"
    tally = _Tally()
    stop = threading.Event()
    events: dict[str, float] = {}
    with running_service(
        ["serve", "--port", query_url.rsplit(":", 1)[1], "--workers", "2"], env, home / "serve.log"
    ) as serve:
        wait_ready(query_url, serve)
        api_args = ["ingest-api", "--port", str(ingest_port)]
        # Not a process group: its workers must die with it, unaided.
        api = start_service(api_args, env, home / "ingest-api.log", group=False)
        try:
            wait_ready(ingest_url, api)

            def query(key: str, record_victim: bool) -> None:
                rng = random.Random(key + str(threading.get_ident()))
                with httpx.Client(base_url=query_url, timeout=30) as client:
                    while not stop.is_set():
                        body = {"query": rng.choice(QUERIES), "namespace": NAMESPACE, "top_k": 5}
                        started = time.perf_counter()
                        error = ""
                        try:
                            response = client.post(
                                "/v1/search", json=body, headers={"Authorization": f"Bearer {key}"}
                            )
                            status = response.status_code
                        except httpx.HTTPError as exc:
                            status, response = -1, None
                            error = f"{type(exc).__name__}"
                        took = (time.perf_counter() - started) * 1000
                        with tally.lock:
                            if record_victim:
                                tally.victim.append((time.monotonic(), status))
                            elif status == 200:
                                tally.query_ms.append(took)
                            else:
                                detail = response.text[:200] if response is not None else error
                                tally.query_failures.append(f"{status}: {detail}")
                        if record_victim:
                            time.sleep(0.1)

            def upload(number: int) -> None:
                rng = random.Random(number)
                headers = {"Authorization": f"Bearer {writer}"}
                count = 0
                with httpx.Client(base_url=ingest_url, timeout=60) as client:
                    while not stop.is_set():
                        name, data = _document(rng, number, count)
                        try:
                            response = client.post(
                                "/v1/documents",
                                files={"files": (name, data)},
                                data={"namespace": NAMESPACE},
                                headers=headers,
                            )
                        except httpx.HTTPError:
                            with tally.lock:
                                tally.refused_while_down += 1
                            time.sleep(0.5)
                            continue
                        if response.status_code != 202:
                            time.sleep(0.5)
                            continue
                        count += 1
                        [queued] = response.json()["files"]
                        job = str(queued["job_id"])
                        with tally.lock:
                            tally.accepted[job] = time.monotonic()
                        waited_until = time.monotonic() + config.job_lease_seconds
                        while not stop.is_set() and time.monotonic() < waited_until:
                            with suppress(httpx.HTTPError):
                                status = client.get(f"/v1/jobs/{job}", headers=headers).json()
                                if status.get("status") in ("done", "error"):
                                    break
                            time.sleep(0.5)

            threads = [
                threading.Thread(target=query, args=(reader, False), daemon=True)
                for _ in range(config.query_clients)
            ]
            threads.append(threading.Thread(target=query, args=(victim, True), daemon=True))
            threads += [
                threading.Thread(target=upload, args=(n,), daemon=True)
                for n in range(config.upload_clients)
            ]
            # Warm-up: one upload processed and published (the services have swapped in a new
            # revision once) and the first queries, then the memory before the load.
            with httpx.Client(base_url=ingest_url, timeout=60) as client:
                headers = {"Authorization": f"Bearer {writer}"}
                response = client.post(
                    "/v1/documents",
                    files={"files": ("warm-up.md", b"# Warm-up\n\nOne teal on the pond.\n")},
                    data={"namespace": NAMESPACE},
                    headers=headers,
                )
                job = str(response.json()["files"][0]["job_id"])
                while client.get(f"/v1/jobs/{job}", headers=headers).json()["status"] not in (
                    "done",
                    "error",
                ):
                    time.sleep(0.5)
            time.sleep(3)  # the query service's reload
            with httpx.Client(base_url=query_url, timeout=30) as client:
                for text in QUERIES:
                    client.post(
                        "/v1/search",
                        json={"query": text, "namespace": NAMESPACE},
                        headers={"Authorization": f"Bearer {reader}"},
                    )
            time.sleep(2)
            rss_start = {
                "upload_api": rss_mb([api.pid]),
                "query_service": rss_mb([serve.pid, *descendants(serve.pid)]),
            }
            started = time.monotonic()
            for thread in threads:
                thread.start()

            def at(share: float) -> None:
                time.sleep(max(0.0, started + share * config.seconds - time.monotonic()))

            at(0.3)
            # The parse worker: of the processes the upload API's forkserver forked, the one
            # that has worked the most (the ingest process; door processes barely run).
            forkserver = [p for p in descendants(api.pid) if b"forkserver" in cmdline(p)]
            forked = [p for s in forkserver for p in _children().get(s, [])]
            for pid in sorted(forked, key=cpu_ticks, reverse=True)[:1]:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    events["parse_worker_killed"] = time.monotonic() - started

            at(0.5)
            left_behind = {p: start_time(p) for p in descendants(api.pid)}
            api.send_signal(signal.SIGKILL)
            api.wait()
            events["upload_api_killed"] = time.monotonic() - started
            time.sleep(2)
            api = start_service(api_args, env, home / "ingest-api.log", group=False)
            wait_ready(ingest_url, api)
            events["upload_api_restarted"] = time.monotonic() - started
            deadline = time.monotonic() + 15
            still = [p for p, s in left_behind.items() if s is not None and start_time(p) == s]
            while still and time.monotonic() < deadline:
                time.sleep(0.2)
                still = [p for p, s in left_behind.items() if start_time(p) == s]

            at(0.7)
            corpus(env, "keys", "revoke", "victim")
            revoked = time.monotonic()
            events["key_revoked"] = revoked - started

            at(1.0)
            # On a busy machine the run may reach its end before the victim asked again after
            # the revocation: wait for that event (bounded), not for the clock.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with tally.lock:
                    if any(t >= revoked and s == 401 for t, s in tally.victim):
                        break
                time.sleep(0.1)
            stop.set()
            for thread in threads:
                thread.join(timeout=90)
            ended = time.monotonic()
            # Every accepted job to an end (leases of the killed API's jobs run out first).
            outcome: dict[str, str] = {}
            with httpx.Client(base_url=ingest_url, timeout=30) as client:
                headers = {"Authorization": f"Bearer {writer}"}
                deadline = time.monotonic() + 300 + 3 * config.job_lease_seconds
                pending = set(tally.accepted)
                while pending and time.monotonic() < deadline:
                    for job in sorted(pending):
                        with suppress(httpx.HTTPError):
                            status = client.get(f"/v1/jobs/{job}", headers=headers).json()
                            if status.get("status") in ("done", "error"):
                                outcome[job] = status["status"]
                                pending.discard(job)
                    time.sleep(1)
                state = client.get(f"/v1/namespaces/{NAMESPACE}/ingestion", headers=headers)
            time.sleep(10)
            rss_after = {
                "upload_api": rss_mb([api.pid]),
                "query_service": rss_mb([serve.pid, *descendants(serve.pid)]),
            }
        finally:
            stop.set()
            stop_service(api, group=False)
    refused_after = [t - revoked for t, s in tally.victim if t >= revoked and s == 401]
    served_after = [t - revoked for t, s in tally.victim if t >= revoked and s == 200]
    first_refusal = min(refused_after, default=None)
    served_after_refusal = (
        [t for t in served_after if t > first_refusal] if first_refusal is not None else []
    )
    ms = sorted(tally.query_ms)
    return {
        "config": vars(config),
        "seconds": round(ended - started, 1),
        "events_s": {k: round(v, 1) for k, v in events.items()},
        "queries": len(ms) + len(tally.query_failures),
        "queries_failed": len(tally.query_failures),
        "query_failures": tally.query_failures[:20],
        "query_p50_ms": round(statistics.median(ms), 1) if ms else None,
        "query_p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 1) if ms else None,
        "uploads_accepted": len(tally.accepted),
        "uploads_accepted_before_api_killed": sum(
            1 for t in tally.accepted.values() if t - started < events["upload_api_killed"]
        ),
        "uploads_accepted_after_api_restarted": sum(
            1 for t in tally.accepted.values() if t - started >= events["upload_api_restarted"]
        ),
        "uploads_refused_while_down": tally.refused_while_down,
        "jobs_done": sum(1 for s in outcome.values() if s == "done"),
        "jobs_error": sum(1 for s in outcome.values() if s == "error"),
        "jobs_unfinished": len(tally.accepted) - len(outcome),
        "namespace_state": state.json().get("state") if state.status_code == 200 else None,
        "revoked_key_refused_after_s": round(min(refused_after), 2) if refused_after else None,
        "revoked_key_served_after_revoke": len(served_after),
        "revoked_key_last_served_s": round(max(served_after), 2) if served_after else None,
        "revoked_key_served_after_refusal": len(served_after_refusal),
        "processes_left_by_killed_api": still,
        "rss_mb_start": rss_start,
        "rss_mb_after": rss_after,
        "rss_after_over_start": {
            k: round(rss_after[k] / rss_start[k], 3) if rss_start[k] else None for k in rss_start
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--query-clients", type=int, default=30)
    parser.add_argument("--upload-clients", type=int, default=10)
    args = parser.parse_args(argv)
    config = SoakConfig(args.minutes * 60, args.query_clients, args.upload_clients)
    result = run_soak(config)
    write_json(RESULTS / "soak.json", result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
