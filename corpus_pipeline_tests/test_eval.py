"""`corpus eval`: questions through the real query path, scored exactly as the development sets'
own scorers score them, next to a deterministic naive floor.

A tiny corpus (three bird notes beside nine pond surveys, built and published through real
Dagster runs) has questions whose ranks are read off the results first; the figures are then
checked against the textbook formulas. The sets' scorers (`score_search.py`, `score_pages.py`)
run as subprocesses over the very answers `corpus eval` scored.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from corpus_pipeline.cli.main import main
from corpus_pipeline.contracts.agentic import AgenticResponse
from corpus_pipeline.contracts.evaluation import EvalQuestion, EvalRun, SystemResult
from corpus_pipeline.contracts.search import SearchResponse
from corpus_pipeline.evaluation.baseline import (
    NaiveBaseline,
    NaiveBM25,
    SourceDocument,
    folder_documents,
)
from corpus_pipeline.evaluation.questions import QuestionFileError, load_questions
from corpus_pipeline.evaluation.relevance import Hit, is_relevant
from corpus_pipeline.evaluation.runner import (
    InProcess,
    OverHttp,
    Request,
    RunSettings,
    evaluate,
)
from query_service.config import ServiceSettings

from .http_service import running_service, write_api_keys
from .support import (
    DOCS,
    REALWORLD_DOCS,
    SHARED_CORPUS,
    needs_shared,
    pdf_data,
    published_home,
)

pytestmark = pytest.mark.slow  # the tiny corpus is built through real Dagster runs once

REALWORLD = REALWORLD_DOCS.parent
TINY = {
    "herons.md": "# Herons\n\nGrey herons stand still in shallow water and spear fish with their "
    "bills.\n",
    "swans.md": "# Swans\n\nMute swans feed by upending in shallow water to reach pond weed.\n",
    "geese.md": "# Geese\n\nGreylag geese graze on grass in wet meadows beside the pond.\n",
    "ponds.md": "# Pond surveys\n\n"
    + "".join(
        f"## Station {i}\n\nThe pond water level was recorded at station {i} near the pond "
        "edge.\n\n"
        for i in range(1, 10)
    ),
}
TINY_QUESTIONS: list[dict[str, Any]] = [
    {"id": "q1", "doc": "herons.md", "question": "How do grey herons catch fish?",
     "answers": ["spear fish"], "kind": "fact"},
    {"id": "q2", "doc": "herons.md", "question": "Do mute swans or grey herons feed in shallow "
     "water?", "answers": ["spear fish"], "kind": "paraphrase"},
    {"id": "q3", "doc": "geese.md", "question": "What is near the pond water?",
     "answers": ["wet meadows"], "kind": "paraphrase"},
    {"id": "q4", "doc": "geese.md", "question": "Which birds feed in shallow water near the "
     "pond?", "answers": ["graze on grass"], "kind": "paraphrase"},
    {"id": "q5", "question": "Which birds feed in shallow water?", "answers": ["shallow water"],
     "kind": "multi+fact"},
    {"id": "q6", "doc": "swans.md", "question": "Where do black swans nest?",
     "answers": ["black swan"], "kind": "fact"},
    {"id": "q7", "doc": "swans.md", "question": "What do mute swans eat?", "kind": "document"},
]  # fmt: skip
# What the search returns for them: the ranks of the relevant results, and whether the
# question's document is in the top 10.
TINY_RANKS = {
    "q1": ([1], True),
    "q2": ([2], True),
    "q3": ([10], True),
    "q4": ([], False),
    "q5": ([1, 2], True),
    "q6": ([], True),
    "q7": ([1], True),
}
CLEAN_ENV = {"CORPUS_OBJECT_STORE_URL": None, "CORPUS_QUERY_URL": None, "CORPUS_API_KEY": None}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def corpus_eval(home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["eval", *args], env={"CORPUS_HOME": str(home), **CLEAN_ENV})


class Tap:
    """A query path that hands every request to the real one and keeps each answer body, so
    the sets' scorers can read exactly what `corpus eval` scored."""

    def __init__(self, path: InProcess) -> None:
        self.path = path
        self.target = path.target
        self.bodies: list[bytes] = []

    def send(self, request: Request) -> tuple[bytes, int | None]:
        body, revision = self.path.send(request)
        self.bodies.append(body)
        return body, revision

    def documents(self, namespace: str) -> list[tuple[str, str]]:
        return self.path.documents(namespace)

    def close(self) -> None:
        self.path.close()


