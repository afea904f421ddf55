"""Examples of the query API's requests and answers, for its OpenAPI document (Swagger UI shows
them at `/docs`). Each is a contract instance, so it is valid by construction; the values are
what the service answers over `data/sample/` (`make run`), cut down to a result or two."""

from __future__ import annotations

from datetime import UTC, date, datetime

from corpus_pipeline.contracts.agentic import (
    AgenticRequest,
    AgenticResponse,
    BudgetReport,
    StepReport,
)
from corpus_pipeline.contracts.api import (
    CacheStats,
    DocumentDetail,
    DocumentList,
    DocumentSummary,
    FilterValues,
    NamespaceCache,
    NamespaceInfo,
    Namespaces,
    Neighbor,
    Neighbors,
    Outline,
    OutlineSection,
    ReadChunk,
    ReadItem,
    ReadRef,
    ReadRequest,
    ReadResponse,
)
from corpus_pipeline.contracts.artifacts import (
    ChunkType,
    DocNav,
    HierarchyNode,
    Manifest,
    SectionNode,
    SourceInfo,
    Statistics,
)
from corpus_pipeline.contracts.profile import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.contracts.search import (
    CitedChunk,
    Location,
    Resource,
    SearchFilters,
    SearchRequest,
    SearchResponse,
    SearchResult,
)
from query_service.retrieval.evidence import Passage, Piece, render

DOCUMENT_ID = "ducks-field-notes-txt-7f4f0fb9edeb"
FILE_NAME = "ducks_field_notes.txt"
TITLE = "FIELD NOTES ON LAKE DUCKS"
PUBLISHED = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
SHA256 = "25393809119a3c365ecee141e8d2b34e65d1a1954703517a1047733ac0a7e94a"
SPECIES = (TITLE, "2. Species counted")
BEHAVIOUR = (*SPECIES, "2.1 Behaviour")
BEHAVIOUR_BODY = (
    "Most mallards were dabbling in shallow water near the reeds. Tufted ducks dived further "
    "out, typically for ten to twenty seconds at a time."
)
BEHAVIOUR_TEXT = f"2.1 Behaviour\n\n{BEHAVIOUR_BODY}"
BEHAVIOUR_CHUNK = "c5ff3d5edc6c1890d1b2b84ed8309bb0c"
TABLE_DOCUMENT = "word-sample-docx-6111c2cabc3c"
TABLE_HTML = (
    "<table><thead><tr><th></th><th>Food</th><th>Calories per portion</th></tr></thead><tbody>"
    "<tr><td>Leaves</td><td>Ash, Elm, Maple</td><td>50</td></tr>"
    "<tr><td>Grain</td><td>Corn, Buckwheat, Barley</td><td>200</td></tr></tbody></table>"
)

# -- requests ----------------------------------------------------------------------------------

CLASSIC_REQUEST = SearchRequest(query="How do tufted ducks feed?", top_k=3)
FILTERED_REQUEST = SearchRequest(
    query="calories per portion",
    top_k=5,
    chunk_types=[ChunkType.TABLE],
    filters=SearchFilters(document_type=["docx"], date_from=date(2024, 1, 1)),
)
AGENTIC_REQUEST = AgenticRequest(
    mode="agentic", query="How do tufted ducks feed, and what do ducks eat?", token_budget=4000
)
READ_REQUEST = ReadRequest(
    refs=[
        ReadRef(chunk_id=BEHAVIOUR_CHUNK),
        ReadRef(document_id=DOCUMENT_ID, section_id="s1"),
        ReadRef(document_id=DOCUMENT_ID, section_path=list(SPECIES)),
    ],
    max_chunks_per_ref=5,
)

# -- answers -----------------------------------------------------------------------------------


def _location(path: tuple[str, ...], section_id: str) -> Location:
    return Location(
        document_id=DOCUMENT_ID,
        source_file_name=FILE_NAME,
        section_path=list(path),
        section_id=section_id,
    )


