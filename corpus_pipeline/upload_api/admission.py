"""Admitting an upload: the form's fields checked, every file admitted at the door (door
processes, side by side) and only when all pass each document stored and its job queued.

A refused file refuses the request before anything is stored. A document's id derives from its
name as sent, so names that sanitise alike stay apart; a name already registered is refused
(409) unless `replace_document_id` names it."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from fastapi import HTTPException
from pydantic import ValidationError

from corpus_pipeline.access.keys import may_read
from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.common.ids import document_id_for
from corpus_pipeline.contracts import SourceKind, SourceRecord
from corpus_pipeline.contracts.jobs import QueuedFile, UploadFields, UploadResponse
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.intake.door import Refused, safe_name
from corpus_pipeline.intake.uploads import Checked, ReceivedFile, ReceivedForm
from corpus_pipeline.parsing.legacy import libreoffice_available
from corpus_pipeline.storage.store import SourceRegistry
from corpus_pipeline.upload_api.state import IngestState

# An admitted file: its label, its name as sent, its bytes on disk, and the name as sent of
# the e-mail it is attached to (None for any other file).
Admitted = tuple[str, str, Path, str | None]
# A document to store: its label, id, bytes on disk and the id of the e-mail it is attached to.
Document = tuple[str, str, Path, str | None]


def upload_fields(values: dict[str, str]) -> UploadFields:
    """The form's fields, or 422 naming the first bad one."""
    try:
        return UploadFields.model_validate({k: v for k, v in values.items() if k != "files"})
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"]) or "form"
        raise HTTPException(422, f"form field '{name}': {error['msg']}") from None


def accept(
    state: IngestState,
    form: ReceivedForm,
    fields: UploadFields,
    who: Principal,
    scratch: Path,
) -> UploadResponse:
    """Admit every file at the door (door processes, side by side), then store each and queue
    its job (in an upload thread).

    A refused file refuses the request before anything is stored. This process never holds a
    document's bytes: the door processes read the files from the scratch folder and write an
    archive's admitted members there, and each document is hashed and stored from its file as a
    stream."""
    namespace = fields.namespace
    replaced = _replaced(
        state.registry, who, fields.replace_document_id, namespace, len(form.files)
    )
    verdicts = state.door.check(
        form,
        scratch,
        state.limits.file_bytes,
        bool(fields.password),
        libreoffice_available(state.settings),
    )
    admitted, skipped = _sorted_verdicts(form.files, verdicts)
    if replaced is not None:
        if len(admitted) != 1:
            raise Refused(400, "replace_document_id takes exactly one document")
        # The replaced document's id and name: the same document, new bytes.
        documents = [
            (
                replaced.source_file_name,
                replaced.document_id,
                admitted[0][2],
                replaced.attached_to,
            )
        ]
    else:
        documents = _new_documents(state.registry, namespace, admitted)
    _within_limits(state, who, len(documents))
    # All passed: now store, then record the job.
    queued = [_queue(state, fields, who, *document) for document in documents]
    return UploadResponse(namespace=namespace, files=queued + skipped)


def _sorted_verdicts(
    files: list[ReceivedFile], verdicts: list[list[Checked]]
) -> tuple[list[Admitted], list[QueuedFile]]:
    """The admitted files, and the archive members skipped as no document and the e-mail
    attachments refused at the door (listed with the reason, never refusing their message);
    any other refusal refuses the request (naming the file)."""
    admitted: list[Admitted] = []
    skipped: list[QueuedFile] = []
    for received, checked in zip(files, verdicts, strict=True):
        name = safe_name(received.sent)
        for item in checked:
            if item.path is not None:
                sent = received.sent + item.label[len(name) :]
                parent = received.sent + item.parent[len(name) :] if item.parent else None
                admitted.append((item.label, sent, Path(item.path), parent))
            elif (item.member and item.status == 415) or item.parent is not None:
                skipped.append(
                    QueuedFile(source_file_name=item.label, status="skipped", detail=item.message)
                )
            else:
                raise _naming(Refused(item.status or 400, item.message or "refused"), item.label)
    return admitted, skipped


