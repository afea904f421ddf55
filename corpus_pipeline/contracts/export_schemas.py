"""Generate the checked-in JSON Schemas of the artifact files from the pydantic models.

Run `python -m corpus_pipeline.contracts.export_schemas` (or `make schemas`) after changing a
contract; a test fails while the checked-in files differ from the models.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from corpus_pipeline.contracts.artifacts import (
    ChunksFile,
    DiagnosticsFile,
    DocNav,
    HeadingsFile,
    Manifest,
)

SCHEMA_DIR = Path(__file__).parent / "schemas"
ARTIFACT_MODELS: dict[str, type[BaseModel]] = {
    "chunks.json": ChunksFile,
    "doc_nav.json": DocNav,
    "manifest.json": Manifest,
    "headings.json": HeadingsFile,
    "diagnostics.json": DiagnosticsFile,
}


def schema_file(artifact: str) -> Path:
    return SCHEMA_DIR / artifact.replace(".json", ".schema.json")


def render_schema(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True, mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for artifact, model in ARTIFACT_MODELS.items():
        schema_file(artifact).write_text(render_schema(model), encoding="utf-8")
        print(f"wrote {schema_file(artifact)}")


if __name__ == "__main__":
    main()
