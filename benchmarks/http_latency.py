"""HTTP latency of the query service (`POST /v1/search`) next to the in-process library call.

    python -m benchmarks.http_latency [--size 100000] [--duration 10] [--clients 1,8,32]

1. Gets a published namespace of `--size` chunk positions through `benchmarks.harness.synthetic`
   (`ensure_corpus` + `ensure_published`, cached under --workdir, default /tmp/corpus-bench).
   The service reads it through a private CORPUS_HOME (a temporary directory): a copy of the
   namespace's CURRENT.json (so the revision is pinned even if someone republishes the shared
   cache meanwhile) and symlinks to its `tantivy/` and `lance/` folders. The service's access
   statistics (SQLite) therefore land in the temporary home, never in the shared cache.
2. Starts the real service with the command, `corpus serve --port P --workers N` (settings from
   CORPUS_* variables), on 127.0.0.1, a free port, with --server-workers processes (default as
   `corpus serve`: one per usable core; access log off; output to a log file). No API keys
   file, open access -> loopback anonymous access. The answer cache is OFF
   (`CORPUS_CACHE_MAX_ENTRIES=0`), so every request runs classic search and serialises anew.
3. Per concurrency level, a load generator in ANOTHER process (multiprocessing, spawn) runs N
   threads, each with its own keep-alive `httpx.Client`, in a closed loop (no think time):
   --warmup seconds unrecorded, then --duration seconds recorded. Queries come from
   `synthetic.make_queries` (same seed, same mix), top_k=10, one pre-encoded JSON body each.
4. In-process, single thread, same revision, same queries: `QueryService.search` (what the route
   runs: classic search + JSON bytes) and `classic_search` alone, measured once before and once
   after the 1-client level; the HTTP overhead is HTTP p50 at 1 client / in-process p50.
5. A transport baseline: `GET /healthz` at 1 client (framework + loopback + client cost).
   Then, side by side in the same run, the target level (8 clients) against a server with each
   of --compare-workers process counts (default 1: what one process alone achieves).
6. If the target is missed (or with --profile), a one-process instrumented server instance is
   started and fed an 8-client burst twice: once with stage timers only (ASGI time, executor
   queue wait, executor run, classic search) and once with cProfile on the event-loop thread and
   on every executor thread. This diagnosis wraps the service's own objects in a child of this
   module (`--serve --instrument`): the one place a benchmark reaches inside the service.
   Results in benchmarks/results/http_latency_profile.txt.

Writes benchmarks/results/http_latency.json and prints a markdown table. The server process is
always terminated at the end (also on errors or Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import cProfile
import io
import json
import os
import pstats
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    REPO,
    RESULTS,
    TOP_K,
    free_port,
    home_env,
    log,
    machine_facts,
    percentile,
    start_service,
    stop_service,
    write_json,
)
from benchmarks.harness import synthetic as syn

TARGET_P50_MS = 15.0
TARGET_CLIENTS = 8
TARGET_SIZE = 100_000
PROFILE_CLIENTS = 8
PROFILE_SECONDS = 6.0
BASELINE_SECONDS = 3.0
READY_TIMEOUT = 180.0
HTTP_TIMEOUT = 30.0

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def summary(values_ms: list[float]) -> dict[str, Any]:
    if not values_ms:
        return {"n": 0}
    return {
        "n": len(values_ms),
        "p50_ms": round(percentile(values_ms, 50), 3),
        "p95_ms": round(percentile(values_ms, 95), 3),
        "p99_ms": round(percentile(values_ms, 99), 3),
        "mean_ms": round(statistics.fmean(values_ms), 3),
        "max_ms": round(max(values_ms), 3),
    }


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc), in seconds; 0.0 when unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its descendants (uvicorn's worker processes)."""
    total = proc_cpu_seconds(pid)
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in task.read_text().split():
                total += tree_cpu_seconds(int(child))
    return total


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat; 0.0 when unavailable)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# -- the server child ------------------------------------------------------------------------


def service_settings(home: Path, service_workers: int) -> Any:
    from query_service.config import ServiceSettings

    return ServiceSettings(
        home=home,
        # Explicit, so a CORPUS_API_KEYS_FILE in the environment cannot turn keys on: the file
        # does not exist, and open access serves the local user on loopback.
        api_keys_file=home / "service" / "api_keys.json",
        open_access=True,
        service_workers=service_workers,
        cache_max_entries=0,
    )


