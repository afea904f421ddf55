"""Fixtures: every test that touches runtime folders gets its own CORPUS_HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings


@pytest.fixture
def corpus_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "corpus_home"
    monkeypatch.setenv("CORPUS_HOME", str(home))
    monkeypatch.delenv("CORPUS_OBJECT_STORE_URL", raising=False)
    return home


@pytest.fixture
def settings(corpus_home: Path) -> CorpusSettings:
    return load_settings(home=corpus_home)
