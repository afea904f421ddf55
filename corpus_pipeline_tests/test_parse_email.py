"""E-mail: `.eml` and Outlook `.msg` read into one record and rendered alike (subject as title,
sending date as the document's date, header fields first, HTML bodies with their tables,
quoted replies as sections of their own, attachments listed); an `.mbox` split into one
document per message, and each attachment admitted at the door as a document of its own,
linked to its message in the published graph."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import compressed_rtf  # type: ignore[import-untyped]
import pytest

from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import FileFormat, RowType
from corpus_pipeline.intake.door import Refused, admit, deliveries
from corpus_pipeline.intake.mail import msg_refusal
from corpus_pipeline.intake.uploads import check_file
from corpus_pipeline.orchestration.ingest import ingest
from corpus_pipeline.orchestration.runs import IngestResult
from corpus_pipeline.parsing.base import ParseContext
from corpus_pipeline.parsing.email import parse_eml, parse_msg
from corpus_pipeline.parsing.email.message import MAX_HEADER_CHARS, read_eml, split_mbox
from corpus_pipeline.parsing.email.outlook import read_msg
from corpus_pipeline.parsing.email.oxmsg import MSG_DAMAGE, MsgFormatError
from corpus_pipeline.profiling.sniff import sniff_format
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry

from . import mail_files as mail
from .support import publish_namespaces, run_parser

HTML = """<html><head><style>p {color: red}</style></head><body>
<h1>Figures</h1><p>Hi Bob, the figures by region:</p>
<table><tr><th>Region</th><th>Revenue</th></tr><tr><td>North</td><td>120</td></tr>
<tr><td>South</td><td>95</td></tr></table>
<p><img src="cid:logo@example.com" alt="Company logo"></p>
<div class="gmail_quote"><div>On Mon, 4 Mar 2024 at 17:02, Bob Stone &lt;bob@example.com&gt;
wrote:</div><blockquote><p>Can you send the Q1 numbers?</p></blockquote></div>
</body></html>"""
MAX_BYTES = 10 * 1024 * 1024


def _parse(tmp_path: Path, name: str, data: bytes) -> ParseContext:
    path = tmp_path / name
    path.write_bytes(data)
    if name.endswith(".msg"):
        return run_parser(parse_msg, path, tmp_path / "work", FileFormat.MSG)
    return run_parser(parse_eml, path, tmp_path / "work", FileFormat.EML)


def _rows(ctx: ParseContext) -> list[tuple[str, int | None, str]]:
    return [(r.row_type.value, r.heading_level, r.text) for r in ctx.rows]


def _html_message() -> bytes:
    """Plain and HTML alternatives, the HTML showing an inline (cid) image, and a CSV file."""
    from email import message_from_bytes, policy
    from email.message import EmailMessage

    raw = mail.message(plain="Hi Bob, the figures by region.\n", html=HTML)
    msg = message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    html_part = msg.get_body(preferencelist=("html",))
    assert isinstance(html_part, EmailMessage)
    html_part.add_related(mail.png(), "image", "png", cid="<logo@example.com>")
    msg.add_attachment(b"Region;Revenue\nNorth;120\n", "text", "csv", filename="figures.csv")
    return bytes(msg)


# -- one message --------------------------------------------------------------------------------


def test_the_subject_is_the_title_and_the_date_header_the_documents_date(tmp_path: Path):
    ctx = _parse(tmp_path, "budget.eml", mail.message())
    assert ctx.declared_title == "Quarterly budget review"
    assert ctx.declared_date == dt.date(2024, 3, 5)
    assert _rows(ctx)[0] == ("heading", 1, "Quarterly budget review")


def test_from_to_cc_date_subject_and_message_id_open_the_message(tmp_path: Path):
    ctx = _parse(tmp_path, "budget.eml", mail.message())
    assert ctx.rows[1].text == (
        "From: Alice Martin <alice@example.com>\n"
        "To: Bob Stone <bob@example.com>\n"
        "Cc: Carol Diaz <carol@example.com>\n"
        f"Date: {mail.SENT}\n"
        "Subject: Quarterly budget review\n"
        "Message-ID: <budget-42@example.com>"
    )


def test_the_html_body_is_preferred_and_keeps_its_headings_and_tables(tmp_path: Path):
    ctx = _parse(tmp_path, "budget.eml", _html_message())
    rows = _rows(ctx)
    assert ("heading", 2, "Figures") in rows, "body headings nest below the subject"
    assert ("paragraph", None, "Hi Bob, the figures by region:") in rows
    [table] = [r for r in ctx.rows if r.row_type is RowType.TABLE]
    assert table.text == "Region | Revenue\nNorth | 120\nSouth | 95"
    html = (ctx.workdir / str(table.resource_path)).read_text(encoding="utf-8")
    assert "<th>Region</th>" in html and "<td>South</td>" in html
    assert not any("color: red" in text for _, _, text in rows), "styles are no text"


def test_an_image_the_html_shows_by_content_id_is_stored_from_the_message(tmp_path: Path):
    ctx = _parse(tmp_path, "budget.eml", _html_message())
    [image] = [r for r in ctx.rows if r.row_type is RowType.IMAGE]
    assert image.text == "Company logo"
    assert (ctx.workdir / str(image.resource_path)).is_file()


def test_the_quoted_reply_of_an_html_body_is_a_section_of_its_own(tmp_path: Path):
    rows = _rows(_parse(tmp_path, "budget.eml", _html_message()))
    start = rows.index(("heading", 2, "Quoted reply"))
    assert rows[start + 1][2].startswith("On Mon, 4 Mar 2024 at 17:02, Bob Stone")
    assert rows[start + 2] == ("paragraph", None, "Can you send the Q1 numbers?")


def test_a_plain_reply_keeps_its_paragraphs_and_quotes_below_their_attribution(tmp_path: Path):
    plain = (
        "Hi Bob,\n\nRevenue was 120 in the north,\nas planned.\n\n"
        "On Mon, 4 Mar 2024 at 17:02, Bob Stone <bob@example.com> wrote:\n"
        "> Can you send the Q1 numbers?\n>\n> Thanks\n"
    )
    rows = _rows(_parse(tmp_path, "reply.eml", mail.message(plain=plain)))
    assert rows[2:] == [
        ("paragraph", None, "Hi Bob,"),
        ("paragraph", None, "Revenue was 120 in the north, as planned."),
        ("heading", 2, "Quoted reply"),
        ("paragraph", None, "On Mon, 4 Mar 2024 at 17:02, Bob Stone <bob@example.com> wrote:"),
        ("paragraph", None, "Can you send the Q1 numbers?"),
        ("paragraph", None, "Thanks"),
    ]


def test_everything_below_an_original_message_separator_is_the_quoted_reply(tmp_path: Path):
    plain = (
        "Approved.\n\n-----Original Message-----\nFrom: Bob Stone\n"
        "Sent: Monday, March 4, 2024 5:02 PM\nSubject: Budget\n\nPlease approve the budget.\n"
    )
    rows = _rows(_parse(tmp_path, "reply.eml", mail.message(plain=plain)))
    assert rows[2:4] == [("paragraph", None, "Approved."), ("heading", 2, "Quoted reply")]
    assert rows[-1] == ("paragraph", None, "Please approve the budget.")


def test_an_outlook_header_block_opens_the_quoted_reply(tmp_path: Path):
    plain = "Done, see below.\n\nFrom: Bob Stone\nSent: Monday, March 4, 2024\n\nPlease check.\n"
    rows = _rows(_parse(tmp_path, "reply.eml", mail.message(plain=plain)))
    assert rows[2:4] == [("paragraph", None, "Done, see below."), ("heading", 2, "Quoted reply")]


def test_inline_answers_alternate_quoted_and_reply_sections(tmp_path: Path):
    plain = "> What was revenue?\n120.\n\n> And costs?\n80.\n"
    rows = _rows(_parse(tmp_path, "inline.eml", mail.message(plain=plain)))
    assert rows[2:] == [
        ("heading", 2, "Quoted reply"),
        ("paragraph", None, "What was revenue?"),
        ("heading", 2, "Reply"),
        ("paragraph", None, "120."),
        ("heading", 2, "Quoted reply"),
        ("paragraph", None, "And costs?"),
        ("heading", 2, "Reply"),
        ("paragraph", None, "80."),
    ]


def test_a_forwarded_message_is_its_own_section(tmp_path: Path):
    plain = "FYI\n\n---------- Forwarded message ---------\nFrom: Dan\n\nThe site opens in May.\n"
    rows = _rows(_parse(tmp_path, "fwd.eml", mail.message(plain=plain)))
    assert rows[2:4] == [("paragraph", None, "FYI"), ("heading", 2, "Forwarded message")]
    assert rows[-1] == ("paragraph", None, "The site opens in May.")


def test_attachments_are_listed_with_type_and_size_and_link_to_their_document(tmp_path: Path):
    ctx = _parse(tmp_path, "budget.eml", _html_message())
    start = next(i for i, r in enumerate(ctx.rows) if r.text == "Attachments")
    [item] = ctx.rows[start + 1 :]
    assert item.row_type is RowType.LIST_ITEM
    assert item.text == "figures.csv (text/csv, 25 bytes)"
    [link] = item.links
    assert (link.start, link.end, link.target) == (0, 11, "budget.eml/figures.csv")


def test_an_outlook_message_reads_like_an_eml(tmp_path: Path):
    sent = dt.datetime(2024, 3, 5, 9, 30, tzinfo=dt.UTC)
    data = mail.outlook_msg(
        "Budget review",
        "Hello team,\r\n\r\nThe budget is attached.\r\n",
        sent,
        attachments=[("figures.txt", "text/plain", b"Revenue 120, costs 80.\n")],
    )
    ctx = _parse(tmp_path, "review.msg", data)
    assert (ctx.declared_title, ctx.declared_date) == ("Budget review", dt.date(2024, 3, 5))
    assert _rows(ctx) == [
        ("heading", 1, "Budget review"),
        (
            "paragraph",
            None,
            "From: Alice Martin <alice@example.com>\nTo: Bob Stone <bob@example.com>\n"
            "Cc: Carol Diaz <carol@example.com>\nDate: Tue, 05 Mar 2024 09:30:00 +0000\n"
            "Subject: Budget review\nMessage-ID: <budget-7@example.com>",
        ),
        ("paragraph", None, "Hello team,"),
        ("paragraph", None, "The budget is attached."),
        ("heading", 2, "Attachments"),
        ("list_item", None, "figures.txt (text/plain, 23 bytes)"),
    ]


def test_an_outlook_html_body_keeps_its_table(tmp_path: Path):
    html = "<html><body><p>Totals:</p><table><tr><td>North</td><td>120</td></tr>"
    html += "<tr><td>South</td><td>95</td></tr></table></body></html>"
    data = mail.outlook_msg("Totals", "Totals: North 120, South 95", dt.datetime.now(dt.UTC), html)
    ctx = _parse(tmp_path, "totals.msg", data)
    assert [r.text for r in ctx.rows if r.row_type is RowType.TABLE] == ["North | 120\nSouth | 95"]


# An HTML body as Outlook encapsulates it in the RTF body (MS-OXRTFEX): markup in htmltag
# groups, RTF-only formatting between \htmlrtf and \htmlrtf0, text in the fonts' code pages.
RTF_HTML = (
    r"{\rtf1\ansi\ansicpg1252\fromhtml1 \deff0{\fonttbl{\f0\fswiss Arial;}"
    r"{\f1\fswiss\fcharset204 Arial Cyr;}}{\colortbl\red0\green0\blue0;}\uc1\pard\plain "
    r"{\*\htmltag19 <html>}{\*\htmltag50 <body>}\htmlrtf {\htmlrtf0 {\*\htmltag64 <p>}"
    r"Caf\'e9 na\u239?ve \{x\}\htmlrtf \par \htmlrtf0 {\*\htmltag72 </p>}"
    r"{\*\htmltag64 <table><tr><td>}North{\*\htmltag64 </td><td>}120"
    r"{\*\htmltag64 </td></tr></table>}{\*\mhtmltag64 <img src=cid:x>}"
    r"{\*\htmltag84 <p>}\f1 \'cf\'f0\'e8\'e2\'e5\'f2\f0 {\*\htmltag92 </p>}\htmlrtf }\htmlrtf0 "
    r"{\*\htmltag58 </body>}{\*\htmltag27 </html>}}"
)


def test_an_html_body_encapsulated_in_the_rtf_body_is_read(tmp_path: Path):
    data = mail.outlook_msg("Totals", "Totals: North 120", dt.datetime.now(dt.UTC), rtf=RTF_HTML)
    message = read_msg(data)
    assert message.html == (
        "<html><body><p>Café naïve {x}</p><table><tr><td>North</td><td>120</td></tr></table>"
        "<p>Привет</p></body></html>"
    )
    ctx = _parse(tmp_path, "totals.msg", data)
    assert [r.text for r in ctx.rows if r.row_type is RowType.TABLE] == ["North | 120"]


def test_a_plain_body_encapsulated_in_the_rtf_body_is_read():
    rtf = r"{\rtf1\ansi\ansicpg1252\fromtext \deff0{\fonttbl{\f0 Arial;}}Hello\par World \u8364?}"
    message = read_msg(mail.outlook_msg("Hi", None, dt.datetime.now(dt.UTC), rtf=rtf))
    assert (message.plain, message.html) == ("Hello\nWorld €", None)


def test_8bit_strings_are_read_in_the_message_code_page():
    data = mail.outlook_msg("Привет", "Тело письма", dt.datetime.now(dt.UTC), codepage=1251)
    message = read_msg(data)
    assert (message.subject, message.plain) == ("Привет", "Тело письма")
    assert dict(message.headers)["To"] == "Bob Stone <bob@example.com>"


def test_the_transport_headers_a_received_message_kept_name_sender_and_recipients():
    transport = (
        "Received: from mx.example.com\r\n"
        "From: =?utf-8?q?=C3=89lodie_Dupont?= <elodie@example.com>\r\n"
        "To: Bob Stone <bob@example.com>, Dan Ray <dan@example.com>\r\n"
        "Message-ID: <received-1@example.com>\r\n\r\n"
    )
    data = mail.outlook_msg("Hi", "Body", dt.datetime.now(dt.UTC), transport=transport)
    headers = dict(read_msg(data).headers)
    assert headers["From"] == "Élodie Dupont <elodie@example.com>"
    assert headers["To"] == "Bob Stone <bob@example.com>; Dan Ray <dan@example.com>"
    assert headers["Cc"] == "Carol Diaz <carol@example.com>"  # not in them: the recipients'
    assert headers["Message-ID"] == "<received-1@example.com>"


def test_an_image_the_outlook_html_shows_is_part_of_the_body():
    html = '<p>Chart:</p><p><img src="cid:chart@example.com"></p>'
    image = ("chart@example.com", "image/png", mail.png())
    attachment = ("figures.txt", "text/plain", b"Revenue 120\n")
    data = mail.outlook_msg(
        "Chart", "Chart", dt.datetime.now(dt.UTC), html, [attachment], inline=[image]
    )
    message = read_msg(data)
    assert message.inline == {"chart@example.com": ("image/png", image[2])}
    assert [a.name for a in message.attachments] == ["figures.txt"]


def test_an_attached_outlook_message_becomes_an_eml_of_its_own():
    inner = mail.Outlook(
        "Site visit",
        "The site opens in May.",
        dt.datetime(2024, 3, 4, 17, 2, tzinfo=dt.UTC),
        "<p>The site opens in <b>May</b>.</p>",
        [("plan.txt", "text/plain", b"Gate at 8.\n")],
    )
    data = mail.outlook_msg(
        "Fwd: Site visit", "See below.", dt.datetime.now(dt.UTC), embedded=[inner]
    )
    [attached] = read_msg(data).attachments
    assert (attached.name, attached.media_type) == ("Site visit.eml", "message/rfc822")
    assert sniff_format(attached.data, "eml").format is FileFormat.EML
    assert read_msg(data).attachments == [attached], "the same bytes on every read"
    eml = read_eml(attached.data)
    assert eml.headers == [
        ("From", "Alice Martin <alice@example.com>"),
        ("To", "Bob Stone <bob@example.com>"),
        ("Cc", "Carol Diaz <carol@example.com>"),
        ("Date", "Mon, 04 Mar 2024 17:02:00 +0000"),
        ("Subject", "Site visit"),
        ("Message-ID", "<budget-7@example.com>"),
    ]
    assert (eml.plain, eml.html) == (f"{inner.body}\n", f"{inner.html}\n")
    assert [(a.name, a.data) for a in eml.attachments] == [("plan.txt", b"Gate at 8.\n")]
    found = deliveries("fwd.msg", data, max_bytes=MAX_BYTES)
    assert [(d.label, d.parent, d.refused) for d in found] == [
        ("fwd.msg", None, None),
        ("fwd.msg/Site visit.eml", "fwd.msg", None),
        ("fwd.msg/Site visit.eml/plan.txt", "fwd.msg/Site visit.eml", None),
    ]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"Not an Outlook message at all.",
        mail.ole_without_message(),
        mail.outlook_msg("Hi", "Body " * 2000, dt.datetime(2024, 3, 5, tzinfo=dt.UTC))[:6000],
    ],
    ids=["empty", "text", "ole-without-message", "truncated"],
)
def test_bytes_that_hold_no_outlook_message_raise_a_damage_error(data: bytes):
    with pytest.raises(MSG_DAMAGE) as raised:
        read_msg(data)
    assert msg_refusal(data) == type(raised.value).__name__


def test_a_damaged_rtf_body_is_damage_when_it_is_the_only_body():
    data = mail.outlook_msg("Hi", None, dt.datetime.now(dt.UTC), rtf=RTF_HTML)
    packed = compressed_rtf.compress(RTF_HTML.encode("latin-1"))
    damaged = data.replace(packed[16:48], bytes(32))
    assert damaged != data
    with pytest.raises(MsgFormatError):
        read_msg(damaged)


def test_a_huge_header_value_is_cut_before_it_is_parsed():
    # Parsed whole, this address list holds the standard library's header parser for minutes.
    data = mail.message().replace(b"To: Bob", b"To: " + b"<ul><li>" * 100_000 + b" Bob")
    message = read_eml(data)
    assert message.subject == "Quarterly budget review"
    assert len(dict(message.headers)["To"]) <= MAX_HEADER_CHARS


# -- sniffing and the door ----------------------------------------------------------------------


@pytest.mark.parametrize("extension", ["eml", "txt", ""])
def test_a_message_is_sniffed_from_its_header_fields_whatever_its_name(extension: str):
    assert sniff_format(mail.message(), extension).format is FileFormat.EML


def test_text_that_opens_with_a_colon_line_is_no_message():
    text = b"Note: bring the binoculars.\nDate: Saturday\n\nWe meet at the lake at six.\n"
    assert sniff_format(text, "txt").format is FileFormat.TEXT


def test_an_mbox_is_sniffed_from_its_from_line_and_the_headers_below():
    data = mail.mbox(mail.message(), mail.message(subject="Second"))
    assert sniff_format(data, "mbox").format is FileFormat.MBOX


def test_an_outlook_message_is_an_ole_file_with_mapi_property_streams():
    data = mail.outlook_msg("Hi", "Body", dt.datetime.now(dt.UTC))
    assert sniff_format(data, "").format is FileFormat.MSG


def test_a_msg_that_holds_no_outlook_message_is_refused_naming_why():
    with pytest.raises(Refused) as refused:
        admit("letter.msg", mail.ole_without_message(), max_bytes=MAX_BYTES)
    assert refused.value.status == 415
    assert "without the property streams of an Outlook message" in str(refused.value)


def test_a_truncated_msg_is_refused_as_corrupt():
    whole = mail.outlook_msg("Hi", "Body " * 2000, dt.datetime.now(dt.UTC))
    data = whole[: len(whole) // 2]
    with pytest.raises(Refused) as refused:
        admit("letter.msg", data, max_bytes=MAX_BYTES)
    assert refused.value.status == 400 and "corrupt msg document" in str(refused.value)


def test_an_mbox_on_its_own_is_refused_with_the_way_to_deliver_it():
    with pytest.raises(Refused) as refused:
        admit("inbox.mbox", mail.mbox(mail.message()), max_bytes=MAX_BYTES)
    assert refused.value.status == 415 and "corpus ingest" in str(refused.value)


def test_a_message_delivers_itself_then_each_attachment_under_its_name():
    data = mail.message(attachments=[("report.pdf", "application/pdf", mail.pdf("Report"))])
    found = deliveries("budget.eml", data, max_bytes=MAX_BYTES)
    assert [(d.label, d.parent, d.refused) for d in found] == [
        ("budget.eml", None, None),
        ("budget.eml/report.pdf", "budget.eml", None),
    ]


def test_an_attachment_the_door_refuses_is_listed_with_its_reason():
    data = mail.message(attachments=[("tool.bin", "application/octet-stream", bytes(range(256)))])
    message, tool = deliveries("budget.eml", data, max_bytes=MAX_BYTES)
    assert message.refused is None
    assert tool.label == "budget.eml/tool.bin" and tool.parent == "budget.eml"
    assert tool.refused is not None and "unsupported format 'unknown'" in str(tool.refused)


def test_an_outlook_message_delivers_its_attachments_too():
    attachment = ("figures.txt", "text/plain", b"Revenue 120, costs 80.\n")
    data = mail.outlook_msg("Hi", "Body", dt.datetime.now(dt.UTC), attachments=[attachment])
    found = deliveries("review.msg", data, max_bytes=MAX_BYTES)
    assert [(d.label, d.parent) for d in found] == [
        ("review.msg", None),
        ("review.msg/figures.txt", "review.msg"),
    ]
    assert found[1].data == attachment[2]


def test_an_mbox_delivers_one_eml_per_message_and_no_document_of_its_own():
    box = mail.mbox(*(mail.message(subject=f"Message {n}") for n in (1, 2, 3)))
    found = deliveries("inbox.mbox", box, max_bytes=MAX_BYTES)
    assert [(d.label, d.parent, d.refused) for d in found] == [
        ("inbox.mbox/0001.eml", None, None),
        ("inbox.mbox/0002.eml", None, None),
        ("inbox.mbox/0003.eml", None, None),
    ]


def test_splitting_an_mbox_restores_escaped_from_lines():
    body = mail.message(plain="Dear Bob,\n\nFrom now on we meet on Fridays.\n")
    [message] = split_mbox(mail.mbox(body))
    assert b"\nFrom now on we meet on Fridays." in message


def test_the_upload_door_keeps_each_attachments_message(tmp_path: Path):
    data = mail.message(attachments=[("report.pdf", "application/pdf", mail.pdf("Report"))])
    upload = tmp_path / "upload"
    upload.write_bytes(data)
    checked = check_file(str(upload), "budget.eml", str(tmp_path), 1, MAX_BYTES, False)
    assert [(c.label, c.parent, c.path is not None) for c in checked] == [
        ("budget.eml", None, True),
        ("budget.eml/report.pdf", "budget.eml", True),
    ]


@pytest.mark.slow
def test_an_upload_queues_the_message_and_its_attachment_linked_to_it(tmp_path: Path):
    from .http_service import served

    attachments = [
        ("report.pdf", "application/pdf", mail.pdf("Report")),
        ("tool.bin", "application/octet-stream", bytes(range(256))),
    ]
    settings = load_settings(home=tmp_path / "home", open_access=True)
    with served(settings, worker=False) as client:
        response = client.post(
            "/v1/documents", files={"files": ("budget.eml", mail.message(attachments=attachments))}
        )
    assert response.status_code == 202, response.text
    files = {f["source_file_name"]: f for f in response.json()["files"]}
    assert {name: f["status"] for name, f in files.items()} == {
        "budget.eml": "queued",
        "budget.eml/report.pdf": "queued",
        "budget.eml/tool.bin": "skipped",
    }
    registry = SourceRegistry(ObjectStore(settings.object_store))
    report = registry.get(files["budget.eml/report.pdf"]["document_id"])
    assert report.attached_to == files["budget.eml"]["document_id"]


# -- end to end: `corpus ingest`, then a published revision --------------------------------------


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> tuple[CorpusSettings, dict[str, IngestResult]]:
    """A folder with a message (a PDF and a binary attached) and an mbox of three messages,
    ingested and published."""
    root = tmp_path_factory.mktemp("mail")
    inbox = root / "inbox"
    inbox.mkdir()
    attachments = [
        ("field notes.pdf", "application/pdf", mail.pdf("Tufted ducks dive for mussels.")),
        ("tool.bin", "application/octet-stream", bytes(range(256)) * 4),
    ]
    ducks = mail.message(
        subject="Field notes on ducks", attachments=attachments, message_id="<ducks-7@example.com>"
    )
    (inbox / "ducks.eml").write_bytes(ducks)
    messages = [mail.message(subject=s) for s in ("Geese", "Swans", "Coots")]
    (inbox / "birds.mbox").write_bytes(mail.mbox(*messages))
    settings = load_settings(home=root / "home", ingest_workers=1)
    results = {r.source_file_name: r for r in ingest([inbox], settings)}
    publish_namespaces(settings, "default")
    return settings, results


def _manifest(settings: CorpusSettings, result: IngestResult) -> dict[str, object]:
    path = settings.artifacts_dir / str(result.document_id) / "manifest.json"
    manifest: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return manifest


@pytest.mark.slow
def test_an_email_with_an_attachment_becomes_two_linked_documents(ingested):
    from query_service.snapshot.revision import open_revision
    from query_service.snapshot.store import neighbors

    settings, results = ingested
    message, attachment = results["ducks.eml"], results["ducks.eml/field notes.pdf"]
    assert (message.status, attachment.status) == ("ok", "ok")
    record = SourceRegistry(ObjectStore(settings.object_store)).get(str(attachment.document_id))
    assert record.attached_to == message.document_id
    revision = open_revision(settings.published_dir, "default")
    for one, other in ((message, attachment), (attachment, message)):
        linked = neighbors(revision, str(one.document_id)).neighbors
        assert [(n.document_id, n.relation) for n in linked] == [(other.document_id, "attachment")]


@pytest.mark.slow
def test_a_refused_attachment_is_skipped_with_its_reason_and_the_message_goes_on(ingested):
    _, results = ingested
    tool = results["ducks.eml/tool.bin"]
    assert tool.status == "skipped" and tool.document_id is None
    assert tool.error is not None and "unsupported format 'unknown'" in tool.error
    assert results["ducks.eml"].status == "ok"


@pytest.mark.slow
def test_the_messages_manifest_has_its_subject_as_title_and_its_date(ingested):
    settings, results = ingested
    manifest = _manifest(settings, results["ducks.eml"])
    assert manifest["title"] == "Field notes on ducks"
    assert (manifest["document_date"], manifest["document_date_source"]) == ("2024-03-05", "file")


@pytest.mark.slow
def test_a_message_id_is_found_as_one_term(ingested):
    from corpus_pipeline.contracts.search import SearchRequest
    from query_service.retrieval.classic import classic_search
    from query_service.snapshot.revision import open_revision

    settings, results = ingested
    revision = open_revision(settings.published_dir, "default")
    request = SearchRequest(query="ducks-7@example.com", top_k=1)
    [hit] = classic_search(revision, request).results
    assert hit.document_id == results["ducks.eml"].document_id
    assert "Message-ID: <ducks-7@example.com>" in hit.content


@pytest.mark.slow
def test_an_mbox_of_three_messages_becomes_three_documents(ingested):
    settings, results = ingested
    names = sorted(n for n in results if n.startswith("birds.mbox"))
    assert names == ["birds.mbox/0001.eml", "birds.mbox/0002.eml", "birds.mbox/0003.eml"]
    titles = [_manifest(settings, results[n])["title"] for n in names]
    assert titles == ["Geese", "Swans", "Coots"]
