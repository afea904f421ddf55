"""Archives are read completely and refused, naming the member and the reason, before anything is
stored: escaping paths, links, special files, duplicates, encryption and every size limit."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile

import pytest

from corpus_pipeline.common.errors import InvalidInputError
from corpus_pipeline.intake.archives import ArchiveLimits, archive_kind, read_archive


def _zip(entries: list[tuple[str, bytes]], mode: int | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode is not None:
                info.external_attr = mode << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def _tar(add: list[tarfile.TarInfo | tuple[str, bytes]], compression: str = "") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if compression else "w") as archive:
        for item in add:
            if isinstance(item, tarfile.TarInfo):
                archive.addfile(item)
            else:
                name, data = item
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _refusal(name: str, data: bytes, limits: ArchiveLimits | None = None) -> str:
    with pytest.raises(InvalidInputError) as caught:
        read_archive(name, data, limits)
    assert caught.value.field == "archive"
    return str(caught.value)


def test_a_zip_gives_its_files_with_their_folders_in_order() -> None:
    data = _zip([("reports/q1.md", b"# Q1\n"), ("reports/", b""), ("notes.txt", b"hello")])
    members = read_archive("batch.zip", data)
    assert [(m.path, m.data) for m in members] == [
        ("reports/q1.md", b"# Q1\n"),
        ("notes.txt", b"hello"),
    ]


@pytest.mark.parametrize("compression", ["", "gz"])
def test_a_tar_and_a_tar_gz_give_their_files(compression: str) -> None:
    name = "batch.tar.gz" if compression else "batch.tar"
    data = _tar([("a/one.md", b"# One\n"), ("two.txt", b"two")], compression)
    assert [m.path for m in read_archive(name, data)] == ["a/one.md", "two.txt"]


def test_archive_kind_comes_from_the_name() -> None:
    kinds = [archive_kind(n) for n in ("a.ZIP", "a.tar", "a.tar.gz", "a.tgz", "a.pdf")]
    assert kinds == ["zip", "tar", "tar", "tar", None]


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        ("../evil.md", "escapes the archive's folder"),
        ("docs/../../evil.md", "escapes the archive's folder"),
        ("/etc/passwd", "is an absolute path"),
        ("C:/windows/evil.md", "is an absolute path"),
        ("docs\\evil.md", "has a backslash in its name"),
        ("docs/evil\x07.md", "has a control character in its name"),
    ],
)
def test_a_member_path_that_could_escape_is_refused(member: str, reason: str) -> None:
    message = _refusal("x.zip", _zip([("ok.md", b"# ok"), (member, b"x")]))
    assert reason in message and "nothing was stored" in message


def test_a_zip_symlink_is_refused() -> None:
    message = _refusal("x.zip", _zip([("link.md", b"/etc/passwd")], mode=stat.S_IFLNK | 0o777))
    assert "member 'link.md' is a symbolic link" in message


@pytest.mark.parametrize(
    "kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE]
)
def test_tar_links_and_special_files_are_refused(kind: bytes) -> None:
    info = tarfile.TarInfo("odd")
    info.type = kind
    info.linkname = "target.md"
    message = _refusal("x.tar", _tar([("target.md", b"# t"), info]))
    assert "member 'odd' is a" in message


def test_a_member_twice_is_refused() -> None:
    message = _refusal("x.tar", _tar([("a.md", b"one"), ("./a.md", b"two")]))
    assert "member 'a.md' appears twice" in message


@pytest.mark.parametrize(
    "entries", [[("a", b"file"), ("a/b.md", b"x")], [("a/b.md", b"x"), ("a", b"file")]]
)
def test_a_name_that_is_both_file_and_folder_is_refused(entries: list[tuple[str, bytes]]) -> None:
    assert "is both a file and a folder" in _refusal("x.tar", _tar(list(entries)))


def test_an_encrypted_zip_member_is_refused() -> None:
    data = bytearray(_zip([("secret.md", b"# s")]))
    # Set the "encrypted" flag bit in the local and central headers (as an encrypting tool does)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature) + offset
        data[at] |= 0x1
    assert "member 'secret.md' is encrypted" in _refusal("x.zip", bytes(data))


def test_too_many_entries_are_refused() -> None:
    data = _zip([(f"f{i}.txt", b"x") for i in range(6)])
    assert "more than 5 entries" in _refusal("x.zip", data, ArchiveLimits(max_entries=5))


def test_sizes_are_counted_while_reading_not_taken_from_headers() -> None:
    big = b"a" * 300_000
    data = _zip([("big.txt", big)])
    limits = ArchiveLimits(max_member_bytes=100_000, max_ratio=10_000)
    assert "member 'big.txt' expands beyond 100,000 bytes" in _refusal("x.zip", data, limits)
    limits = ArchiveLimits(max_total_bytes=250_000, max_ratio=10_000)
    two = _zip([("a", big[:200_000]), ("b", big)])
    assert "archive: expands beyond 250,000 bytes" in _refusal("x.zip", two, limits)


def test_a_decompression_bomb_is_refused_by_its_ratio() -> None:
    data = _zip([("bomb.txt", b"\0" * 5_000_000)])  # deflates about 1000x
    assert "expands more than 100x its size" in _refusal("bomb.zip", data)


def test_a_damaged_archive_is_refused_by_name() -> None:
    assert "not a readable zip archive (BadZipFile)" in _refusal("x.zip", b"PK\x03\x04 broken")
