"""The Dagster code location: the objects of the `defs/` modules, one module per stage and per
integration.

Listed here rather than discovered with `dg.load_from_defs_folder`: discovery also imports every
installed component library (dagster-aws's Athena, Secrets Manager, … components) and, through
them, LanceDB; every run process loads this location afresh (a queued run, the daemon's code
server). Loading it took 20.5 s that way and takes 6.1 s listed, on this machine. A test keeps
the list complete.
"""

from __future__ import annotations

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    from corpus_pipeline.defs import documents, embeddings, jobs, publish, resources, sensors

    return dg.Definitions.merge(
        dg.Definitions(
            assets=dg.load_assets_from_modules([documents, embeddings, publish]),
            jobs=[
                jobs.reprocess_documents,
                jobs.embed_documents,
                jobs.publish_revision,
                jobs.collect_garbage,
            ],
            schedules=[sensors.gc_schedule],
            sensors=[
                sensors.inbox_sensor,
                sensors.s3_sensor,
                sensors.publish_sensor,
                sensors.embeddings_sensor,
            ],
        ),
        resources.resources(),
    )