# The behaviour passage as every answer cites it: a search result, an agentic result, a read chunk.
BEHAVIOUR_CITED = CitedChunk(
    content=BEHAVIOUR_TEXT,
    chunk_type=ChunkType.TEXT,
    document_id=DOCUMENT_ID,
    chunk_id=BEHAVIOUR_CHUNK,
    source_file_name=FILE_NAME,
    section_path=list(BEHAVIOUR),
    section_id="s5",
    pages=[],
)
TABLE_RESOURCE = Resource(
    kind="table",
    document_id=TABLE_DOCUMENT,
    ref="tables/table-0001.html",
    url=f"/v1/documents/{TABLE_DOCUMENT}/resources/tables/table-0001.html?namespace=default",
    html=TABLE_HTML,
)
SEARCH_RESPONSE = SearchResponse(
    query=CLASSIC_REQUEST.query,
    namespace="default",
    revision=1,
    small_corpus=False,
    took_ms=15.6,
    results=[
        SearchResult(
            **BEHAVIOUR_CITED.model_dump(),
            score=0.05698,
            channels={"content": 0, "term": 1},
            occurrences=[_location(BEHAVIOUR, "s5")],
        ),
        SearchResult(
            content="Let’s eat\nFood | Calories per portion\nLeaves | Ash, Elm, Maple | 50\n"
            "Grain | Corn, Buckwheat, Barley | 200",
            chunk_type=ChunkType.TABLE,
            document_id=TABLE_DOCUMENT,
            chunk_id="c8f7d20f6a6c988f07d0e8ae68fd1463c",
            source_file_name="word_sample.docx",
            section_path=["Swimming in the lake", "Let’s swim!", "Let’s eat"],
            section_id="s15",
            pages=[],
            score=0.02881,
            channels={"path": 0, "content": 4},
            occurrences=[
                Location(
                    document_id=TABLE_DOCUMENT,
                    source_file_name="word_sample.docx",
                    section_path=["Swimming in the lake", "Let’s swim!", "Let’s eat"],
                    section_id="s15",
                )
            ],
            resource=TABLE_RESOURCE,
        ),
    ],
)
SPECIES_TEXT = (
    "2. Species counted\n\nMallards were the most common species, followed by tufted ducks and "
    "a small group of common goldeneye. A single mandarin duck was seen on the second morning."
)


def _piece(chunk_id: str, path: tuple[str, ...], section_id: str, text: str, score: float) -> Piece:
    return Piece(
        chunk_id=chunk_id,
        document_id=DOCUMENT_ID,
        source_file_name=FILE_NAME,
        section_id=section_id,
        section_path=path,
        order=0,
        pages=(),
        text=text,
        score=score,
    )


# Two passages of the answer over data/sample/, rendered as the service renders them.
_AGENTIC_TEXT, _AGENTIC_CITATIONS = render(
    [
        Passage([_piece("ce65159003514ef7289d53879e81bae24", SPECIES, "s3", SPECIES_TEXT, 0.0557)]),
        Passage([_piece(BEHAVIOUR_CHUNK, BEHAVIOUR, "s5", BEHAVIOUR_TEXT, 0.0551)]),
    ]
)
AGENTIC_RESPONSE = AgenticResponse(
    query=AGENTIC_REQUEST.query,
    namespace="default",
    revision=1,
    evidence_text=_AGENTIC_TEXT,
    results=_AGENTIC_CITATIONS,
    plan=[
        StepReport(id="s1", status="done", tokens=1902, discovered=17),
        StepReport(
            id="s2", query="How do tufted ducks feed", status="done", tokens=0, discovered=8
        ),
        StepReport(id="s3", query="what do ducks eat", status="done", tokens=0, discovered=9),
    ],
    planner="rule",
    budget=BudgetReport(
        limit=4000,
        used=3399,
        model_tokens=0,
        evidence_tokens_available=2079,
        unread=0,
    ),
    stop_reason="budget_exhausted",
    took_ms=24.4,
)
READ_RESPONSE = ReadResponse(
    namespace="default",
    revision=1,
    items=[
        ReadItem(
            ref=ReadRef(chunk_id=BEHAVIOUR_CHUNK),
            status="ok",
            chunks=[ReadChunk(**BEHAVIOUR_CITED.model_dump())],
        ),
        ReadItem(
            ref=ReadRef(chunk_id="c00000000000000000000000000000000"),
            status="not_found",
            message="chunk 'c00000000000000000000000000000000' not found",
        ),
    ],
)
SUMMARY = DocumentSummary(
    document_id=DOCUMENT_ID,
    namespace="default",
    source_file_name=FILE_NAME,
    title=TITLE,
    format="text",
    status="active",
    active_revision=1,
    chunk_count=4,
    source_kind="cli",
    organizational_unit="Field team",
    document_date=date(2024, 4, 12),
    created_at=PUBLISHED,
    updated_at=PUBLISHED,
)
DOCUMENT_LIST = DocumentList(
    namespace="default", revision=1, total=5, offset=0, limit=1, items=[SUMMARY]
)


