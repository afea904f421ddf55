"""Figures of a group of judged questions, by ir-measures (pytrec_eval underneath).

Each question becomes one ir-measures query: its returned results are the run (ids by rank,
scores strictly falling, so no tie is re-ordered), the results judged relevant are the qrels.
hit@k is `Success@k`, MRR@10 is `RR@10`, nDCG@10 is binary `nDCG@10` whose ideal ranking puts
the relevant results the system returned first (no set lists every relevant chunk, so recall
is judged within what came back). A question without a relevant result, or without results,
scores 0 on all of them: it stays in the mean. doc-hit@10 (the question's document in the top
10) needs no qrels and is counted directly. Latency percentiles interpolate linearly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

import ir_measures
import numpy as np
from ir_measures import RR, Success, nDCG

from corpus_pipeline.contracts.evaluation import Metrics, QuestionResult

CUTOFF = 10
DIGITS = 6
# The measures and the Metrics field each one fills.
MEASURES = {
    Success @ 1: "hit_at_1",
    Success @ 5: "hit_at_5",
    Success @ 10: "hit_at_10",
    RR @ 10: "mrr_at_10",
    nDCG @ 10: "ndcg_at_10",
}
_NONE = "__no-relevant-result__"  # a zero qrel keeps a question without hits in the evaluation


def _doc_id(rank: int) -> str:
    return f"r{rank:04d}"


def per_question(results: Sequence[QuestionResult]) -> dict[str, dict[str, float]]:
    """Question id → Metrics field → value, for every question (0.0 where none applies)."""
    qrels = [ir_measures.Qrel(q.id, _NONE, 0) for q in results]
    run = []
    for q in results:
        n = len(q.results)
        for r in q.results:
            run.append(ir_measures.ScoredDoc(q.id, _doc_id(r.rank), float(n - r.rank + 1)))
            if r.relevant:
                qrels.append(ir_measures.Qrel(q.id, _doc_id(r.rank), 1))
    values: dict[str, dict[str, float]] = {
        q.id: dict.fromkeys(MEASURES.values(), 0.0) for q in results
    }
    for metric in ir_measures.iter_calc(list(MEASURES), qrels, run):
        values[metric.query_id][MEASURES[metric.measure]] = float(metric.value)
    for q in results:
        values[q.id]["doc_hit_at_10"] = float(q.doc_hit)
    return values


def _mean(values: Iterable[float]) -> float:
    listed = list(values)
    return round(sum(listed) / len(listed), DIGITS) if listed else 0.0


def _percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def metrics_of(group: Sequence[QuestionResult], values: dict[str, dict[str, float]]) -> Metrics:
    """The group's means (`values` from `per_question` over at least these questions)."""
    latencies = [q.latency_ms for q in group if q.latency_ms is not None]
    tokens = [q.evidence_tokens for q in group if q.evidence_tokens is not None]
    fields = [*MEASURES.values(), "doc_hit_at_10"]
    return Metrics(
        n=len(group),
        **{f: _mean(values[q.id][f] for q in group) for f in fields},
        latency_p50_ms=_percentile(latencies, 50),
        latency_p95_ms=_percentile(latencies, 95),
        evidence_tokens_mean=round(sum(tokens) / len(tokens), 1) if tokens else None,
    )


def grouped(
    results: Sequence[QuestionResult],
    values: dict[str, dict[str, float]],
    keys: Callable[[QuestionResult], Iterable[str]],
) -> dict[str, Metrics]:
    """Metrics per group, a question counting in every group `keys` names; groups sorted."""
    groups: dict[str, list[QuestionResult]] = defaultdict(list)
    for q in results:
        for key in keys(q):
            groups[key].append(q)
    return {key: metrics_of(groups[key], values) for key in sorted(groups)}
