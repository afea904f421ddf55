"""What several benchmarks share, so each benchmark module holds only its own measurement.

The product is reached the way a user reaches it: `corpus ingest`, `corpus keys create`,
`corpus serve` and `corpus ingest-api` run as subprocesses of the installed command, searches
go over HTTP, and artifacts and revisions are read as the command leaves them on disk. Besides
that: where the shared sets and the results live, the sets' own scorers, percentiles, machine
facts, process memory and the result files. `harness.synthetic` generates the corpora of the
latency benchmarks. Benchmarks import this package, never each other.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.agentic import AgenticResponse
from corpus_pipeline.contracts.published import read_pointer
from corpus_pipeline.contracts.search import RevisionPointer

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
SHARED = REPO.parent / "shared"
SHARED_CORPUS = SHARED / "corpus"
REALWORLD = SHARED / "realworld"
CORPUS_CLI = Path(sys.executable).with_name("corpus")
NAMESPACE = "default"
TOP_K = 10
AGENTIC_BUDGET = 8000
HTTP_TIMEOUT = 120.0

Row = dict[str, Any]
Results = list[Row]
"""One line per question: {"id", "results": [...]} (what the sets' scorers read)."""


# -- output ------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_json(path: Path, result: Any, indent: int = 1) -> Path:
    """A benchmark's result file (its folder made first), stamped with when it was generated
    when the benchmark did not stamp it itself (`benchmarks.report` dates every figure)."""
    if isinstance(result, dict) and "generated_at" not in result:
        result = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"), **result}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_jsonl(path: Path, lines: Iterable[Row]) -> None:
    path.write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )


def machine_facts(extra_packages: Sequence[str] = ()) -> Row:
    """CPU, memory, Python, platform and the versions of the packages that set the figures."""
    mem_kib = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    cpu_model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        cpu_model = next(
            (
                line.split(":", 1)[1].strip()
                for line in cpuinfo.read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    versions: dict[str, str | None] = {}
    for package in ("tantivy", "lancedb", "pydantic", *extra_packages):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None if package in extra_packages else "?"
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
    }


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100] (nan for no values)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def nearest_rank(values: Sequence[float], q: float, digits: int = 2) -> float:
    """The value at rank int(q × n) of the sorted values, q in [0, 1], rounded (0.0 for none)."""
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], digits) if ordered else 0.0


# -- processes ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def rss_mb(pids: Iterable[int]) -> float:
    """Resident memory of the processes together (VmRSS, MiB; a process gone counts 0)."""
    total = 0
    for pid in pids:
        with suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return round(total / 1024, 1)


def home_env(home: Path, **variables: str) -> dict[str, str]:
    """This process's environment for a command on `home` (the local object store under it,
    the key file at its default place, no open access), with `variables` on top."""
    env = {k: v for k, v in os.environ.items() if k != "CORPUS_OPEN_ACCESS"}
    return {
        **env,
        "CORPUS_HOME": str(home),
        "CORPUS_OBJECT_STORE_URL": "",
        "CORPUS_API_KEYS_FILE": str(home / "service" / "api_keys.json"),
        **variables,
    }


