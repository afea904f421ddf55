"""`corpus ingest ../shared/corpus/docs` through the command-line entry point: every one of the
32 sample documents comes through when the encrypted one gets its password (from the corpus
manifest), and without the password only that one is refused, with a message that says why."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import corpus_passwords

from .http_service import CORPUS_CLI
from .support import DOCS, SHARED_CORPUS, needs_shared

pytestmark = [
    pytest.mark.slow,
    needs_shared(DOCS),
]


def corpus_ingest(home: Path, *args: str) -> tuple[int, list[dict[str, Any]]]:
    """Run `corpus ingest DOCS --json ARGS` against a fresh CORPUS_HOME: exit code and the
    per-file lines it prints (one JSON object per line, the publish line left out)."""
    env = {**os.environ, "CORPUS_HOME": str(home)}
    env.pop("CORPUS_OBJECT_STORE_URL", None)
    done = subprocess.run(
        [str(CORPUS_CLI), "ingest", str(DOCS), "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines, f"no JSON lines; stderr: {done.stderr[-2000:]}"
    return done.returncode, [line for line in lines if "file" in line]


def failures(lines: list[dict[str, Any]]) -> dict[str, str]:
    return {r["file"]: r["error"] for r in lines if r["status"] != "ingested"}


@pytest.fixture(scope="module")
def encrypted() -> tuple[str, str]:
    """The one encrypted sample and its password."""
    passwords = corpus_passwords(SHARED_CORPUS)
    assert len(passwords) == 1, passwords
    return next(iter(passwords.items()))


def test_with_the_password_every_corpus_document_is_ok(tmp_path: Path, encrypted):
    _name, password = encrypted
    code, lines = corpus_ingest(tmp_path / "home", "--password", password)
    assert len(lines) == 32
    assert failures(lines) == {}
    assert code == 0


def test_without_the_password_only_the_encrypted_sample_is_refused_by_name(
    tmp_path: Path, encrypted
):
    name, _password = encrypted
    code, lines = corpus_ingest(tmp_path / "home")
    refused = failures(lines)
    assert list(refused) == [name], refused
    assert "encrypted" in refused[name] and "password" in refused[name], refused[name]
    assert sum(r["status"] == "ingested" for r in lines) == 31
    assert code == 1
