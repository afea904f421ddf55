"""Analysis: what an analyst reads about a corpus, as polars DataFrames. The notebooks in
`notebooks/` use this package's functions (below) and nothing else of the project:

- the published snapshot (`snapshot`): `namespaces`, `revisions`, `documents`, `sections`,
  `chunks`, `graph`;
- operations (`operations`): `stage_timings`, `pipeline_runs`, `search_runs`, `jobs`,
  `access_stats`, `cache_stats` (with `service_key`);
- retrieval quality (`quality`): `eval_results`, `latest_eval_results`.

Every function only reads, and a part the home does not hold yet is an empty frame with its
columns (docs/notebooks.md).
"""

from corpus_pipeline.analysis.operations import (
    ServiceError,
    access_stats,
    cache_stats,
    jobs,
    pipeline_runs,
    search_runs,
    service_key,
    stage_timings,
)
from corpus_pipeline.analysis.quality import EvalFrames, eval_results, latest_eval_results
from corpus_pipeline.analysis.snapshot import (
    Graph,
    chunks,
    documents,
    graph,
    namespaces,
    revisions,
    sections,
)

__all__ = [
    "EvalFrames",
    "Graph",
    "ServiceError",
    "access_stats",
    "cache_stats",
    "chunks",
    "documents",
    "eval_results",
    "graph",
    "jobs",
    "latest_eval_results",
    "namespaces",
    "pipeline_runs",
    "revisions",
    "search_runs",
    "sections",
    "service_key",
    "stage_timings",
]
