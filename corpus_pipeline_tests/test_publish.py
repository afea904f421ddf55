"""Publishing revisions: dedupe, replace, delete, snapshot isolation and crash safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import lancedb
import pytest
import tantivy

from corpus_pipeline.contracts import published as t
from corpus_pipeline.contracts.search import SearchRequest
from corpus_pipeline.index import channels as ch
from corpus_pipeline.publish import publisher
from corpus_pipeline.publish.publisher import read_pointer
from corpus_pipeline.publish.service import publish
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .support import build_documents

SHARED = "Ducks molt their flight feathers once a year and cannot fly for several weeks."
ALPHA = f"# Alpha report\n\nAlpha field notes.\n\n## Moulting\n\n{SHARED}\n\n## Diet\n\nAlpha ducks eat duckweed and snails.\n"
BETA = f"# Beta notes\n\nBeta field notes.\n\n## Moulting\n\n{SHARED}\n\n## Nesting\n\nBeta ducks nest in reeds near the shore.\n"
SHARED_CHUNK = f"Moulting\n\n{SHARED}"  # a section's first chunk starts with its heading line
GAMMA = "# Gamma\n\nGeese migrate in large V-shaped flocks every autumn.\n"


def search(settings, query: str, **kw):
    revision = open_revision(settings.published_dir, "default")
    return classic_search(revision, SearchRequest(query=query, top_k=kw.pop("top_k", 2), **kw))


@pytest.fixture
def published(settings):
    records = build_documents(settings, {"alpha.md": ALPHA, "beta.md": BETA, "gamma.md": GAMMA})
    (report,) = publish(settings)
    return settings, records, report


def test_identical_content_is_indexed_once_and_cites_every_place(published):
    settings, records, report = published
    response = search(settings, "flight feathers molt")
    top = response.results[0]
    assert top.content == SHARED_CHUNK
    assert {(o.document_id, tuple(o.section_path)) for o in top.occurrences} == {
        (records["alpha.md"].document_id, ("Alpha report", "Moulting")),
        (records["beta.md"].document_id, ("Beta notes", "Moulting")),
    }
    lance_rows = (
        lancedb.connect(str(settings.published_dir / "default" / "lance"))
        .open_table(t.CHUNKS)
        .count_rows()
    )
    assert report.pointer.chunks == lance_rows - 1, "the shared chunk is one index document"


def test_lance_tables_describe_the_same_documents_and_sections(published):
    settings, records, report = published
    revision = open_revision(settings.published_dir, "default")
    docs = revision.table(t.DOCUMENTS).to_arrow().to_pylist()
    assert {d["source_file_name"] for d in docs} == {"alpha.md", "beta.md", "gamma.md"}
    assert all(
        d["active_revision"] == report.pointer.revision and d["status"] == "active" for d in docs
    )
    sections = (
        revision.table(t.SECTIONS)
        .search()
        .where(f"document_id = '{records['alpha.md'].document_id}'")
        .to_list()
    )
    assert sorted(tuple(s["path"]) for s in sections) == [
        ("Alpha report",),
        ("Alpha report", "Diet"),
        ("Alpha report", "Moulting"),
    ]
    nodes = revision.table(t.GRAPH_NODES).to_arrow().to_pylist()
    assert len(nodes) == 3 and all(n["keywords"] for n in nodes)


def _published_state(settings) -> dict[str, Any]:
    """What a revision holds, independent of how it was written: table rows (without times
    and the manifest, which records the run's timings) and the index's stored payloads."""
    revision = open_revision(settings.published_dir, "default")
    tables = {}
    for name in (t.DOCUMENTS, t.SECTIONS, t.CHUNKS, t.GRAPH_NODES, t.GRAPH_EDGES):
        rows = (
            revision.table(name)
            .to_arrow()
            .drop_columns(
                [
                    c
                    for c in ("created_at", "updated_at", "manifest")
                    if c in revision.table(name).schema.names
                ]
            )
        )
        tables[name] = sorted(repr(sorted(r.items())) for r in rows.to_pylist())
    hits = revision.searcher.search(tantivy.Query.all_query(), 1000).hits
    payloads = sorted(
        repr(ch.decode_stored(revision.searcher.doc(a)[ch.F_STORED][0])) for _, a in hits
    )
    return {"tables": tables, "payloads": payloads, "chunks": revision.pointer.chunks}


def test_a_bulk_publish_streamed_in_small_batches_equals_one_batch(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    """Rows reach LanceDB in bounded batches and unique chunks reach the index as they are
    read; the revision is the same as when everything is written at once."""
    from corpus_pipeline.common.settings import load_settings
    from corpus_pipeline.publish import publisher

    docs: dict[str, bytes | str] = {"alpha.md": ALPHA, "beta.md": BETA, "gamma.md": GAMMA}
    states = []
    for batch in (10_000, 2):
        settings = load_settings(home=tmp_path / f"batch-{batch}")
        build_documents(settings, docs)
        monkeypatch.setattr(publisher, "LANCE_BATCH_ROWS", batch)
        publish(settings)
        states.append(_published_state(settings))
    assert states[0] == states[1]
    assert (
        states[0]["chunks"] == len(states[0]["payloads"]) == len(states[0]["tables"][t.CHUNKS]) - 1
    )
    shared = [p for p in states[0]["payloads"] if "flight feathers" in p]
    assert len(shared) == 1 and shared[0].count("'document_id'") == 2


def test_publishing_without_changes_keeps_the_revision(published):
    settings, _, report = published
    (again,) = publish(settings)
    assert again.pointer == report.pointer
    assert again.published == [] and again.unchanged == 3


def test_an_index_written_under_another_analysis_is_rebuilt_at_the_next_publish(
    published, monkeypatch
):
    settings, _, report = published
    ns_dir = settings.published_dir / "default"
    assert ch.analysis_version(ns_dir / report.pointer.tantivy_dir) == ch.ANALYSIS_VERSION
    monkeypatch.setattr(ch, "ANALYSIS_VERSION", ch.ANALYSIS_VERSION + 1)
    (again,) = publish(settings)
    assert again.pointer.revision == report.pointer.revision + 1
    assert sorted(again.published) == sorted(report.published) and again.unchanged == 0
    assert ch.analysis_version(ns_dir / again.pointer.tantivy_dir) == ch.ANALYSIS_VERSION
    assert search(settings, "duckweed snails").results[0].source_file_name == "alpha.md"


def test_a_changed_document_replaces_its_previous_revision(published):
    settings, records, report = published
    build_documents(
        settings, {"gamma.md": "# Gamma\n\nSwans are the largest waterfowl of the lake.\n"}
    )
    (second,) = publish(settings)
    assert second.pointer.revision == report.pointer.revision + 1
    assert second.published == [records["gamma.md"].document_id]
    assert search(settings, "swans largest waterfowl").results[0].source_file_name == "gamma.md"
    assert all(
        "V-shaped" not in r.content
        for r in search(settings, "geese migrate flocks", top_k=10).results
    )
    revision = open_revision(settings.published_dir, "default")
    rows = (
        revision.table(t.CHUNKS)
        .search()
        .where(f"document_id = '{records['gamma.md'].document_id}'")
        .to_list()
    )
    assert [r["content"] for r in rows] == ["Gamma\n\nSwans are the largest waterfowl of the lake."]


def _unindexed(settings) -> dict[str, int]:
    db = lancedb.connect(str(settings.published_dir / "default" / "lance"))
    out = {}
    for name in (t.CHUNKS, t.SECTIONS, t.DOCUMENTS):
        table = db.open_table(name)
        stats = [table.index_stats(i.name) for i in table.list_indices()]
        out[name] = max(s.num_unindexed_rows for s in stats if s is not None)
    return out


def test_a_publish_that_adds_many_rows_folds_them_into_the_indices(published, monkeypatch):
    """Rows the indices do not cover are scanned by every read of a document's rows."""
    settings, _, _ = published
    build_documents(settings, {"delta.md": "# Delta\n\nTeal dabble in shallow ponds.\n"})
    monkeypatch.setattr(publisher, "UNINDEXED_ROWS", 10_000)
    publish(settings)
    assert _unindexed(settings)[t.CHUNKS] > 0, "a small publish leaves its rows to a later fold"
    build_documents(settings, {"epsilon.md": "# Epsilon\n\nCoots dive for pondweed.\n"})
    monkeypatch.setattr(publisher, "UNINDEXED_ROWS", 1)
    (report,) = publish(settings)
    assert _unindexed(settings) == {t.CHUNKS: 0, t.SECTIONS: 0, t.DOCUMENTS: 0}
    revision = open_revision(settings.published_dir, "default")
    assert revision.pointer == report.pointer
    assert search(settings, "coots pondweed").results[0].source_file_name == "epsilon.md"


def test_deleting_a_document_removes_it_from_every_table_and_channel(published):
    settings, records, _ = published
    doc = records["beta.md"].document_id
    SourceRegistry(ObjectStore(settings.object_store)).delete(doc)
    (report,) = publish(settings)
    assert report.removed == [doc]
    revision = open_revision(settings.published_dir, "default")
    for name in (t.DOCUMENTS, t.SECTIONS, t.CHUNKS, t.GRAPH_NODES):
        assert revision.table(name).search().where(f"document_id = '{doc}'").to_list() == []
    assert (
        revision.table(t.GRAPH_EDGES)
        .search()
        .where(f"source = '{doc}' OR target = '{doc}'")
        .to_list()
        == []
    )
    for result in search(settings, "ducks nest reeds shore flight feathers", top_k=10).results:
        assert all(o.document_id != doc for o in result.occurrences)
    shared = search(settings, "flight feathers molt").results[0]
    assert [o.source_file_name for o in shared.occurrences] == ["alpha.md"]


def test_a_reader_keeps_its_revision_while_a_new_one_is_published(published):
    settings, _, _ = published
    old = open_revision(settings.published_dir, "default")
    build_documents(settings, {"gamma.md": "# Gamma\n\nPelicans scoop fish with their pouch.\n"})
    publish(settings)
    old_hits = classic_search(old, SearchRequest(query="geese migrate flocks", top_k=1)).results
    assert old_hits[0].source_file_name == "gamma.md" and "V-shaped" in old_hits[0].content
    assert search(settings, "pelicans pouch").revision == old.number + 1


def test_documents_sharing_enough_keywords_get_a_related_edge(settings):
    text = "# {t}\n\nMallard ducks dabble in ponds. Mallard ducks nest in reeds. Ponds freeze in winter; reeds shelter mallard ducks.\n"
    records = build_documents(
        settings, {"one.md": text.format(t="One"), "two.md": text.format(t="Two")}
    )
    publish(settings)
    revision = open_revision(settings.published_dir, "default")
    (edge,) = revision.table(t.GRAPH_EDGES).to_arrow().to_pylist()
    assert {edge["source"], edge["target"]} == {r.document_id for r in records.values()}
    assert (
        edge["relation"] == "related" and edge["score"] >= 0.8 and len(edge["shared_keywords"]) >= 3
    )


_CHILD = """
import sys
from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.publish.service import publish
publish(load_settings(home=sys.argv[1]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["tantivy_committed", "lance_written"])
def test_killing_the_publisher_mid_way_leaves_the_previous_revision_searchable(published, stage):
    settings, records, report = published
    build_documents(settings, {"gamma.md": "# Gamma\n\nCormorants dry their wings in the sun.\n"})
    env = {**os.environ, "CORPUS_PUBLISH_PAUSE_AT": stage}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(settings.home)], env=env)
    marker = settings.published_dir / "default" / f".paused-{stage}"
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert child.poll() is None, "publisher exited before reaching the pause point"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    marker.unlink()
    assert read_pointer(settings.published_dir / "default") == report.pointer
    hits = search(settings, "geese migrate flocks").results
    assert hits[0].source_file_name == "gamma.md" and "V-shaped" in hits[0].content
    assert search(settings, "flight feathers molt").results[0].content == SHARED_CHUNK
    # The next publish recovers: rolls LanceDB back to the pointer's versions and publishes.
    (recovered,) = publish(settings)
    assert recovered.pointer.revision == report.pointer.revision + 1
    assert search(settings, "cormorants dry wings").results[0].source_file_name == "gamma.md"
    revision = open_revision(settings.published_dir, "default")
    gamma_rows = (
        revision.table(t.CHUNKS)
        .search()
        .where(f"document_id = '{records['gamma.md'].document_id}'")
        .to_list()
    )
    assert [r["content"] for r in gamma_rows] == ["Gamma\n\nCormorants dry their wings in the sun."]
