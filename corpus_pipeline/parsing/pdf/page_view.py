"""One page as the table code reads it (`PageView`): words, spans, blocks and vector paths, each
read once, and what is derived from them (rulings, text rows).

The table test (`table_evidence`) and the finder (`tables`) share one read of the page: one
MuPDF text page, one path list. The profile's table probe keeps a view's reads (`reads`) for
the parse, which hands them to a new view of the same page (`keep_reads`).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from corpus_pipeline.parsing.pdf.table_finder import Span

if TYPE_CHECKING:
    import pymupdf

Rect = tuple[float, float, float, float]
TextRow = tuple[float, float, list[Rect]]


class PageView:
    """What the table code reads from one page, each read once.

    Every `get_text` call rebuilds MuPDF's text page (1-40 ms on a real filing page) and
    every `get_cdrawings` call re-runs the content stream; the table test and the finder
    read words, blocks, spans and paths of the same page several times, so they share one
    text page (the layout's, with its flags, when the caller passes it) and one path list.
    Coordinates are unrotated page space.
    """

    def __init__(self, page: pymupdf.Page, textpage: Any = None) -> None:
        self.page = page
        if textpage is not None:
            self.textpage = textpage  # the parser's own, shared with its layout read

    def reads(self) -> dict[str, Any]:
        """What this view has read so far (plain data: it can travel to a worker process)."""
        return {k: v for k, v in vars(self).items() if k not in ("page", "textpage")}

    def keep_reads(self, reads: dict[str, Any]) -> None:
        """Another view's reads of the same page: not read again here."""
        vars(self).update(reads)

    @cached_property
    def textpage(self) -> Any:
        from corpus_pipeline.parsing.pdf.layout import TEXT_FLAGS

        return _api(self.page).get_textpage(flags=TEXT_FLAGS)

    @cached_property
    def words(self) -> list[Any]:
        return list(_api(self.page).get_text("words", textpage=self.textpage))

    @cached_property
    def blocks(self) -> list[Any]:
        return list(_api(self.page).get_text("blocks", textpage=self.textpage))

    @cached_property
    def spans(self) -> list[Span]:
        """Non-blank text spans with their bold and superscript flags."""
        import pymupdf

        data = _api(self.page).get_text("dict", textpage=self.textpage)
        return [
            Span(
                _rect(s["bbox"]),
                bool(s["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in str(s["font"]).lower(),
                bool(s["flags"] & pymupdf.TEXT_FONT_SUPERSCRIPT),
            )
            for b in data["blocks"]
            for line in b.get("lines", ())
            for s in line["spans"]
            if str(s["text"]).strip()
        ]

    @cached_property
    def paths(self) -> list[dict[str, Any]]:
        return list(_api(self.page).get_cdrawings())

    @cached_property
    def rect(self) -> Rect:
        """The page's rectangle in unrotated space (where text and drawings are)."""
        import pymupdf

        api = _api(self.page)
        if not int(api.rotation):
            return _rect(api.rect)
        r = _api(pymupdf).Rect(api.rect) * api.derotation_matrix
        r.normalize()
        return _rect(r)

    @cached_property
    def segments(self) -> tuple[list[Rect], list[Rect]]:
        return _segments(self.paths)

    @cached_property
    def text_rows(self) -> list[TextRow]:
        return _line_segments(self.words)


def view_of(page: pymupdf.Page | PageView) -> PageView:
    return page if isinstance(page, PageView) else PageView(page)


def _segments(paths: list[dict[str, Any]]) -> tuple[list[Rect], list[Rect]]:
    """Horizontal and vertical rulings: stroked lines and rect edges, or hairline filled rects.

    Plain filled areas (backgrounds, bars, logos) are ignored: their edges cross like a grid
    without being one.
    """
    hs: list[Rect] = []
    vs: list[Rect] = []
    for path in paths:
        stroked = "s" in str(path.get("type", ""))
        for item in path.get("items", ()):
            kind = item[0]
            if kind == "l" and stroked:
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y1 - y0) < 1.0 and abs(x1 - x0) >= 3.0:
                    hs.append((min(x0, x1), y0, max(x0, x1), y0))
                elif abs(x1 - x0) < 1.0 and abs(y1 - y0) >= 3.0:
                    vs.append((x0, min(y0, y1), x0, max(y0, y1)))
            elif kind == "re":
                x0, y0, x1, y1 = item[1]
                x0, x1 = min(x0, x1), max(x0, x1)
                y0, y1 = min(y0, y1), max(y0, y1)
                if y1 - y0 < 2.0 and x1 - x0 >= 3.0:
                    hs.append((x0, (y0 + y1) / 2, x1, (y0 + y1) / 2))
                elif x1 - x0 < 2.0 and y1 - y0 >= 3.0:
                    vs.append(((x0 + x1) / 2, y0, (x0 + x1) / 2, y1))
                elif stroked and x1 - x0 >= 3.0 and y1 - y0 >= 3.0:
                    hs += [(x0, y0, x1, y0), (x0, y1, x1, y1)]
                    vs += [(x0, y0, x0, y1), (x1, y0, x1, y1)]
    return hs, vs


def _line_segments(words: list[Any]) -> list[tuple[float, float, list[Rect]]]:
    """Text rows as (y0, y1, segments): words on one baseline, split at gaps wider than ~2 spaces."""
    rows: list[list[Any]] = []
    for w in sorted(words, key=lambda w: (round(w[3]), w[0])):
        if rows and abs(rows[-1][0][3] - w[3]) <= 2.0:
            rows[-1].append(w)
        else:
            rows.append([w])
    out: list[tuple[float, float, list[Rect]]] = []
    for row in rows:
        row.sort(key=lambda w: w[0])
        height = max(w[3] - w[1] for w in row)
        segs: list[list[float]] = []
        for w in row:
            if segs and w[0] - segs[-1][2] <= max(height * 0.8, 4.0):
                segs[-1][2] = max(segs[-1][2], w[2])
                segs[-1][3] = max(segs[-1][3], w[3])
            else:
                segs.append([w[0], w[1], w[2], w[3]])
        out.append(
            (
                min(w[1] for w in row),
                max(w[3] for w in row),
                [(s[0], s[1], s[2], s[3]) for s in segs],
            )
        )
    return out


def _api(obj: object) -> Any:
    """PyMuPDF's methods are untyped; this marks the boundary for mypy --strict."""
    return obj


def _rect(r: Any) -> Rect:
    return (float(r[0]), float(r[1]), float(r[2]), float(r[3]))
