"""Many small documents through the inbox sensor, as `make dev` runs them: documents/s and
the share of Dagster overhead.

A fresh CORPUS_HOME with the repository's `dagster.yaml` (SQLite storage, the queued run
coordinator with 4 run slots of which document runs may take 2, run retries) and
`--documents` generated Markdown notes (default 1,000, each a few sentences of different
words) in its inbox. The real `dagster-daemon run` over `workspace.yaml` is started: its
`inbox_sensor` ticks, stores every file and requests `reprocess_documents` runs over ranges of
up to `DOCUMENTS_PER_RUN` document partitions (spread over the two document slots); the queue
launches each run in its own process (the default run launcher); `publish_sensor` publishes
once the runs are done. The clock runs from the daemon's start until the namespace's published
revision holds every document.

Reported: documents/s end to end; per document run, its duration (run start to end, from the
run records), its documents, the time it waited in the queue, and the step's own work (the
stage seconds each asset writes into its materialisation metadata); the Dagster overhead share
is 1 − work / run duration (process start, definitions, executor, event log), and per document
in seconds. The document job runs its one step in the run's process (`in_process_executor`:
with one step per run the multiprocess executor only started a second process; measured
here). Writes `benchmarks/results/sensor_ingest.json` (or `--out`).
Run: `python -m benchmarks.sensor_ingest [--documents N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from benchmarks.harness import REPO, RESULTS, write_json
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.published import read_pointer
from corpus_pipeline.defs.tags import STAGE_TAG
from corpus_pipeline.orchestration.runs import dagster_instance

DAEMON = Path(sys.executable).with_name("dagster-daemon")
# Asset keys whose materialisation metadata carries the stage's own seconds.
TIMED_ASSETS = ("document_profile", "parsed_document", "document_chunks", "document_nav")
WORDS = [
    "valve",
    "pump",
    "boiler",
    "turbine",
    "gasket",
    "filter",
    "sensor",
    "relay",
    "bearing",
    "piston",
    "flange",
    "nozzle",
    "compressor",
    "condenser",
    "thermostat",
    "actuator",
    "manifold",
    "impeller",
    "coupling",
    "damper",
]


def write_notes(inbox: Path, count: int) -> None:
    """Deterministic notes, each naming its own number and a different pair of parts."""
    inbox.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        a, b = WORDS[n % len(WORDS)], WORDS[(n * 7 + 3) % len(WORDS)]
        (inbox / f"note-{n:05d}.md").write_text(
            f"# Inspection {n}\n\nInspection {n} found the {a} worn and the {b} leaking. "
            f"The {a} was replaced on day {n % 28 + 1}; the {b} was resealed and tested.\n\n"
            f"## Follow-up\n\nCheck the {b} again after {n % 9 + 1} weeks of service.\n",
            encoding="utf-8",
        )


def _work_seconds(instance: dg.DagsterInstance, run_id: str) -> float:
    seconds = 0.0
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
    ).records
    for record in records:
        materialization = record.event_log_entry.asset_materialization
        if materialization is None or materialization.asset_key.path[-1] not in TIMED_ASSETS:
            continue
        value = materialization.metadata.get("seconds")
        seconds += float(value.value) if value is not None else 0.0  # type: ignore[arg-type]
    return seconds


def run_records(instance: dg.DagsterInstance) -> dict[str, Any]:
    """Durations, queue waits, documents and step work of the finished document runs."""
    done = dg.RunsFilter(tags={STAGE_TAG: "document"}, statuses=[dg.DagsterRunStatus.SUCCESS])
    durations, waits, work, documents = [], [], [], []
    for record in instance.get_run_records(done):
        if record.start_time is None or record.end_time is None:
            continue
        durations.append(record.end_time - record.start_time)
        waits.append(record.start_time - record.create_timestamp.timestamp())
        work.append(_work_seconds(instance, record.dagster_run.run_id))
        documents.append(int(record.dagster_run.tags.get("corpus/documents", "1")))
    failed = instance.get_runs_count(
        dg.RunsFilter(tags={STAGE_TAG: "document"}, statuses=[dg.DagsterRunStatus.FAILURE])
    )
    total, busy, docs = sum(durations), sum(work), sum(documents)
    return {
        "succeeded": len(durations),
        "failed": failed,
        "documents": docs,
        "documents_per_run_mean": round(docs / len(durations), 1) if durations else None,
        "run_seconds_mean": round(statistics.fmean(durations), 3) if durations else None,
        "run_seconds_p95": round(sorted(durations)[int(0.95 * (len(durations) - 1))], 3)
        if durations
        else None,
        "queue_wait_seconds_mean": round(statistics.fmean(waits), 2) if waits else None,
        "work_seconds_per_document": round(busy / docs, 3) if docs else None,
        "run_seconds_per_document": round(total / docs, 3) if docs else None,
        "overhead_seconds_per_document": round((total - busy) / docs, 3) if docs else None,
        "overhead_share": round(1 - busy / total, 3) if total else None,
    }


def run(count: int, workdir: Path, timeout: float, executor: str = "in_process") -> dict[str, Any]:
    home = workdir / "home"
    settings = load_settings(home=home, object_store_url="")
    instance = dagster_instance(settings)  # seeds <home>/dagster/dagster.yaml from the repo
    write_notes(workdir / "inbox", count)
    env = {
        **os.environ,
        "CORPUS_HOME": str(home),
        "DAGSTER_HOME": str(settings.dagster_home),
        "CORPUS_INBOX_DIR": str(workdir / "inbox"),
        "CORPUS_OBJECT_STORE_URL": "",
        "CORPUS_DOCUMENT_EXECUTOR": executor,
    }
    log = (workdir / "daemon.log").open("wb")
    started = time.perf_counter()
    daemon = subprocess.Popen(
        [str(DAEMON), "run", "-w", str(REPO / "workspace.yaml")],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    published_at = None
    documents = 0
    try:
        while time.perf_counter() - started < timeout:
            if daemon.poll() is not None:
                raise RuntimeError(f"dagster-daemon exited with {daemon.returncode}")
            pointer = read_pointer(settings.published_dir / settings.namespace)
            documents = pointer.documents if pointer else 0
            if documents >= count:
                published_at = time.perf_counter() - started
                break
            time.sleep(1.0)
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
        log.close()
    runs = run_records(instance)
    publishes = instance.get_runs_count(dg.RunsFilter(tags={STAGE_TAG: "publish"}))
    wall = published_at or time.perf_counter() - started
    return {
        "documents": count,
        "published_documents": documents,
        "complete": published_at is not None,
        "wall_seconds": round(wall, 1),
        "documents_per_s": round(documents / wall, 2),
        "executor": executor,
        "publish_runs": publishes,
        "document_runs": runs,
        "cores": len(os.sched_getaffinity(0)),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--documents", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=4 * 3600)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--keep", type=Path, default=None, help="Work folder to keep (default: temp).")
    ap.add_argument(
        "--executor",
        choices=["in_process", "multiprocess"],
        default="in_process",
        help="How document runs execute their step (CORPUS_DOCUMENT_EXECUTOR).",
    )
    args = ap.parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="corpus-sensor-ingest-"))
    try:
        result = {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **run(args.documents, workdir, args.timeout, args.executor),
        }
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=1))
    name = (
        "sensor_ingest.json"
        if args.executor == "in_process"
        else f"sensor_ingest_{args.executor}.json"
    )
    write_json(args.out / name, result)


if __name__ == "__main__":
    main()
