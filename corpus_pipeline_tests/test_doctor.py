"""`corpus doctor`: a line per supporting part, required parts fail the command, and no line
carries a secret or a URL's credentials."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from corpus_pipeline.cli.doctor import host_of, run_checks
from corpus_pipeline.cli.main import main
from corpus_pipeline.common.settings import load_settings

from .http_service import served
from .services import free_port


def _lines(settings, query_url: str, ingest_url: str) -> dict[str, tuple[bool, str, bool]]:
    return {
        c.part: (c.ok, c.detail, c.required) for c in run_checks(settings, query_url, ingest_url)
    }


def test_a_fresh_embedded_home_passes_its_required_parts(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home")
    nowhere = f"http://127.0.0.1:{free_port()}"
    lines = _lines(settings, nowhere, nowhere)
    assert lines["dagster storage"][0] and lines["object store"][0]
    assert lines["object store"][1] == "local folder: written, read back and removed"
    assert lines["published revision"] == (
        False,
        "none yet: `corpus ingest` publishes one",
        False,
    )
    assert not lines["query service"][0] and "not answering" in lines["query service"][1]
    assert lines["model: summary"] == (True, "not configured (offline default in use)", False)
    assert lines["revision mirror"] == (
        True,
        "not used: query services read the local folder",
        False,
    )
    assert lines["dense channel"] == (True, "off (CORPUS_DENSE; lexical channels only)", False)


def test_the_local_dense_model_is_loaded_and_run_once(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home", dense="local")
    nowhere = f"http://127.0.0.1:{free_port()}"
    assert _lines(settings, nowhere, nowhere)["dense channel"] == (
        True,
        "local all-MiniLM-L6-v2-onnx-int8 (384 dimensions)",
        False,
    )


def test_an_answering_upload_api_is_ok(tmp_path: Path) -> None:
    settings = load_settings(home=tmp_path / "home")
    with served(settings, worker=False) as client:
        lines = _lines(settings, f"http://127.0.0.1:{free_port()}", str(client.base_url))
    assert lines["upload API"][0] and lines["upload API"][1].endswith("/readyz 200")


def test_an_unreachable_object_store_fails_the_command_without_leaking_its_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "doctor-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "doctor-test-secret")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("CORPUS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CORPUS_OBJECT_STORE_URL", "s3://doctor-bucket/corpus")
    monkeypatch.setenv("CORPUS_SUMMARY__MODEL", "small")
    monkeypatch.setenv("CORPUS_SUMMARY__BASE_URL", f"http://user:pw@127.0.0.1:{port}/v1?key=s3cr3t")
    result = CliRunner().invoke(main, ["doctor", "--query-url", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 1
    assert "FAIL object store" in result.output
    for secret in ("doctor-test-secret", "s3cr3t", "user:pw", "pw@"):
        assert secret not in result.output


def test_host_of_keeps_only_scheme_host_and_port() -> None:
    assert (
        host_of("https://user:pw@api.example.com:8443/v1?key=x") == "https://api.example.com:8443"
    )