def corpus(env: Mapping[str, str], *args: str, timeout: float | None = 600) -> str:
    """One `corpus …` command to its end; its standard output (a failure raises with stderr)."""
    done = subprocess.run(
        [str(CORPUS_CLI), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"corpus {' '.join(args[:2])} failed: {done.stderr[-1000:]}")
    return done.stdout.strip()


def create_key(
    env: Mapping[str, str], name: str, read: Sequence[str] = (), write: Sequence[str] = ()
) -> str:
    """`corpus keys create NAME --read … --write …`; a key of that name already in the home
    (a reused home) is rotated instead. Returns the key."""
    options = [*(f"--read={n}" for n in read), *(f"--write={n}" for n in write)]
    key = corpus(env, "keys", "create", name, *options, "--if-missing")
    return key or corpus(env, "keys", "rotate", name)


def start_service(
    args: Sequence[str], env: Mapping[str, str], log_path: Path, group: bool = True
) -> subprocess.Popen[bytes]:
    """`corpus ARGS` in the background, output appended to `log_path`; with `group`, as the
    leader of its own process group (stopped with its workers)."""
    with log_path.open("ab") as out:
        return subprocess.Popen(
            [str(CORPUS_CLI), *args],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=group,
        )


def stop_service(
    process: subprocess.Popen[bytes], group: bool = True, timeout: float = 60.0
) -> None:
    """SIGTERM (to its process group when it leads one), SIGKILL after `timeout` seconds."""

    def send(signum: int) -> None:
        with suppress(ProcessLookupError):
            if group:
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)

    if process.poll() is None:
        send(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            process.wait(timeout=10)


@contextmanager
def running_service(
    args: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    group: bool = True,
    stop_timeout: float = 60.0,
) -> Iterator[subprocess.Popen[bytes]]:
    """`start_service` for the duration of a block; stopped on the way out, errors included."""
    process = start_service(args, env, log_path, group)
    try:
        yield process
    finally:
        stop_service(process, group, stop_timeout)


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Until `GET /readyz` answers 200; the service exiting or the timeout raises."""
    deadline = time.monotonic() + timeout
    while True:
        with suppress(httpx.HTTPError):
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the service exited ({process.returncode})")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} not ready within {timeout} s")
        time.sleep(0.1)


# -- the query service over HTTP ---------------------------------------------------------------


@contextmanager
def search_client(
    home: Path, namespace: str = NAMESPACE, answer_cache: bool = True
) -> Iterator[httpx.Client]:
    """An HTTP client for `corpus serve` over `home` (one server process on a loopback port, the
    rule-based planner, no access prior, a key made with `corpus keys create`), once the
    published revision is loaded. Without `answer_cache` a repeated request is searched again
    (latency of repeated queries)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request
    env = home_env(
        home,
        CORPUS_PLANNER_MODEL="",
        CORPUS_NAVIGATOR_MODEL="",
        CORPUS_ACCESS_PRIOR_WEIGHT="0",
        CORPUS_CACHE_MAX_ENTRIES=str(2048 if answer_cache else 0),
    )
    key = create_key(env, "benchmark", read=[namespace])
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = ["serve", "--port", str(port), "--workers", "1"]
    home.mkdir(parents=True, exist_ok=True)
    with (
        running_service(args, env, home / "benchmark-serve.log", stop_timeout=20) as process,
        httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=HTTP_TIMEOUT
        ) as client,
    ):
        wait_ready(url, process, timeout=60)
        yield client


def post_search(client: httpx.Client, body: Row) -> Row:
    """One `POST /v1/search`; an error response stops the benchmark with its body."""
    response = client.post("/v1/search", json=body)
    if response.status_code != 200:
        raise RuntimeError(f"POST /v1/search {response.status_code}: {response.text[:500]}")
    payload: Row = response.json()
    return payload


# -- ingest: `corpus ingest` ---------------------------------------------------------------------


def corpus_passwords(corpus_dir: Path) -> dict[str, str]:
    """Encrypted sample documents carry their password in the corpus manifest."""
    manifest = [
        json.loads(line)
        for line in (corpus_dir / "manifest.jsonl").open(encoding="utf-8")
        if line.strip()
    ]
    return {m["doc"]: m["password"] for m in manifest if m.get("password")}


def linked_inbox(files: Sequence[Path], inbox: Path) -> Path:
    """A fresh folder holding the files as symlinks (what `corpus ingest` is pointed at)."""
    inbox.mkdir(parents=True)
    for path in files:
        (inbox / path.name).symlink_to(path)
    return inbox


