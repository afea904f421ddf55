"""Published revisions mirrored through the object store: the publisher pushes, a replica on
another disk pulls and serves exactly what was published (here the store is a folder; the
shared-deployment test runs the same code against S3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus_pipeline.common.errors import MirrorError
from corpus_pipeline.contracts.search import RevisionFiles, SearchRequest
from corpus_pipeline.publish.mirror import push
from corpus_pipeline.publish.publisher import read_pointer
from corpus_pipeline.storage.mirror import RemoteRevisions, pull, remote_dir, remote_pointer
from corpus_pipeline.storage.store import ObjectStore
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision
from query_service.snapshot.snapshots import SnapshotManager

from .support import build_documents, publish_namespaces, published_home

DUCKS = "# Ducks\n\nTufted ducks dive for mussels in deep lakes.\n"
GEESE = "# Geese\n\nGreylag geese graze on wet meadows in winter.\n"


def _hits(published_dir: Path, query: str) -> list[tuple[str, str]]:
    revision = open_revision(published_dir, "default")
    response = classic_search(revision, SearchRequest(query=query, top_k=1))
    return [(hit.chunk_id, hit.source_file_name) for hit in response.results]


def _files(store: ObjectStore, revision: int) -> RevisionFiles:
    key = f"{remote_dir('default')}/revisions/{revision:06d}.files.json"
    return RevisionFiles.model_validate_json(store.get_bytes(key))


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return ObjectStore((tmp_path / "bucket").as_uri())


def test_a_replica_serves_the_revision_the_publisher_pushed(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    report = push(store, settings.published_dir, "default")
    replica = tmp_path / "replica" / "published"

    pulled = pull(store, replica, "default")

    assert report is not None and report.revision == 1 and report.uploaded == report.files
    assert pulled == read_pointer(settings.published_dir / "default")
    assert _hits(replica, "tufted ducks mussels") == _hits(
        settings.published_dir, "tufted ducks mussels"
    )
    assert _hits(replica, "tufted ducks mussels")[0][1] == "ducks.md"


def test_the_remote_current_is_written_after_every_file_it_names(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    push(store, settings.published_dir, "default")
    pointer = remote_pointer(store, "default")

    assert pointer is not None
    listed = _files(store, pointer.revision).files
    for item in listed:
        assert store.exists(f"{remote_dir('default')}/{item.key}"), item.key
    assert {f.path.split("/")[0] for f in listed} == {"tantivy", "lance"}
    assert any(f.path == f"{pointer.tantivy_dir}/meta.json" for f in listed)


def test_a_new_revision_sends_and_fetches_only_the_files_it_adds(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    push(store, settings.published_dir, "default")
    replica = tmp_path / "replica" / "published"
    pull(store, replica, "default")
    build_documents(settings, {"geese.md": GEESE})
    publish_namespaces(settings)

    second = push(store, settings.published_dir, "default")
    pull(store, replica, "default")

    assert second is not None and second.revision == 2
    assert 0 < second.uploaded < second.files
    first_segments = {f.key for f in _files(store, 1).files if "segments/" in f.key}
    second_segments = {f.key for f in _files(store, 2).files if "segments/" in f.key}
    assert first_segments & second_segments, "revision 2 reuses revision 1's segments"
    shared = sorted(first_segments & second_segments)[0].rsplit("/", 1)[1]
    old = replica / "default" / "tantivy" / "rev-000001" / shared
    new = replica / "default" / "tantivy" / "rev-000002" / shared
    assert old.stat().st_ino == new.stat().st_ino, "a segment held locally is linked, not fetched"
    assert _hits(replica, "greylag geese meadows")[0][1] == "geese.md"


def test_pushing_an_unchanged_namespace_sends_nothing(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    push(store, settings.published_dir, "default")

    assert push(store, settings.published_dir, "default") is None
    assert pull(store, tmp_path / "r", "default") is not None
    assert pull(store, tmp_path / "r", "default") is None


def test_a_file_list_naming_a_path_outside_the_namespace_is_refused(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    push(store, settings.published_dir, "default")
    key = f"{remote_dir('default')}/revisions/000001.files.json"
    listing = json.loads(store.get_bytes(key))
    listing["files"][0]["path"] = "../../escaped.txt"
    store.put_bytes(key, json.dumps(listing).encode())
    replica = tmp_path / "replica" / "published"

    with pytest.raises(MirrorError, match=r"escapes the namespace folder"):
        pull(store, replica, "default")

    assert read_pointer(replica / "default") is None
    assert not (tmp_path / "replica" / "escaped.txt").exists()
    assert not (tmp_path / "escaped.txt").exists()


def test_a_file_of_another_size_than_listed_keeps_the_served_revision(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    push(store, settings.published_dir, "default")
    replica = tmp_path / "replica" / "published"
    pull(store, replica, "default")
    build_documents(settings, {"geese.md": GEESE})
    publish_namespaces(settings)
    push(store, settings.published_dir, "default")
    meta = next(f for f in _files(store, 2).files if f.path.endswith("/meta.json"))
    store.put_bytes(f"{remote_dir('default')}/{meta.key}", b"{}")

    with pytest.raises(MirrorError, match=r"is not the \d+ bytes listed"):
        pull(store, replica, "default")

    pointer = read_pointer(replica / "default")
    assert pointer is not None and pointer.revision == 1
    assert _hits(replica, "tufted ducks mussels")[0][1] == "ducks.md"


def test_the_snapshot_manager_of_a_replica_loads_what_it_pulls(tmp_path, store):
    settings, _ = published_home(tmp_path / "pipeline", {"ducks.md": DUCKS})
    push(store, settings.published_dir, "default")
    replica = tmp_path / "replica" / "published"
    manager = SnapshotManager(replica, remote=RemoteRevisions(store, replica, interval=0.01))

    manager.refresh()

    assert manager.current("default").number == 1
    assert not manager.failures
