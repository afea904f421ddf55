"""Settings: CORPUS_HOME roots everything; .env.example documents every setting."""

from __future__ import annotations

from pathlib import Path

from corpus_pipeline.common.settings import CorpusSettings, LLMRole, load_settings

from .support import REPO_ROOT


def _documented() -> set[str]:
    lines = (REPO_ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
    return {line.split("=", 1)[0] for line in lines if line and not line.startswith("#")}


def test_env_example_lists_every_setting():
    expected = set()
    for name, field in CorpusSettings.model_fields.items():
        role = field.annotation
        if isinstance(role, type) and issubclass(role, LLMRole):
            expected |= {f"CORPUS_{name.upper()}__{sub.upper()}" for sub in role.model_fields}
        else:
            expected.add(f"CORPUS_{name.upper()}")
    assert expected <= _documented(), sorted(expected - _documented())


def test_env_example_lists_every_query_service_setting():
    from query_service.config import ServiceSettings

    expected = {f"CORPUS_{name.upper()}" for name in ServiceSettings.model_fields}
    assert expected <= _documented(), sorted(expected - _documented())


def test_corpus_home_roots_every_runtime_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("CORPUS_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("CORPUS_OBJECT_STORE_URL", raising=False)
    settings = load_settings()
    root = tmp_path / "elsewhere"
    for folder in (
        settings.artifacts_dir,
        settings.work_dir,
        settings.published_dir,
        settings.dagster_home,
    ):
        assert Path(folder).is_relative_to(root)
    assert settings.object_store == (root / "objects").as_uri()


def test_a_role_inherits_the_shared_endpoint_and_key(monkeypatch, tmp_path):
    monkeypatch.setenv("CORPUS_HOME", str(tmp_path))
    monkeypatch.setenv("CORPUS_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CORPUS_LLM_API_KEY", "k1")
    monkeypatch.setenv("CORPUS_HIERARCHY__MODEL", "h-model")
    monkeypatch.setenv("CORPUS_HIERARCHY__API_KEY", "k2")
    settings = load_settings()
    hierarchy = settings.role("hierarchy")
    assert (hierarchy.model, hierarchy.base_url, hierarchy.api_key.get_secret_value()) == (
        "h-model",
        "http://127.0.0.1:9/v1",
        "k2",
    )
    assert not settings.role("summary").enabled
    assert "k1" not in repr(settings)
