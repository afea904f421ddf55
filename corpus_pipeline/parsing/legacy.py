"""Legacy Office files (Word .doc, PowerPoint .ppt, an Excel .xls that xlrd cannot read) through
a managed LibreOffice: converted to DOCX, PPTX or XLSX, then read by that format's own parser,
so a 2003 report keeps the same headings, tables and slides as its modern copy would.

LibreOffice is a large external program that can hang on a hostile file, so every conversion
is managed:

- its own profile directory (`-env:UserInstallation`): concurrent conversions never share (and
  lock) a profile, and nothing of one file's session is left for the next;
- its own session: past `libreoffice_timeout_seconds` the whole process group (`oosplash`,
  `soffice.bin`) is killed, and the group is killed again after a normal exit, so nothing is
  left running; a guard shell also kills the group when the thread that started it dies (a
  parse worker killed at its own limit);
- a slot: at most `libreoffice_max_parallel` conversions at once per machine, across threads
  and processes (each parse runs in a worker process of its own), held as `flock` locks on slot
  files under the work directory; the kernel drops a lock with its holder, so a killed worker
  never keeps a slot.

Without LibreOffice such a file is refused at the door (`intake.door` asks
`libreoffice_available`), never accepted and failed later.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from corpus_pipeline.common.errors import CorpusError, sanitize
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import Conversion, DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.parsing.base import ParseContext, Parser

TOOL = "LibreOffice"
# The format LibreOffice converts each legacy format to (also its `--convert-to` name).
TARGETS: dict[FileFormat, FileFormat] = {
    FileFormat.DOC: FileFormat.DOCX,
    FileFormat.PPT: FileFormat.PPTX,
    FileFormat.XLS: FileFormat.XLSX,
}
# How messages name each legacy format.
KINDS: dict[FileFormat, str] = {
    FileFormat.DOC: "legacy Word .doc",
    FileFormat.PPT: "legacy PowerPoint .ppt",
    FileFormat.XLS: "legacy Excel .xls",
}
_MEDIA: dict[FileFormat, str] = {
    FileFormat.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    FileFormat.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    FileFormat.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}
_COMMANDS = ("soffice", "libreoffice")
_SLOT_POLL_SECONDS = 0.05
_VERSION_TIMEOUT_SECONDS = 30.0
_PR_SET_PDEATHSIG = 1
# The managed program's parent: a shell that runs it and waits, and on SIGTERM (sent when the
# thread that started it dies) kills its whole process group. A parent-death signal reaches
# only a direct child, never what that child started (`soffice.bin` under `oosplash`).
_GUARD = ("/bin/sh", "-c", 'trap "kill -KILL 0" TERM; "$@" & wait $!', "corpus-guard")
INSTALL_HINT = "install it with `make system-deps` or set CORPUS_LIBREOFFICE_PATH"


class ConversionError(CorpusError):
    """A legacy file LibreOffice did not convert: missing, failed, produced nothing, or ran past
    its time limit. The message names the file and LibreOffice."""

    def __init__(self, source_file_name: str, detail: str) -> None:
        self.source_file_name = source_file_name
        super().__init__(f"'{source_file_name}' could not be converted by LibreOffice: {detail}")


def libreoffice_binary(settings: CorpusSettings | None = None) -> str | None:
    """The LibreOffice to run: `libreoffice_path` when set (a path or a command name; None when
    it is not there, since a configured binary is never silently replaced by another one), else
    `soffice` or `libreoffice` on the PATH. Looked up on every call: it is a few `stat`s."""
    configured = (settings or load_settings()).libreoffice_path.strip()
    for command in (configured,) if configured else _COMMANDS:
        found = shutil.which(command)
        if found is not None:
            return found
    return None


def libreoffice_available(settings: CorpusSettings | None = None) -> bool:
    """Whether this deployment can convert legacy Office files (the door asks before storing)."""
    return libreoffice_binary(settings) is not None


def xlrd_refusal(data: bytes) -> str | None:
    """Why xlrd cannot open this workbook (opened as `parsing.xlsx.parse_xls` opens it), or
    None when it can: such a workbook is converted by LibreOffice instead."""
    import xlrd

    try:
        book = xlrd.open_workbook(file_contents=data, formatting_info=True, on_demand=True)
        book.release_resources()
    except Exception as exc:  # damage surfaces as any exception deep inside xlrd
        return f"{type(exc).__name__}: {sanitize(str(exc), 120)}"
    return None


@dataclass(frozen=True)
class ConversionSlots:
    """At most `count` conversions at once among every thread and process that shares
    `directory` (one CORPUS_HOME's work directory on one machine): slot `i` is an exclusive
    `flock` on `slot-i.lock`, released when its holder closes it or dies."""

    directory: Path
    count: int

    @classmethod
    def of(cls, settings: CorpusSettings) -> ConversionSlots:
        return cls(settings.work_dir / "libreoffice", settings.libreoffice_max_parallel)

    @contextlib.contextmanager
    def hold(self) -> Iterator[int]:
        """Wait for a free slot and hold it for the block; yields its number."""
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            for number in range(self.count):
                # A separate open file per attempt: flock conflicts between two opens of one
                # file even within a process, so threads are limited as processes are.
                fd = os.open(self.directory / f"slot-{number}.lock", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                try:
                    yield number
                finally:
                    os.close(fd)
                return
            time.sleep(_SLOT_POLL_SECONDS)


@dataclass(frozen=True)
class Converted:
    """A converted file (inside a temporary folder) and the record the manifest keeps."""

    path: Path
    record: Conversion


@contextlib.contextmanager
def converted(
    source: Path, fmt: FileFormat, source_file_name: str, settings: CorpusSettings
) -> Iterator[Converted]:
    """`source` (a legacy `fmt` file) converted to its modern format, for the block: the file
    and the conversion's whole folder (profile, input, output) are removed after it; folders
    that killed conversions left are removed first. Raises `ConversionError` when LibreOffice
    is missing, fails, or runs past its time limit."""
    binary = libreoffice_binary(settings)
    if binary is None:
        raise ConversionError(source_file_name, f"it is not installed; {INSTALL_HINT}")
    target = TARGETS[fmt]
    slots = ConversionSlots.of(settings)
    runs = slots.directory / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    _sweep(runs)
    with tempfile.TemporaryDirectory(prefix=f"run-{os.getpid()}-", dir=runs) as tmp:
        folder = Path(tmp)
        given = folder / "in" / f"document.{fmt.value}"  # LibreOffice reads the extension too
        given.parent.mkdir()
        given.symlink_to(Path(source).resolve())
        command = [
            binary,
            f"-env:UserInstallation={(folder / 'profile').as_uri()}",
            "--headless",
            "--norestore",
            "--nologo",
            "--nodefault",
            "--nolockcheck",
            "--convert-to",
            target.value,
            "--outdir",
            str(folder / "out"),
            str(given),
        ]
        with slots.hold():
            started = time.monotonic()
            output = _convert(command, settings.libreoffice_timeout_seconds, source_file_name)
            seconds = time.monotonic() - started
        result = folder / "out" / f"document.{target.value}"
        if not result.is_file() or result.stat().st_size == 0:
            raise ConversionError(
                source_file_name, f"it produced no {target.value} ({_said(output)})"
            )
        record = Conversion(
            tool=TOOL,
            version=libreoffice_version(binary, slots.directory),
            from_format=fmt,
            to_format=target,
            seconds=round(seconds, 3),
        )
        yield Converted(result, record)


def _sweep(runs: Path) -> None:
    """Remove the folders of conversions whose process is gone: a parse worker killed at its
    limit never runs its own clean-up."""
    for folder in runs.glob("run-*-*"):
        pid = folder.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that pid
        return True
    return True


def _convert(command: list[str], timeout: float, source_file_name: str) -> str:
    """Run one conversion; its output (LibreOffice exits 0 even when it could not load the
    file: the caller checks the file it should have written)."""
    try:
        code, output = run_managed(command, timeout)
    except subprocess.TimeoutExpired:
        raise ConversionError(
            source_file_name,
            f"the conversion exceeded its time limit of {timeout:g} s "
            "(CORPUS_LIBREOFFICE_TIMEOUT_SECONDS); LibreOffice was stopped",
        ) from None
    except OSError as exc:
        raise ConversionError(
            source_file_name, f"it could not be started ({type(exc).__name__})"
        ) from None
    if code != 0:
        raise ConversionError(source_file_name, f"it exited with status {code} ({_said(output)})")
    return output


def _said(output: str) -> str:
    """What LibreOffice said about a failure: its error lines (else its last line), without
    paths."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    return sanitize(" ".join(errors or lines[-1:])) or "no message"


def run_managed(command: list[str], timeout: float) -> tuple[int, str]:
    """Run `command` in a session of its own, under `_GUARD`, with stdout and stderr captured:
    (exit status, output). Past `timeout` its whole process group is killed and `TimeoutExpired`
    raised; after any exit the group is killed too (a helper it left behind); and the guard
    kills the group when the caller dies."""
    process = subprocess.Popen(
        [*_GUARD, *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=_die_with_parent(),
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    finally:  # done, past the time limit, or the caller interrupted: nothing may survive
        _kill_group(process)
    return process.returncode, output


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL every process of the group (its leader's pid names it); a leader still running
    is then reaped, its pipes drained and closed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=5)
        if process.returncode is None:
            process.kill()
            process.wait()


@cache
def _die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that has the child (the guard) get SIGTERM when the thread that started
    it dies (Linux PR_SET_PDEATHSIG; None elsewhere). The libc function is found here, in the
    parent, so the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    kill = int(signal.SIGTERM)

    def set_parent_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)

    return set_parent_death_signal


def libreoffice_version(binary: str, cache_dir: Path) -> str | None:
    """The version `binary --version` reports ("7.4.7.2"), asked once per binary and kept in
    `cache_dir` by its path and modification time: each parse runs in a new worker process, and
    asking costs ~0.4 s."""
    try:
        stat = os.stat(binary)
    except OSError:
        return None
    key = hashlib.sha256(f"{os.path.realpath(binary)}\0{stat.st_mtime_ns}".encode()).hexdigest()
    cached = cache_dir / f"version-{key[:16]}.txt"
    with contextlib.suppress(OSError):
        return cached.read_text(encoding="utf-8").strip() or None
    try:
        _code, output = run_managed([binary, "--version"], _VERSION_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\b\d+(?:\.\d+)+\b", output)
    version = match.group(0) if match else None
    with contextlib.suppress(OSError):
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(version or "", encoding="utf-8")
        partial.replace(cached)
    return version


def parse_legacy(ctx: ParseContext) -> None:
    """A legacy Office file converted by LibreOffice, then read by the parser of the format it
    was converted to, into this same context (rows, tables, images, declared title and date);
    the conversion is recorded on the context for the manifest."""
    fmt = ctx.profile.format
    settings = ctx.settings or load_settings()
    with converted(ctx.source_path, fmt, ctx.source_file_name, settings) as result:
        delivered = ctx.source_path, ctx.profile
        ctx.source_path, ctx.profile = result.path, _converted_profile(ctx.profile, result)
        try:
            _modern_parser(result.record.to_format)(ctx)
        finally:
            ctx.source_path, ctx.profile = delivered
    ctx.conversion = result.record


def _converted_profile(profile: DocumentProfile, result: Converted) -> DocumentProfile:
    """The delivered file's profile, restated for the converted file its parser reads."""
    target = result.record.to_format
    with result.path.open("rb") as fh:
        sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    return profile.model_copy(
        update={
            "format": target,
            "media_type": _MEDIA[target],
            "extension": target.value,
            "size_bytes": result.path.stat().st_size,
            "sha256": sha256,
            "needs_conversion": False,
            "routing": RoutingDecision(
                strategy=target.value,
                reason=f"converted from {result.record.from_format.value} by {TOOL}",
            ),
        }
    )


def _modern_parser(fmt: FileFormat) -> Parser:
    """The parser of a converted file's format (imported on first use, as the router does)."""
    if fmt is FileFormat.DOCX:
        from corpus_pipeline.parsing.docx import parse_docx

        return parse_docx
    if fmt is FileFormat.PPTX:
        from corpus_pipeline.parsing.pptx import parse_pptx

        return parse_pptx
    from corpus_pipeline.parsing.xlsx import parse_xlsx

    return parse_xlsx
