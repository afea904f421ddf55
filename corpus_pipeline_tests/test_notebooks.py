"""The analysts' notebooks (`notebooks/`) run top to bottom in a kernel of this venv: against a
home holding the sample corpus, `corpus eval` results in both modes and a running query
service's activity, and against an empty home. Git keeps them without outputs."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
from nbclient import NotebookClient
from nbstripout import strip_output  # type: ignore[import-untyped]

from corpus_pipeline import analysis
from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.intake.job_store import open_job_store
from query_service.config import ServiceSettings

from .http_service import CORPUS_CLI, running_service, write_api_keys
from .services import free_port
from .support import REPO_ROOT, published_home

NOTEBOOKS = REPO_ROOT / "notebooks"
NAMES = ("corpus_overview", "operations", "retrieval_quality")
SAMPLE = REPO_ROOT / "data" / "sample"
QUESTIONS = REPO_ROOT / "data" / "questions" / "sample.jsonl"
KEY = "analyst-key"
# What the kernel must not inherit from whoever runs the tests.
UNSET = ("CORPUS_API_KEY", "CORPUS_EVAL_RESULTS", "CORPUS_SERVICE_URL", "MPLBACKEND")


def read(name: str) -> Any:
    """A notebook as nbformat reads it (nbformat has no type hints)."""
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)  # type: ignore[no-untyped-call]


def execute(name: str, **env: str) -> Any:
    """The notebook after running every cell in a fresh kernel (python3: this venv's Python)
    with `env` on top of this process's environment; a failing cell fails the test."""
    notebook = read(name)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=120,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    inherited = {k: v for k, v in os.environ.items() if k not in UNSET}
    client.execute(env=inherited | env)
    return notebook


def printed(notebook: Any) -> str:
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.output_type == "stream"
    )


def figures(notebook: Any) -> int:
    return sum(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )


@dataclass
class SampleHome:
    home: Path
    url: str

    def run(self, name: str) -> Any:
        return execute(name, CORPUS_HOME=str(self.home), CORPUS_SERVICE_URL=self.url)


def _evaluate(home: Path) -> None:
    """`corpus eval` on the sample questions in both modes, side by side (the classic run with
    the naive baseline), each into its own folder under <home>/eval."""
    env = os.environ | {"CORPUS_HOME": str(home)}
    command = [str(CORPUS_CLI), "eval", str(QUESTIONS), "--mode"]
    runs = [
        subprocess.Popen(
            [*command, mode, *extra, "--out", str(home / "eval" / mode)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for mode, extra in [("classic", ["--baseline", "naive-bm25"]), ("agentic", [])]
    ]
    for run in runs:
        output, _ = run.communicate(timeout=180)
        assert run.returncode == 0, output.decode(errors="replace")


def _record_jobs(settings: CorpusSettings) -> None:
    """Two upload jobs in the upload API's own store: one done, one failed."""
    store = open_job_store(settings)
    for name, error in [("swans.md", None), ("locked.pdf", "'locked.pdf' is encrypted")]:
        job = store.create(f"doc-{name}", "default", name)
        claimed = store.claim()
        assert claimed is not None and claimed.job_id == job.job_id
        store.finish(job.job_id, error, None if error else 2, owner=claimed.lease_owner)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SampleHome]:
    """The sample corpus ingested and published, evaluated, and served: one question asked
    twice (the second from the cache) and one agentic search, with the key `make run` keeps."""
    home = tmp_path_factory.mktemp("notebooks")
    settings, _ = published_home(home, {p.name: p.read_bytes() for p in sorted(SAMPLE.iterdir())})
    _evaluate(home)
    _record_jobs(settings)
    write_api_keys(home, {KEY: ("analyst", ["*"])})
    (home / "service" / "local_key.txt").write_text(KEY + "\n", encoding="utf-8")
    with running_service(ServiceSettings(home=home, stats_flush_seconds=0.1)) as url:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            question = {"query": "How do tufted ducks feed?", "top_k": 3}
            answers = [
                http.post("/v1/search", json=question),
                http.post("/v1/search", json=question),
                http.post("/v1/search", json=question | {"mode": "agentic"}),
            ]
        assert [a.status_code for a in answers] == [200, 200, 200]
        yield SampleHome(home, url)


def _chunks_written(home: Path) -> int:
    return sum(
        len(json.loads((d / "chunks.json").read_text(encoding="utf-8"))["chunks"])
        for d in (home / "artifacts").iterdir()
    )


@pytest.mark.slow
def test_the_overview_counts_the_sample_documents_and_their_chunks(sample: SampleHome):
    notebook = sample.run("corpus_overview")

    text = printed(notebook)
    documents = len(list(SAMPLE.iterdir()))
    assert f"published documents: {documents} (namespaces: default)" in text
    assert f"chunks: {_chunks_written(sample.home)}\n" in text
    assert f"document graph: {documents} documents, 0 edges" in text
    assert figures(notebook) == 5


@pytest.mark.slow
def test_retrieval_quality_compares_classic_agentic_and_the_baseline(sample: SampleHome):
    notebook = sample.run("retrieval_quality")

    text = printed(notebook)
    questions = len(QUESTIONS.read_text(encoding="utf-8").splitlines())
    assert f"systems: classic, agentic, naive-bm25 ({questions} questions)" in text
    for system in ("classic", "agentic", "naive-bm25"):
        assert f"=== {system}: the 5 worst questions" in text
    assert figures(notebook) == 3


@pytest.mark.slow
def test_operations_report_timings_runs_searches_access_and_the_cache(sample: SampleHome):
    notebook = sample.run("operations")

    text = printed(notebook)
    timings = analysis.stage_timings(sample.home)
    assert f"stage timings: {timings.height} materialisations of 5 documents" in text
    assert f"runs: {analysis.pipeline_runs(sample.home).height}, failed: 0" in text
    assert "upload jobs: 2 (done: 1, error: 1)" in text
    assert f"agentic searches: {analysis.search_runs(sample.home).height};" in text
    access = analysis.access_stats(sample.home)
    assert f"returned chunks: {access.height}, hits: {access['hits'].sum()}" in text
    # The service's cache saw three questions, the second a repeat of the first.
    assert "cache lookups: 3, hit rate: 33%" in text
    assert figures(notebook) == 3


EMPTY_STATE = {
    "corpus_overview": "No published corpus under",
    "operations": "Cache statistics unavailable: no query service answers at",
    "retrieval_quality": "No `corpus eval` results to read",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_notebook_over_an_empty_home_says_what_is_missing(name: str, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    nowhere = f"http://127.0.0.1:{free_port()}"

    notebook = execute(name, CORPUS_HOME=str(home), CORPUS_SERVICE_URL=nowhere)

    assert EMPTY_STATE[name] in printed(notebook)
    assert figures(notebook) == 0
    assert list(home.iterdir()) == [], "a notebook only reads"


def test_the_notebooks_are_kept_without_outputs():
    kept = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert kept == sorted(NAMES)
    for name in NAMES:
        notebook = read(name)
        nbformat.validate(notebook)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert code, name
        assert [(c.outputs, c.execution_count) for c in code] == [([], None)] * len(code), name
        # As `make notebooks-strip` (nbstripout) leaves them: nothing else to strip either.
        stripped = strip_output(copy.deepcopy(notebook), False, False, False)
        assert stripped == notebook, f"{name}: run `make notebooks-strip`"
