"""Validation at the door: empty, oversized, unknown, mislabelled, truncated and encrypted files
are refused with the HTTP status an API answers and a message naming the reason; names are
labels, never paths."""

from __future__ import annotations

from typing import Any

import pymupdf as _pymupdf
import pytest

from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.intake.door import Refused, admit, safe_name
from corpus_pipeline_tests.support import DOCS

mu: Any = _pymupdf
LIMIT = 10_000_000


def _pdf(password: str | None = None) -> bytes:
    doc = mu.open()
    doc.new_page().insert_text((72, 72), "Quarterly report")
    if password is None:
        return bytes(doc.tobytes())
    return bytes(doc.tobytes(encryption=mu.PDF_ENCRYPT_AES_256, user_pw=password, owner_pw="o"))


def _refusal(name: str, data: bytes, **kw: Any) -> tuple[int, str]:
    with pytest.raises(Refused) as caught:
        admit(name, data, max_bytes=kw.pop("max_bytes", LIMIT), **kw)
    return caught.value.status, str(caught.value)


def test_documents_are_admitted_with_their_sniffed_format() -> None:
    assert admit("report.pdf", _pdf(), max_bytes=LIMIT).format is FileFormat.PDF
    docx = (DOCS / "word_sample.docx").read_bytes()
    assert admit("notes.docx", docx, max_bytes=LIMIT).format is FileFormat.DOCX
    assert admit("notes.txt", b"# Title\n\n## Part\n\ntext", max_bytes=LIMIT).format in {
        FileFormat.MARKDOWN,
        FileFormat.TEXT,
    }


def test_an_empty_file_is_refused() -> None:
    assert _refusal("empty.pdf", b"") == (400, "'empty.pdf' is empty")


def test_a_file_above_the_limit_is_refused_with_413() -> None:
    status, message = _refusal("big.md", b"# x\n" * 100, max_bytes=100)
    assert status == 413 and "400 bytes, above the limit of 100" in message


def test_a_pdf_that_is_a_zip_is_refused_with_415() -> None:
    status, message = _refusal("report.pdf", (DOCS / "word_sample.docx").read_bytes())
    assert status == 415 and message.startswith("'report.pdf' is docx by its bytes")


def test_an_unknown_binary_is_refused_with_415() -> None:
    status, message = _refusal("blob.dat", bytes(range(256)) * 8)
    assert status == 415 and message.startswith("unsupported format 'unknown'")


def test_a_truncated_office_file_is_refused() -> None:
    data = (DOCS / "word_sample.docx").read_bytes()[:700]
    assert _refusal("notes.docx", data) == (
        400,
        "corrupt docx document: truncated or damaged (BadZipFile)",
    )


def test_an_encrypted_pdf_needs_its_password() -> None:
    status, message = _refusal("secret.pdf", _pdf(password="1234"))
    assert status == 400 and message.startswith("encrypted pdf document: a password is needed")
    assert admit("secret.pdf", _pdf("1234"), max_bytes=LIMIT, has_password=True)


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("../../etc/passwd", "etc_passwd"),
        ("C:\\Users\\me\\report.pdf", "Users_me_report.pdf"),
        ("..", "file"),
        ("bad\x00name.pdf", "bad_name.pdf"),
        ("Q3 report (final).pdf", "Q3 report (final).pdf"),
    ],
)
def test_a_file_name_is_a_label_never_a_path(name: str, label: str) -> None:
    assert safe_name(name) == label


def test_a_pdf_cut_short_before_its_first_page_is_refused() -> None:
    status, message = _refusal("cut.pdf", _pdf()[:40])
    assert status == 400 and message.startswith("corrupt pdf document")
