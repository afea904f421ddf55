"""How passages are read under a budget (pure logic: pieces in, passages out)."""

from __future__ import annotations

from query_service.retrieval.evidence import GAP_MARK, Passage, Piece, render
from query_service.retrieval.passages import read_evidence

PATH = ("PART I. FINANCIAL INFORMATION", "Item 2. Management's Discussion", "Results of Operations")


def _piece(n: int, section: str = "s1", path: tuple[str, ...] = PATH, doc: str = "d1") -> Piece:
    return Piece(
        chunk_id=f"c{n:032x}",
        document_id=doc,
        source_file_name=f"{doc}.pdf",
        section_id=section,
        section_path=path,
        order=n,
        pages=(n,),
        text=f"Sentence {n} of the section tells what happened in the quarter. " * 4,
        score=1.0 / (n + 1),
    )


def _no_neighbours(*_: object) -> None:
    return None


def _read(core: list[Piece], further: list[Piece]) -> list[Passage]:
    reading = read_evidence(core, further, [], _no_neighbours, room=7_800, frame=200, limit=8_000)
    return reading.passages


def test_a_further_hit_of_a_read_section_joins_its_passage_after_a_gap_mark():
    passages = _read([_piece(1), _piece(40, section="s2")], [_piece(9)])
    text, citations = render(passages)
    assert len(citations) == 2  # no citation of its own
    first = citations[0]
    assert first.chunk_id == _piece(1).chunk_id
    assert first.more_chunks == [_piece(9).chunk_id]
    assert first.pages == [1, 9]
    passage = text[first.span[0] : first.span[1]]
    assert passage == _piece(1).text + GAP_MARK + _piece(9).text


def test_a_further_hit_before_its_passage_joins_it_in_document_order():
    passages = _read([_piece(9)], [_piece(2)])
    text, citations = render(passages)
    assert len(citations) == 1
    assert citations[0].chunk_id == _piece(9).chunk_id  # still cited by the hit it was found by
    passage = text[citations[0].span[0] : citations[0].span[1]]
    assert passage == _piece(2).text + GAP_MARK + _piece(9).text


def test_a_further_hit_of_another_section_opens_its_own_passage():
    passages = _read([_piece(1)], [_piece(9, section="s2")])
    _, citations = render(passages)
    assert [c.chunk_id for c in citations] == [_piece(1).chunk_id, _piece(9).chunk_id]
    assert citations[0].more_chunks == []


def test_a_heading_shows_the_headings_shared_with_the_previous_passage_as_an_ellipsis():
    other = (*PATH[:2], "Liquidity and Capital Resources")
    passages = _read([_piece(1), _piece(30, section="s2", path=other)], [])
    text, citations = render(passages)
    lines = [line for line in text.splitlines() if line.startswith("[")]
    assert lines[0] == "[1] d1.pdf, p. 1 · " + " > ".join(PATH)
    assert lines[1] == "[2] p. 30 · … > Liquidity and Capital Resources"
    assert citations[1].section_path == list(other)  # the citation holds the whole path


def test_another_document_shows_its_whole_section_path():
    passages = _read([_piece(1), _piece(2, doc="d2")], [])
    text, _ = render(passages)
    assert "[2] d2.pdf, p. 2 · " + " > ".join(PATH) in text


def test_core_hits_of_one_section_share_its_passage_and_keep_classics_order():
    hits = [_piece(5), _piece(40, section="s2"), _piece(12), _piece(2)]
    text, citations = render(_read(hits, []))
    assert [c.chunk_id for c in citations] == [_piece(5).chunk_id, _piece(40).chunk_id]
    first = citations[0]
    assert first.more_chunks == [_piece(2).chunk_id, _piece(12).chunk_id]  # document order
    assert first.pages == [2, 5, 12]
    passage = text[first.span[0] : first.span[1]]
    assert passage == GAP_MARK.join(_piece(n).text for n in (2, 5, 12))


def test_a_core_hit_next_to_a_passage_reads_on_without_a_gap():
    def follow(piece: Piece, read: set[str], across: bool, back: bool) -> Piece | None:
        n = piece.order + (-1 if back else 1)
        return _piece(n) if 1 <= n <= 20 else None

    reading = read_evidence(
        [_piece(5), _piece(6)], [], [], follow, room=7_800, frame=200, limit=8_000
    )
    text, citations = render(reading.passages)
    assert len(citations) == 1
    assert _piece(6).chunk_id in citations[0].more_chunks
    assert _piece(5).text + "\n\n" + _piece(6).text in text
    assert GAP_MARK not in text
