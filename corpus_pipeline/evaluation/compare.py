"""Two runs side by side (`corpus eval --compare A.json B.json`): what changed per question kind,
and which questions flipped.

Systems are matched by name (the service's mode, `naive-bm25`); runs in different modes also
compare the service with itself ("classic → agentic"). For each pair, the figures of every
kind group (and "all") in A and in B; and the questions, matched by id, whose hit@1, hit@5 or
hit@10 differs (their first relevant rank moved across a cutoff), B's gains first. Runs over
different question files or namespaces can still be compared; the comparison says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from corpus_pipeline.common.errors import CorpusError
from corpus_pipeline.contracts.evaluation import EvalRun, Metrics, QuestionResult

CUTOFFS = (1, 5, 10)
ALL = "all"


class ResultsFileError(CorpusError):
    """A results file that cannot be read as a run; the message names it."""


def load_run(path: Path) -> EvalRun:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"{path}: cannot be read ({exc})") from exc
    try:
        return EvalRun.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise ResultsFileError(
            f"{path}: not a results.json of corpus eval ({where}: {first['msg']})"
        ) from exc


@dataclass(frozen=True)
class Flip:
    """A question whose hit@k differs between the runs (ranks: None is a miss)."""

    system: str
    id: str
    kind: str
    question: str
    rank_a: int | None
    rank_b: int | None

    def hit(self, rank: int | None, k: int) -> bool:
        return rank is not None and rank <= k

    @property
    def cutoffs(self) -> list[int]:
        """The k whose hit@k changed."""
        return [k for k in CUTOFFS if self.hit(self.rank_a, k) != self.hit(self.rank_b, k)]

    @property
    def gained(self) -> bool:
        """B hits at a cutoff where A did not."""
        return any(self.hit(self.rank_b, k) for k in self.cutoffs)


@dataclass
class Comparison:
    """Per system: group → (A's figures, B's figures; None where the run has no such group);
    the flipped questions; and what makes the runs not strictly comparable."""

    groups: dict[str, dict[str, tuple[Metrics | None, Metrics | None]]]
    flips: list[Flip]
    notes: list[str] = field(default_factory=list)


def _flips(system: str, a: list[QuestionResult], b: list[QuestionResult]) -> list[Flip]:
    ranks_a = {q.id: q.first_relevant_rank for q in a}
    flips = [
        Flip(system, q.id, q.kind, q.question, ranks_a[q.id], q.first_relevant_rank)
        for q in b
        if q.id in ranks_a
    ]
    changed = [f for f in flips if f.cutoffs]
    return sorted(changed, key=lambda f: (not f.gained, f.id))


def compare(a: EvalRun, b: EvalRun) -> Comparison:
    notes = []
    if a.questions_sha256 != b.questions_sha256:
        notes.append(
            f"the question files differ ({a.questions_file} and {b.questions_file}); "
            "only questions with the same id are matched"
        )
    for label, first, second in (
        ("namespace", a.namespace, b.namespace),
        ("mode", a.mode, b.mode),
        ("top_k", a.top_k, b.top_k),
        ("target", a.target, b.target),
    ):
        if first != second:
            notes.append(f"{label}: {first} → {second}")
    groups: dict[str, dict[str, tuple[Metrics | None, Metrics | None]]] = {}
    flips: list[Flip] = []
    pairs = [(n, n) for n in a.systems if n in b.systems]
    if a.mode != b.mode:  # the service in one mode against itself in the other
        pairs.insert(0, (a.mode, b.mode))
    for first, second in pairs:
        name = first if first == second else f"{first} → {second}"
        sa, sb = a.systems[first], b.systems[second]
        kinds = sorted(set(sa.by_kind) | set(sb.by_kind))
        groups[name] = {
            ALL: (sa.overall, sb.overall),
            **{k: (sa.by_kind.get(k), sb.by_kind.get(k)) for k in kinds},
        }
        flips += _flips(name, sa.questions, sb.questions)
    for name in sorted((set(a.systems) ^ set(b.systems)) - {a.mode, b.mode}):
        notes.append(f"system '{name}' is in only one of the runs")
    return Comparison(groups, flips, notes)
