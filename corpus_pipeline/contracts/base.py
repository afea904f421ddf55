"""What the contracts share: the configuration of their models, and the fields several repeat."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class FrozenModel(BaseModel):
    """An immutable record: once made, never changed in place."""

    model_config = ConfigDict(frozen=True)


class Contract(FrozenModel):
    """A message the services exchange: immutable, and an unknown field is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# The section of a place in a document, by id (`section_id = None` where there is none).
SectionId = Annotated[
    str | None,
    Field(description="Id of the section in its document (titles may repeat; ids do not)."),
]