def run_in_process(
    home: Path,
    questions: Path,
    mode: str = "classic",
    baseline: NaiveBaseline | None = None,
    per_document: bool = False,
) -> tuple[EvalRun, list[bytes]]:
    tap = Tap(InProcess(ServiceSettings(home=home), "default"))
    try:
        run, _ = evaluate(
            load_questions(questions),
            tap,
            RunSettings(
                "default",
                "agentic" if mode == "agentic" else "classic",
                10,
                4000,
                per_document=per_document,
            ),
            baseline,
        )
    finally:
        tap.close()
    return run, tap.bodies


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("eval-tiny")
    published_home(home, TINY)
    write_jsonl(home / "tiny.jsonl", TINY_QUESTIONS)
    return home


@pytest.fixture(scope="module")
def tiny_run(tiny: Path) -> EvalRun:
    return run_in_process(tiny, tiny / "tiny.jsonl")[0]


# -- the figures, by hand ------------------------------------------------------------------------


def dcg(ranks: list[int]) -> float:
    return sum(1 / math.log2(rank + 1) for rank in ranks)


def test_the_tiny_questions_rank_as_the_hand_computation_assumes(tiny_run: EvalRun) -> None:
    questions = tiny_run.systems["classic"].questions
    assert {
        q.id: ([r.rank for r in q.results if r.relevant], q.doc_hit) for q in questions
    } == TINY_RANKS
    firsts = {q.id: q.first_relevant_rank for q in questions}
    assert firsts == {i: ranks[0] if ranks else None for i, (ranks, _) in TINY_RANKS.items()}


def test_overall_figures_equal_the_hand_computed_ones(tiny_run: EvalRun) -> None:
    ranks = [relevant for relevant, _ in TINY_RANKS.values()]
    n = len(ranks)
    overall = tiny_run.systems["classic"].overall
    assert overall.n == 7
    assert overall.hit_at_1 == round(3 / 7, 6)  # q1, q5, q7
    assert overall.hit_at_5 == round(4 / 7, 6)  # and q2
    assert overall.hit_at_10 == round(5 / 7, 6)  # and q3
    assert overall.mrr_at_10 == round((1 + 1 / 2 + 1 / 10 + 0 + 1 + 0 + 1) / 7, 6)
    ndcg = [dcg(r) / dcg(list(range(1, len(r) + 1))) if r else 0.0 for r in ranks]
    assert overall.ndcg_at_10 == round(sum(ndcg) / n, 6)
    assert overall.doc_hit_at_10 == round(6 / 7, 6)  # all but q4
    assert overall.latency_p50_ms is not None and overall.latency_p95_ms is not None
    assert overall.evidence_tokens_mean is None  # classic mode


def test_a_kind_joined_with_plus_counts_in_each_part(tiny_run: EvalRun) -> None:
    by_kind = tiny_run.systems["classic"].by_kind
    assert sorted(by_kind) == ["document", "fact", "multi", "paraphrase"]
    fact = by_kind["fact"]  # q1 (rank 1), q5 (rank 1), q6 (miss)
    assert (fact.n, fact.hit_at_1, fact.mrr_at_10) == (3, round(2 / 3, 6), round(2 / 3, 6))
    paraphrase = by_kind["paraphrase"]  # q2 (rank 2), q3 (rank 10), q4 (miss)
    assert (paraphrase.n, paraphrase.hit_at_1, paraphrase.hit_at_5) == (3, 0.0, round(1 / 3, 6))
    assert paraphrase.mrr_at_10 == round((1 / 2 + 1 / 10) / 3, 6)
    assert tiny_run.systems["classic"].by_doc_type["md"].n == 6  # q5 names no document
    assert tiny_run.systems["classic"].by_doc_type["unspecified"].n == 1


