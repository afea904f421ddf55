"""The analysts' reader (`corpus_pipeline.analysis`) over a real corpus: the sample documents in
`default` and two related notes in `notes`, processed and published through Dagster runs, then
searched over HTTP by a running query service. Each frame is checked against the artifacts,
the runs and the answers it reports on."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest

from corpus_pipeline import analysis
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts.evaluation import (
    EvalRun,
    Metrics,
    QuestionResult,
    RankedResult,
    SystemResult,
)
from corpus_pipeline.intake.job_store import open_job_store
from query_service.config import ServiceSettings

from .http_service import running_service, write_api_keys
from .services import PG_HOST, PG_USER, free_port, postgres_database
from .support import REPO_ROOT, build_documents, publish_namespaces

SAMPLE = REPO_ROOT / "data" / "sample"
NOTES = {
    "geese.md": "# Geese\n\n## Feeding\n\nGreylag geese graze on short grass beside the lake in "
    "winter. Flocks of geese roost on the water at night and fly out to the fields at dawn.\n",
    "geese_notes.md": "# Geese notes\n\n## Feeding\n\nFlocks of greylag geese graze short grass "
    "in fields beside the lake. At dawn the geese fly from the water, where they roost at night "
    "in winter.\n",
}
KEY = "analyst-key"
QUESTION = "How do tufted ducks feed?"
BUDGET = 2000


@dataclass
class Corpus:
    settings: CorpusSettings
    ids: dict[str, str]  # file name → document id
    namespaces: dict[str, str]  # document id → namespace

    @property
    def home(self) -> Path:
        return self.settings.home

    def artifact(self, document_id: str, name: str) -> Any:
        path = self.settings.artifacts_dir / document_id / name
        return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    settings = load_settings(home=tmp_path_factory.mktemp("analysis"))
    sample = build_documents(settings, {p.name: p.read_bytes() for p in sorted(SAMPLE.iterdir())})
    notes = build_documents(settings, NOTES, namespace="notes")
    publish_namespaces(settings)
    records = sample | notes
    return Corpus(
        settings,
        {name: r.document_id for name, r in records.items()},
        {r.document_id: r.namespace for r in records.values()},
    )


@dataclass
class Served:
    url: str
    classic: list[str]  # chunk ids of the classic answer
    agentic: list[str]  # chunk ids of the agentic answer


@pytest.fixture(scope="module")
def served(corpus: Corpus) -> Iterator[Served]:
    """The query service over the corpus, after one classic question asked twice (the second
    answer comes from the cache) and one agentic question."""
    write_api_keys(corpus.home, {KEY: ("analyst", ["*"])})
    settings = ServiceSettings(home=corpus.home, reload_seconds=0.2, stats_flush_seconds=0.1)
    with running_service(settings) as url:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            asked = [
                http.post("/v1/search", json={"query": QUESTION, "top_k": 3}) for _ in range(2)
            ]
            agentic = http.post(
                "/v1/search", json={"mode": "agentic", "query": QUESTION, "token_budget": BUDGET}
            )
        assert [r.status_code for r in [*asked, agentic]] == [200, 200, 200]
        yield Served(
            url,
            [r["chunk_id"] for r in asked[0].json()["results"]],
            [r["chunk_id"] for r in agentic.json()["results"]],
        )


def test_documents_are_the_published_documents_with_their_manifest_figures(corpus: Corpus):
    docs = analysis.documents(corpus.home)

    assert dict(docs.group_by("namespace").len().iter_rows()) == {"default": 5, "notes": 2}
    assert set(docs["format"]) == {"text", "html", "markdown", "docx"}
    for row in docs.iter_rows(named=True):
        manifest = corpus.artifact(row["document_id"], "manifest.json")
        assert row["chunk_count"] == len(
            corpus.artifact(row["document_id"], "chunks.json")["chunks"]
        )
        assert row["tables"] == manifest["statistics"]["tables"]
        assert row["images"] == manifest["statistics"]["images"]
        assert row["title"] == manifest["title"]
    assert docs.filter(pl.col("source_file_name") == "word_tables.docx")["tables"].item() == 7


def test_a_namespace_keeps_every_frame_to_its_documents(corpus: Corpus):
    notes = {corpus.ids["geese.md"], corpus.ids["geese_notes.md"]}

    assert set(analysis.documents(corpus.home, "notes")["document_id"]) == notes
    assert set(analysis.chunks(corpus.home, "notes")["document_id"]) == notes
    assert set(analysis.sections(corpus.home, "notes")["document_id"]) == notes
    assert analysis.namespaces(corpus.home) == ["default", "notes"]


def test_chunks_are_each_documents_chunks_with_their_token_counts(corpus: Corpus):
    chunks = analysis.chunks(corpus.home)

    for document_id in corpus.namespaces:
        written = corpus.artifact(document_id, "chunks.json")["chunks"]
        read = chunks.filter(pl.col("document_id") == document_id)
        assert read["chunk_id"].to_list() == [c["chunk_id"] for c in written]
        assert read["tokens"].to_list() == [c["metadata"]["tokens"] for c in written]
        assert read["chunk_type"].to_list() == [c["chunk_type"] for c in written]


def test_revisions_name_the_served_revision_of_each_namespace(corpus: Corpus):
    revisions = analysis.revisions(corpus.home)

    assert revisions.select("namespace", "revision", "documents").rows() == [
        ("default", 1, 5),
        ("notes", 1, 2),
    ]


def _tree(nodes: list[dict[str, Any]], depth: int = 1) -> list[tuple[str, int]]:
    return [pair for n in nodes for pair in [(n["title"], depth), *_tree(n["children"], depth + 1)]]


def test_sections_are_each_documents_nav_tree_in_document_order(corpus: Corpus):
    sections = analysis.sections(corpus.home)

    for document_id in corpus.namespaces:
        nav = corpus.artifact(document_id, "doc_nav.json")
        read = sections.filter(pl.col("document_id") == document_id)
        assert list(zip(read["title"], read["depth"], strict=True)) == _tree(nav["sections"])
    ducks = sections.filter(pl.col("document_id") == corpus.ids["ducks_field_notes.txt"])
    assert ducks["level"].to_list() == [1, 2, 2, 3, 2]


def test_the_graph_joins_the_two_related_notes_and_no_sample_document(corpus: Corpus):
    nodes, edges = analysis.graph(corpus.home)

    assert sorted(nodes["document_id"]) == sorted(corpus.namespaces)
    assert edges.height == 1
    edge = edges.row(0, named=True)
    assert edge["namespace"] == "notes"
    assert {edge["source"], edge["target"]} == {
        corpus.ids["geese.md"],
        corpus.ids["geese_notes.md"],
    }
    assert {"geese", "grass"} <= set(edge["shared_keywords"])


def test_stage_timings_give_every_stage_of_every_document_and_each_publish(corpus: Corpus):
    timings = analysis.stage_timings(corpus.home)

    documents = timings.filter(pl.col("stage") != "publish")
    stages = documents.group_by("partition").agg(pl.col("stage").sort())
    expected = sorted(["profile", "parse", "chunks", "nav", "document"])
    assert dict(stages.iter_rows()) == dict.fromkeys(corpus.namespaces, expected)
    publish = timings.filter(pl.col("stage") == "publish")
    assert sorted(publish["partition"]) == ["default", "notes"]
    assert (timings["seconds"] >= 0).all()
    for document_id in corpus.namespaces:
        mine = documents.filter(pl.col("partition") == document_id)
        whole = mine.filter(pl.col("stage") == "document")["seconds"].item()
        assert mine.filter(pl.col("stage") != "document")["seconds"].sum() <= whole + 0.001


def test_pipeline_runs_give_each_runs_outcome_stage_and_documents(corpus: Corpus):
    runs = analysis.pipeline_runs(corpus.home)

    assert set(runs["status"]) == {"SUCCESS"}
    assert set(runs["trigger"]) == {"test"}
    assert runs.filter(pl.col("stage") == "document")["documents"].sum() == 7
    assert sorted(runs.filter(pl.col("stage") == "publish")["namespace"]) == ["default", "notes"]
    assert (runs["seconds"] > 0).all()
    timed_runs = set(analysis.stage_timings(corpus.home)["run_id"])
    assert timed_runs == set(runs["run_id"])


def test_search_runs_give_the_agentic_search_within_its_budget(served: Served, corpus: Corpus):
    searches = analysis.search_runs(corpus.home)

    assert searches.height == 1
    run = searches.row(0, named=True)
    assert (run["namespace"], run["query"], run["budget"]) == ("default", QUESTION, BUDGET)
    assert 0 < run["tokens"] <= BUDGET
    assert run["results"] == len(served.agentic)
    assert run["stop_reason"] in {"completed", "budget_exhausted"}
    assert run["steps"] >= 1 and run["failed_steps"] == 0


def _flushed(home: Path, hits: int, timeout: float = 10.0) -> pl.DataFrame:
    deadline = time.monotonic() + timeout
    while True:
        access = analysis.access_stats(home)
        if access["hits"].sum() >= hits or time.monotonic() > deadline:
            return access
        time.sleep(0.05)


def test_access_stats_count_each_returned_chunk_once_per_answer(served: Served, corpus: Corpus):
    expected = Counter(served.classic) + Counter(served.agentic)  # the cached answer is not counted

    access = _flushed(corpus.home, sum(expected.values()))

    assert dict(zip(access["chunk_id"], access["hits"], strict=True)) == dict(expected)
    assert set(access["namespace"]) == {"default"}
    assert access["last_hit"].null_count() == 0


def test_cache_stats_count_the_repeated_question_as_a_hit(served: Served):
    cache = analysis.cache_stats(served.url, KEY)

    default = cache.filter(pl.col("namespace") == "default").row(0, named=True)
    assert (default["hits"], default["misses"], default["entries"]) == (1, 2, 2)
    assert default["hit_rate"] == pytest.approx(1 / 3)
    notes = cache.filter(pl.col("namespace") == "notes").row(0, named=True)
    assert (notes["hits"], notes["misses"], notes["hit_rate"]) == (0, 0, None)


def test_cache_stats_say_which_service_refused_and_never_the_key(served: Served):
    with pytest.raises(analysis.ServiceError, match="answered 401") as refused:
        analysis.cache_stats(served.url, "not-a-key")
    assert "not-a-key" not in str(refused.value)

    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(analysis.ServiceError, match=f"no query service answers at {url}"):
        analysis.cache_stats(url, KEY)


def _record_jobs(settings: CorpusSettings) -> tuple[str, str]:
    """One job done (revision 4) and one failed, through the upload API's own job store."""
    store = open_job_store(settings)
    done = store.create("doc-a", "default", "a.md")
    failed = store.create("doc-b", "default", "b.pdf")
    for job, error, revision in [(done, None, 4), (failed, "'b.pdf' is encrypted", None)]:
        claimed = store.claim()
        assert claimed is not None and claimed.job_id == job.job_id
        assert store.finish(job.job_id, error, revision, owner=claimed.lease_owner)
    return done.job_id, failed.job_id