@dataclass(frozen=True)
class FileResult:
    """One file's line of `corpus ingest --json`."""

    source_file_name: str
    status: str
    document_id: str | None = None
    error: str | None = None
    chunks: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Ingested:
    """What `corpus ingest` did to a folder: one result per file, in file order, and the
    publish error it reported (None when it published or had nothing to publish)."""

    home: Path
    namespace: str
    results: list[FileResult]
    publish_error: str | None = None

    @cached_property
    def settings(self) -> CorpusSettings:
        """The home's settings as the command saw them (its folders)."""
        return load_settings(home=self.home, object_store_url="", namespace=self.namespace)

    @property
    def pointer(self) -> RevisionPointer | None:
        """The namespace's published revision after the command."""
        return read_pointer(self.settings.published_dir / self.namespace)

    @property
    def ok(self) -> dict[str, str]:
        """File name → document id of the documents that were ingested."""
        return {
            r.source_file_name: r.document_id
            for r in self.results
            if r.status == "ok" and r.document_id
        }

    @property
    def failed(self) -> dict[str, str]:
        """File name → the error the user saw."""
        return {r.source_file_name: r.error or "failed" for r in self.results if r.status != "ok"}


def _ingest_command(paths: Sequence[Path], env: Mapping[str, str], args: Sequence[str]) -> Row:
    done = subprocess.run(
        [str(CORPUS_CLI), "ingest", "--json", *args, *map(str, paths)],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        raise RuntimeError(f"corpus ingest exited with {done.returncode}: {done.stderr[-2000:]}")
    publish: dict[str, Any] = next((line["publish"] for line in lines if "publish" in line), {})
    return {
        "rows": [line for line in lines if "file" in line],
        "publish_error": publish.get("error"),
    }


def ingest_folder(
    docs_dir: Path,
    home: Path,
    passwords: Mapping[str, str] | None = None,
    namespace: str = NAMESPACE,
) -> Ingested:
    """`corpus ingest --json` of a folder into `home` (the command stores, runs every Dagster
    asset and check, and publishes; with CORPUS_DENSE set, embeds and publishes again).
    `--password` applies to one command: without passwords the folder goes in one command,
    else each password's files (a flat folder) in a command of their own, those without one
    first. Results come back in file order."""
    env = home_env(home)
    args = ["--namespace", namespace]
    if not passwords:
        runs = [_ingest_command([docs_dir], env, args)]
    else:
        groups: dict[str | None, list[Path]] = {}
        for path in sorted(p for p in docs_dir.iterdir() if p.is_file()):
            if not path.name.startswith("."):
                groups.setdefault(passwords.get(path.name), []).append(path)
        runs = [
            _ingest_command(paths, env, [*args, *(["--password", pw] if pw else [])])
            for pw, paths in sorted(groups.items(), key=lambda g: g[0] is not None)
        ]
    results = sorted(
        (
            FileResult(
                source_file_name=row["file"],
                # A fresh home: "ingested" (an unchanged file counts as ingested too).
                status="ok" if row["status"] in ("ingested", "unchanged") else row["status"],
                document_id=row.get("document_id"),
                error=row.get("error"),
                chunks={**row.get("chunk_types", {}), "sections": row.get("sections", 0)},
                skipped=row.get("lost_parts") or {},
                seconds=float(row.get("seconds") or 0.0),
            )
            for run in runs
            for row in run["rows"]
        ),
        key=lambda r: r.source_file_name,
    )
    errors = [run["publish_error"] for run in runs if run["publish_error"]]
    return Ingested(home, namespace, results, "; ".join(errors) or None)


# -- the sets' own scorers -------------------------------------------------------------------------


def load_script(path: Path) -> ModuleType:
    """A shared set's own scorer script (`score_search.py`, `score_pages.py`), imported as a
    module so a benchmark scores exactly as the set does."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_scorer(corpus_dir: Path, script: str, args: Sequence[str], scores: Path) -> Row:
    """One of the corpus's scorer scripts with `--json`: the scores it writes."""
    subprocess.run(
        [sys.executable, str(corpus_dir / script), *args, "--json", str(scores)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    result: Row = json.loads(scores.read_text(encoding="utf-8"))
    return result


def score_structure(corpus_dir: Path, parsed: Path, scores: Path) -> Row:
    """The corpus's `score_structure.py --json` over a file of parsed headings and tables."""
    return _run_scorer(
        corpus_dir, "score_structure.py", [str(parsed), "--corpus", str(corpus_dir)], scores
    )


def load_questions(corpus_dir: Path) -> list[Row]:
    """The shared corpus's development questions."""
    lines = (corpus_dir / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score_search(
    corpus_dir: Path, results: Results, questions: Sequence[Row], workdir: Path
) -> Row:
    """The corpus's `score_search.py --json` over `results` and the given questions:
    {"summary": {"all" | "kind=…" | "format=…": {metric: value}}, "per_question": {id: …}}."""
    workdir.mkdir(parents=True, exist_ok=True)
    results_path = workdir / "results.jsonl"
    questions_path = workdir / "questions.jsonl"
    scores_path = workdir / "scores.json"
    write_jsonl(results_path, results)
    write_jsonl(questions_path, questions)
    args = [str(results_path), "--questions", str(questions_path)]
    return _run_scorer(corpus_dir, "score_search.py", args, scores_path)


def search_ours(
    client: httpx.Client, questions: Iterable[Row], namespace: str = NAMESPACE
) -> Results:
    """Classic search (top 10) over HTTP for every question, as `score_search.py` reads it."""
    lines = []
    for q in questions:
        response = post_search(
            client, {"query": q["question"], "top_k": TOP_K, "namespace": namespace}
        )
        lines.append(
            {
                "id": q["id"],
                "results": [
                    {
                        "content": r["content"],
                        "source_file_name": r["source_file_name"],
                        "section_path": r["section_path"],
                        "pages": r["pages"],
                    }
                    for r in response["results"]
                ],
            }
        )
    return lines


# -- the real-world set: page-exact scoring ------------------------------------------------------

QUESTION_SETS = {"questions": "questions.jsonl", "finance": "finance_questions.jsonl"}
HALVES = ("tuned", "held out")


def half_of(file_name: str) -> str:
    """The half a document belongs to: a stable hash of its file name (the first byte of its
    BLAKE2b digest), even → tuned, odd → held out. On this set it splits the 117 documents
    48 / 69 and the questions 100 / 99 and 45 / 55, with every document type in both."""
    return HALVES[hashlib.blake2b(file_name.encode("utf-8")).digest()[0] % 2]


def realworld_questions(root: Path, name: str = "questions") -> list[Row]:
    lines = (root / QUESTION_SETS[name]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def score_pages(
    root: Path, lines: list[Row], work: Path, name: str, questions: str = "questions"
) -> dict[str, Row]:
    """The set's `score_pages.py` over all questions, then over each half's (groups
    "half:<name>" and "half:<name>/type:<doc type>")."""
    scorer = load_script(root / "score_pages.py")
    path = work / f"{name}.jsonl"
    write_jsonl(path, lines)
    result: dict[str, Row] = scorer.score(str(path), str(root / QUESTION_SETS[questions]))
    for half in HALVES:
        kept = [q for q in realworld_questions(root, questions) if half_of(q["doc"]) == half]
        subset = work / f"{name}-{questions}-{half.replace(' ', '_')}.jsonl"
        write_jsonl(subset, kept)
        for group, metrics in scorer.score(str(path), str(subset)).items():
            if group == "all" or group.startswith("type:"):
                result[f"half:{half}" + ("" if group == "all" else f"/{group}")] = metrics
    return result


def result_line(r: Row) -> Row:
    """A search result as `score_pages.py` reads it."""
    return {
        "source_file_name": r["source_file_name"],
        "pages": r["pages"],
        "section_path": r["section_path"],
        "chunk_id": r["chunk_id"],
    }


def primary_answer(response: AgenticResponse) -> list[Row]:
    """The agentic answer as an agent reads it, for the sets' scorers: its results in order,
    each with its passage's text (answer strings are looked for there) and pages."""
    return [
        {**result_line(c.model_dump(mode="json")), "content": text}
        for c, text in response.passages()
    ]
