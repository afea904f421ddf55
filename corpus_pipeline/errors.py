"""Errors that name the problem. Messages are safe to store: no secrets, no hosts."""

from __future__ import annotations


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


class PasswordRequiredError(CorpusError):
    """An encrypted document was delivered without a password."""

    def __init__(self, fmt: str = "pdf") -> None:
        self.format = fmt
        super().__init__(
            f"encrypted {fmt} document: a password is needed (pass it with --password)"
        )


class WrongPasswordError(CorpusError):
    """The password given for an encrypted document does not open it."""

    def __init__(self, fmt: str = "pdf") -> None:
        self.format = fmt
        super().__init__(f"encrypted {fmt} document: the password is wrong")
