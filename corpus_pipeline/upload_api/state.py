"""What the upload API's routes and lifespan share, made once per app (`IngestState.open`) and
held on `app.state.ingest`; routes reach it through `deps.StateDep`."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from corpus_pipeline.common.settings import CorpusSettings
from corpus_pipeline.intake.job_store import open_job_store
from corpus_pipeline.intake.jobs import JobStore
from corpus_pipeline.intake.uploads import UploadLimits
from corpus_pipeline.storage.store import ObjectStore, SourceRegistry
from corpus_pipeline.upload_api.door_pool import DoorPool
from corpus_pipeline.upload_api.gate import UploadGate
from corpus_pipeline.upload_api.readiness import Readiness
from corpus_pipeline.upload_api.scratch import remove_orphaned_scratch
from corpus_pipeline.upload_api.worker import Passwords

MIB = 1024 * 1024


@dataclass(frozen=True)
class IngestState:
    """The job store, the source registry, the passwords waiting for their jobs, the pools
    that store and check uploads, the upload limits and scratch folder, and the event that
    stops the worker threads."""

    settings: CorpusSettings
    jobs: JobStore
    registry: SourceRegistry
    passwords: Passwords
    stop: threading.Event
    readiness: Readiness
    # Storing uploads and waiting for their door checks: blocking work, never on the request
    # loop; the checks themselves run in door processes.
    upload_pool: ThreadPoolExecutor
    door: DoorPool
    limits: UploadLimits
    scratch_root: Path
    gate: UploadGate

    @classmethod
    def open(cls, settings: CorpusSettings) -> IngestState:
        """The state of a new app; scratch folders a killed predecessor left are removed."""
        jobs = open_job_store(settings)
        registry = SourceRegistry(ObjectStore(settings.object_store))
        stop = threading.Event()
        upload_pool = ThreadPoolExecutor(
            settings.upload_workers, thread_name_prefix="corpus-upload"
        )
        door = DoorPool(settings.upload_workers)
        scratch_root = settings.home / "service" / "uploads"
        scratch_root.mkdir(parents=True, exist_ok=True)
        remove_orphaned_scratch(scratch_root)
        return cls(
            settings=settings,
            jobs=jobs,
            registry=registry,
            passwords=Passwords(),
            stop=stop,
            readiness=Readiness(jobs, stop),
            upload_pool=upload_pool,
            door=door,
            limits=UploadLimits(settings.max_upload_mb * MIB, settings.max_request_mb * MIB),
            scratch_root=scratch_root,
            gate=UploadGate(settings.max_uploads_per_key),
        )
