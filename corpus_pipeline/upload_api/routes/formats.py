"""`/v1/supported-formats`: what this deployment parses, from the parsers' registry
(`parsing.formats`), with LibreOffice and Tesseract looked up when asked. Any valid key may ask:
the answer names no namespace, only what the door and the parsers accept."""

from __future__ import annotations

from fastapi import APIRouter

from corpus_pipeline.access.openapi import error_responses, example_response
from corpus_pipeline.contracts.formats import SupportedFormats
from corpus_pipeline.parsing.formats import capabilities, examples
from corpus_pipeline.upload_api.deps import PrincipalDep, StateDep

router = APIRouter(tags=["formats"])


@router.get(
    "/v1/supported-formats",
    response_model=SupportedFormats,
    responses={**example_response(examples()), **error_responses({})},
)
def supported_formats(_: PrincipalDep, state: StateDep) -> SupportedFormats:
    """Each format this deployment reads (`available`, else the `reason`), with what it keeps
    (headings, tables and their spans, images, OCR), and the external programs some need."""
    return capabilities(state.settings)