@dataclass
class _Stages:
    """Per-request stage timings of the instrumented server (seconds)."""

    asgi: list[float]
    before_submit: list[float]
    queue_wait: list[float]
    executor_run: list[float]
    service_search: list[float]
    classic_search: list[float]


class _Instrument:
    """Stage timers and per-thread profilers, switched on and off by SIGUSR1/SIGUSR2.

    The control file names the window: a label starting with "profile" adds cProfile on the
    event-loop thread and on each executor thread to the timers."""

    def __init__(self, control: Path, out_prefix: Path) -> None:
        self.control = control
        self.out_prefix = out_prefix
        self.active = False
        self.profiling = False
        self.label = ""
        self.stages = _Stages([], [], [], [], [], [])
        self.loop_profiler: cProfile.Profile | None = None
        self.thread_profilers: list[cProfile.Profile] = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def start(self, *_: Any) -> None:
        self.label = self.control.read_text().strip()
        self.stages = _Stages([], [], [], [], [], [])
        self.thread_profilers = []
        self.profiling = self.label.startswith("profile")
        if self.profiling:
            self.loop_profiler = cProfile.Profile()
            self.loop_profiler.enable()  # signal handlers run on the main (event-loop) thread
        self.active = True

    def stop(self, *_: Any) -> None:
        self.active = False
        mode = self.label
        if self.loop_profiler is not None:
            self.loop_profiler.disable()
        data = {k: [round(v * 1000, 4) for v in vs] for k, vs in vars(self.stages).items()}
        Path(f"{self.out_prefix}-{mode}.json").write_text(json.dumps(data), encoding="utf-8")
        if self.profiling and self.loop_profiler is not None:
            self.loop_profiler.dump_stats(f"{self.out_prefix}-loop.prof")
            with self._lock:
                profilers = list(self.thread_profilers)
            for i, prof in enumerate(profilers):
                prof.dump_stats(f"{self.out_prefix}-worker{i}.prof")
        self.loop_profiler = None
        self.profiling = False
        Path(f"{self.out_prefix}-{mode}.done").write_text("ok", encoding="utf-8")

    def thread_profiler(self) -> cProfile.Profile:
        prof: cProfile.Profile | None = getattr(self._local, "prof", None)
        if prof is None or prof not in self.thread_profilers:
            prof = cProfile.Profile()
            self._local.prof = prof
            with self._lock:
                self.thread_profilers.append(prof)
        return prof

    def record(self, stage: str, seconds: float) -> None:
        if self.active:
            getattr(self.stages, stage).append(seconds)


class _TimedExecutor(ThreadPoolExecutor):
    """The service's worker pool, timing queue wait and run of every task."""

    def __init__(self, max_workers: int, instrument: _Instrument) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="query")
        self.instrument = instrument

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        queued = time.perf_counter()
        inst = self.instrument
        request_started = _REQUEST_STARTED.get()
        if request_started is not None:  # submit runs in the route's task context
            inst.record("before_submit", queued - request_started)

        def run() -> Any:
            started = time.perf_counter()
            inst.record("queue_wait", started - queued)
            prof = inst.thread_profiler() if inst.profiling else None
            if prof is not None:
                prof.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                if prof is not None:
                    prof.disable()
                inst.record("executor_run", time.perf_counter() - started)

        return super().submit(run)


_REQUEST_STARTED: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "request_started", default=None
)


def _timing_middleware(app: ASGIApp, inst: _Instrument) -> ASGIApp:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/v1/search":
            await app(scope, receive, send)
            return
        started = time.perf_counter()
        _REQUEST_STARTED.set(started)

        async def timed_send(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                inst.record("asgi", time.perf_counter() - started)

        await app(scope, receive, timed_send)

    return wrapped


def serve_instrumented(args: argparse.Namespace) -> None:
    """Child process: one server process like `corpus serve`'s, its service wrapped in stage
    timers and profilers (the diagnosis of step 6)."""
    import logging

    import uvicorn

    from query_service import service as service_module
    from query_service.api.app import create_app
    from query_service.service import QueryService

    settings = service_settings(args.home, args.service_workers)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    service = QueryService(settings)
    inst = _Instrument(Path(args.instrument + ".control"), Path(args.instrument))
    service.executor.shutdown()
    service.executor = _TimedExecutor(settings.service_workers, inst)
    real_classic = vars(service_module)["classic_search"]
    real_search = service.search_with_revision

    def timed_classic(*a: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return real_classic(*a, **kw)
        finally:
            inst.record("classic_search", time.perf_counter() - started)

    def timed_search(*a: Any, **kw: Any) -> tuple[bytes, int]:
        started = time.perf_counter()
        try:
            return real_search(*a, **kw)
        finally:
            inst.record("service_search", time.perf_counter() - started)

    vars(service_module)["classic_search"] = timed_classic  # module global used by search()
    service.search_with_revision = timed_search  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR1, inst.start)
    signal.signal(signal.SIGUSR2, inst.stop)
    app = _timing_middleware(create_app(settings, service), inst)
    # One process (the profiler needs one), otherwise as `corpus serve`: access log off.
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="info", access_log=False)


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path


