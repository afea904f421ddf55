"""`/v1/supported-formats`: what this deployment parses, so an agent can tell a user which files
it may upload. The same answer as the upload API's route (`parsing.formats.capabilities`), with
LibreOffice and Tesseract looked up in this process's environment: the image every process of
a deployment runs (Dockerfile) is the one the parsers run in."""

from __future__ import annotations

from fastapi import APIRouter

from corpus_pipeline.common.settings import load_settings
from corpus_pipeline.contracts.formats import SupportedFormats
from corpus_pipeline.parsing.formats import capabilities, examples
from query_service.api.deps import PrincipalDep, ServiceDep, run_blocking
from query_service.api.errors import KEYED
from query_service.api.responses import answers

router = APIRouter(tags=["formats"])


@router.get(
    "/v1/supported-formats",
    response_model=SupportedFormats,
    responses=answers(examples(), KEYED, revision=False),
)
async def supported_formats(svc: ServiceDep, _: PrincipalDep) -> SupportedFormats:
    """Each format this deployment reads (`available`, else the `reason`), with what it keeps
    (headings, tables and their spans, images, OCR), and the external programs some need."""
    return await run_blocking(svc, _capabilities)


def _capabilities() -> SupportedFormats:
    # The pipeline's settings (CORPUS_LIBREOFFICE_PATH), read as the door reads them.
    return capabilities(load_settings())
