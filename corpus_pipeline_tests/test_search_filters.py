"""Search filters: OR within a field, AND across fields, applied before top-k, per place."""

from __future__ import annotations

from datetime import date

import pytest
from pydantic import ValidationError

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts import SourceKind
from corpus_pipeline.contracts.search import SearchFilters, SearchRequest
from query_service.retrieval.classic import classic_search
from query_service.snapshot.revision import open_revision

from .support import build_documents, publish_namespaces

TEXT = "# {title}\n\nMallard ducks dabble in the {place} pond.\n"


@pytest.fixture(scope="module")
def revision(tmp_path_factory):
    settings = load_settings(home=tmp_path_factory.mktemp("filters"))
    build_documents(
        settings,
        {"reports/2024/north.md": TEXT.format(title="North", place="north")},
        organizational_unit="Field Team",
        document_date=date(2024, 5, 1),
    )
    build_documents(
        settings,
        {"reports/2025/south.md": TEXT.format(title="South", place="south")},
        organizational_unit="Lab",
        document_date=date(2025, 2, 1),
        source_kind=SourceKind.UPLOAD,
    )
    build_documents(
        settings, {"notes/east.txt": "EAST\n\nMallard ducks dabble in the east pond.\n"}
    )
    build_documents(
        settings, {"shared/a.md": "# A\n\nShared mallard paragraph.\n"}, organizational_unit="Lab"
    )
    build_documents(
        settings,
        {"shared/b.md": "# B\n\nShared mallard paragraph.\n"},
        organizational_unit="Field Team",
    )
    for i in range(30):  # enough other chunks that top-k is a real cut
        build_documents(
            settings, {f"filler/{i}.md": f"# F{i}\n\nMallard ducks and mallard drakes {i}.\n"}
        )
    publish_namespaces(settings)
    return open_revision(settings.published_dir, "default")


def files(revision, top_k=3, **filters) -> list[str]:
    request = SearchRequest(
        query="mallard ducks dabble pond", top_k=top_k, filters=SearchFilters(**filters)
    )
    return [r.source_file_name for r in classic_search(revision, request).results]


def test_a_selective_filter_still_returns_k_results_when_k_exist(revision):
    # 30 unfiltered chunks match the query better; filtering inside the index still yields k.
    found = files(revision, top_k=3, organizational_unit=["field team", "LAB"])
    assert len(found) == 3
    assert set(found) == {"reports/2024/north.md", "reports/2025/south.md", "shared/a.md"}


def test_values_within_a_field_are_ored(revision):
    found = set(
        files(revision, top_k=10, document_ids=None, path_prefix=["reports/2024", "notes/"])
    )
    assert found == {"reports/2024/north.md", "notes/east.txt"}


def test_fields_are_anded(revision):
    assert files(revision, top_k=10, organizational_unit=["Lab"], path_prefix=["reports/"]) == [
        "reports/2025/south.md"
    ]


def test_documents_without_a_value_are_excluded(revision):
    found = files(revision, top_k=10, date_from=date(2000, 1, 1))
    assert set(found) == {"reports/2024/north.md", "reports/2025/south.md"}


def test_date_bounds_are_inclusive(revision):
    assert files(revision, top_k=10, date_from=date(2025, 2, 1), date_to=date(2025, 2, 1)) == [
        "reports/2025/south.md"
    ]
    assert files(revision, top_k=10, date_to=date(2024, 5, 1)) == ["reports/2024/north.md"]


def test_source_and_document_type_filters(revision):
    assert files(revision, top_k=10, source=["upload"]) == ["reports/2025/south.md"]
    assert files(revision, top_k=10, document_type=["text"]) == ["notes/east.txt"]


def test_a_shared_chunk_is_cited_only_where_the_filter_holds(revision):
    request = SearchRequest(
        query="shared mallard paragraph",
        top_k=1,
        filters=SearchFilters(organizational_unit=["Field Team"]),
    )
    (top,) = classic_search(revision, request).results
    assert [o.source_file_name for o in top.occurrences] == ["shared/b.md"]


@pytest.mark.parametrize(
    "field", ["document_type", "source", "organizational_unit", "document_ids", "path_prefix"]
)
def test_an_empty_filter_list_is_an_error_naming_the_field(field):
    with pytest.raises(ValidationError) as caught:
        SearchFilters(**{field: []})
    assert caught.value.errors()[0]["loc"] == (field,)


def test_reversed_dates_are_an_error():
    with pytest.raises(ValidationError, match="date_from must not be after date_to"):
        SearchFilters(date_from=date(2025, 1, 2), date_to=date(2025, 1, 1))
