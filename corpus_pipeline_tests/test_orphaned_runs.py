"""A run whose process is killed while it holds the publish slot does not block publishing for
ever: the next start (upload API, `corpus ingest`) fails it and frees its slot. A real process
holds the real `index_writer` pool slot and is killed with SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import (
    DocumentRuns,
    dagster_instance,
    fail_orphaned_runs,
)

from .support import REPO_ROOT

# A run that takes the publish pool's one slot and holds it (as a publish killed midway does).
HOLDER = """
import sys, time
import dagster as dg
from corpus_pipeline.pipeline import processes
from corpus_pipeline.defs.tags import PROCESS_TAG
from corpus_pipeline.orchestration.runs import dagster_instance
from corpus_pipeline.common.settings import load_settings

@dg.asset(pool="index_writer")
def holds_the_slot() -> None:
    print("holding", flush=True)
    time.sleep(600)

instance = dagster_instance(load_settings(home=sys.argv[1]))
dg.materialize([holds_the_slot], instance=instance, tags={PROCESS_TAG: processes.identity()})
"""


def _published_within(settings: CorpusSettings, namespace: str, seconds: float) -> bool:
    done = threading.Event()

    def publish() -> None:
        DocumentRuns.of(settings).publish(namespace)
        done.set()

    threading.Thread(target=publish, daemon=True).start()
    return done.wait(seconds)


def test_a_killed_runs_slot_is_freed_and_publishing_goes_on(tmp_path: Path):
    note = tmp_path / "note.md"
    note.write_text("# Ducks\n\nTufted ducks dive.\n")
    settings = load_settings(home=tmp_path / "home", ingest_workers=1, namespace="birds")
    [result] = ingest([note], settings)
    assert result.status == "ok"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(settings.home)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    instance = dagster_instance(settings)
    [orphan] = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert not _published_within(settings, "birds", 5), "the dead run holds the only slot"

    assert fail_orphaned_runs(instance) == [orphan.run_id]

    failed = instance.get_run_by_id(orphan.run_id)
    assert failed is not None and failed.status == dg.DagsterRunStatus.FAILURE
    deadline = time.monotonic() + 180  # the waiting run polls for its slot with a back-off
    while instance.get_runs_count(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        assert time.monotonic() < deadline, "the waiting publish never got the slot"
        time.sleep(0.2)
    assert fail_orphaned_runs(instance) == [], "a live or finished run is left alone"


def test_a_run_of_a_live_process_is_never_failed(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(settings.home)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
        assert fail_orphaned_runs(dagster_instance(settings)) == []
    finally:
        holder.kill()
        holder.wait()
