"""The key file both services read: its contract, and what a key may do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus_pipeline.contracts.keys import KeyFileError, KeyRing, create_local_key, hash_key


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


def test_without_a_key_file_there_is_one_local_principal_that_may_do_everything(tmp_path: Path):
    ring = KeyRing.load(tmp_path / "missing.json")
    local = ring.principal_for(None)
    assert not ring.enabled and local is not None and local.may_write("any")


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


def test_a_created_local_key_is_stored_only_as_its_hash_and_is_read_back(tmp_path: Path):
    path = tmp_path / "keys.json"
    key = create_local_key(path)
    assert key is not None and key not in path.read_text(encoding="utf-8")
    principal = KeyRing.load(path).principal_for(key)
    assert principal is not None and principal.may_read("default")
    assert not principal.may_write("default"), "a local key reads; writing is granted explicitly"
    assert create_local_key(path) is None, "an existing key file is never overwritten"