@contextlib.contextmanager
def running_server(
    home: Path,
    service_workers: int,
    log_path: Path,
    instrument: str | None = None,
    server_workers: int = 1,
) -> Iterator[Server]:
    """`corpus serve` on `home` (or, with `instrument`, the instrumented child of this module)
    until every server process answers /readyz; stopped on the way out."""
    import httpx

    port = free_port()
    if instrument:
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.http_latency",
            "--serve",
            "--home",
            str(home),
            "--port",
            str(port),
            "--service-workers",
            str(service_workers),
            "--instrument",
            instrument,
        ]
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(
                cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
            )
    else:
        env = home_env(
            home,
            CORPUS_OPEN_ACCESS="true",
            CORPUS_SERVICE_WORKERS=str(service_workers),
            CORPUS_CACHE_MAX_ENTRIES="0",
        )
        args = ["serve", "--port", str(port), "--workers", str(server_workers)]
        process = start_service(args, env, log_path)
    server = Server(process, f"http://127.0.0.1:{port}", log_path)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        ready_in_a_row = 0  # with several worker processes, each must answer
        with httpx.Client(base_url=server.base_url, timeout=2.0) as client:
            while ready_in_a_row < 10 * server_workers:
                if process.poll() is not None:
                    raise RuntimeError(f"server exited ({process.returncode}); see {log_path}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server not ready after {READY_TIMEOUT}s; see {log_path}")
                try:
                    ok = client.get("/readyz", headers={"connection": "close"}).status_code
                    ready_in_a_row = ready_in_a_row + 1 if ok == 200 else 0
                except httpx.TransportError:
                    ready_in_a_row = 0
                if ready_in_a_row == 0:
                    time.sleep(0.1)
        yield server
    finally:
        # The server runs in its own session: its group holds it and its worker processes.
        stop_service(process, timeout=15)


# -- the load generator child ----------------------------------------------------------------


@dataclass(frozen=True)
class Level:
    clients: int
    warmup: float
    duration: float
    method: str = "POST"
    path: str = "/v1/search"


def _client_thread(
    base_url: str,
    level: Level,
    bodies: list[bytes],
    offset: int,
    warm_end: float,
    end: float,
    out: dict[str, Any],
) -> None:
    import httpx

    latencies: list[float] = []
    ends: list[float] = []
    errors: list[str] = []
    warm_errors = 0
    revisions: set[str] = set()
    headers = {"content-type": "application/json"}
    i = offset
    with httpx.Client(base_url=base_url, timeout=HTTP_TIMEOUT) as client:
        while True:
            started = time.perf_counter()
            if started >= end:
                break
            error = None
            try:
                if level.method == "POST":
                    body = bodies[i % len(bodies)]
                    response = client.post(level.path, content=body, headers=headers)
                else:
                    response = client.get(level.path)
                response.read()
                if response.status_code != 200:
                    error = f"HTTP {response.status_code}: {response.text[:200]}"
                elif level.path == "/v1/search":
                    revisions.add(response.headers.get("x-corpus-revision", "?"))
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"[:200]
            finished = time.perf_counter()
            i += 1
            if started < warm_end:
                warm_errors += error is not None
                continue
            if error is not None:
                errors.append(error)
            else:
                latencies.append((finished - started) * 1000)
                ends.append(finished)
    out.update(
        latencies=latencies,
        ends=ends,
        errors=errors,
        warm_errors=warm_errors,
        revisions=sorted(revisions),
    )


