"""Errors that name the problem. Messages are safe to store: no secrets, no hosts."""

from __future__ import annotations

import re
import zipfile
import zlib


class CorpusError(Exception):
    """Base of every error the pipeline reports to a user."""


class UnsupportedFormatError(CorpusError):
    """The file's format is known but has no parser strategy yet, or is not a document."""

    def __init__(self, fmt: str, detail: str = "") -> None:
        self.format = fmt
        msg = f"unsupported format '{fmt}'"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class CorruptDocumentError(CorpusError):
    """The bytes claim a format but cannot be read as it."""

    def __init__(self, fmt: str, detail: str) -> None:
        self.format = fmt
        super().__init__(f"corrupt {fmt} document: {detail}")


class NestingTooDeepError(CorruptDocumentError):
    """Structure nested deeper than its reader's bound (mail in mail, lists in lists, elements
    in elements): refused whole rather than read with its deepest text silently dropped."""

    def __init__(self, fmt: str, what: str, limit: int) -> None:
        self.limit = limit
        super().__init__(fmt, f"its {what} nest more than {limit} levels deep")


class InvalidInputError(CorpusError):
    """A request or setting is malformed; `field` names what is wrong."""

    def __init__(self, field: str, detail: str) -> None:
        self.field = field
        super().__init__(f"{field}: {detail}")


class StorageError(CorpusError):
    """The object store failed; the message names the operation, never the endpoint or keys."""

    def __init__(self, operation: str, key: str, cause: BaseException) -> None:
        self.operation = operation
        super().__init__(f"object store {operation} of '{key}' failed ({type(cause).__name__})")


class MirrorError(CorpusError):
    """A revision mirrored in the object store cannot be copied as listed; nothing is swapped."""

    def __init__(self, namespace: str, problem: str) -> None:
        self.namespace = namespace
        super().__init__(f"mirrored revision of namespace '{namespace}': {problem}")


# The two ways a password reaches a parse, named in every password message (raised where the
# file is opened, which does not know how the file came in).
_PASSWORD_WAYS = "the upload API's `password` form field, or `corpus ingest --password`"


class PasswordRequiredError(CorpusError):
    """An encrypted document was delivered without a password."""

    def __init__(self, fmt: str = "pdf") -> None:
        self.format = fmt
        super().__init__(f"encrypted {fmt} document: a password is needed ({_PASSWORD_WAYS})")


class WrongPasswordError(CorpusError):
    """The password given for an encrypted document does not open it."""

    def __init__(self, fmt: str = "pdf") -> None:
        self.format = fmt
        super().__init__(
            f"encrypted {fmt} document: the password is wrong (send the right one: "
            f"{_PASSWORD_WAYS})"
        )


class NoTextError(CorpusError):
    """A document that yields no text: nothing could be searched or cited, so it fails instead
    of being published with no chunks. The message names the file and what to do about it."""

    def __init__(self, source_file_name: str, reason: str) -> None:
        self.source_file_name = source_file_name
        super().__init__(f"no text in '{source_file_name}': {reason}")


class ParseLimitError(CorpusError):
    """A document's parse ran past its wall-time or memory limit and was stopped; only this
    document fails. The message names the limit, e.g. 'parse exceeded 300 s'."""

    def __init__(self, limit: str, reason: str = "") -> None:
        self.limit = limit
        super().__init__(f"parse exceeded {limit}" + (f": {reason}" if reason else ""))

    @classmethod
    def time(cls, seconds: float) -> ParseLimitError:
        return cls(f"{seconds:g} s")

    @classmethod
    def memory(cls, megabytes: int, reason: str = "") -> ParseLimitError:
        return cls(format_mebibytes(megabytes), reason)


class StageFailedError(CorpusError):
    """A stage failed for a reason that is not a known document problem (a bug, a crash).

    The message says in words which stage failed and how; `details` (a traceback) is for the
    log only, never for the message.
    """

    def __init__(self, stage: str, message: str, details: str | None = None) -> None:
        self.stage = stage
        self.details = details
        super().__init__(message)


