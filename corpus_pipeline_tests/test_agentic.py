"""Agentic search: plans, the shared budget, navigation, evidence, ranking and run records."""

from __future__ import annotations

import json
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import ChunkType
from corpus_pipeline.contracts.agentic import AgenticRequest, AgenticResponse, PlanStep
from corpus_pipeline.enrich.tokens import count_tokens
from query_service.retrieval.agentic import BudgetTooSmall, agentic_search
from query_service.retrieval.navigation import Navigator
from query_service.retrieval.planner import (
    InvalidPlan,
    LLMPlanner,
    RulePlanner,
    layers,
    validate_plan,
)
from query_service.snapshot.records import RunRecorder, read_runs
from query_service.snapshot.revision import open_revision

from .support import DOCS, build_documents, publish_namespaces

DUCKS = """# Ducks

## Diving ducks

Tufted ducks dive for mussels and snails in deep water.

## Dabbling ducks

Mallards dabble at the surface for plants and seeds.

### Mallard moult

Mallards lose their flight feathers in summer and hide in reeds.
"""
GEESE = """# Geese

## Migration

Greylag geese migrate south in autumn in V-shaped flocks.

## Feeding

Geese graze on grass and grain in open fields.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    settings = load_settings(home=tmp_path_factory.mktemp("agentic"))
    build_documents(
        settings,
        {
            "ducks.md": DUCKS,
            "geese.md": GEESE,
            "word_tables.docx": (DOCS / "word_tables.docx").read_bytes(),
        },
    )
    for i in range(12):
        build_documents(
            settings,
            {f"notes/{i}.md": f"# Note {i}\n\nA birdwatching note number {i} about the lake.\n"},
        )
    publish_namespaces(settings)
    return settings, open_revision(settings.published_dir, "default")


def ask(corpus, query: str, **kw) -> AgenticResponse:
    return agentic_search(
        corpus[1], AgenticRequest(mode="agentic", query=query, **kw), RulePlanner()
    )


def step(id_: str, deps: list[str] | None = None) -> PlanStep:
    return PlanStep(id=id_, query=f"query {id_}", depends_on=deps or [])


def test_plan_validation_rejects_cycles_unknown_dependencies_and_duplicates():
    with pytest.raises(InvalidPlan, match="cycle"):
        validate_plan([step("a", ["b"]), step("b", ["a"])])
    with pytest.raises(InvalidPlan, match="unknown"):
        validate_plan([step("a", ["zz"])])
    with pytest.raises(InvalidPlan, match="unique"):
        validate_plan([step("a"), step("a")])
    assert [
        [s.id for s in layer] for layer in layers([step("c", ["a", "b"]), step("a"), step("b")])
    ] == [["a", "b"], ["c"]]


def test_an_invalid_llm_plan_falls_back_to_the_rule_plan():
    def cyclic(_: str) -> tuple[dict[str, object], int]:
        return {
            "steps": [
                {"id": "a", "query": "x", "depends_on": ["b"]},
                {"id": "b", "query": "y", "depends_on": ["a"]},
            ]
        }, 50

    def failing(_: str) -> tuple[dict[str, object], int]:
        raise TimeoutError("model took too long")

    request = AgenticRequest(mode="agentic", query="How do ducks feed?")
    for fn in (cyclic, failing):
        plan = LLMPlanner(fn, RulePlanner()).plan(request)
        assert plan.planner.startswith("rule (fallback")
        assert [s.query for s in plan.steps] == ["How do ducks feed?"]


def test_a_valid_llm_plan_is_used():
    def good(_: str) -> tuple[dict[str, object], int]:
        return {
            "steps": [
                {"id": "s1", "query": "duck diet"},
                {"id": "s2", "query": "goose diet", "depends_on": ["s1"]},
            ]
        }, 80

    plan = LLMPlanner(good, RulePlanner()).plan(AgenticRequest(mode="agentic", query="diets"))
    assert plan.planner == "llm" and [s.depends_on for s in plan.steps] == [[], ["s1"]]


def test_most_queries_are_one_step_and_no_plan_has_an_answer_step():
    plan = RulePlanner().plan(AgenticRequest(mode="agentic", query="How do tufted ducks feed?"))
    assert len(plan.steps) == 1
    assert "answer" not in json.dumps(plan.model_dump()).lower()


def test_a_multi_part_query_gets_a_step_per_part_after_the_whole_question(corpus):
    query = "What do tufted ducks dive for? When do greylag geese migrate?"
    response = ask(corpus, query, token_budget=8000)
    # The whole question's step reports no query of its own: it is the request's.
    assert [p.query for p in response.plan] == [
        None,
        "What do tufted ducks dive for",
        "When do greylag geese migrate",
    ]
    assert [p.status for p in response.plan] == ["done", "done", "done"]
    assert "mussels" in response.evidence_text and "autumn" in response.evidence_text
    assert response.answer_text == ""


@pytest.mark.parametrize("budget", [1000, 2000, 8000])
def test_each_part_of_a_split_question_gets_evidence_at_every_budget(corpus, budget):
    response = ask(
        corpus, "What do tufted ducks dive for? When do greylag geese migrate?", token_budget=budget
    )
    assert "mussels" in response.evidence_text and "autumn" in response.evidence_text


def test_a_comparison_plans_the_whole_question_and_one_step_per_side(corpus):
    response = ask(corpus, "Compare diving ducks and dabbling ducks", token_budget=8000)
    assert len(response.plan) == 3
    assert "mussels" in response.evidence_text and "plants and seeds" in response.evidence_text


def test_each_passage_reads_under_a_numbered_line_naming_its_file_pages_and_section(corpus):
    response = ask(corpus, "Where do mallards hide when they moult?", token_budget=8000)
    text = response.evidence_text
    line = "[1] ducks.md · Ducks > Dabbling ducks > Mallard moult"
    assert text.startswith(line + "\n")
    first = response.results[0]
    assert text[first.span[0] : first.span[1]].endswith("hide in reeds.")
    assert text.index(line) < first.span[0]
    for number, citation in enumerate(response.results, 1):
        assert f"[{number}]" in text[: citation.span[0]].rsplit("\n\n", 1)[-1]


def test_each_chunk_text_travels_once_and_results_carry_no_content(corpus):
    response = ask(corpus, "tufted ducks dive mussels", token_budget=16000)
    body = response.model_dump_json()
    assert body.count("Tufted ducks dive for mussels and snails in deep water.") == 1
    result = json.loads(body)["results"][0]
    assert set(result) <= {
        "chunk_id",
        "document_id",
        "source_file_name",
        "section_path",
        "section_id",
        "pages",
        "score",
        "span",
        "more_chunks",
        "cut",
        "resource",
    }
    assert response.answer_text == ""


def test_passages_hold_the_chunks_text_as_read_returns_it(corpus):
    from corpus_pipeline.contracts.api import ReadRef, ReadRequest
    from query_service.snapshot.store import read

    response = ask(corpus, "Where do mallards hide when they moult?", token_budget=8000)
    for citation, text in response.passages():
        chunks = [citation.chunk_id, *citation.more_chunks]
        answer = read(corpus[1], ReadRequest(refs=[ReadRef(chunk_id=c) for c in chunks]))
        for item in answer.items:
            content = item.chunks[0].content
            if "<table" not in content:  # tables read as their rows in evidence
                assert content in text


def test_table_evidence_reads_as_its_rows_and_cites_its_html(corpus):
    response = ask(corpus, "merged cell vertical spans table", token_budget=16000)
    tables = [(c, t) for c, t in response.passages() if c.resource]
    assert tables, "a table is among the passages"
    citation, text = tables[0]
    assert "<table>" not in text and " | " in text
    resource = citation.resource or ""
    assert "/resources/tables/" in resource and resource.endswith("?namespace=default")


def test_exclusions_hold_in_every_phase(corpus):
    ducks = next(
        r.document_id
        for r in ask(corpus, "tufted ducks", token_budget=8000).results
        if r.source_file_name == "ducks.md"
    )
    response = ask(
        corpus,
        "tufted ducks dive mussels mallards",
        token_budget=16000,
        exclude_document_ids=[ducks],
    )
    assert all(r.document_id != ducks for r in response.results)
    assert "ducks.md" not in response.evidence_text
    section = ask(
        corpus,
        "mallards moult reeds",
        token_budget=16000,
        exclude_section_paths=[["Ducks", "Dabbling ducks"]],
    )
    assert (
        "hide in reeds" not in section.evidence_text
        and "plants and seeds" not in section.evidence_text
    )


def test_only_allowed_chunk_types_are_returned(corpus):
    response = ask(corpus, "merged cell table", token_budget=16000, chunk_types=[ChunkType.TABLE])
    assert response.results
    for citation in response.results:  # every chunk a passage reads is a table
        assert citation.resource and "/tables/" in citation.resource
        assert not citation.more_chunks or all(
            corpus_type(corpus, c) is ChunkType.TABLE for c in citation.more_chunks
        )


def corpus_type(corpus, chunk_id: str) -> ChunkType:
    from corpus_pipeline.contracts import published as t

    rows = corpus[1].rows(t.CHUNKS, f"chunk_id = {t.quote(chunk_id)}", ["chunk_type"])
    return ChunkType(rows[0]["chunk_type"])


def test_budget_exhaustion_mid_dag_returns_partial_evidence_and_says_so(corpus):
    response = ask(
        corpus,
        "What do tufted ducks dive for? When do greylag geese migrate? How do geese feed?",
        token_budget=900,
    )
    assert response.stop_reason == "budget_exhausted"
    assert response.budget.evidence_tokens_available > 0
    assert response.results
    assert count_tokens(response.model_dump_json()) <= 900


def test_a_budget_too_small_for_the_plan_itself_is_an_error():
    with pytest.raises(ValueError, match="token_budget"):
        AgenticRequest(mode="agentic", query="x", token_budget=10)


def test_a_long_query_with_a_tiny_budget_is_refused_not_overrun(corpus):
    with pytest.raises(BudgetTooSmall):
        ask(corpus, "ducks " * 600, token_budget=512)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget=st.integers(min_value=512, max_value=6000),
    query=st.sampled_from(
        [
            "tufted ducks dive",
            "Compare diving ducks and dabbling ducks",
            "merged cell table",
            "What do tufted ducks dive for? When do greylag geese migrate?",
            "birdwatching note lake",
        ]
    ),
    top_k=st.integers(min_value=1, max_value=20),
)
def test_the_response_never_exceeds_the_budget(corpus, budget, query, top_k):
    try:
        response = ask(corpus, query, token_budget=budget, top_k=top_k)
    except BudgetTooSmall:
        return
    assert count_tokens(response.model_dump_json()) <= budget
    assert response.budget.used <= budget


def test_run_and_step_records_are_appended_never_rewritten(corpus, tmp_path):
    _, revision = corpus
    paths = []
    for query in ("tufted ducks", "geese migrate"):
        recorder = RunRecorder(tmp_path / "runs", "default")
        agentic_search(
            revision, AgenticRequest(mode="agentic", query=query), RulePlanner(), recorder
        )
        paths.append(recorder.write())
    first_bytes = paths[0].read_bytes()
    table = read_runs(tmp_path / "runs", "default")
    assert set(table.column("record_type").to_pylist()) == {"run", "step"}
    assert len(set(table.column("run_id").to_pylist())) == 2
    assert {"plan", "retrieve", "agentic_search"} <= set(table.column("action").to_pylist())
    assert paths[0].read_bytes() == first_bytes
    assert pq.read_table(paths[1]).num_rows > 0


def test_the_llm_planner_runs_through_the_real_client_and_counts_its_tokens(corpus):
    from query_service.config import ServiceSettings
    from query_service.retrieval.planner import make_planner

    from .openai_server import completion, openai_server

    plan_json = json.dumps(
        {
            "steps": [
                {"id": "s1", "query": "tufted ducks dive"},
                {"id": "s2", "query": "geese migrate"},
            ]
        }
    )
    with openai_server(lambda body: (200, completion(plan_json))) as server:
        settings = ServiceSettings(
            home=corpus[0].home,
            planner_model="planner-mini",
            llm_base_url=server.base_url,
            llm_api_keys="k1,k2",
        )
        planner, model_tokens = make_planner(settings)
        response = agentic_search(
            corpus[1],
            AgenticRequest(mode="agentic", query="ducks and geese", token_budget=8000),
            planner,
            model_tokens=model_tokens,
        )
    assert response.planner == "llm" and [p.query for p in response.plan] == [
        "tufted ducks dive",
        "geese migrate",
    ]
    assert response.budget.model_tokens > 0
    assert response.budget.used <= 8000
    assert "json" in server.requests[0]["messages"][0]["content"].lower()


def test_with_a_model_the_navigator_chooses_among_outlines_within_the_budget(corpus):
    from query_service.config import ServiceSettings
    from query_service.retrieval.planner import make_navigator

    def reply(body: dict[str, Any]) -> tuple[int, str]:
        prompt = body["messages"][0]["content"]
        lines = [line for line in prompt.splitlines() if line[:1].isdigit()]
        wanted = next(int(line.split(".", 1)[0]) for line in lines if "Mallard moult" in line)
        return 200, completion(json.dumps({"open": [wanted]}))

    from .openai_server import completion, openai_server

    with openai_server(reply) as server:
        settings = ServiceSettings(
            home=corpus[0].home,
            navigator_model="nav-mini",
            llm_base_url=server.base_url,
            llm_api_keys="k1",
        )
        navigator = make_navigator(settings)
        response = agentic_search(
            corpus[1],
            AgenticRequest(mode="agentic", query="mallards ducks", token_budget=8000),
            RulePlanner(),
            navigator=navigator,
        )
    assert server.requests, "the model was asked"
    assert "Sections:" in server.requests[0]["messages"][0]["content"]
    # Discovery hits are always evidence; what navigation opened besides them is the model's pick.
    moult = ("Ducks", "Dabbling ducks", "Mallard moult")
    assert moult in {tuple(r.section_path) for r in response.results}
    context = [r for r in response.results if r.score == 0]  # opened by navigation
    assert all(tuple(r.section_path) == moult for r in context)
    assert response.budget.model_tokens > 0
    assert count_tokens(response.model_dump_json()) + response.budget.model_tokens <= 8000


def test_a_failing_navigator_model_keeps_the_deterministic_choice(corpus):
    from query_service.config import ServiceSettings
    from query_service.retrieval.planner import make_navigator

    from .openai_server import openai_server

    with openai_server(lambda body: (500, '{"error": {"message": "down"}}')) as server:
        navigator = make_navigator(
            ServiceSettings(
                home=corpus[0].home,
                navigator_model="nav-mini",
                llm_base_url=server.base_url,
                llm_api_keys="k1",
            )
        )
        with_model = ask_with(corpus, "Where do mallards hide when they moult?", navigator)
    without = ask(corpus, "Where do mallards hide when they moult?", token_budget=8000)
    assert [r.chunk_id for r in with_model.results] == [r.chunk_id for r in without.results]


def ask_with(corpus, query: str, navigator: Navigator | None) -> AgenticResponse:
    return agentic_search(
        corpus[1],
        AgenticRequest(mode="agentic", query=query, token_budget=8000),
        RulePlanner(),
        navigator=navigator,
    )


def test_the_agent_reads_the_classic_hits_first_in_their_order(corpus):

    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search

    query = "Where do tufted ducks dive for mussels?"
    classic = classic_search(corpus[1], SearchRequest(query=query, top_k=5))
    response = ask(corpus, query, token_budget=32000, top_k=5)
    expected = [r.chunk_id for r in classic.results]
    assert len(expected) >= 3
    assert [r.chunk_id for r in response.results[: len(expected)]] == expected
    assert [r.score for r in response.results[: len(expected)]] == [
        round(r.score, 4) for r in classic.results
    ]


def _long_sections() -> str:
    """Six sections of ~300 tokens, each about mussels to a different degree."""
    filler = "The survey team counted birds along the shore every morning at dawn. "
    parts = ["# Lake survey\n"]
    for i in range(6):
        mussels = "Tufted ducks dive for mussels here. " * (6 - i)
        parts.append(f"## Station {i}\n\n{mussels}{filler * 16}\n")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory):
    settings = load_settings(home=tmp_path_factory.mktemp("agentic-long"))
    build_documents(settings, {"survey.md": _long_sections(), "geese.md": GEESE})
    for i in range(12):
        build_documents(settings, {f"notes/{i}.md": f"# Note {i}\n\nA note {i} on the lake.\n"})
    publish_namespaces(settings)
    return settings, open_revision(settings.published_dir, "default")


@pytest.mark.parametrize("budget", [1000, 2000, 3000, 4000])
def test_a_tight_budget_reads_a_prefix_of_the_classic_hits_in_their_order(long_corpus, budget):
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search

    query = "Where do tufted ducks dive for mussels?"
    classic = classic_search(long_corpus[1], SearchRequest(query=query, top_k=6))
    response = ask(long_corpus, query, token_budget=budget, top_k=6)
    hits = [r.chunk_id for r in classic.results]
    listed = [r.chunk_id for r in response.results]
    assert listed == hits[: len(listed)]  # never out of rank order, never a gap
    assert len(listed) >= min(6, budget // 700)


def test_a_table_embedded_twice_in_one_text_is_read_once(tmp_path):
    table = "| Station | Mussels |\n| --- | --- |\n| North | 41 |\n| South | 17 |\n"
    text = (
        "# Mussel counts\n\nThe mussel counts per station, before the survey:\n\n"
        f"{table}\nAnd the same mussel counts after the survey, unchanged:\n\n{table}"
    )
    settings = load_settings(home=tmp_path)
    build_documents(settings, {"counts.md": text, "geese.md": GEESE})
    for i in range(12):
        build_documents(settings, {f"notes/{i}.md": f"# Note {i}\n\nA note {i} on the lake.\n"})
    publish_namespaces(settings)
    corpus = (settings, open_revision(settings.published_dir, "default"))
    for budget in range(700, 3000, 100):
        response = ask(corpus, "mussel counts per station", token_budget=budget)
        read = [c for r in response.results for c in (r.chunk_id, *r.more_chunks)]
        assert len(read) == len(set(read))
        assert response.evidence_text.count("| North | 41 |") <= 2  # once per place it is printed


def _report() -> str:
    """A long generated report: 24 sections of four ~110-word paragraphs, and two statements
    of 80 table rows each (far more than a small budget holds)."""
    words = (
        "The committee reviewed the regional survey results in detail and noted that the "
        "waterfowl counts varied with the season, the water level and the weather. "
    )
    parts = ["# Annual survey report\n"]
    for i in range(24):
        body = "\n\n".join(
            f"Paragraph {j} of section {i}. " + words * 4 + f"Station {i}-{j} closed the year."
            for j in range(4)
        )
        parts.append(f"## Section {i}: regional findings\n\n{body}\n")
        if i in (5, 17):
            rows = "\n".join(f"| Station {i}-{r} | {r * 7} | {r * 3} |" for r in range(80))
            parts.append(
                f"## Mussel count statement {i}\n\n| Station | Mussels | Snails |\n"
                f"| --- | --- | --- |\n{rows}\n"
            )
    return "\n".join(parts)


@pytest.fixture(scope="module")
def report_corpus(tmp_path_factory):
    settings = load_settings(home=tmp_path_factory.mktemp("agentic-report"))
    build_documents(settings, {"report.md": _report(), "ducks.md": DUCKS, "geese.md": GEESE})
    publish_namespaces(settings)
    return settings, open_revision(settings.published_dir, "default")


BUDGETS = [512, 1000, 2000, 4000, 8000, 16000]
REPORT_QUERIES = [
    "How many mussels were counted in the mussel count statement?",
    "What did the committee note about the waterfowl counts?",
    "Which station closed the year in section 12?",
]


@pytest.mark.parametrize("query", REPORT_QUERIES)
def test_a_long_document_always_answers_with_evidence_that_grows_with_the_budget(
    report_corpus, query
):
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search

    assert classic_search(report_corpus[1], SearchRequest(query=query)).results
    evidence = []
    for budget in BUDGETS:
        response = ask(report_corpus, query, token_budget=budget)
        assert response.results and response.evidence_text, budget
        assert count_tokens(response.model_dump_json()) <= budget
        evidence.append(count_tokens(response.evidence_text))
    assert evidence == sorted(evidence), evidence
    assert evidence[-1] > 4 * evidence[0]


def test_a_table_too_long_for_the_budget_is_cut_at_a_row_and_read_returns_the_rest(
    report_corpus,
):
    from corpus_pipeline.contracts import published as t
    from corpus_pipeline.contracts.api import ReadRef, ReadRequest
    from query_service.snapshot.store import read

    response = ask(report_corpus, REPORT_QUERIES[0], token_budget=1000)
    citation, text = response.passages()[0]
    assert citation.cut and citation.resource
    end = citation.span[1]
    assert response.evidence_text[end:].startswith(" […cut: `read` returns the rest]")
    stored = report_corpus[1].rows(
        t.CHUNKS, f"chunk_id = {t.quote(citation.chunk_id)}", ["content"]
    )[0]["content"]
    assert stored.startswith(text) and stored[len(text)] == "\n"  # cut after a whole row
    whole = read(report_corpus[1], ReadRequest(refs=[ReadRef(chunk_id=citation.chunk_id)]))
    table = whole.items[0].chunks[0].content  # `read` answers the whole table, as HTML
    last_row = stored.rsplit("\n", 1)[1].split(" | ")[0]
    assert last_row not in text and f"<td>{last_row}</td>" in table


@pytest.mark.parametrize("budget", [700, 1000, 1500])
def test_a_paragraph_too_long_for_its_share_of_the_budget_is_cut_after_a_sentence(
    report_corpus, budget
):
    response = ask(report_corpus, REPORT_QUERIES[1], token_budget=budget)
    cut = [text for citation, text in response.passages() if citation.cut]
    assert cut, "a small budget cuts its passages"
    assert all(text.endswith(".") for text in cut), cut


@pytest.mark.parametrize(("budget", "share"), [(1000, 0.5), (2000, 0.7), (8000, 0.7)])
def test_the_budget_is_spent_on_evidence(report_corpus, budget, share):
    for query in REPORT_QUERIES:
        response = ask(report_corpus, query, token_budget=budget)
        body = count_tokens(response.model_dump_json())
        assert count_tokens(response.evidence_text) >= share * body, query


def test_the_whole_question_is_asked_again_within_the_document_of_its_best_hit(corpus):
    from corpus_pipeline.contracts.search import SearchFilters, SearchRequest
    from query_service.retrieval.classic import classic_search
    from query_service.retrieval.steps import run_step
    from query_service.snapshot.sections import SectionCache

    query = "mallards dabble for plants and seeds"
    request = AgenticRequest(mode="agentic", query=query)
    step = PlanStep(id="s1", query=query)
    docs = SectionCache.of(corpus[1])
    outcome = run_step(corpus[1], docs, request, step, depth=20, deepen=True)
    best = outcome.hits[0].document_id
    within = classic_search(
        corpus[1], SearchRequest(query=query, filters=SearchFilters(document_ids=[best]))
    )
    assert [p.chunk_id for p in outcome.within] == [r.chunk_id for r in within.results]
    assert {p.document_id for p in outcome.within} == {best}
    plain = run_step(corpus[1], docs, request, step, depth=20)
    assert plain.within == []
