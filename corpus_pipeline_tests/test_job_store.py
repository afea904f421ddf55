"""The upload API's job table: workers in threads or processes claim each job once, in order,
and never two jobs of one document side by side."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from corpus_pipeline.intake.jobs import SQLiteJobStore


def test_jobs_are_claimed_oldest_first_and_once(tmp_path: Path):
    store = SQLiteJobStore(tmp_path / "jobs.db")
    first = store.create("doc-a", "default", "a.md")
    second = store.create("doc-b", "default", "b.md")
    claimed = [store.claim(), store.claim(), store.claim()]
    assert [j.job_id if j else None for j in claimed] == [first.job_id, second.job_id, None]
    assert all(j is not None and j.status == "processing" for j in claimed[:2])


def test_a_document_being_processed_holds_back_its_next_job(tmp_path: Path):
    store = SQLiteJobStore(tmp_path / "jobs.db")
    first = store.create("doc-a", "default", "a.md")
    again = store.create("doc-a", "default", "a.md", "delete")
    other = store.create("doc-b", "default", "b.md")
    assert (store.claim() or first).job_id == first.job_id
    held = store.claim()
    assert held is not None and held.job_id == other.job_id, "the other document goes ahead"
    assert store.claim() is None, "doc-a's second job waits while its first is processing"
    store.finish(first.job_id)
    released = store.claim()
    assert released is not None and released.job_id == again.job_id


def _claim_all(path: str) -> list[str]:
    store = SQLiteJobStore(Path(path))
    claimed = []
    while (job := store.claim()) is not None:
        claimed.append(job.job_id)
    return claimed


def test_workers_in_two_processes_never_claim_the_same_job(tmp_path: Path):
    path = tmp_path / "jobs.db"
    store = SQLiteJobStore(path)
    created = {store.create(f"doc-{n}", "default", f"{n}.md").job_id for n in range(300)}
    # An executor, not a Pool: a worker process that dies fails the test (BrokenProcessPool)
    # instead of hanging it (a Pool waits for a task whose worker died holding its queue lock).
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=spawn) as pool:
        futures = [pool.submit(_claim_all, str(path)) for _ in range(2)]
        first, second = (future.result(timeout=120) for future in futures)
    assert not set(first) & set(second)
    assert set(first) | set(second) == created
