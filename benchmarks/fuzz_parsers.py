"""Every parser fuzzed for a long budget: seeds of each format the router handles, then their
mutations, through the door, the profile and the routed parser (`harness.fuzz`).

    python -m benchmarks.fuzz_parsers [--seconds 600] [--out benchmarks/results/]
        [--formats pdf,docx] [--seed 40] [--timeout 60] [--memory-mb 2048]
        [--findings benchmarks/results/fuzz_findings/] [--no-save]

1. Lists the formats from the router (`harness.fuzz.targets`) and builds their seeds (built in
   code, plus `../shared/corpus/docs` read in place); a format without a seed is reported.
2. Gives each format with seeds an equal share of `--seconds`, with a parse time limit of
   `--timeout` and a memory limit of `--memory-mb` for the parse worker (set for this run in
   the settings the worker reads), and at most `--conversions` LibreOffice conversions each.
3. Each distinct finding (a crash, a hang past the time limit) is shrunk a little and written
   to `--findings` (`--no-save`: only reported); once the crash is fixed, the file joins the
   suite's regression files (`regressions/fuzz/` beside the fuzz test), which every test run
   feeds through the same checks. A parse stopped at the memory limit (a decompression bomb)
   is the limit doing its work: listed, not a finding.
4. Writes `fuzz_parsers.json`: per format the inputs tried, the outcomes per stage, the
   findings with their regression file, the memory-limit stops, and the peak resident memory
   (VmHWM) of the parse workers and of what they started (LibreOffice, Tesseract), sampled
   every 50 ms.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, SHARED_CORPUS, log, machine_facts, write_json
from benchmarks.harness.fuzz import (
    Checker,
    Finding,
    FormatRun,
    FuzzConfig,
    Target,
    fuzz_format,
    fuzz_settings,
    save_regression,
    seed_sets,
    shrink,
    targets,
)
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.pipeline import processes


class WorkerMemory:
    """Peak resident memory (VmHWM, MiB) of this process's grandchildren and below (the
    forkserver's parse workers and what they start), sampled in a thread, per label."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.label = ""
        self.peaks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(self.interval):
            peak = max((_hwm_mb(pid) for pid in _descendants(me, min_depth=2)), default=0.0)
            if self.label and peak > self.peaks.get(self.label, 0.0):
                self.peaks[self.label] = peak


