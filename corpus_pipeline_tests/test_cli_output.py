"""What the `corpus` command prints and how it exits, as a script or a person meets it.

One home is ingested for the module through the real command with its stdout piped (two
Markdown and text notes, a two-page PDF, a PDF without text that fails in the pipeline, and a
corrupt PDF refused at the door), then ingested again unchanged; the other commands read it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf as _pymupdf
import pytest
from click.testing import CliRunner, Result

from corpus_pipeline.cli.main import main

from .http_service import CORPUS_CLI
from .support import pdf_data

mu: Any = _pymupdf  # untyped

NOTES = {
    "ducks.md": "# Ducks\n\n## Feeding\n\nTufted ducks dive for mussels in the lake.\n",
    "geese.txt": "Geese\n\nGreylag geese graze on the meadows by the shore.\n",
}
GOOD = ("ducks.md", "geese.txt", "survey.pdf")


@dataclass
class Ingest:
    """One piped `corpus ingest`: its exit code, its stdout lines parsed, its stderr, and
    whether the process was still running when its first line could be read."""

    code: int
    lines: list[dict[str, Any]]
    stderr: str
    running_after_first_line: bool

    def file(self, name: str) -> dict[str, Any]:
        (line,) = [line for line in self.lines if line.get("file") == name]
        return line


def _survey_pdf() -> bytes:
    """Two pages, each under a heading of its own; the second holds the swans."""
    doc = mu.open()
    for heading, text in (
        ("Coots", "Coots and grebes were counted on the lake in April."),
        ("Swans", "Mute swans nest in the northern reed beds."),
    ):
        page = doc.new_page()
        page.insert_text((72, 80), heading, fontsize=20)
        page.insert_text((72, 120), text, fontsize=11)
    return pdf_data(doc)


def _blank_pdf() -> bytes:
    doc = mu.open()
    doc.new_page()
    return pdf_data(doc)


def _environment(home: Path) -> dict[str, str]:
    env = {**os.environ, "CORPUS_HOME": str(home)}
    env.pop("CORPUS_OBJECT_STORE_URL", None)
    return env


def _piped_ingest(home: Path, *paths: Path) -> Ingest:
    """`corpus ingest PATHS` with stdout a pipe (not a terminal), read line by line."""
    process = subprocess.Popen(
        [str(CORPUS_CLI), "ingest", *map(str, paths)],
        env=_environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    running = process.poll() is None
    rest = process.stdout.read()
    stderr = process.stderr.read()
    code = process.wait(timeout=300)
    lines = [json.loads(text) for text in [first, *rest.splitlines()] if text.strip()]
    return Ingest(code, lines, stderr, running)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-output") / "home"


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inbox")
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "survey.pdf").write_bytes(_survey_pdf())
    return folder


@pytest.fixture(scope="module")
def ingests(
    home: Path, inbox: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Ingest, Ingest]:
    """The inbox with a corrupt and a blank PDF, then the inbox again at once (a change of
    the pipeline's code in between would rightly run its documents again)."""
    bad = tmp_path_factory.mktemp("bad")
    (bad / "corrupt.pdf").write_bytes(b"%PDF-1.4\n%%EOF")
    (bad / "blank.pdf").write_bytes(_blank_pdf())
    first = _piped_ingest(home, inbox, bad / "corrupt.pdf", bad / "blank.pdf")
    return first, _piped_ingest(home, inbox)


@pytest.fixture
def first(ingests: tuple[Ingest, Ingest]) -> Ingest:
    return ingests[0]


@pytest.fixture
def again(ingests: tuple[Ingest, Ingest]) -> Ingest:
    return ingests[1]


@pytest.fixture
def run(home: Path, again: Ingest) -> Any:
    """`corpus ARGS` in-process against the module's home once both ingests are done: its
    `Result` (stdout and stderr apart)."""
    runner = CliRunner(env={"CORPUS_HOME": str(home), "CORPUS_OBJECT_STORE_URL": None})

    def invoke(*args: str) -> Result:
        return runner.invoke(main, list(args), prog_name="corpus")

    return invoke


def test_version_prints_the_installed_package_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"corpus {importlib.metadata.version('corpus')}\n"


def test_an_unknown_option_is_bad_usage_exit_2_with_the_usage_line() -> None:
    result = CliRunner().invoke(main, ["ingest", "--no-such-option", "x"], prog_name="corpus")
    assert result.exit_code == 2
    assert "Usage: corpus ingest [OPTIONS] PATHS..." in result.stderr
    assert "No such option '--no-such-option'" in result.stderr


def test_a_missing_argument_is_bad_usage_exit_2() -> None:
    result = CliRunner().invoke(main, ["search"])
    assert result.exit_code == 2
    assert "Missing argument 'QUERY'" in result.stderr


def test_a_missing_path_is_a_runtime_error_exit_1_without_the_usage_line(
    corpus_home: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(main, ["ingest", str(tmp_path / "nope.md")])
    assert result.exit_code == 1
    assert (
        result.stderr == f"error: path: '{tmp_path / 'nope.md'}' is neither a file nor a folder\n"
    )
    assert result.stdout == ""


@pytest.mark.slow
def test_a_piped_ingest_prints_one_json_line_per_file_then_the_publish(first: Ingest) -> None:
    *files, publish = first.lines
    assert sorted(line["file"] for line in files) == sorted([*GOOD, "corrupt.pdf", "blank.pdf"])
    for name in GOOD:
        line = first.file(name)
        assert line["status"] == "ingested", line
        assert line["document_id"] and line["chunks"] >= 1 and line["seconds"] > 0
        assert "error" not in line
    assert first.file("survey.pdf")["pages"] == 2
    assert first.file("ducks.md")["pages"] is None, "Markdown has no pages"
    assert publish == {"publish": publish["publish"]}
    assert publish["publish"]["revision"] == 1 and publish["publish"]["documents"] == 3


@pytest.mark.slow
def test_each_line_is_printed_as_its_file_finishes(first: Ingest) -> None:
    assert first.running_after_first_line, "the first line came only when the command ended"


@pytest.mark.slow
def test_a_corrupt_file_fails_alone_and_the_command_exits_1(first: Ingest) -> None:
    assert first.code == 1
    corrupt = first.file("corrupt.pdf")
    assert corrupt["status"] == "failed" and corrupt["document_id"] is None
    assert corrupt["error"] == "corrupt pdf document: cannot be opened (FileDataError)"
    blank = first.file("blank.pdf")
    assert blank["status"] == "failed"
    assert blank["error"] == "no text in 'blank.pdf': its page is blank"
    assert "Usage:" not in first.stderr


@pytest.mark.slow
def test_a_reingest_of_the_same_bytes_says_unchanged_and_exits_0(
    first: Ingest, again: Ingest
) -> None:
    assert again.code == 0, again.stderr
    *files, publish = again.lines
    assert {line["file"]: line["status"] for line in files} == dict.fromkeys(GOOD, "unchanged")
    for line in files:
        assert line["document_id"] == first.file(line["file"])["document_id"]
        assert line["chunks"] == first.file(line["file"])["chunks"]
    assert publish["publish"]["revision"] == 1, "nothing changed: no new revision"
    assert publish["publish"]["unchanged"] == 3


@pytest.mark.slow
def test_list_shows_each_document_with_status_pages_and_chunks(run: Any, first: Ingest) -> None:
    result = run("list", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["file"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {*GOOD, "blank.pdf"}, "the corrupt file was never stored"
    for name in GOOD:
        assert rows[name]["status"] == "published"
        assert rows[name]["chunks"] == first.file(name)["chunks"]
        assert rows[name]["ingested_at"].startswith("20")
    assert rows["survey.pdf"]["pages"] == 2
    assert rows["blank.pdf"]["status"] == "failed"
    assert rows["blank.pdf"]["chunks"] is None


@pytest.mark.slow
def test_list_prints_a_plain_table_of_one_namespace(run: Any, first: Ingest) -> None:
    result = run("list", "--namespace", "default")
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split() == [
        "namespace",
        "file",
        "status",
        "pages",
        "chunks",
        "ingested",
        "at",
        "document",
        "id",
    ]
    survey = next(row.split() for row in rows if "survey.pdf" in row)
    assert survey[:5] == [
        "default",
        "survey.pdf",
        "published",
        "2",
        str(first.file("survey.pdf")["chunks"]),
    ]
    assert "\x1b[" not in result.stdout


@pytest.mark.slow
def test_runs_lists_the_ingest_and_publish_runs_newest_first(run: Any) -> None:
    result = run("runs", "--json")
    assert result.exit_code == 0, result.output
    runs = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["kind"] for r in runs} == {"ingest", "publish"}
    assert [r["started_at"] for r in runs] == sorted((r["started_at"] for r in runs), reverse=True)
    documents = {r["target"]: r["status"] for r in runs if r["kind"] == "ingest"}
    assert documents == {**dict.fromkeys(GOOD, "success"), "blank.pdf": "failure"}
    publishes = [r["target"] for r in runs if r["kind"] == "publish"]
    assert publishes == [
        "revision 1 of 'default': 0 published, 0 removed",
        "revision 1 of 'default': 3 published, 0 removed",
    ]


@pytest.mark.slow
def test_runs_of_one_kind(run: Any) -> None:
    result = run("runs", "--kind", "publish", "--limit", "1")
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split()[:3] == ["started", "kind", "status"]
    assert len(rows) == 1 and rows[0].split()[2:4] == ["publish", "success"]


@pytest.mark.slow
def test_search_prints_rank_file_page_section_and_a_marked_snippet(run: Any) -> None:
    result = run("search", "Where do mute swans nest?", "--top-k", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[2].startswith("1. survey.pdf  p. 2  Swans  (text, score "), lines
    assert lines[3] == "   **Swans** **Mute** **swans** **nest** in the northern reed beds."
    assert "\x1b[" not in result.stdout, "no terminal codes when piped"


@pytest.mark.slow
def test_search_shows_the_section_path_of_a_result(run: Any) -> None:
    result = run("search", "tufted ducks mussels", "--top-k", "1")
    assert result.exit_code == 0, result.output
    assert "1. ducks.md  Ducks > Feeding  (text, score " in result.stdout
    assert "**Tufted** **ducks** dive for **mussels**" in result.stdout


@pytest.mark.slow
def test_search_json_is_the_response_object(run: Any) -> None:
    result = run("search", "greylag geese", "--top-k", "1", "--json")
    assert result.exit_code == 0, result.output
    response = json.loads(result.stdout)
    assert response["namespace"] == "default" and response["revision"] == 1
    assert response["results"][0]["source_file_name"] == "geese.txt"


@pytest.mark.slow
def test_a_search_in_a_namespace_never_published_exits_1_without_usage(run: Any) -> None:
    result = run("search", "ducks", "--namespace", "elsewhere")
    assert result.exit_code == 1
    assert result.stderr == (
        "error: namespace 'elsewhere' has no published revision "
        "(run `corpus ingest` or `corpus publish` first)\n"
    )
    assert "Usage:" not in result.output
