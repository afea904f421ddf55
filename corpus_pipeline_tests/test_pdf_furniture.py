"""Header/footer stripping: what it drops, and that the page read it is given stays as it was."""

from __future__ import annotations

from corpus_pipeline.parsing.pdf.layout import Block, Line, strip_furniture


def _line(text: str, top: float) -> Line:
    return Line(text=text, bbox=(72.0, top, 300.0, top + 10.0), size=10.0, bold=False, font="Times")


def _page() -> list[Block]:
    body = [
        _line(f"Body line {n} of the page, long enough to be text.", 100.0 + 14 * n)
        for n in range(5)
    ]
    return [Block(page=3, index=0, lines=[*body, _line("7", 780.0)])]


def test_a_lone_page_number_in_the_footer_band_is_dropped():
    stripped = strip_furniture(_page(), 800.0, set())
    assert [ln.text for b in stripped for ln in b.lines][
        -1
    ] == "Body line 4 of the page, long enough to be text."
    assert all(ln.text != "7" for b in stripped for ln in b.lines)


def test_stripping_leaves_the_blocks_it_was_given_unchanged():
    # The outline check strips a page read that the page's parse strips again afterwards.
    page = _page()
    strip_furniture(page, 800.0, set())
    assert [ln.text for ln in page[0].lines][-1] == "7"
    assert len(page[0].lines) == 6
