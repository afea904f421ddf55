"""Retrieval quality as frames: `corpus eval` result files (`contracts.evaluation.EvalRun`)
flattened per system, per question kind, per question and per returned result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from corpus_pipeline.analysis.frames import Home, settings_of, typed_frame
from corpus_pipeline.contracts.evaluation import EvalRun, Metrics


@dataclass(frozen=True)
class EvalFrames:
    """One or more `corpus eval` result files, flattened; every frame names its `run` (the
    file) and `system` (`classic`, `agentic`, `naive-bm25`)."""

    systems: pl.DataFrame  # one row per system and run: the run's settings and overall figures
    kinds: pl.DataFrame  # one row per system and question kind: the kind's figures
    questions: pl.DataFrame  # one row per system and question: first relevant rank, doc hit, …
    results: pl.DataFrame  # one row per returned result: rank, where it is, relevant or not


_METRICS = {name: pl.Int64 if name == "n" else pl.Float64 for name in Metrics.model_fields}
_QUESTION_FIELDS = {
    "id": pl.String,
    "question": pl.String,
    "kind": pl.String,
    "doc_type": pl.String,
    "doc": pl.String,
    "gold": pl.String,
    "first_relevant_rank": pl.Int64,
    "doc_hit": pl.Boolean,
    "latency_ms": pl.Float64,
    "evidence_tokens": pl.Int64,
    "error": pl.String,
}
_RESULT_FIELDS = {
    "rank": pl.Int64,
    "document_id": pl.String,
    "chunk_id": pl.String,
    "source_file_name": pl.String,
    "pages": pl.List(pl.Int64),
    "section_path": pl.List(pl.String),
    "relevant": pl.Boolean,
    "snippet": pl.String,
}


def eval_results(paths: Home | Sequence[Home]) -> EvalFrames:
    """Read `corpus eval` result files (`EvalRun`, one per mode, say) into frames; systems are
    compared on the same questions only when the files were scored on one question file
    (`questions_sha256` in `systems`)."""
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    systems, kinds, questions, results = [], [], [], []
    for path in files:
        run = EvalRun.model_validate_json(path.read_bytes())
        head = {"run": str(path), "mode": run.mode, "top_k": run.top_k, "budget": run.budget}
        head |= {"questions_sha256": run.questions_sha256, "revision": run.revision}
        for name, system in run.systems.items():
            key = {"run": str(path), "system": name}
            systems.append(head | {"system": name} | system.overall.model_dump())
            kinds += [key | {"kind": k} | m.model_dump() for k, m in system.by_kind.items()]
            for q in system.questions:
                row = q.model_dump(include=set(_QUESTION_FIELDS))
                questions.append(key | row | {"returned": len(q.results)})
                results += [key | {"question_id": q.id} | r.model_dump() for r in q.results]
    run_schema = {
        "run": pl.String,
        "mode": pl.String,
        "top_k": pl.Int64,
        "budget": pl.Int64,
        "questions_sha256": pl.String,
        "revision": pl.Int64,
        "system": pl.String,
    }
    key_schema = {"run": pl.String, "system": pl.String}
    return EvalFrames(
        systems=typed_frame(systems, run_schema | _METRICS),
        kinds=typed_frame(kinds, key_schema | {"kind": pl.String} | _METRICS),
        questions=typed_frame(questions, key_schema | _QUESTION_FIELDS | {"returned": pl.Int64}),
        results=typed_frame(results, key_schema | {"question_id": pl.String} | _RESULT_FIELDS),
    )


def latest_eval_results(home: Home) -> list[Path]:
    """The newest `corpus eval` result under `<home>/eval/` and, scored on the same question
    file and namespace, the newest of each other mode: classic against agentic (and each run's
    baseline) by default. Classic first; empty when there is none."""
    found = sorted(
        (settings_of(home).home / "eval").rglob("results.json"),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    runs = [(path, EvalRun.model_validate_json(path.read_bytes())) for path in found]
    if not runs:
        return []
    newest = runs[0][1]
    chosen: dict[str, Path] = {}
    for path, run in runs:
        same = (run.questions_sha256, run.namespace) == (newest.questions_sha256, newest.namespace)
        if same and run.mode not in chosen:
            chosen[run.mode] = path
    return [chosen[mode] for mode in ("classic", "agentic") if mode in chosen]
