"""Answer-format instructions in a question are not search terms: they are removed before the
query is searched and never become a plan step."""

from __future__ import annotations

import pytest

from corpus_pipeline.contracts.agentic import AgenticRequest
from query_service.retrieval.instructions import is_answer_instruction, search_text
from query_service.retrieval.planner import RulePlanner


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "How many steps are required to replace the grille? Write the answer in integer format.",
            "How many steps are required to replace the grille?",
        ),
        (
            "Is there a signature present on the last page? Directly answer 'yes' or 'no'.",
            "Is there a signature present on the last page?",
        ),
        (
            "Which algorithm has more lines? (Give the algorithm name)",
            "Which algorithm has more lines?",
        ),
        (
            "When was the last shock recorded in the table? The answer needs to be accurate to the"
            " minute. For example: 1883 Dec.7, 2 8 p.m.",
            "When was the last shock recorded in the table?",
        ),
        (
            'Which months? Write the answer in list format, e.g., ["Jan","Feb"]',
            "Which months?",
        ),
    ],
)
def test_instruction_sentences_after_the_question_are_removed(query: str, expected: str) -> None:
    assert search_text(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "Answer in int format",  # the only sentence stays: a query is never emptied
        "List the chapters on research. Give the dates of the two surveys.",  # asks for content
        "What was revenue in 2023? What was it in 2022?",
        "Format of the 2023 report. Write access to the archive.",
    ],
)
def test_questions_without_instructions_are_unchanged(query: str) -> None:
    assert search_text(query) == query


def test_an_instruction_names_a_form_of_the_answer() -> None:
    assert is_answer_instruction("Please write down the answer in float format with 2 decimals.")
    assert is_answer_instruction("Give me an integer.")
    assert not is_answer_instruction("Give the dates of the two surveys.")
    assert not is_answer_instruction("Write access to the archive.")


def test_an_instruction_is_never_a_plan_step() -> None:
    plan = RulePlanner().plan(
        AgenticRequest(
            mode="agentic",
            query="How many grams of coffee fit in the manual insert? Return me an integer.",
        )
    )
    assert [s.query for s in plan.steps] == [
        "How many grams of coffee fit in the manual insert? Return me an integer."
    ]
