"""Archives (.zip, .tar, .tar.gz/.tgz) read completely and checked before anything is stored.

An archive is a set of documents delivered in one file. It is read in full, in memory, with
every size counted while decompressing (headers are never trusted), and refused as a whole,
naming the member and the reason, when a member path could escape its folder (`../`, an
absolute path, a drive letter, a backslash, a control character), when a member is a link, a
device or a FIFO, appears twice or as both file and folder, or is encrypted, and when the
archive exceeds its limits (entries, expanded bytes, expansion ratio, one member's bytes).
Nothing is written while reading, so a refused archive leaves nothing behind.
"""

from __future__ import annotations

import io
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from corpus_pipeline.common.errors import ZIP_DAMAGE, InvalidInputError

MIB = 1024 * 1024
_CHUNK = 64 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ArchiveLimits:
    max_entries: int = 5000
    max_total_bytes: int = 200 * MIB
    max_ratio: float = 100.0  # expanded bytes per archive byte
    max_member_bytes: int = 50 * MIB


@dataclass(frozen=True)
class Member:
    """One file of an archive: its path inside (folders kept, '/'-separated) and its bytes."""

    path: str
    data: bytes


def archive_kind(name: str) -> str | None:
    """'zip' or 'tar' by the file name's suffix (a .tar.gz/.tgz is a tar), else None."""
    lower = name.lower()
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith((".tar", ".tar.gz", ".tgz")):
        return "tar"
    return None


def read_archive(name: str, data: bytes, limits: ArchiveLimits | None = None) -> list[Member]:
    """The archive's files in archive order, or `InvalidInputError` (field 'archive')."""
    kind = archive_kind(name)
    if kind is None:
        raise InvalidInputError("archive", f"'{_label(name)}' is not a .zip, .tar or .tar.gz")
    reader = _Reader(data, limits or ArchiveLimits())
    try:
        if kind == "zip":
            reader.read_zip()
        else:
            reader.read_tar()
    except (*ZIP_DAMAGE, tarfile.TarError) as exc:
        raise InvalidInputError(
            "archive", f"not a readable {kind} archive ({type(exc).__name__})"
        ) from None
    return reader.members


class _Reader:
    def __init__(self, data: bytes, limits: ArchiveLimits) -> None:
        self.data = data
        self.limits = limits
        self.members: list[Member] = []
        self.entries = 0
        self.total = 0
        self.files: set[str] = set()
        self.folders: set[str] = set()

    # -- formats ---------------------------------------------------------------------------------

    def read_zip(self) -> None:
        with zipfile.ZipFile(io.BytesIO(self.data)) as archive:
            for info in archive.infolist():
                self._entry()
                path = _member_path(info.filename)
                kind = stat.S_IFMT(info.external_attr >> 16)  # Unix file type, 0 when unset
                if kind == stat.S_IFLNK:
                    raise _refused(path, "is a symbolic link")
                if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise _refused(path, "is a device, FIFO or socket")
                if info.flag_bits & 0x1:
                    raise _refused(path, "is encrypted")
                if info.is_dir():
                    self._folder(path)
                    continue
                with archive.open(info) as stream:
                    self._file(path, stream)

    def read_tar(self) -> None:
        with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:*") as archive:
            while (info := archive.next()) is not None:
                self._entry()
                path = _member_path(info.name)
                if info.issym() or info.islnk():
                    raise _refused(path, "is a link")
                if info.isdir():
                    self._folder(path)
                    continue
                if not info.isreg():
                    raise _refused(path, "is a device, FIFO or special file")
                stream = archive.extractfile(info)
                if stream is None:
                    raise _refused(path, "cannot be read")
                with stream:
                    self._file(path, stream)

    # -- bookkeeping -----------------------------------------------------------------------------

    def _entry(self) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise InvalidInputError(
                "archive", f"more than {self.limits.max_entries} entries; nothing was stored"
            )

    def _folder(self, path: str) -> None:
        if path in self.files:
            raise _refused(path, "is both a file and a folder")
        self.folders.add(path)

    def _file(self, path: str, stream: IO[bytes]) -> None:
        if path in self.files:
            raise _refused(path, "appears twice")
        parents = list(_parents(path))
        if path in self.folders or any(p in self.files for p in parents):
            raise _refused(path, "is both a file and a folder")
        self.members.append(Member(path, self._read(path, stream)))
        self.files.add(path)
        self.folders.update(parents)

    def _read(self, path: str, stream: IO[bytes]) -> bytes:
        """The member's bytes, counted as they are decompressed against every limit."""
        limits = self.limits
        ratio_cap = limits.max_ratio * max(len(self.data), 1)
        parts: list[bytes] = []
        size = 0
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            self.total += len(chunk)
            if size > limits.max_member_bytes:
                raise _refused(path, f"expands beyond {_size(limits.max_member_bytes)}")
            if self.total > limits.max_total_bytes:
                raise InvalidInputError(
                    "archive",
                    f"expands beyond {_size(limits.max_total_bytes)}; nothing was stored",
                )
            if self.total > ratio_cap:
                raise InvalidInputError(
                    "archive",
                    f"expands more than {limits.max_ratio:g}x its size; nothing was stored",
                )
            parts.append(chunk)
        return b"".join(parts)


def _member_path(raw: str) -> str:
    """A member's path made relative and '/'-separated, or a refusal naming why."""
    label = _label(raw)
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise _refused(label, "has a control character in its name")
    if "\\" in raw:
        raise _refused(label, "has a backslash in its name")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise _refused(label, "is an absolute path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise _refused(label, "escapes the archive's folder")
    if not parts:
        raise _refused(label, "has no name")
    return "/".join(parts)


def _size(n: int) -> str:
    return f"{n / MIB:g} MiB" if n >= MIB else f"{n:,} bytes"


def _parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for n in range(1, len(parts)):
        yield "/".join(parts[:n])


def _label(raw: str) -> str:
    """A name fit for a message: control characters shown escaped, long names cut."""
    text = raw.encode("unicode_escape").decode("ascii") if not raw.isprintable() else raw
    return text if len(text) <= 120 else text[:117] + "..."


def _refused(path: str, reason: str) -> InvalidInputError:
    return InvalidInputError("archive", f"member '{_label(path)}' {reason}; nothing was stored")
