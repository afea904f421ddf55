"""Question files (JSON Lines of `EvalQuestion`): read whole, refused at the first bad line.

A question file is written by hand or exported from a set; a mistake in it must point at the
place to fix (the file and line), never surface later as a wrong figure. Blank lines are
skipped; ids must be unique (results are joined by id); an answer string must hold text (an
empty one would match every result).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.contracts.evaluation import EvalQuestion


class QuestionFileError(CorpusError):
    """A question file that cannot be used; the message names the file and, where one is at
    fault, the line."""

    def __init__(self, path: Path, detail: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {detail}")


@dataclass(frozen=True)
class QuestionFile:
    """The questions of one file, in file order, and what identifies the file in a run."""

    path: Path
    questions: tuple[EvalQuestion, ...]
    sha256: str


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "question"
    return f"{field}: {first['msg']}"


def parse_line(path: Path, number: int, line: str) -> EvalQuestion:
    """One non-blank line as a question (`QuestionFileError` names the file and line)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise QuestionFileError(path, f"not JSON ({exc.msg})", number) from exc
    if not isinstance(data, dict):
        raise QuestionFileError(path, "a question is a JSON object", number)
    try:
        question = EvalQuestion.model_validate(data)
    except ValidationError as exc:
        raise QuestionFileError(path, _first_error(exc), number) from exc
    if not question.question.strip():
        raise QuestionFileError(path, "question: must contain text", number)
    if any(not answer.strip() for answer in question.answers):
        raise QuestionFileError(path, "answers: an answer string must contain text", number)
    if any(page < 1 for page in question.pages):
        raise QuestionFileError(path, "pages: pages are 1-based", number)
    return question


def load_questions(path: Path) -> QuestionFile:
    """Every question of `path`; an unreadable file, a bad line, a repeated id or a file
    without questions raises `QuestionFileError`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise QuestionFileError(path, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QuestionFileError(path, "is not UTF-8 text") from exc
    questions: list[EvalQuestion] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        question = parse_line(path, number, line)
        if question.id in seen:
            raise QuestionFileError(
                path, f"id '{question.id}' repeats the question of line {seen[question.id]}", number
            )
        seen[question.id] = number
        questions.append(question)
    if not questions:
        raise QuestionFileError(path, "holds no question")
    return QuestionFile(path, tuple(questions), hashlib.sha256(data).hexdigest())
