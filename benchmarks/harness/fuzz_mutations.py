"""Mutations of a valid file for the parser fuzz run (`harness.fuzz`), each a pure function of a
seeded `random.Random`, the seed's bytes and the other seeds of its format: the same seed
value always yields the same inputs, so a failure is reproduced from (seed value, format,
index) alone.

Byte-level damage (flips, insertions, deletions, truncation, splices, a valid magic over
random bytes, extreme numbers, invalid encodings) applies to every format; zip packages (the
OOXML, OpenDocument and EPUB family) also get one member damaged, dropped or renamed, or
inflated into a small decompression bomb; text gets deep nesting and huge single lines. The
heavy ones (`HEAVY`) can need much memory or time, so the run sends them through the parse
worker, whose limits are real.
"""

from __future__ import annotations

import io
import random
import re
import warnings
import zipfile
from collections.abc import Callable, Sequence

Mutator = Callable[[random.Random, bytes, Sequence[bytes]], bytes]

# Tokens that upset readers: integer edges, format punctuation, broken UTF-8 sequences.
_INTERESTING = (
    b"\x00",
    b"\xff\xff\xff\xff",
    b"-1",
    b"0",
    b"4294967295",
    b"99999999999999999999",
    b"NaN",
    b"%s%n",
    b"<",
    b">",
    b"&",
    b'"',
    b"'",
    b"{",
    b"}",
    b"\\",
    b"\r",
    b"\n\n",
    b"\xef\xbb\xbf",
    b"\xed\xa0\x80",
    b"\xc0\xaf",
    b"\x80",
    b"]]>",
    b"<!--",
    b"&#0;",
)
_EXTREMES = (
    b"0",
    b"-1",
    b"65535",
    b"2147483648",
    b"99999999",
    b"1e308",
    b"-0",
    b"18446744073709551616",
    b"000000000000000000001",
)
_INVALID_UTF8 = (b"\xff", b"\xfe\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80\x80", b"\xf8\x88")
_DIGITS = re.compile(rb"\d+")
_ATTRIBUTE_NUMBER = re.compile(rb"""=\s*["'](-?\d+)["']""")


def _position(rng: random.Random, data: bytes) -> int:
    """Anywhere, but half the time in the first KiB, where headers and magic live."""
    if not data:
        return 0
    if rng.random() < 0.5:
        return rng.randrange(min(len(data), 1024))
    return rng.randrange(len(data))