def _check_jobs(frame: pl.DataFrame, done: str, failed: str) -> None:
    rows = {r["job_id"]: r for r in frame.iter_rows(named=True)}
    assert (rows[done]["status"], rows[done]["revision"], rows[done]["attempts"]) == ("done", 4, 1)
    assert rows[failed]["status"] == "error"
    assert rows[failed]["error_message"] == "'b.pdf' is encrypted"
    assert all(r["seconds"] >= 0 and r["finished_at"] >= r["created_at"] for r in rows.values())


def test_jobs_give_each_upload_jobs_outcome_from_sqlite(tmp_path: Path):
    settings = load_settings(home=tmp_path / "home")
    done, failed = _record_jobs(settings)

    _check_jobs(analysis.jobs(settings.home), done, failed)


def test_jobs_are_read_from_the_deployments_postgres_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    with postgres_database("corpus_analysis_test") as database:
        for name, value in [("USER", PG_USER), ("PASSWORD", ""), ("HOST", PG_HOST)]:
            monkeypatch.setenv(f"CORPUS_DAGSTER_PG_{name}", value)
        monkeypatch.setenv("CORPUS_DAGSTER_PG_DB", database)
        settings = load_settings(home=tmp_path / "home")
        settings.dagster_home.mkdir(parents=True)
        shutil.copyfile(
            REPO_ROOT / "deploy" / "dagster.postgres.yaml", settings.dagster_home / "dagster.yaml"
        )
        done, failed = _record_jobs(settings)

        _check_jobs(analysis.jobs(settings.home), done, failed)
    assert not (settings.home / "service" / "jobs.db").exists()