def test_agentic_answers_are_scored_as_the_agent_reads_them_with_their_evidence_tokens(
    tiny: Path,
) -> None:
    run, bodies = run_in_process(tiny, tiny / "tiny.jsonl", mode="agentic")
    for question, body in zip(run.systems["agentic"].questions, bodies, strict=True):
        response = AgenticResponse.model_validate_json(body)
        assert [r.chunk_id for r in question.results] == [r.chunk_id for r in response.results][:10]
        assert question.evidence_tokens == sum(step.tokens for step in response.plan)
    tokens = [q.evidence_tokens or 0 for q in run.systems["agentic"].questions]
    assert run.systems["agentic"].overall.evidence_tokens_mean == round(sum(tokens) / 7, 1)


def test_the_http_path_scores_exactly_as_the_in_process_path(tiny: Path, tiny_run: EvalRun) -> None:
    write_api_keys(tiny, {"eval-key": ("evaluator", ["default"])})
    with running_service(ServiceSettings(home=tiny, reload_seconds=0.2)) as url:
        path = OverHttp(url, "eval-key")
        try:
            run, _ = evaluate(
                load_questions(tiny / "tiny.jsonl"), path, RunSettings("default", "classic", 10, 0)
            )
        finally:
            path.close()
    assert run.target == url and tiny_run.target == "in-process"
    assert run.revision == tiny_run.revision == 1

    def scored(system: SystemResult) -> list[dict[str, Any]]:
        return [q.model_dump(exclude={"latency_ms"}) for q in system.questions]

    assert scored(run.systems["classic"]) == scored(tiny_run.systems["classic"])


# -- the single-document setting ---------------------------------------------------------------


PER_DOCUMENT_RANKS = {  # each question asked within its own document (q5 names none: left out)
    "q1": [1],
    "q2": [1],
    "q3": [1],
    "q4": [1],
    "q6": [],
    "q7": [1],
    "q8": [],
}


@pytest.mark.parametrize("mode", ["classic", "agentic"])
def test_per_document_asks_each_question_within_its_gold_document(tiny: Path, mode: str) -> None:
    rows = [*TINY_QUESTIONS, {"id": "q8", "doc": "owls.md", "question": "Where do owls roost?"}]
    questions = write_jsonl(tiny / f"per-document-{mode}.jsonl", rows)
    run, bodies = run_in_process(tiny, questions, mode=mode, per_document=True)
    system = run.systems[mode]
    assert run.setting == "per document"
    ranks = {q.id: [r.rank for r in q.results if r.relevant] for q in system.questions if q.doc}
    assert ranks == PER_DOCUMENT_RANKS
    for question in system.questions:
        if question.doc and question.id != "q8":
            assert {r.source_file_name for r in question.results} == {question.doc}
    [missing] = [q for q in system.questions if q.id == "q8"]
    assert missing.error == "document 'owls.md' is not in the namespace"
    assert len(bodies) == 7  # the missing document's question was never sent


def test_corpus_eval_per_document_says_so_in_its_results_and_report(tiny: Path, tmp_path) -> None:
    result = corpus_eval(
        tiny, str(tiny / "tiny.jsonl"), "--per-document", "--out", str(tmp_path / "out")
    )
    assert result.exit_code == 0, result.output
    run = EvalRun.model_validate_json((tmp_path / "out" / "results.json").read_text())
    assert run.setting == "per document"
    assert run.systems["classic"].overall.hit_at_1 == round(6 / 7, 6)  # all but q6
    assert "each question within its gold document" in (tmp_path / "out" / "report.md").read_text()


# -- the naive floor --------------------------------------------------------------------------------


def test_the_floor_gives_the_same_results_file_on_every_run(tiny: Path, tmp_path: Path) -> None:
    for out in ("a", "b"):
        result = corpus_eval(
            tiny, str(tiny / "tiny.jsonl"), "--baseline", "naive-bm25", "--out", str(tmp_path / out)
        )
        assert result.exit_code == 0, result.output
    floors = [
        json.loads((tmp_path / out / "results.json").read_text())["systems"]["naive-bm25"]
        for out in ("a", "b")
    ]
    assert floors[0] == floors[1]
    # The floor read the namespace's stored sources: herons.md holds q1's answer.
    q1 = next(q for q in floors[0]["questions"] if q["id"] == "q1")
    assert q1["results"][0]["source_file_name"] == "herons.md" and q1["results"][0]["relevant"]
    report = (tmp_path / "a" / "report.md").read_text().splitlines()
    assert [line.split(" | ")[0] for line in report if line.startswith("| naive-bm25 |")] == [
        "| naive-bm25"
    ]  # one overall row beside the service's