def load_child(
    base_url: str,
    level: Level,
    bodies: list[bytes],
    server_pid: int,
    result_path: str,
) -> None:
    """Runs in its own process: N closed-loop client threads, then writes a JSON result."""
    import httpx  # noqa: F401  (import cost outside the timed window)

    t0 = time.perf_counter() + 0.2
    warm_end = t0 + level.warmup
    end = warm_end + level.duration
    outs: list[dict[str, Any]] = [{} for _ in range(level.clients)]
    step = max(1, len(bodies) // level.clients)
    threads = [
        threading.Thread(
            target=_client_thread,
            args=(base_url, level, bodies, i * step, warm_end, end, outs[i]),
            daemon=True,
        )
        for i in range(level.clients)
    ]
    for thread in threads:
        thread.start()
    time.sleep(max(0.0, warm_end - time.perf_counter()))
    server_cpu0 = tree_cpu_seconds(server_pid)
    self_cpu0 = time.process_time()
    busy0 = machine_busy_seconds()
    load0 = os.getloadavg()[0]
    time.sleep(max(0.0, end - time.perf_counter()))
    server_cpu1 = tree_cpu_seconds(server_pid)
    self_cpu1 = time.process_time()
    busy1 = machine_busy_seconds()
    for thread in threads:
        thread.join(timeout=HTTP_TIMEOUT + 5)
    latencies = [x for o in outs for x in o.get("latencies", [])]
    ends = [x for o in outs for x in o.get("ends", [])]
    errors = [x for o in outs for x in o.get("errors", [])]
    elapsed = (max(ends) - warm_end) if ends else level.duration
    window = end - warm_end
    result = {
        "clients": level.clients,
        "method": level.method,
        "path": level.path,
        "warmup_s": level.warmup,
        "duration_s": level.duration,
        "requests": len(latencies),
        "errors": len(errors),
        "error_samples": errors[:5],
        "warmup_errors": sum(o.get("warm_errors", 0) for o in outs),
        "threads_alive_after_join": sum(t.is_alive() for t in threads),
        "throughput_rps": round(len(latencies) / elapsed, 1) if elapsed > 0 else None,
        **summary(latencies),
        "revisions_seen": sorted({r for o in outs for r in o.get("revisions", [])}),
        # CPU over the recorded window, in cores (2.0 = two cores fully busy).
        "server_cpu_cores": round((server_cpu1 - server_cpu0) / window, 2),
        "loadgen_cpu_cores": round((self_cpu1 - self_cpu0) / window, 2),
        # Everything else on the machine (other jobs compete for the same cores).
        "other_cpu_cores": round(
            ((busy1 - busy0) - (server_cpu1 - server_cpu0) - (self_cpu1 - self_cpu0)) / window, 2
        ),
        "machine_cores": os.cpu_count(),
        "load_avg_1m": {"start": round(load0, 2), "end": round(os.getloadavg()[0], 2)},
        "latencies_ms": [round(x, 3) for x in latencies],
    }
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")


def run_level(server: Server, level: Level, bodies: list[bytes], tmp: Path) -> dict[str, Any]:
    import multiprocessing as mp

    result_path = tmp / f"level-{level.path.strip('/').replace('/', '-')}-{level.clients}.json"
    result_path.unlink(missing_ok=True)
    process = mp.get_context("spawn").Process(
        target=load_child,
        args=(server.base_url, level, bodies, server.process.pid, str(result_path)),
    )
    process.start()
    process.join(timeout=level.warmup + level.duration + HTTP_TIMEOUT + 60)
    if process.is_alive():
        process.terminate()
        process.join(timeout=10)
        raise RuntimeError(f"load generator for {level} did not finish")
    if process.exitcode != 0 or not result_path.is_file():
        raise RuntimeError(f"load generator failed (exit code {process.exitcode})")
    data: dict[str, Any] = json.loads(result_path.read_text(encoding="utf-8"))
    return data


# -- in-process ------------------------------------------------------------------------------


def measure_in_process(service: Any, requests: list[Any]) -> dict[str, list[float]]:
    """Single thread: QueryService.search (classic search + JSON bytes, cache off) and
    classic_search alone on the same served revision, warm-up pass first."""
    from query_service.retrieval.classic import classic_search

    principal = service.keys.principal_for(None)
    revision = service.revision(principal, requests[0].namespace)
    for request in requests:
        service.search(principal, request)
    out: dict[str, list[float]] = {"service_search": [], "classic_search": []}
    for i, request in enumerate(requests):
        calls = (
            ("service_search", lambda r=request: service.search(principal, r)),
            ("classic_search", lambda r=request: classic_search(revision, r)),
        )
        for name, call in calls if i % 2 == 0 else reversed(calls):
            started = time.perf_counter_ns()
            call()
            out[name].append((time.perf_counter_ns() - started) / 1e6)
    return out


# -- setup -----------------------------------------------------------------------------------


def pinned_home(published_ns: Path, namespace: str, home: Path) -> dict[str, Any]:
    """A private CORPUS_HOME serving the shared namespace's current revision, pinned."""
    ns_dir = home / "published" / namespace
    ns_dir.mkdir(parents=True)
    pointer = json.loads((published_ns / "CURRENT.json").read_text(encoding="utf-8"))
    (ns_dir / "CURRENT.json").write_text(json.dumps(pointer), encoding="utf-8")
    for name in ("tantivy", "lance"):
        (ns_dir / name).symlink_to(published_ns / name, target_is_directory=True)
    return dict(pointer)


def server_machine_facts() -> dict[str, Any]:
    """The machine, the HTTP stack's package versions and the load at the start."""
    facts = machine_facts(("fastapi", "starlette", "uvicorn", "httpx", "uvloop", "httptools"))
    facts["load_avg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    return facts


def check_answers(server: Server, service: Any, requests: list[Any], n: int) -> int:
    """HTTP answers equal the in-process ones (chunk ids, in order) for the first n queries."""
    import httpx

    from query_service.retrieval.classic import classic_search

    principal = service.keys.principal_for(None)
    revision = service.revision(principal, requests[0].namespace)
    mismatches = 0
    with httpx.Client(base_url=server.base_url, timeout=HTTP_TIMEOUT) as client:
        for request in requests[:n]:
            response = client.post(
                "/v1/search",
                content=request.model_dump_json(),
                headers={"content-type": "application/json"},
            )
            response.raise_for_status()
            got = [r["chunk_id"] for r in response.json()["results"]]
            want = [r.chunk_id for r in classic_search(revision, request).results]
            mismatches += got != want
    return mismatches


# -- profile ---------------------------------------------------------------------------------


def _breakdown(window: dict[str, Any]) -> dict[str, Any]:
    """Mean ms per request in each part of the server's path (timing-only window)."""
    means = {k: v.get("mean_ms", 0.0) for k, v in window["server_stages"].items()}
    client_mean = window["client"].get("mean_ms") or 0.0
    loop_after = means["asgi"] - means["before_submit"] - means["queue_wait"]
    return {
        "clients": window["client"]["clients"],
        "client_observed": client_mean,
        "outside_app (client + loopback + uvicorn parse/write)": round(
            client_mean - means["asgi"], 3
        ),
        "app_total (ASGI call -> last body byte sent)": means["asgi"],
        "before_submit (body, validation, dependencies, _require_unicode)": means["before_submit"],
        "executor_queue_wait": means["queue_wait"],
        "executor_run (QueryService.search)": means["executor_run"],
        "  of which classic_search": means["classic_search"],
        "  of which cache key + JSON dump + stats": round(
            means["service_search"] - means["classic_search"], 3
        ),
        "after_executor (wake-up, Response, send)": round(loop_after - means["executor_run"], 3),
    }


def profile_phase(
    home: Path,
    service_workers: int,
    bodies: list[bytes],
    tmp: Path,
    out_txt: Path,
) -> dict[str, Any]:
    """An instrumented server: stage timers at 1 and 8 clients, then cProfile at 8 clients."""
    import multiprocessing as mp

    prefix = tmp / "instr"
    control = Path(str(prefix) + ".control")
    windows: dict[str, Any] = {}
    plan = (
        ("timing-1", 1),
        (f"timing-{PROFILE_CLIENTS}", PROFILE_CLIENTS),
        ("profile", PROFILE_CLIENTS),
    )
    with running_server(home, service_workers, tmp / "server-instr.log", str(prefix)) as server:
        for label, clients in plan:
            level = Level(clients=clients, warmup=1.0, duration=PROFILE_SECONDS)
            control.write_text(label, encoding="utf-8")
            done = Path(f"{prefix}-{label}.done")
            result_path = tmp / f"profile-{label}.json"
            process = mp.get_context("spawn").Process(
                target=load_child,
                args=(server.base_url, level, bodies, server.process.pid, str(result_path)),
            )
            process.start()
            # Open the window after the client warm-up; close it after the recorded part.
            time.sleep(1.5 + level.warmup)
            os.kill(server.process.pid, signal.SIGUSR1)
            process.join(timeout=level.duration + HTTP_TIMEOUT + 60)
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)
            os.kill(server.process.pid, signal.SIGUSR2)
            deadline = time.monotonic() + 30
            while not done.is_file() and time.monotonic() < deadline:
                time.sleep(0.1)
            client = json.loads(result_path.read_text(encoding="utf-8"))
            client.pop("latencies_ms", None)
            stages = json.loads(Path(f"{prefix}-{label}.json").read_text(encoding="utf-8"))
            windows[label] = {
                "client": client,
                "server_stages": {k: summary(v) for k, v in stages.items()},
            }
    breakdowns = {
        label: _breakdown(window) for label, window in windows.items() if label.startswith("timing")
    }
    buffer = io.StringIO()
    buffer.write(
        "# Instrumented query service (cache off): where a /v1/search request's time goes\n"
    )
    for label, bd in breakdowns.items():
        buffer.write(f"\n## stage means, {label} ({bd['clients']} client(s)), ms per request\n")
        for key, value in bd.items():
            buffer.write(f"{value:>10}  {key}\n")
    loop_prof = Path(f"{prefix}-loop.prof")
    worker_profs = sorted(tmp.glob("instr-worker*.prof"))
    buffer.write(f"\n# cProfile during a {PROFILE_CLIENTS}-client burst\n")
    buffer.write("# (cProfile counts every coroutine resumption as a call in ncalls)\n")
    if loop_prof.is_file():
        buffer.write("## event-loop thread (uvicorn + FastAPI + route), by tottime\n")
        stats = pstats.Stats(str(loop_prof), stream=buffer)
        stats.sort_stats("tottime").print_stats(30)
        buffer.write("## event-loop thread, by cumulative\n")
        stats.sort_stats("cumulative").print_stats(45)
    if worker_profs:
        buffer.write(f"## executor threads ({len(worker_profs)} merged), by tottime\n")
        wstats = pstats.Stats(*[str(p) for p in worker_profs], stream=buffer)
        wstats.sort_stats("tottime").print_stats(25)
        buffer.write("## executor threads, by cumulative\n")
        wstats.sort_stats("cumulative").print_stats(30)
    out_txt.write_text(buffer.getvalue(), encoding="utf-8")
    return {"windows": windows, "breakdown_mean_ms": breakdowns, "profile_text": str(out_txt)}


# -- driver ----------------------------------------------------------------------------------


def markdown_table(result: dict[str, Any]) -> str:
    inproc = result["in_process"]
    lines = [
        "| measurement | clients | requests | req/s | p50 ms | p95 ms | p99 ms | errors "
        "| server CPU | loadgen CPU | other CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("service_search", "classic_search"):
        s = inproc[name]
        lines.append(
            f"| in-process `{name}` | 1 (thread) | {s['n']} | {1000 / s['mean_ms']:.1f} "
            f"| {s['p50_ms']:.2f} | {s['p95_ms']:.2f} | {s['p99_ms']:.2f} | 0 | | | |"
        )
    workers = result["params"]["server_workers"]
    rows = [("GET /healthz", result["baseline_healthz"])]
    rows += [(f"POST /v1/search, {workers} process(es)", lv) for lv in result["levels"]]
    rows += [
        (f"POST /v1/search, {lv['server_workers']} process(es)", lv)
        for lv in result.get("compare_workers", [])
    ]
    for name, lv in rows:
        lines.append(
            f"| {name} | {lv['clients']} | {lv['requests']} | {lv['throughput_rps']} "
            f"| {lv['p50_ms']:.2f} | {lv['p95_ms']:.2f} | {lv['p99_ms']:.2f} | {lv['errors']} "
            f"| {lv['server_cpu_cores']} | {lv['loadgen_cpu_cores']} | {lv['other_cpu_cores']} |"
        )
    return "\n".join(lines)


def verdict(result: dict[str, Any], size: int) -> dict[str, Any]:
    level = next((lv for lv in result["levels"] if lv["clients"] == TARGET_CLIENTS), None)
    errors = sum(lv["errors"] for lv in result["levels"])
    if level is None or size < TARGET_SIZE:
        return {
            "evaluated": False,
            "reason": f"needs {TARGET_CLIENTS} clients and size >= {TARGET_SIZE:,}",
            "errors": errors,
        }
    return {
        "evaluated": True,
        "size": size,
        "clients": TARGET_CLIENTS,
        "p50_ms": level["p50_ms"],
        "p50_target_ms": TARGET_P50_MS,
        "p50_ok": level["p50_ms"] < TARGET_P50_MS,
        "errors": errors,
        "errors_ok": errors == 0,
        "ok": level["p50_ms"] < TARGET_P50_MS and errors == 0,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.service import QueryService

    started = time.perf_counter()
    phases: dict[str, float] = {}
    facts = server_machine_facts()
    dirs = syn.SizeDirs(args.workdir / f"n{args.size}")
    mark = time.perf_counter()
    corpus = syn.ensure_corpus(dirs, args.size, args.seed, args.gen_workers)
    bulk = syn.ensure_published(dirs, corpus)
    phases["corpus"] = time.perf_counter() - mark
    log(f"corpus n{args.size}: cached={corpus['cached']}, published cached={bulk['cached']}")
    queries = syn.make_queries(syn.load_text_model(), args.queries, args.seed, args.questions)
    requests = [SearchRequest(query=q.text, namespace=syn.NAMESPACE, top_k=TOP_K) for q in queries]
    # What a client sends: the mode (explicit, in case requests become a tagged union of
    # modes), the query, the namespace and top_k.
    fields = {"mode", "query", "namespace", "top_k"}
    bodies = [r.model_dump_json(include=fields).encode() for r in requests]
    tmp = Path(tempfile.mkdtemp(prefix="http-latency-"))
    home = tmp / "home"
    try:
        pointer = pinned_home(dirs.published / syn.NAMESPACE, syn.NAMESPACE, home)
        log(f"serving revision {pointer['revision']} ({pointer['chunks']:,} chunks) from {home}")
        settings = service_settings(home, args.service_workers)
        service = QueryService(settings)
        service.start()
        levels: list[dict[str, Any]] = []
        inproc_runs: list[dict[str, list[float]]] = []
        try:
            mark = time.perf_counter()
            with running_server(
                home,
                args.service_workers,
                tmp / "server.log",
                server_workers=args.server_workers,
            ) as server:
                phases["server_start"] = time.perf_counter() - mark
                log(f"server ready at {server.base_url} (pid {server.process.pid})")
                mismatches = check_answers(server, service, requests, 20)
                mark = time.perf_counter()
                inproc_runs.append(measure_in_process(service, requests))
                baseline = run_level(
                    server, Level(1, 1.0, BASELINE_SECONDS, "GET", "/healthz"), bodies, tmp
                )
                log(f"baseline GET /healthz: p50 {baseline['p50_ms']} ms")
                for i, clients in enumerate(args.clients):
                    level = run_level(
                        server, Level(clients, args.warmup, args.duration), bodies, tmp
                    )
                    levels.append(level)
                    log(
                        f"{clients:>3} clients: {level['requests']} req, "
                        f"{level['throughput_rps']} req/s, p50 {level.get('p50_ms')} "
                        f"p95 {level.get('p95_ms')} p99 {level.get('p99_ms')} ms, "
                        f"errors {level['errors']}, server CPU {level['server_cpu_cores']}"
                    )
                    if i == 0:
                        inproc_runs.append(measure_in_process(service, requests))
                phases["measure"] = time.perf_counter() - mark
            server_log_tail = server.log_path.read_text(errors="replace").splitlines()[-5:]
            mark = time.perf_counter()
            compared = []
            for workers in args.compare_workers:
                with running_server(
                    home,
                    args.service_workers,
                    tmp / f"server-{workers}.log",
                    server_workers=workers,
                ) as other:
                    level = run_level(
                        other, Level(TARGET_CLIENTS, args.warmup, args.duration), bodies, tmp
                    )
                log(
                    f"{TARGET_CLIENTS:>3} clients, {workers} server process(es): "
                    f"{level['throughput_rps']} req/s, p50 {level.get('p50_ms')} ms"
                )
                compared.append({"server_workers": workers, **level})
            phases["compare_workers"] = time.perf_counter() - mark
        finally:
            service.stop()
        inproc = {
            name: summary([x for run_ in inproc_runs for x in run_[name]])
            for name in ("service_search", "classic_search")
        }
        inproc["runs"] = [  # type: ignore[assignment]
            {name: summary(r[name]) for name in r} for r in inproc_runs
        ]
        first = levels[0]
        overhead = {
            "clients": first["clients"],
            "http_p50_ms": first["p50_ms"],
            "in_process_service_search_p50_ms": inproc["service_search"]["p50_ms"],
            "in_process_classic_search_p50_ms": inproc["classic_search"]["p50_ms"],
            "ratio_http_over_service_search_p50": round(
                first["p50_ms"] / inproc["service_search"]["p50_ms"], 2
            ),
            "ratio_http_over_classic_search_p50": round(
                first["p50_ms"] / inproc["classic_search"]["p50_ms"], 2
            ),
            "added_ms_p50": round(first["p50_ms"] - inproc["service_search"]["p50_ms"], 3),
        }
        result: dict[str, Any] = {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": facts,
            "params": {
                "size": args.size,
                "chunks": pointer["chunks"],
                "documents": pointer["documents"],
                "revision": pointer["revision"],
                "workdir": str(args.workdir),
                "queries": len(queries),
                "query_mix": dict(syn.QUERY_MIX),
                "seed": args.seed,
                "top_k": TOP_K,
                "clients": args.clients,
                "warmup_s": args.warmup,
                "duration_s": args.duration,
                "service_workers": args.service_workers,
                "cache_max_entries": 0,
                "server_workers": args.server_workers,
                "server": f"`corpus serve --workers {args.server_workers}` "
                "(uvicorn, 127.0.0.1, access log off)",
                "client": "threads, one keep-alive httpx.Client each, closed loop, separate "
                "process (spawn)",
                "in_process": "single thread, same pinned revision, same queries, warm-up pass "
                "then one timed pass; measured before and after the first HTTP level",
            },
            "target": {
                "p50_ms_lt": TARGET_P50_MS,
                "clients": TARGET_CLIENTS,
                "size": TARGET_SIZE,
            },
            "answer_mismatches_http_vs_in_process_first_20": mismatches,
            "in_process": inproc,
            "baseline_healthz": {k: v for k, v in baseline.items() if k != "latencies_ms"},
            "levels": [{k: v for k, v in lv.items() if k != "latencies_ms"} for lv in levels],
            "compare_workers": [
                {k: v for k, v in lv.items() if k != "latencies_ms"} for lv in compared
            ],
            "http_overhead_at_1_client": overhead,
            "server_log_tail": server_log_tail,
        }
        result["verdict"] = verdict(result, args.size)
        missed = not result["verdict"].get("ok", True)
        if args.profile == "always" or (args.profile == "auto" and missed):
            mark = time.perf_counter()
            log("profiling an instrumented server instance (8-client bursts)")
            result["profile"] = profile_phase(
                home,
                args.service_workers,
                bodies,
                tmp,
                args.out.with_name(args.out.stem + "_profile.txt"),
            )
            phases["profile"] = time.perf_counter() - mark
            for label, bd in result["profile"]["breakdown_mean_ms"].items():
                log(f"profile {label}: {bd}")
        result["phase_seconds"] = {k: round(v, 2) for k, v in phases.items()}
        result["peak_rss_mib_this_process"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        )
        result["total_seconds"] = round(time.perf_counter() - started, 1)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from query_service.api.server import default_workers

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=100_000, help="chunk positions of the corpus")
    ap.add_argument("--duration", type=float, default=10.0, help="recorded seconds per level")
    ap.add_argument("--warmup", type=float, default=2.0, help="unrecorded seconds per level")
    ap.add_argument("--clients", default="1,8,32", help="comma-separated concurrency levels")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--service-workers", type=int, default=4, help="ServiceSettings default: 4")
    ap.add_argument(
        "--server-workers",
        type=int,
        default=default_workers(),
        help="server processes (default as `corpus serve`: one per usable core)",
    )
    ap.add_argument(
        "--compare-workers",
        default="1",
        help="also measure the target level with these server process counts (comma-separated, "
        "'' for none), side by side in the same run",
    )
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/corpus-bench"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--gen-workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--questions", type=Path, default=syn.DEFAULT_QUESTIONS)
    ap.add_argument("--out", type=Path, default=RESULTS / "http_latency.json")
    ap.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="instrumented profile run: auto = only when the target is missed",
    )
    # Internal: the instrumented server child.
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--instrument", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if isinstance(args.clients, str):
        args.clients = [int(c) for c in args.clients.split(",") if c.strip()]
    args.compare_workers = [
        int(w)
        for w in args.compare_workers.split(",")
        if w.strip() and int(w) != args.server_workers
    ]
    if not args.serve and (not args.clients or min(args.clients) < 1):
        ap.error("--clients needs positive integers")
    if not args.serve and (args.duration <= 0 or args.duration > 300 or args.warmup < 0):
        ap.error("--duration must be in (0, 300] and --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.serve:
        serve_instrumented(args)
        return
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = run(args)
    write_json(args.out, result, indent=2)
    print(markdown_table(result))
    print(f"\nHTTP overhead at 1 client: {json.dumps(result['http_overhead_at_1_client'])}")
    print(f"verdict: {json.dumps(result['verdict'])}")
    if "profile" in result:
        for label, bd in result["profile"]["breakdown_mean_ms"].items():
            print(f"\nserver stage means, {label} (ms per request):")
            for key, value in bd.items():
                print(f"  {value:>9}  {key}")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
