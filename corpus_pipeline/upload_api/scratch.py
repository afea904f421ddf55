"""The upload API's scratch space (`<home>/service/uploads`): one folder per request, named
after the process that made it, removed whatever the request's outcome; folders of processes
that are gone (killed mid-upload) are removed when the API starts."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path


@asynccontextmanager
async def scratch_folder(root: Path) -> AsyncIterator[Path]:
    """A fresh folder under `root` for one request, made and removed off the event loop."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=f"{os.getpid()}-", dir=root))
    try:
        yield scratch
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


def remove_orphaned_scratch(root: Path) -> None:
    """Scratch folders of upload-API processes that are gone (killed mid-upload): each folder
    is named after the process that made it, so a live process's uploads are never touched."""
    for folder in root.iterdir():
        pid = folder.name.split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue  # alive, another user's
