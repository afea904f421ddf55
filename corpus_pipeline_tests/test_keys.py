"""The key file both services read: its contract, and what a key may do (resolving keys at run
time, fail-closed, and `corpus keys` are in test_key_management.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus_pipeline.contracts.keys import KeyFileError, KeyRing, hash_key


def _ring(tmp_path: Path, entries: list[dict[str, object]]) -> KeyRing:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"keys": entries}), encoding="utf-8")
    return KeyRing.load(path)


def test_a_hashed_and_a_clear_key_each_stand_for_their_principal(tmp_path: Path):
    ring = _ring(
        tmp_path,
        [
            {"key_sha256": hash_key("reader-key"), "principal": "reader", "namespaces": ["a"]},
            {
                "key": "writer-key",
                "principal": "writer",
                "namespaces": ["*"],
                "write_namespaces": ["a"],
            },
        ],
    )
    reader, writer = ring.principal_for("reader-key"), ring.principal_for("writer-key")
    assert reader is not None and reader.name == "reader"
    assert reader.may_read("a") and not reader.may_read("b") and not reader.may_write("a")
    assert writer is not None and writer.may_write("a") and not writer.may_write("b")
    assert ring.principal_for("other") is None and ring.principal_for(None) is None


def test_a_missing_or_blank_key_file_has_no_keys_and_no_default_principal(tmp_path: Path):
    blank = tmp_path / "blank.json"
    blank.write_text("\n", encoding="utf-8")
    for ring in (KeyRing.load(tmp_path / "missing.json"), KeyRing.load(blank)):
        assert not ring.enabled
        assert ring.principal_for(None) is None and ring.principal_for("anything") is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"principal": "p"}, "keys.0: Value error, give exactly one of 'key' and 'key_sha256'"),
        (
            {"key": "k", "key_sha256": hash_key("k"), "principal": "p"},
            "keys.0: Value error, give exactly one of 'key' and 'key_sha256'",
        ),
        ({"key": "k"}, "keys.0.principal: Field required"),
        ({"key_sha256": "abc", "principal": "p"}, "keys.0.key_sha256: String should match"),
        ({"key": "k", "principal": "p", "namespace": ["a"]}, "keys.0.namespace: Extra inputs"),
    ],
)
def test_a_bad_entry_is_refused_naming_the_file_and_the_field(
    tmp_path: Path, entry: dict[str, object], message: str
):
    with pytest.raises(KeyFileError) as raised:
        _ring(tmp_path, [entry])
    assert str(raised.value).startswith(f"key file keys.json: {message}")


def test_a_refusal_never_repeats_a_key(tmp_path: Path):
    with pytest.raises(KeyFileError) as raised:
        _ring(tmp_path, [{"key": "ck_secret_value", "principal": ""}])
    assert "ck_secret_value" not in str(raised.value)


def test_a_file_that_is_not_json_is_refused_with_its_line(tmp_path: Path):
    path = tmp_path / "keys.json"
    path.write_text('{"keys": [\n  {"key": "k",}\n]}', encoding="utf-8")
    with pytest.raises(KeyFileError, match=r"key file keys.json: not JSON \(.*line 2\)"):
        KeyRing.load(path)