def _descendants(root: int, min_depth: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_bytes()
                parents[int(entry)] = int(stat.rsplit(b")", 1)[1].split()[1])
    found, level, depth = [], [root], 0
    while level:
        depth += 1
        level = [pid for pid, parent in parents.items() if parent in level]
        if depth >= min_depth:
            found += level
    return found


def _hwm_mb(pid: int) -> float:
    with suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _finding_row(finding: Finding) -> dict[str, Any]:
    verdict = finding.verdict
    return {
        "kind": verdict.outcome,
        "stage": verdict.stage,
        "file": verdict.file,
        "error": verdict.error,
        "message": verdict.message,
        "where": verdict.where,
        "inputs_hit": finding.count,
        "input": {
            "index": finding.item.index,
            "mutation": finding.item.mutation,
            "seed": finding.item.origin,
            "bytes": len(finding.item.data),
        },
        "regression": finding.regression,
    }


def _format_row(run: FormatRun, peak_mb: float) -> dict[str, Any]:
    return {
        "strategy": run.target.strategy,
        "routed": run.target.routed,
        "seeds": run.seeds,
        "seed_problems": run.seed_problems,
        "inputs": run.inputs,
        "worker_inputs": run.worker_inputs,
        "conversions": run.conversions,
        "seconds": round(run.seconds, 1),
        "outcomes": dict(sorted(run.outcomes.items())),
        "findings": [_finding_row(f) for f in run.findings.values()],
        "memory_limit_stops": [_finding_row(f) for f in run.limited.values()],
        "peak_worker_rss_mb": round(peak_mb, 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    # A worker's crash is logged with its traceback; the finding already names where it is.
    logging.getLogger("corpus_pipeline.pipeline.isolation").setLevel(logging.CRITICAL)
    chosen = {FileFormat(f) for f in args.formats.split(",")} if args.formats else None
    found = [t for t in targets() if chosen is None or t.format in chosen]
    processes.start_forkserver()
    started = time.perf_counter()
    sets = seed_sets([t.format for t in found], SHARED_CORPUS / "docs", args.shared_max_bytes)
    seeding = time.perf_counter() - started
    seeded = [t for t in found if sets[t.format].seeds]
    share = args.seconds / max(1, len(seeded))
    config = FuzzConfig(
        seed=args.seed, seconds=share, worker_every=args.worker_every, conversions=args.conversions
    )
    log(f"{len(found)} formats, {len(seeded)} with seeds ({seeding:.0f} s); {share:.0f} s each")
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fuzz-parsers-") as tmp, WorkerMemory() as memory:
        settings = fuzz_settings(Path(tmp) / "home", timeout=args.timeout, memory_mb=args.memory_mb)
        checker = Checker(Path(tmp) / "work", settings, args.slow_seconds)
        for target in found:
            memory.label = target.format.value
            result = fuzz_format(
                target,
                sets[target.format],
                config,
                checker,
                _recorder(checker, args.findings if args.save else None),
            )
            rows[target.format.value] = _format_row(result, memory.peaks.get(memory.label, 0.0))
            log(_line(target, result))
    return _summary(args, found, rows, share, seeding)


def _recorder(checker: Checker, findings: Path | None) -> Any:
    def record(finding: Finding) -> None:
        log(f"  {finding.verdict.outcome}: {finding.verdict.error} at {finding.verdict.where}")
        if findings is not None:
            smaller = shrink(checker, finding)
            finding.regression = str(save_regression(smaller, findings))

    return record


def _line(target: Target, result: FormatRun) -> str:
    kinds = [f.verdict.outcome for f in result.findings.values()]
    seeds = f"{len(result.seeds)} seeds" if result.seeds else "NO SEED"
    return f"{target.format.value}: {result.inputs} inputs, {seeds}, findings {kinds or 'none'}"


def _summary(
    args: argparse.Namespace,
    found: Sequence[Target],
    rows: dict[str, Any],
    share: float,
    seeding: float,
) -> dict[str, Any]:
    findings = [f for row in rows.values() for f in row["findings"]]
    return {
        "benchmark": "fuzz_parsers",
        "config": {
            "seconds": args.seconds,
            "seconds_per_format": round(share, 1),
            "seed": args.seed,
            "parse_timeout_seconds": args.timeout,
            "parse_max_memory_mb": args.memory_mb,
            "slow_seconds": args.slow_seconds,
            "worker_every": args.worker_every,
            "conversions": args.conversions,
            "shared_max_bytes": args.shared_max_bytes,
        },
        "seed_seconds": round(seeding, 1),
        "formats": rows,
        "without_seeds": [t.format.value for t in found if not rows[t.format.value]["seeds"]],
        "not_routed": [t.format.value for t in found if not t.routed],
        "totals": {
            "inputs": sum(r["inputs"] for r in rows.values()),
            **{kind: sum(f["kind"] == kind for f in findings) for kind in ("crash", "hang")},
            "memory_limit_stops": sum(
                f["inputs_hit"] for row in rows.values() for f in row["memory_limit_stops"]
            ),
        },
        "machine": machine_facts(),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=600.0, help="budget over all formats")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--formats", default="", help="comma-separated FileFormat values")
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=60.0, help="parse time limit, s")
    parser.add_argument("--memory-mb", type=int, default=2048, help="parse memory limit")
    parser.add_argument(
        "--slow-seconds",
        type=float,
        default=15.0,
        help="an in-process parse longer than this is re-run in the worker",
    )
    parser.add_argument("--worker-every", type=int, default=10)
    parser.add_argument("--conversions", type=int, default=10, help="LibreOffice runs a format")
    parser.add_argument("--shared-max-bytes", type=int, default=1 << 20)
    parser.add_argument("--no-save", dest="save", action="store_false")
    parser.add_argument(
        "--findings",
        type=Path,
        default=RESULTS / "fuzz_findings",
        help="where the inputs of new findings are written",
    )
    args = parser.parse_args(argv)
    summary = run(args)
    path = write_json(args.out / "fuzz_parsers.json", summary)
    log(f"{summary['totals']} -> {path}")


if __name__ == "__main__":
    main()