class ParseFailedError(StageFailedError):
    """The parse failed unexpectedly (an exception in a parser, or its worker died)."""

    def __init__(self, message: str, details: str | None = None) -> None:
        super().__init__("parse", message, details)


def format_mebibytes(megabytes: float) -> str:
    """'4 GiB' from 4096, '1.5 GiB' from 1536, '150 MiB' below one GiB."""
    if megabytes >= 1024:
        return f"{round(megabytes / 1024, 2):g} GiB"
    return f"{round(megabytes, 1):g} MiB"


_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_CREDENTIALS = re.compile(r"\b[\w.%+-]+:[^\s@/'\"]+@[\w.-]+(?::\d+)?")
_HOST_PORT = re.compile(
    r"\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|(?:[a-z0-9-]+\.)+[a-z]{2,})(?::\d{2,5})\b", re.I
)
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_HOST_FIELD = re.compile(
    r"\b(host|hostname|server|endpoint|endpoint_url)=(['\"]?)[^\s,'\")]+\2", re.I
)
_POSIX_PATH = re.compile(r"(?<![\w.:/~-])(?:~|\.{1,2})?/(?:[^\s'\",;:()<>\[\]{}]+)")
_WINDOWS_PATH = re.compile(r"\b[a-zA-Z]:\\[^\s'\",;()<>]*")


def sanitize(text: str, limit: int = 200) -> str:
    """A library's error text made safe to show and store: URLs, credentials, hosts and
    absolute paths are replaced by placeholders, and the text is cut to `limit` characters."""
    text = _URL.sub("<url>", text)
    text = _CREDENTIALS.sub("<credentials>", text)
    text = _HOST_FIELD.sub(r"\1=<host>", text)
    text = _HOST_PORT.sub("<host>", text)
    text = _IPV4.sub("<host>", text)
    text = _WINDOWS_PATH.sub("<path>", text)
    text = _POSIX_PATH.sub("<path>", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _kind_of(cls_names: tuple[str, ...]) -> str:
    """What kind of problem an exception class (or one of its bases) stands for, in words."""
    kinds = {
        "MemoryError": "ran out of memory",
        "RecursionError": "the document is nested too deeply",
        "TimeoutError": "an operation timed out",
        "ConnectionError": "a network connection failed",
        "UnicodeError": "text could not be decoded or encoded",
        "PermissionError": "a file could not be accessed (permission denied)",
        "FileNotFoundError": "a file it needs is missing",
        "OSError": "a file or system operation failed",
        "ValidationError": "produced data that does not match its contract",
        "BadZipFile": "an archive inside the document could not be read",
    }
    for name in cls_names:
        if name in kinds:
            return kinds[name]
    return "unexpected internal error"


def unexpected_error_message(
    stage: str, cls_name: str, detail: str, bases: tuple[str, ...] = ()
) -> str:
    """'parse failed: unexpected internal error (KeyError: 'x')': the stage, the kind of
    problem in words and the exception class; the detail is sanitized."""
    kind = _kind_of((cls_name, *bases))
    detail = sanitize(detail)
    return f"{stage} failed: {kind} ({cls_name}{': ' + detail if detail else ''})"


def describe_unexpected(stage: str, exc: BaseException) -> str:
    """`unexpected_error_message` for a live exception (its class hierarchy names the kind)."""
    bases = tuple(c.__name__ for c in type(exc).__mro__[1:])
    return unexpected_error_message(stage, type(exc).__name__, str(exc), bases)


# What reading a damaged ZIP container (or one of its members) raises besides BadZipFile: bad
# offsets or names (ValueError, UnicodeDecodeError), an unknown compression or version
# (NotImplementedError), an encrypted member (RuntimeError), a broken deflate stream
# (zlib.error, EOFError). Every reader of a ZIP-based format catches exactly these.
ZIP_DAMAGE = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)