def test_the_floor_breaks_ties_by_window_order() -> None:
    same = "tufted ducks dive for mussels"
    index = NaiveBM25([("b.md", same, []), ("a.md", "nothing here", []), ("c.md", same, [])])
    assert index.search("tufted ducks", 10) == [0, 2]


def test_the_floor_asked_within_a_document_keeps_to_its_windows() -> None:
    docs = [
        SourceDocument(name, name, partial(str.encode, text))
        for name, text in (
            ("herons.md", "Grey herons wait at the weir for fish. " * 3),
            ("ducks.md", "Tufted ducks dive for mussels; herons watch them. " * 3),
        )
    ]
    floor = NaiveBaseline.build(docs)
    assert floor.search("herons", 10)[0].source_file_name == "herons.md"
    within = floor.search("herons", 10, within="ducks.md")
    assert within and {h.source_file_name for h in within} == {"ducks.md"}
    assert floor.search("herons", 10, within="ducks") == within  # by its stem too


# -- the sets' own scorers agree ---------------------------------------------------------------------


def run_scorer(script: Path, results: Path, questions: Path, out: Path) -> Any:
    args = [str(results), "--questions", str(questions)]
    if script.name == "score_pages.py":
        args = [str(results), str(questions)]
    subprocess.run(
        [sys.executable, str(script), *args, "--json", str(out)], check=True, capture_output=True
    )
    return json.loads(out.read_text(encoding="utf-8"))


FIGURES = {"hit@1": "hit_at_1", "hit@5": "hit_at_5", "hit@10": "hit_at_10", "mrr@10": "mrr_at_10"}


def assert_agrees(theirs: dict[str, Any], ours: Any, digits: int, doc_key: str) -> None:
    assert theirs["n"] == ours.n
    for key, field in {**FIGURES, doc_key: "doc_hit_at_10"}.items():
        assert round(theirs[key], digits) == round(getattr(ours, field), digits), key


def service_lines(bodies: list[bytes], questions: list[EvalQuestion]) -> list[dict[str, Any]]:
    return [
        {
            "id": q.id,
            "results": [
                r.model_dump(include={"content", "source_file_name", "section_path", "pages"})
                for r in SearchResponse.model_validate_json(body).results
            ],
        }
        for q, body in zip(questions, bodies, strict=True)
    ]


def floor_lines(floor: NaiveBaseline, questions: list[EvalQuestion]) -> list[dict[str, Any]]:
    def line(hit: Hit) -> dict[str, Any]:
        return {"content": hit.content, "source_file_name": hit.source_file_name,
                "section_path": [], "pages": list(hit.pages)}  # fmt: skip

    return [{"id": q.id, "results": [line(h) for h in floor.search(q.question)]} for q in questions]


@needs_shared(DOCS)
def test_score_search_gives_the_same_numbers_as_corpus_eval(tmp_path: Path) -> None:
    names = ("word_sample.docx", "wiki.md", "wiki_duck.html")
    settings, _ = published_home(tmp_path / "home", {n: (DOCS / n).read_bytes() for n in names})
    rows = [json.loads(line) for line in (SHARED_CORPUS / "questions.jsonl").open()]
    questions = write_jsonl(tmp_path / "questions.jsonl", [r for r in rows if r["doc"] in names])
    floor = NaiveBaseline.build(d for d in folder_documents(DOCS) if d.name in names)
    run, bodies = run_in_process(settings.home, questions, baseline=floor)
    asked = list(load_questions(questions).questions)
    assert len(asked) == 7
    script = SHARED_CORPUS / "score_search.py"
    for system, lines in (
        ("classic", service_lines(bodies, asked)),
        ("naive-bm25", floor_lines(floor, asked)),
    ):
        results = write_jsonl(tmp_path / f"{system}.jsonl", lines)
        summary = run_scorer(script, results, questions, tmp_path / f"{system}.json")["summary"]
        ours = run.systems[system]
        assert_agrees(summary["all"], ours.overall, 4, "doc_hit@10")
        for kind, metrics in ours.by_kind.items():
            assert_agrees(summary[f"kind={kind}"], metrics, 4, "doc_hit@10")
        for doc_type, metrics in ours.by_doc_type.items():
            assert_agrees(summary[f"format={doc_type}"], metrics, 4, "doc_hit@10")
    assert 0 < run.systems["classic"].overall.hit_at_10 <= 1