def _within_limits(state: IngestState, who: Principal, documents: int) -> None:
    """One upload expands into at most `max_documents_per_upload` documents (413), and a key
    has at most `max_queued_jobs_per_key` jobs queued (429): checked before anything is
    stored, so one upload cannot queue hours of work ahead of everyone."""
    settings = state.settings
    if documents > settings.max_documents_per_upload:
        raise Refused(
            413,
            f"the upload holds {documents:,} documents (archive members and e-mail attachments "
            f"included), above the limit of {settings.max_documents_per_upload:,} "
            "(CORPUS_MAX_DOCUMENTS_PER_UPLOAD); nothing was stored",
        )
    queued = state.jobs.queued(who.name)
    if queued + documents > settings.max_queued_jobs_per_key:
        raise HTTPException(
            429,
            f"this key has {queued:,} jobs queued; {documents:,} more would pass the limit of "
            f"{settings.max_queued_jobs_per_key:,} (CORPUS_MAX_QUEUED_JOBS_PER_KEY): try again "
            "when some are done",
            headers={"Retry-After": "30"},
        )


def _queue(
    state: IngestState,
    fields: UploadFields,
    who: Principal,
    name: str,
    document_id: str,
    path: Path,
    attached_to: str | None,
) -> QueuedFile:
    """Store one admitted document from its file and record its queued job."""
    record = state.registry.register(
        path,
        name,
        fields.namespace,
        SourceKind.UPLOAD,
        fields.organizational_unit,
        fields.document_date,
        document_id=document_id,
        attached_to=attached_to,
    )
    with state.passwords.recording() as pending:  # set before a worker can take the job
        job = state.jobs.create(record.document_id, fields.namespace, name, principal=who.name)
        if fields.password:
            pending[job.job_id] = fields.password
    return QueuedFile(
        source_file_name=name,
        job_id=job.job_id,
        document_id=record.document_id,
        status="queued",
    )


def _naming(refused: Refused, label: str) -> Refused:
    """A refusal that names the file (the door names the reason; the API answers per file)."""
    return (
        refused
        if f"'{label}'" in str(refused)
        else Refused(refused.status, f"'{label}': {refused}")
    )


def _new_documents(
    registry: SourceRegistry, namespace: str, admitted: list[Admitted]
) -> list[Document]:
    """(label, document id, bytes on disk, e-mail's id) of each admitted (label, name as sent,
    path, e-mail's name as sent).

    The id derives from the name as sent (NFC), never from its sanitised label, so two names
    that sanitise alike ("q3/report.pdf", "q3_report.pdf") are two documents. Replacing is only
    ever explicit: a name already registered in the namespace is refused (409, naming the
    document to pass as replace_document_id), and so is a name sent twice in one request."""
    out: list[Document] = []
    for label, sent, path, parent in admitted:
        document_id = document_id_for(namespace, unicodedata.normalize("NFC", sent))
        attached = (
            document_id_for(namespace, unicodedata.normalize("NFC", parent)) if parent else None
        )
        if any(document_id == known for _, known, _, _ in out):
            raise Refused(400, f"'{label}' is sent twice in this request")
        if registry.find(document_id) is not None:
            raise Refused(
                409,
                f"'{label}' is already document '{document_id}' in namespace '{namespace}': "
                f"send replace_document_id={document_id} to replace it, or upload it under "
                "another name",
            )
        out.append((label, document_id, path, attached))
    return out


def _replaced(
    registry: SourceRegistry, who: Principal, document_id: str | None, namespace: str, files: int
) -> SourceRecord | None:
    """The document a replacement replaces (its id and name are kept), or None."""
    if document_id is None:
        return None
    if files != 1:
        raise Refused(400, "replace_document_id takes exactly one file")
    # One answer whether the document exists nowhere or in a namespace this upload does not
    # go to (or the key cannot read): no oracle for ids, which are computable from names.
    missing = HTTPException(404, f"no document '{document_id}' in namespace '{namespace}'")
    try:
        record = registry.get(document_id)
    except CorpusError:
        raise missing from None
    if record.namespace != namespace or not may_read(who, record.namespace):
        raise missing
    return record