def flip(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        if out:
            out[_position(rng, data)] ^= rng.randint(1, 255)
    return bytes(out)


def insert(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    at = _position(rng, data)
    if rng.random() < 0.5:
        piece = rng.randbytes(rng.randint(1, 64))
    else:
        piece = rng.choice(_INTERESTING) * rng.choice((1, 2, 16, 256))
    return data[:at] + piece + data[at:]


def delete(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    if len(data) < 2:
        return b""
    start = _position(rng, data)
    return data[:start] + data[start + rng.randint(1, max(1, len(data) // 4)) :]


def truncate(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    if rng.random() < 0.3:
        return data[: rng.randint(0, min(len(data), 64))]
    return data[: rng.randrange(max(1, len(data)))]


def duplicate(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    span = data[start : start + rng.randint(1, 512)]
    at = rng.randrange(len(data))
    return data[:at] + span * rng.randint(2, 50) + data[at:]


def splice(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    other = rng.choice(others) if others else data
    return data[: rng.randint(0, len(data))] + other[rng.randint(0, len(other)) :]


def magic_random(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """The format's magic (the seed's first bytes) over random bytes."""
    head = data[: rng.choice((2, 4, 8, 16, 64, 512))]
    return head + rng.randbytes(rng.randint(0, 4096))


def numbers(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """Numbers replaced by extremes: spans, counts, sizes, offsets, dates; half the time only
    those of markup attributes (`colspan="2"`, `number-rows-repeated='3'`), where they matter."""
    attributes = [m.span(1) for m in _ATTRIBUTE_NUMBER.finditer(data)]
    spans = attributes if attributes and rng.random() < 0.5 else []
    spans = spans or [m.span() for m in _DIGITS.finditer(data)]
    if not spans:
        return insert(rng, data, others)
    chosen = sorted(rng.sample(spans, min(len(spans), rng.randint(1, 8))))
    out, last = [], 0
    for start, end in chosen:
        out += [data[last:start], rng.choice(_EXTREMES)]
        last = end
    return b"".join([*out, data[last:]])


def bad_encoding(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """Invalid UTF-8 sequences inserted, a wrong byte-order mark, or UTF-16 without one."""
    choice = rng.random()
    if choice < 0.2:
        return rng.choice((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")) + data
    if choice < 0.35:
        return data.decode("latin-1").encode("utf-16-le")
    out = data
    for _ in range(rng.randint(1, 8)):
        at = _position(rng, out)
        out = out[:at] + rng.choice(_INVALID_UTF8) + out[at:]
    return out


def _nesting_tokens(data: bytes) -> tuple[bytes, ...]:
    """Openers that nest in what the bytes look like (markup, RTF, JSON, Markdown text)."""
    head = data[:4096].lstrip()
    if head.startswith(b"{\\rtf"):
        return (b"{", b"{\\*\\x ", b"{\\pard ")
    if head[:1] in (b"[", b"{"):
        return (b"[", b'{"a":')
    if b"<" in head:
        return (
            b"<div>",
            b"<table><tr><td>",
            b"<ul><li>",
            b"<blockquote>",
            b"<b><i>",
            b"<text:list><text:list-item>",
            b"<text:section>",
        )
    return (b"> ", b"  - ", b"1. ", b"[", b"*", b"# ")


def deep_nesting(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    depth = rng.choice((100, 1000, 10_000, 100_000))
    at = _position(rng, data)
    return data[:at] + rng.choice(_nesting_tokens(data)) * depth + data[at:]


def huge_line(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """One line of up to 4 MiB of one character (a delimiter, markup, plain letters)."""
    line = bytes([rng.choice(b"a|,;\t#<-* ")]) * (1 << rng.randint(14, 22))
    at = _position(rng, data)
    return data[:at] + line + data[at:]


# -- zip packages ---------------------------------------------------------------------------------

_BYTE_MUTATORS: tuple[Mutator, ...] = (
    flip,
    insert,
    delete,
    truncate,
    duplicate,
    numbers,
    bad_encoding,
)


def _members(data: bytes) -> list[tuple[zipfile.ZipInfo, bytes]] | None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [(info, archive.read(info)) for info in archive.infolist()]
    except Exception:  # a damaged package has no members to mutate
        return None


def _rezip(members: Sequence[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are a mutation, not a mistake
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, content in members:
                kind = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
                archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), content, kind)
    return buffer.getvalue()


def _pick(rng: random.Random, members: Sequence[tuple[zipfile.ZipInfo, bytes]]) -> int:
    """A member to damage: an XML part twice as often as any other."""
    xml = [i for i, (info, _) in enumerate(members) if info.filename.endswith((".xml", "html"))]
    if xml and rng.random() < 0.67:
        return rng.choice(xml)
    return rng.randrange(len(members))


def zip_member(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """One member of the package damaged by a byte mutation, the rest intact."""
    members = _members(data)
    if not members:
        return flip(rng, data, others)
    index = _pick(rng, members)
    mutate = rng.choice((*_BYTE_MUTATORS, deep_nesting))
    out = [(info.filename, content) for info, content in members]
    out[index] = (out[index][0], mutate(rng, out[index][1], ()))
    return _rezip(out)


def zip_structure(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """A member dropped, emptied, duplicated, or renamed (case, a path out of the package)."""
    members = _members(data)
    if not members:
        return truncate(rng, data, others)
    out = [(info.filename, content) for info, content in members]
    index = _pick(rng, members)
    name, content = out[index]
    action = rng.randrange(4)
    if action == 0:
        del out[index]
    elif action == 1:
        out[index] = (name, b"")
    elif action == 2:
        out.insert(rng.randint(0, len(out)), (name, rng.choice([content, b"<x/>"])))
    else:
        out[index] = (rng.choice((name.upper(), "../" + name, "/" + name, name + "/")), content)
    return _rezip(out)


def zip_bomb(rng: random.Random, data: bytes, others: Sequence[bytes]) -> bytes:
    """A member inflated to 4-128 MiB that compresses to little: blank padding, or one of its
    own elements repeated."""
    members = _members(data)
    if not members:
        return huge_line(rng, data, others)
    out = [(info.filename, content) for info, content in members]
    index = _pick(rng, members)
    name, content = out[index]
    size = 1 << rng.randint(22, 27)
    element = re.search(rb"<[A-Za-z][^<>]*>[^<>]{0,40}</[^<>]+>", content)
    if element is not None and rng.random() < 0.5:
        filler = element.group(0) * (size // len(element.group(0)))
        at = element.end()
    else:
        filler, at = b" " * size, content.rfind(b"<") if b"<" in content else len(content)
    out[index] = (name, content[:at] + filler + content[at:])
    return _rezip(out)


MUTATORS: dict[str, Mutator] = {
    "flip": flip,
    "insert": insert,
    "delete": delete,
    "truncate": truncate,
    "duplicate": duplicate,
    "splice": splice,
    "magic_random": magic_random,
    "numbers": numbers,
    "bad_encoding": bad_encoding,
    "deep_nesting": deep_nesting,
    "huge_line": huge_line,
    "zip_member": zip_member,
    "zip_structure": zip_structure,
    "zip_bomb": zip_bomb,
}
ZIP_ONLY = frozenset({"zip_member", "zip_structure", "zip_bomb"})
HEAVY = frozenset({"deep_nesting", "huge_line", "zip_bomb"})
"""Mutations that can need much memory or time: always parsed in the worker, under its limits."""


def mutate(rng: random.Random, data: bytes, others: Sequence[bytes]) -> tuple[str, bytes]:
    """One mutation of `data` (the zip ones only for a package), a third of the time followed
    by a second, light one; returns the mutation's name ("a+b" when stacked) and the bytes."""
    is_zip = data.startswith(b"PK") and _members(data) is not None
    names = [n for n in MUTATORS if is_zip or n not in ZIP_ONLY]
    if is_zip:  # packages mostly break inside their members
        names += ["zip_member", "zip_member", "zip_structure"]
    first = rng.choice(names)
    out = MUTATORS[first](rng, data, others)
    if rng.random() < 0.33:
        second = rng.choice([n for n in MUTATORS if n not in HEAVY and n not in ZIP_ONLY])
        return f"{first}+{second}", MUTATORS[second](rng, out, others)
    return first, out