def _section(
    section_id: str, path: tuple[str, ...], summary: str, chunk_count: int, *children: SectionNode
) -> SectionNode:
    """A node of the sample's section tree: its title and level follow from its path."""
    return SectionNode(
        section_id=section_id,
        title=path[-1],
        path=list(path),
        level=len(path),
        summary=summary,
        chunk_count=chunk_count,
        children=list(children),
    )


SECTIONS = [
    _section(
        "s0",
        (TITLE,),
        "Sections: 1. Observation site; 2. Species counted",
        0,
        _section(
            "s3",
            SPECIES,
            "Mallards were the most common species, followed by tufted ducks.",
            1,
            _section(
                "s5", BEHAVIOUR, "Most mallards were dabbling; tufted ducks dived further out.", 1
            ),
        ),
    )
]
DOCUMENT_DETAIL = DocumentDetail(
    revision=1,
    document=SUMMARY,
    manifest=Manifest(
        # The manifest describes the summary's document: the same identity.
        **SUMMARY.model_dump(include={"document_id", "namespace", "source_file_name", "title"}),
        document_date="2024-04-12",
        document_date_source="upload",
        source=SourceInfo(
            source_file_name=FILE_NAME,
            namespace="default",
            object_key=f"sources/sha256/25/{SHA256}",
            archived_path=f"source/{FILE_NAME}",
            sha256=SHA256,
            size_bytes=674,
            media_type="text/plain",
            format="text",
            source_kind="cli",
            organizational_unit="Field team",
            document_date="2024-04-12",
        ),
        profile=DocumentProfile(
            format=FileFormat.TEXT,
            media_type="text/plain",
            extension="txt",
            size_bytes=674,
            sha256=SHA256,
            paragraph_count=9,
            char_count=674,
            language="en",
            routing=RoutingDecision(strategy="text", reason="text without markup"),
        ),
        parser="text",
        pipeline_version="0.1.0",
        timings={"source": 0.0012, "parse": 0.0253, "chunks": 0.0096, "nav": 0.0017},
        statistics=Statistics(
            chunks=4,
            text_chunks=4,
            table_chunks=0,
            image_chunks=0,
            sections=5,
            headings=5,
            tables=0,
            images=0,
            image_files=0,
            tokens=150,
            characters=667,
            rows=9,
        ),
        files={f"source/{FILE_NAME}": SHA256},
        hierarchy=[
            HierarchyNode(
                title=TITLE,
                level=1,
                children=[
                    HierarchyNode(
                        title=SPECIES[1],
                        level=2,
                        children=[HierarchyNode(title=BEHAVIOUR[2], level=3)],
                    )
                ],
            )
        ],
        diagnostics_count={},
    ),
    nav=DocNav(
        document_id=DOCUMENT_ID, title=TITLE, root_chunk_count=0, sections=SECTIONS, resources=[]
    ),
)
OUTLINE = Outline(
    revision=1,
    document_id=DOCUMENT_ID,
    title=TITLE,
    source_file_name=FILE_NAME,
    # The whole tree, as the service answers it (an outline section reads as the nav's).
    sections=[OutlineSection.model_validate(node, from_attributes=True) for node in SECTIONS],
)
NEIGHBORS = Neighbors(
    revision=1,
    document_id=DOCUMENT_ID,
    neighbors=[
        Neighbor(
            document_id=TABLE_DOCUMENT,
            title="Swimming in the lake",
            source_file_name="word_sample.docx",
            relation="related",
            score=0.42,
            shared_keywords=["duck", "lake"],
        )
    ],
)
NAMESPACES = Namespaces(
    namespaces=[
        NamespaceInfo(
            namespace="default", revision=1, documents=5, chunks=27, published_at=PUBLISHED
        )
    ]
)
FILTER_VALUES = FilterValues(
    namespace="default",
    revision=1,
    document_type=["docx", "html", "markdown", "text"],
    source=["cli", "upload"],
    organizational_unit=["Field team"],
    date_min=date(2024, 4, 12),
    date_max=date(2025, 1, 31),
    path_prefix=["notes"],
    entity=["International Business Machines Corporation", "IBM"],
    form_type=["10-Q"],
    fiscal_period=["2024", "2024Q3"],
)
CACHE_STATS = CacheStats(
    namespaces=[NamespaceCache(namespace="default", entries=2, bytes=6604, hits=5, misses=2)],
    max_entries=2048,
    max_bytes=67_108_864,
)