def three_page_pdf() -> bytes:
    """One bird a page, each under its own heading: one chunk a page."""
    import pymupdf

    mu: Any = pymupdf
    doc = mu.open()
    for bird, text in (
        ("Herons", "Grey herons stand still in shallow water and spear fish."),
        ("Swans", "Mute swans upend in shallow water to reach pond weed."),
        ("Geese", "Greylag geese graze on grass in wet meadows."),
    ):
        page = doc.new_page()
        page.insert_text((72, 72), bird, fontsize=20)
        for line in range(6):
            page.insert_text((72, 110 + 16 * line), f"{text} Observation {line}.", fontsize=11)
    return pdf_data(doc)


def test_score_pages_gives_the_same_numbers_as_corpus_eval(tmp_path: Path) -> None:
    settings, _ = published_home(tmp_path / "home", {"birds.pdf": three_page_pdf()})
    questions = write_jsonl(
        tmp_path / "pages.jsonl",
        [
            {"id": "p1", "doc": "birds.pdf", "question": "How do herons fish?", "pages": [1],
             "kind": "Pure-text", "doc_type": "Notes"},
            {"id": "p2", "doc": "birds.pdf", "question": "What do swans reach?", "pages": [2],
             "kind": "Pure-text+Table", "doc_type": "Notes"},
            {"id": "p3", "doc": "birds.pdf", "question": "Where do ducks dive?", "pages": [5],
             "kind": "Table", "doc_type": "Notes"},
            {"id": "p4", "doc": "other.pdf", "question": "Where do geese graze?", "pages": [3],
             "kind": "Table", "doc_type": "Other"},
            {"id": "p5", "doc": "BIRDS.docx", "question": "Where do geese graze?", "pages": [3],
             "kind": "Figure", "doc_type": "Other"},
        ],
    )  # fmt: skip
    run, bodies = run_in_process(settings.home, questions)
    asked = list(load_questions(questions).questions)
    theirs = run_scorer(
        REALWORLD / "score_pages.py",
        write_jsonl(tmp_path / "classic.jsonl", service_lines(bodies, asked)),
        questions,
        tmp_path / "classic.json",
    )
    ours = run.systems["classic"]
    # Three chunks, no more than top_k: the whole store comes back in page order.
    assert [(q.first_relevant_rank, q.doc_hit) for q in ours.questions] == [
        (1, True), (2, True), (None, True), (None, False), (3, True)  # p5: the same stem
    ]  # fmt: skip
    assert_agrees(theirs["all"], ours.overall, 6, "doc@10")
    for kind, metrics in ours.by_kind.items():
        assert_agrees(theirs[f"kind:{kind}"], metrics, 6, "doc@10")
    for doc_type, metrics in ours.by_doc_type.items():
        assert_agrees(theirs[f"type:{doc_type}"], metrics, 6, "doc@10")


@needs_shared(REALWORLD_DOCS)
def test_score_pages_agrees_on_the_floor_over_real_documents(tmp_path: Path) -> None:
    names = {"f8d3a162ab9507e021d83dd109118b60.pdf", "936c0e2c2e6c8e0c07c51bfaf7fd0a83.pdf",
             "2023_Q3_AAPL.pdf"}  # fmt: skip
    rows = [json.loads(line) for line in (REALWORLD / "questions.jsonl").open()]
    questions = write_jsonl(tmp_path / "q.jsonl", [r for r in rows if r["doc"] in names])
    asked = list(load_questions(questions).questions)
    floor = NaiveBaseline.build(d for d in folder_documents(REALWORLD_DOCS) if d.name in names)
    from corpus_pipeline.evaluation.runner import ask_baseline, system_result

    ours = system_result("naive-bm25", ask_baseline(floor, asked, 10))
    theirs = run_scorer(
        REALWORLD / "score_pages.py",
        write_jsonl(tmp_path / "floor.jsonl", floor_lines(floor, asked)),
        questions,
        tmp_path / "floor.json",
    )
    assert ours.overall.n == 17
    assert_agrees(theirs["all"], ours.overall, 6, "doc@10")
    for doc_type, metrics in ours.by_doc_type.items():
        assert_agrees(theirs[f"type:{doc_type}"], metrics, 6, "doc@10")


