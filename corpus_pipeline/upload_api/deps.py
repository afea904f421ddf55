"""The upload API's dependencies: the app's `IngestState` (`StateDep`) and the request's
principal (`PrincipalDep`), resolved by `corpus_pipeline.access.keys.require_principal` —
through `principal_for_authorization`, the one function the query service's HTTP and MCP
surfaces resolve keys with too, with the same key file, reloaded when it changes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from corpus_pipeline.access.keys import may_write, require_principal
from corpus_pipeline.contracts.keys import Principal
from corpus_pipeline.upload_api.state import IngestState


async def get_state(request: Request) -> IngestState:
    state: IngestState = request.app.state.ingest
    return state


StateDep = Annotated[IngestState, Depends(get_state)]
PrincipalDep = Annotated[Principal, Depends(require_principal)]


def require_writable(who: Principal, namespace: str) -> None:
    """Nothing when `who` may write to `namespace`; else 404 for a namespace the key cannot
    read (it is told the namespace does not exist), 403 for one it only reads."""
    if may_write(who, namespace):  # a refusal is logged
        return
    if not who.may_read(namespace):
        raise HTTPException(404, f"namespace '{namespace}' does not exist")
    raise HTTPException(403, f"this key may not write to namespace '{namespace}'")