def _metrics(n: int, hit: float) -> Metrics:
    return Metrics(
        n=n,
        hit_at_1=hit,
        hit_at_5=hit,
        hit_at_10=hit,
        mrr_at_10=hit,
        ndcg_at_10=hit,
        doc_hit_at_10=1.0,
        latency_p50_ms=12.0,
    )


def _question(qid: str, kind: str, rank: int | None) -> QuestionResult:
    results = [
        RankedResult(
            rank=r,
            document_id="ducks",
            chunk_id=f"c{r}",
            source_file_name="ducks_field_notes.txt",
            pages=[r],
            relevant=r == rank,
            snippet=f"text {r}",
        )
        for r in (1, 2)
    ]
    return QuestionResult(
        id=qid,
        question=f"question {qid}?",
        kind=kind,
        gold="answers",
        doc="ducks_field_notes.txt",
        first_relevant_rank=rank,
        doc_hit=True,
        results=results,
        latency_ms=10.0,
    )


def test_eval_results_flatten_systems_kinds_questions_and_results(tmp_path: Path):
    classic = SystemResult(
        system="classic",
        overall=_metrics(2, 0.5),
        by_kind={"fact": _metrics(1, 1.0), "table": _metrics(1, 0.0)},
        questions=[_question("q1", "fact", 1), _question("q2", "table", None)],
    )
    baseline = SystemResult(system="naive-bm25", overall=_metrics(2, 0.0))
    run = EvalRun(
        questions_file="sample.jsonl",
        questions_sha256="ab" * 32,
        namespace="default",
        mode="classic",
        top_k=10,
        target="in-process",
        revision=3,
        systems={"classic": classic, "naive-bm25": baseline},
    )
    path = tmp_path / "results.json"
    path.write_text(run.model_dump_json(), encoding="utf-8")

    frames = analysis.eval_results(path)

    assert frames.systems.select("system", "mode", "revision", "n", "hit_at_1").rows() == [
        ("classic", "classic", 3, 2, 0.5),
        ("naive-bm25", "classic", 3, 2, 0.0),
    ]
    assert frames.kinds.select("system", "kind", "mrr_at_10").rows() == [
        ("classic", "fact", 1.0),
        ("classic", "table", 0.0),
    ]
    questions = frames.questions.select("id", "first_relevant_rank", "returned").rows()
    assert questions == [("q1", 1, 2), ("q2", None, 2)]
    relevant = frames.results.filter(pl.col("relevant")).select("question_id", "rank", "pages")
    assert relevant.rows() == [("q1", 1, [1])]
    assert set(frames.results["run"]) == {str(path)}


def test_an_empty_home_gives_empty_frames_and_is_left_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("CORPUS_API_KEY", raising=False)
    home = tmp_path / "fresh"
    home.mkdir()
    evaluation = analysis.eval_results([])

    frames = [
        analysis.documents(home),
        analysis.sections(home),
        analysis.chunks(home),
        *analysis.graph(home),
        analysis.revisions(home),
        analysis.stage_timings(home),
        analysis.pipeline_runs(home),
        analysis.search_runs(home),
        analysis.jobs(home),
        analysis.access_stats(home),
        evaluation.systems,
        evaluation.kinds,
        evaluation.questions,
        evaluation.results,
    ]

    assert [f.height for f in frames] == [0] * len(frames)
    assert all(f.width > 0 for f in frames)
    assert "tokens" in analysis.chunks(home).columns
    assert analysis.namespaces(home) == [] and analysis.service_key(home) is None
    assert list(home.iterdir()) == []