# -- relevance rules ---------------------------------------------------------------------------------


def test_answer_strings_match_after_the_scorers_normalisation() -> None:
    question = EvalQuestion(id="a", question="?", doc="word_sample.docx", answers=["foo_bar baz"])
    hit = Hit("d", "c", "folder/Word_Sample.DOCX", "Say FOO\\_bar\n  Baz!")
    assert is_relevant(question, hit)
    assert not is_relevant(question, Hit("d", "c", "word_sample.pdf", "foo_bar baz"))


def test_gold_pages_accept_the_same_stem_and_need_a_gold_page() -> None:
    question = EvalQuestion.model_validate({"id": "p", "question": "?", "doc": "r.pdf", "page": 6})
    assert question.gold == "pages"
    assert is_relevant(question, Hit("d", "c", "R.docx", "", pages=(5, 6)))
    assert not is_relevant(question, Hit("d", "c", "r.pdf", "", pages=(5,)))


# -- compare, and refusals ------------------------------------------------------------------------


def test_compare_lists_the_question_that_flipped(tiny: Path, tmp_path: Path) -> None:
    for name, k in (("a", "1"), ("b", "10")):
        out = str(tmp_path / name)
        result = corpus_eval(tiny, str(tiny / "tiny.jsonl"), "--top-k", k, "--out", out)
        assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        main,
        ["eval", "--compare", str(tmp_path / "a/results.json"), str(tmp_path / "b/results.json")],
        env=CLEAN_ENV,
    )
    assert result.exit_code == 0, result.output
    # q2 (rank 2) and q3 (rank 10) are misses in a top 1; q1, q5 and q7 stay hits.
    assert "2 questions flipped" in result.output
    flipped = [line.split() for line in result.output.splitlines() if "gained" in line]
    assert [words[1:7] for words in flipped] == [
        ["q2", "(paraphrase)", "miss", "→", "2", "gained"],
        ["q3", "(paraphrase)", "miss", "→", "10", "gained"],
    ]
    assert "gained hit@5, hit@10" in result.output and "lost" not in result.output


def test_a_namespace_never_published_fails_with_exit_code_1_naming_it(tiny: Path) -> None:
    result = corpus_eval(tiny, str(tiny / "tiny.jsonl"), "--namespace", "nowhere")
    assert result.exit_code == 1
    assert "namespace 'nowhere' has no published revision" in result.output
    assert "Usage:" not in result.output


def test_an_unreadable_question_file_fails_with_exit_code_1_naming_it(tiny: Path) -> None:
    missing = tiny / "missing.jsonl"
    result = corpus_eval(tiny, str(missing))
    assert result.exit_code == 1
    assert f"{missing}: cannot be read" in result.output


def test_a_question_file_with_a_bad_line_is_refused_naming_file_and_line(
    tiny: Path, tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"id": "a", "question": "Where?", "answers": ["here"]}\n\n'
        '{"id": "b", "question": "When?", "pages": "six"}\n'
    )
    with pytest.raises(QuestionFileError, match=re.escape(f"{path}, line 3: pages")):
        load_questions(path)
    result = corpus_eval(tiny, str(path))
    assert result.exit_code == 1 and f"{path}, line 3" in result.output


def test_a_repeated_id_is_refused_naming_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "twice.jsonl",
        [{"id": "a", "question": "One?"}, {"id": "a", "question": "Two?"}],
    )
    with pytest.raises(QuestionFileError, match="line 2: id 'a' repeats the question of line 1"):
        load_questions(path)


def test_the_sample_questions_are_answered_from_the_sample_documents(tmp_path: Path) -> None:
    data = Path(__file__).resolve().parent.parent / "data"
    files = {p.name: p.read_bytes() for p in sorted((data / "sample").iterdir())}
    settings, _ = published_home(tmp_path / "home", files)
    floor = NaiveBaseline.build(folder_documents(data / "sample"))
    run, _ = run_in_process(settings.home, data / "questions" / "sample.jsonl", baseline=floor)
    assert run.systems["classic"].overall.hit_at_10 == 1.0
    assert run.systems["naive-bm25"].overall.hit_at_10 == 1.0  # answers are in the plain text
