"""Which chunks the agent reads under its budget, as passages, in the order it reads them.

First the core: the whole question's hits in classic rank order (its top k, what classic
search returns), then each part's best new hits (a comparison's sides, a multi-part question's
parts, the statements a measure is computed from), so no part goes without evidence. The core
shares the room evenly: a hit that does not fit its share is cut at a sentence or row boundary,
so a small budget still reads the start of every hit it lists rather than one hit whole. A hit
in the section of an earlier hit is read in that hit's passage (`results` then cites fewer
passages than hits, each passage holding the hits of classic's order up to the next one).

With room left, the evidence grows in this order: the question's hits past its top k and the
parts' further hits (one in the section of a passage read joins that passage, after a gap
mark where rows are skipped: one citation for both); each passage reading on into the next chunk of its section and back into
the one before; the context navigation opened; then passages reading on further, in their
section and then past it. The first thing that does not fit is cut to the room left (a chunk
read back into is read whole or not at all), and reading ends; where the room left would hold
less than a sentence or two of it, smaller things after it may still fill the room.

A passage's citation costs tokens too: new passages open only while the citations and the
response around them stay within the share of the budget that is not evidence
(`non_evidence_share`), so the budget is spent on evidence, not on pointers to it. Where the
evidence found runs out before the budget, a passage may still open if it raises the share of
evidence in the response.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import zip_longest

from query_service.retrieval.evidence import (
    GAP_COST,
    Passage,
    Piece,
    cut_text,
    json_tokens,
    passage_overhead,
    read_on_overhead,
)

MIN_TEXT = 40  # tokens a core passage holds at least (a sentence or two)
PART_HITS = 2  # new hits of each part of a split question in the core


def non_evidence_share(limit: int) -> float:
    """The most of the budget that citations and the response's frame may take once it is
    spent (the JSON escapes of the evidence take a few percent more): 44 % at 1,000 tokens and
    below (one or two passages), 22 % at 2,000, rising to 30 % at 8,000 and above, where the
    budget reaches past the question's top k hits and each further hit in a section of its own
    needs a citation (on long filings 130–200 tokens with its section path)."""
    if limit <= 1000:
        return 0.44
    if limit <= 2000:
        return 0.44 - 0.22 * (limit - 1000) / 1000
    return 0.22 + 0.08 * min(limit - 2000, 6000) / 6000


Follow = Callable[[Piece, set[str], bool, bool], Piece | None]


@dataclass
class Reading:
    """The passages read so far and what they cost."""

    room: int  # tokens for passages (citations + text)
    frame: int  # tokens of the response around them
    limit: int
    passages: list[Passage] = field(default_factory=list)
    read: set[str] = field(default_factory=set)  # chunk ids in the evidence
    overhead: int = 0
    text: int = 0
    exhausted: bool = False  # something found did not fit

    @property
    def left(self) -> int:
        return self.room - self.overhead - self.text

    def may_open(self, overhead: int, text: int, late: bool) -> bool:
        """A new passage's citation fits the share of the budget that is not evidence, or, `late`
        (when nothing else reads on and the budget is not spent), the passage raises the share
        of evidence in what the response holds."""
        if not self.passages:
            return True
        if self.frame + self.overhead + overhead <= non_evidence_share(self.limit) * self.limit:
            return True
        share = self.text / (self.frame + self.overhead + self.text)
        return late and text / (text + overhead) > share

    def open(self, piece: Piece, core: bool, cut: str | None = None) -> Passage:
        passage = Passage([piece], cut=cut, core=core)
        self.overhead += passage_overhead(passage, self.passages[-1] if self.passages else None)
        self.text += passage.text_cost()
        self.passages.append(passage)
        self.read |= passage.chunk_ids()
        return passage

    def extend(self, passage: Passage, piece: Piece, back: bool, cut: str | None = None) -> None:
        before = passage.text_cost()
        self.overhead += read_on_overhead(piece, first=len(passage.pieces) == 1)
        if back:
            passage.pieces.insert(0, piece)
            passage.anchor_at += 1
        else:
            passage.pieces.append(piece)
            passage.cut = cut
        self.text += passage.text_cost() - before
        self.read |= {piece.chunk_id, *piece.embeds}

    def join(self, passage: Passage, piece: Piece, cut: str | None = None) -> None:
        """A further hit of a passage's section, not next to it, read in the same passage after
        a gap (before it, when it comes first in the section): its own citation saved."""
        back = piece.order < passage.pieces[0].order
        gap = (passage.pieces[0] if back else piece).chunk_id
        passage.gaps = passage.gaps | {gap}
        self.extend(passage, piece, back, cut)


def read_evidence(
    core: Sequence[Piece],
    further: Sequence[Piece],
    context: Sequence[Piece],
    follow: Follow,
    room: int,
    frame: int,
    limit: int,
) -> Reading:
    """The passages for `room` tokens: the core, then whatever reads on, best first."""
    reading = Reading(room=room, frame=frame, limit=limit)
    _read_core(reading, core, follow)
    for move in _moves(reading, further, context, follow):
        if not move():
            break
    return reading


def _fresh(reading: Reading, piece: Piece) -> Piece | None:
    """The piece as still unread (None when it is in the evidence already)."""
    if piece.chunk_id in reading.read:
        return None
    return piece.without(reading.read)


def _read_core(reading: Reading, core: Sequence[Piece], follow: Follow) -> None:
    """As many core hits as fit with at least MIN_TEXT tokens each, then the room shared among
    them evenly (water-filling: a hit under the share is read whole, the rest are cut). A hit
    in the section of a passage already open joins it (one citation for both, as for further
    hits): on a short document many hits share a section, and their citations would otherwise
    cost as much as their text."""
    chosen: list[tuple[Piece, int]] = []
    seen: set[str] = set()
    need = 0
    for piece in core:
        if piece.chunk_id in seen:
            continue
        fresh = piece.without(seen)
        overhead = passage_overhead(Passage([fresh]), None)
        least = overhead + min(fresh.cost, MIN_TEXT)
        opened = sum(o for _, o in chosen)
        if chosen and (
            need + least > reading.room
            or reading.frame + opened + overhead > non_evidence_share(reading.limit) * reading.limit
        ):
            reading.exhausted = True
            break
        chosen.append((fresh, overhead))
        seen |= {fresh.chunk_id, *fresh.embeds}
        need += least
    if not chosen:
        return
    share = _even_share([p.cost for p, _ in chosen], reading.room - sum(o for _, o in chosen))
    for piece, _ in chosen:
        cut = None
        if piece.cost > share:
            reading.exhausted = True
            cut = cut_text(piece.text, max(share, 1))
            if cut is None:
                continue
        passage = _section_passage(reading, piece)
        if passage is not None and (cut is None or piece.order > passage.last.order):
            _attach(reading, passage, piece, follow, cut)
        else:
            reading.open(piece, core=True, cut=cut)


def _even_share(costs: Sequence[int], room: int) -> int:
    """The largest share s with sum(min(cost, s)) <= room."""
    if sum(costs) <= room:
        return max(costs, default=0)
    low, high = 0, max(costs)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(c, mid) for c in costs) <= room:
            low = mid
        else:
            high = mid - 1
    return low


Move = Callable[[], bool]


def _moves(
    reading: Reading, further: Sequence[Piece], context: Sequence[Piece], follow: Follow
) -> Iterator[Move]:
    """The ways the evidence grows, in order; each returns False once reading must end. New
    passages open first within the citation share (`late`: past it, where they raise the share
    of evidence once nothing else reads on)."""
    for late in (False, True):
        for piece in further:
            yield partial(_open, reading, piece, late, follow)
        if not late:
            yield from _read_on_round(reading, follow, across=False)
        for piece in context:
            yield partial(_open, reading, piece, late)
        for across in (False, True):
            while True:
                before = reading.text
                yield from _read_on_round(reading, follow, across)
                if reading.text == before:
                    break


def _read_on_round(reading: Reading, follow: Follow, across: bool) -> Iterator[Move]:
    """Each passage reads on by a chunk, then back by one (in its section, or `across`)."""
    for passage in list(reading.passages):
        yield partial(_read_on, reading, passage, follow, across, False)
        yield partial(_read_on, reading, passage, follow, across, True)


def _read_on(reading: Reading, passage: Passage, follow: Follow, across: bool, back: bool) -> bool:
    if passage.cut is not None and not back:
        return True
    nearby = follow(passage.pieces[0] if back else passage.last, reading.read, across, back)
    if nearby is None:
        return True
    nearby = nearby.without(reading.read)
    overhead = read_on_overhead(nearby, first=len(passage.pieces) == 1)
    if overhead + nearby.cost <= reading.left:
        reading.extend(passage, nearby, back)
        return True
    if back:  # a chunk read back into is read whole or not at all
        return True
    reading.exhausted = True
    cut = cut_text(nearby.text, reading.left - overhead)
    if cut is None or json_tokens(cut) < MIN_TEXT:
        return True  # too little room for it: something smaller may still fit
    reading.extend(passage, nearby, back, cut)
    return False


def _open(reading: Reading, piece: Piece, late: bool, follow: Follow | None = None) -> bool:
    fresh = _fresh(reading, piece)
    if fresh is None:
        return True
    joined = None if follow is None else _join(reading, fresh, follow)
    if joined is not None:
        return joined
    previous = reading.passages[-1] if reading.passages else None
    overhead = passage_overhead(Passage([fresh]), previous)
    if not reading.may_open(overhead, min(fresh.cost, max(reading.left - overhead, 0)), late):
        reading.exhausted = True
        return True  # no more citations; passages may still read on
    if overhead + fresh.cost <= reading.left:
        reading.open(fresh, core=False)
        return True
    reading.exhausted = True
    cut = cut_text(fresh.text, reading.left - overhead)
    if cut is None or json_tokens(cut) < MIN_TEXT:
        return True  # too little room for it: something smaller may still fit
    reading.open(fresh, core=False, cut=cut)
    return False


def _section_passage(reading: Reading, piece: Piece) -> Passage | None:
    """The passage of the piece's section it may join (not one cut where the piece would come
    after it)."""
    if piece.order < 0 or not piece.section_id:
        return None
    for passage in reading.passages:
        first = passage.pieces[0]
        if (first.document_id, first.section_id) != (piece.document_id, piece.section_id):
            continue
        if first.order < 0:
            continue
        if piece.order < first.order or (piece.order > passage.last.order and not passage.cut):
            return passage
    return None


def _join(reading: Reading, piece: Piece, follow: Follow) -> bool | None:
    """A further hit joined to the passage of its section, after a gap unless it is the next
    chunk (None: it has none, or would not fit there whole: it opens, or is cut, as a passage
    of its own)."""
    passage = _section_passage(reading, piece)
    if passage is None:
        return None
    overhead = read_on_overhead(piece, first=len(passage.pieces) == 1)
    if overhead + GAP_COST + piece.cost > reading.left:
        return None
    _attach(reading, passage, piece, follow)
    return True


def _attach(
    reading: Reading, passage: Passage, piece: Piece, follow: Follow, cut: str | None = None
) -> None:
    """A hit read in the passage of its section: simply read on into when it is the chunk next
    to it, else after a gap mark (`cut` only for a hit after the passage's last chunk)."""
    back = piece.order < passage.pieces[0].order
    edge = passage.pieces[0] if back else passage.last
    nearby = follow(edge, set(), False, back)
    if nearby is not None and nearby.chunk_id == piece.chunk_id:
        reading.extend(passage, piece, back, cut)
    else:
        reading.join(passage, piece, cut)


def interleave(lists: Sequence[Sequence[Piece]]) -> list[Piece]:
    """Rank by rank across lists: the first of each, then the second of each, …"""
    return [p for row in zip_longest(*lists) for p in row if p is not None]
