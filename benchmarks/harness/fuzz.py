"""The parser fuzz engine, shared by the benchmark (`benchmarks.fuzz_parsers`, a long budget) and
the suite's fuzz test (a short one).

Formats come from the product, not from a list here: every `FileFormat` the router gives a
parser strategy is fuzzed through it, and a format it does not route (an mbox, which the door
splits into messages) through the door and the profile. Seeds come from `harness.fuzz_seeds`;
inputs are those seeds as they are, then mutations (`harness.fuzz_mutations`), input `i` of a
format drawn from `Random(f"{seed}:{format}:{i}")`: fixed, so any failure is reproduced from
those three values. A seeded loop rather than Hypothesis: a check costs tens of milliseconds
to seconds (a parse, a worker, a LibreOffice conversion), far too slow for its shrinking.

Each input takes the path a delivered file takes: the door (`intake.door.deliveries`, which
admits the file and lists what an e-mail carries), the profile (`profiling.profile_source`),
then the routed parser (`pipeline.stages.run_parse`). A parse runs in-process for speed, and
in the isolated worker (`pipeline.isolation.run_parse_isolated`, the settings' time and memory
limits) for every `worker_every`-th input, for heavy mutations, for LibreOffice conversions and
to confirm an in-process parse that ran past `slow_seconds`. What may happen: the door admits
or refuses with `Refused`; the profile and the parse succeed or raise a `CorpusError` whose
message names the problem. Anything else is a finding: a crash (any other exception, a
`StageFailedError` carrying the worker's traceback, a worker killed by a signal) or a hang
(the worker's time limit, or a door or profile, which have no limit, running past it). A
worker stopped at its memory limit is what that limit is for (a decompression bomb fails only
itself, naming the limit): it is counted and reported, not a finding.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import TypeVar

from benchmarks.harness.fuzz_mutations import HEAVY, mutate
from benchmarks.harness.fuzz_seeds import Seed, generated_seeds, shared_seeds
from corpus_pipeline.common.errors import CorpusError, ParseLimitError, StageFailedError
from corpus_pipeline.common.settings import CorpusSettings, load_settings
from corpus_pipeline.contracts import DocumentProfile, FileFormat, RoutingDecision
from corpus_pipeline.intake.door import Refused, deliveries, safe_name
from corpus_pipeline.parsing.router import route
from corpus_pipeline.pipeline import stages
from corpus_pipeline.pipeline.isolation import run_parse_isolated
from corpus_pipeline.profiling import Profiled, profile_source

FINDINGS = frozenset({"crash", "hang"})
LIMITED = "memory"
# Carried files (attachments, an mbox's messages) parsed per input, at most.
MAX_CARRIED = 3
T = TypeVar("T")
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


# -- what is fuzzed -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A format to fuzz: whether the router gives it a parser (`strategy`), or only the door
    and the profile see it."""

    format: FileFormat
    strategy: str

    @property
    def routed(self) -> bool:
        return self.strategy != "unsupported"


def _probe(fmt: FileFormat) -> DocumentProfile:
    pending = RoutingDecision(strategy="pending", reason="probe")
    profile = DocumentProfile(
        format=fmt, media_type="", extension="", size_bytes=0, sha256="", routing=pending
    )
    return profile.model_copy(update={"routing": route(profile, "probe")})


def targets() -> list[Target]:
    """Every sniffable format, with the strategy the router picks for it (its parser module is
    imported only when an input of it is parsed, as in the pipeline)."""
    return [
        Target(fmt, _probe(fmt).routing.strategy)
        for fmt in FileFormat
        if fmt is not FileFormat.UNKNOWN
    ]


@dataclass(frozen=True)
class SeedSet:
    seeds: list[Seed]
    problems: list[str] = field(default_factory=list)


def seed_sets(
    formats: Sequence[FileFormat], shared_dir: Path | None, shared_max_bytes: int
) -> dict[FileFormat, SeedSet]:
    """Generated seeds (built two at a time: the LibreOffice ones wait on a subprocess) and the
    shared files of each format; a format left without any has an empty set."""
    shared = shared_seeds(shared_dir, shared_max_bytes) if shared_dir is not None else {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = dict(zip(formats, pool.map(generated_seeds, formats), strict=True))
    return {fmt: SeedSet([*built[fmt][0], *shared.get(fmt, [])], built[fmt][1]) for fmt in formats}


# -- inputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzInput:
    """One file to check: the format fuzzed, its index in that format's sequence, the name it
    is delivered under, its bytes, and how it was made (`none` for a seed as it is)."""

    format: FileFormat
    index: int
    name: str
    data: bytes
    mutation: str = "none"
    origin: str = ""

    @property
    def heavy(self) -> bool:
        return any(part in HEAVY for part in self.mutation.split("+"))

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def fuzz_input(fmt: FileFormat, seeds: Sequence[Seed], seed_value: int, index: int) -> FuzzInput:
    """Input `index` of a format: the seeds first, unchanged, then mutations of them."""
    if index < len(seeds):
        seed = seeds[index]
        return FuzzInput(fmt, index, seed.name, seed.data, "none", seed.origin)
    rng = Random(f"{seed_value}:{fmt.value}:{index}")
    seed = rng.choice(list(seeds))
    others = [s.data for s in seeds if s is not seed]
    mutation, data = mutate(rng, seed.data, others)
    return FuzzInput(fmt, index, seed.name, data, mutation, seed.origin)


# -- checks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What one stage did with one file: `outcome` is ok, refused, unrouted, skipped, slow, or
    a finding (crash, hang), or memory (stopped at the memory limit); `where` is the top of
    the stack for a crash."""

    stage: str
    file: str
    outcome: str
    error: str = ""
    message: str = ""
    where: str = ""
    seconds: float = 0.0

    @property
    def signature(self) -> str:
        """What makes two findings the same bug: stage, outcome, exception and place."""
        return f"{self.stage}|{self.outcome}|{self.error}|{self.where}"


@dataclass(frozen=True)
class Checked:
    item: FuzzInput
    verdicts: list[Verdict]
    converted: int = 0
    in_worker: bool = False

    @property
    def findings(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.outcome in FINDINGS]

    @property
    def limited(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.outcome == LIMITED]


class _Overtime(BaseException):
    """Raised by the in-process alarm; a BaseException, so no parser's handler swallows it."""


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum: int, frame: object) -> None:
        raise _Overtime

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def stack_top(frames: Sequence[tuple[str, int, str]]) -> str:
    """The deepest product frame (`corpus_pipeline/...:line in function`), and the frame that
    raised when that is in a library."""

    def show(frame: tuple[str, int, str]) -> str:
        path, line, name = frame
        marker = path.rfind("corpus_pipeline/")
        short = path[marker:] if marker >= 0 else "/".join(path.split("/")[-2:])
        return f"{short}:{line} in {name}"

    if not frames:
        return ""
    ours = [f for f in frames if "corpus_pipeline/" in f[0]]
    top = show(ours[-1]) if ours else show(frames[-1])
    raised = show(frames[-1])
    return top if raised == top else f"{top} (raised at {raised})"


def _where(exc: BaseException) -> str:
    return stack_top(
        [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    )


def _where_in(details: str) -> str:
    return stack_top([(p, int(n), f) for p, n, f in _FRAME.findall(details)])


def _unexpected(stage: str, file: str, exc: BaseException, seconds: float) -> Verdict:
    details = getattr(exc, "details", None)
    where = _where_in(details) if isinstance(details, str) and details else _where(exc)
    return Verdict(stage, file, "crash", type(exc).__name__, str(exc)[:300], where, seconds)


def _expected(stage: str, file: str, exc: CorpusError, seconds: float) -> Verdict:
    """A `CorpusError` is an answer only when its message says something."""
    if not str(exc).strip():
        return Verdict(stage, file, "crash", type(exc).__name__, "(empty message)", _where(exc))
    return Verdict(stage, file, "refused", type(exc).__name__, str(exc)[:300], "", seconds)


def fuzz_settings(home: Path, *, timeout: float, memory_mb: int) -> CorpusSettings:
    """Settings of a fuzz run: its own home, the parse limits given, and a LibreOffice limit
    below the parse limit (as in production), so a stuck conversion is stopped by its own."""
    return load_settings(
        home=home,
        parse_timeout_seconds=timeout,
        parse_max_memory_mb=memory_mb,
        libreoffice_timeout_seconds=max(1.0, timeout / 2),
    )


class Checker:
    """Runs one input through door, profile and parse under `settings`, in `workdir`."""

    def __init__(self, workdir: Path, settings: CorpusSettings, slow_seconds: float) -> None:
        self.workdir = workdir
        self.settings = settings
        self.slow_seconds = slow_seconds
        self.max_bytes = settings.max_upload_mb * (1 << 20)

    def check(self, item: FuzzInput, *, in_worker: bool, convert: bool = True) -> Checked:
        """Every stage's verdict on the input and on what it carries (in order)."""
        found, door = self._stage(
            "door",
            item.name,
            lambda: deliveries(item.name, item.data, max_bytes=self.max_bytes),
            Refused,
        )
        carried = [(d.label, d.data) for d in found or [] if d.refused is None]
        files = [(item.name, item.data), *[f for f in carried if f[1] != item.data][:MAX_CARRIED]]
        verdicts, converted = [door], 0
        for name, data in files:
            more, conversions = self._file(name, data, in_worker or item.heavy, convert)
            verdicts += more
            converted += conversions
            convert = convert and not conversions
        return Checked(item, verdicts, converted, in_worker or item.heavy)

    def _stage(
        self, stage: str, file: str, call: Callable[[], T], expected: type[CorpusError]
    ) -> tuple[T | None, Verdict]:
        """Run the door or the profile in-process: `expected` is the only error it may raise,
        and it has no limit of its own, so running past the parse time limit is a hang."""
        started = time.perf_counter()
        limit = self.settings.parse_timeout_seconds
        try:
            with _alarm(limit):
                result = call()
        except _Overtime as exc:
            seconds = time.perf_counter() - started
            return None, Verdict(
                stage, file, "hang", "", f"ran past {limit:g} s", _where(exc), seconds
            )
        except expected as exc:
            return None, _expected(stage, file, exc, time.perf_counter() - started)
        except Exception as exc:  # anything else is a crash
            return None, _unexpected(stage, file, exc, time.perf_counter() - started)
        return result, Verdict(stage, file, "ok", seconds=time.perf_counter() - started)

    def _file(
        self, name: str, data: bytes, in_worker: bool, convert: bool
    ) -> tuple[list[Verdict], int]:
        folder = self.workdir / "in"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        path = folder / safe_name(name)
        path.write_bytes(data)
        profiled, verdict = self._stage(
            "profile", name, lambda: profile_source(path, name, settings=self.settings), CorpusError
        )
        if profiled is None:
            return [verdict], 0
        profile = profiled.profile
        if profile.routing.strategy == "unsupported":
            return [verdict, Verdict("parse", name, "unrouted", message=profile.routing.reason)], 0
        if profile.needs_conversion and not convert:
            return [verdict, Verdict("parse", name, "skipped", message="conversion budget")], 0
        if in_worker or profile.needs_conversion:
            parsed = self._in_worker(name, profiled)
        else:
            parsed = self._in_process(name, profiled)
        return [verdict, parsed], int(profile.needs_conversion)

    def _in_process(self, name: str, profiled: Profiled) -> Verdict:
        started = time.perf_counter()
        document_id = "fuzz-" + profiled.profile.sha256[:12]
        try:
            with _alarm(self.slow_seconds):
                stages.run_parse(document_id, profiled, self.workdir / "out", self.settings)
        except _Overtime as exc:  # confirmed under the worker's real limit
            stuck = _where(exc)
            slow = self._in_worker(name, profiled)
            if slow.outcome == "hang":
                return Verdict(
                    "parse-worker", name, "hang", slow.error, slow.message, stuck, slow.seconds
                )
            if slow.outcome == "ok":
                return Verdict("parse", name, "slow", where=stuck, seconds=slow.seconds)
            return slow
        except StageFailedError as exc:
            return _unexpected("parse", name, exc, time.perf_counter() - started)
        except CorpusError as exc:
            return _expected("parse", name, exc, time.perf_counter() - started)
        except Exception as exc:  # a parser may raise only a CorpusError
            return _unexpected("parse", name, exc, time.perf_counter() - started)
        return Verdict("parse", name, "ok", seconds=time.perf_counter() - started)

    def _in_worker(self, name: str, profiled: Profiled) -> Verdict:
        started = time.perf_counter()
        document_id = "fuzz-" + profiled.profile.sha256[:12]
        try:
            run_parse_isolated(document_id, profiled, self.workdir / "out", self.settings)
        except ParseLimitError as exc:
            seconds = time.perf_counter() - started
            outcome = "hang" if exc.limit.endswith(" s") else "memory"
            return Verdict("parse-worker", name, outcome, type(exc).__name__, str(exc), "", seconds)
        except StageFailedError as exc:  # the worker's crash, or the worker itself died
            return _unexpected("parse-worker", name, exc, time.perf_counter() - started)
        except CorpusError as exc:
            return _expected("parse-worker", name, exc, time.perf_counter() - started)
        return Verdict("parse-worker", name, "ok", seconds=time.perf_counter() - started)


# -- a run over one format ------------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzConfig:
    """`inputs` (a count, for CI) or `seconds` (a time budget) per format, whichever ends first."""

    seed: int = 40
    inputs: int | None = None
    seconds: float | None = None
    worker_every: int = 10
    conversions: int = 2


@dataclass
class Finding:
    """One distinct bug: its first verdict and input, and how many inputs hit it."""

    verdict: Verdict
    item: FuzzInput
    count: int = 1
    regression: str = ""


@dataclass
class FormatRun:
    target: Target
    seeds: list[str]
    seed_problems: list[str]
    inputs: int = 0
    worker_inputs: int = 0
    conversions: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    findings: dict[str, Finding] = field(default_factory=dict)
    # Inputs whose parse was stopped at the memory limit, by signature (not findings).
    limited: dict[str, Finding] = field(default_factory=dict)
    seconds: float = 0.0


def fuzz_format(
    target: Target,
    seeds: SeedSet,
    config: FuzzConfig,
    checker: Checker,
    on_finding: Callable[[Finding], None] | None = None,
) -> FormatRun:
    """Inputs 0, 1, 2, ... of a format until its budget ends; nothing without a seed."""
    run = FormatRun(target, [s.origin or s.name for s in seeds.seeds], list(seeds.problems))
    if not seeds.seeds:
        return run
    started = time.perf_counter()
    while _within(config, run.inputs, time.perf_counter() - started):
        item = fuzz_input(target.format, seeds.seeds, config.seed, run.inputs)
        every = config.worker_every
        in_worker = every > 0 and run.inputs % every == every - 1
        checked = checker.check(
            item, in_worker=in_worker, convert=run.conversions < config.conversions
        )
        run.inputs += 1
        run.worker_inputs += checked.in_worker
        run.conversions += checked.converted
        run.outcomes.update(f"{v.stage}:{v.outcome}" for v in checked.verdicts)
        for verdict in checked.limited:
            _tally(run.limited, verdict, item)
        for verdict in checked.findings:
            finding = _tally(run.findings, verdict, item)
            if finding.count == 1 and on_finding is not None:
                on_finding(finding)
    run.seconds = time.perf_counter() - started
    return run


def _tally(known: dict[str, Finding], verdict: Verdict, item: FuzzInput) -> Finding:
    """The finding of the verdict's signature, counted once more (new on its first input)."""
    finding = known.get(verdict.signature)
    if finding is None:
        finding = known[verdict.signature] = Finding(verdict, item, count=0)
    finding.count += 1
    return finding


def _within(config: FuzzConfig, done: int, elapsed: float) -> bool:
    if config.inputs is not None and done >= config.inputs:
        return False
    return config.seconds is None or elapsed < config.seconds


# -- regression files -----------------------------------------------------------------------------


def regression_name(item: FuzzInput) -> str:
    """`<format>-<sha256 prefix>.<extension of the delivered name>` (the extension keeps the
    sniffing the same)."""
    extension = Path(item.name).suffix.lower().lstrip(".") or "bin"
    return f"{item.format.value}-{item.sha[:10]}.{extension}"


def save_regression(item: FuzzInput, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / regression_name(item)
    path.write_bytes(item.data)
    return path


def regression_input(path: Path) -> FuzzInput:
    """A regression file as an input, delivered under its own name."""
    fmt = FileFormat(path.name.rsplit("-", 1)[0])
    return FuzzInput(fmt, -1, path.name, path.read_bytes(), "regression", path.name)


def shrink(checker: Checker, finding: Finding, tries: int = 48) -> FuzzInput:
    """A smaller input that still gives the finding's signature: halves, then quarters, ...
    of the bytes cut out while that holds (few `tries`, each a full check)."""
    item, signature = finding.item, finding.verdict.signature
    chunk = len(item.data) // 2
    while tries > 0 and chunk >= 64:
        reduced = False
        for start in range(0, len(item.data), chunk):
            if tries <= 0:
                break
            tries -= 1
            smaller = item.data[:start] + item.data[start + chunk :]
            candidate = FuzzInput(
                item.format, item.index, item.name, smaller, item.mutation, item.origin
            )
            checked = checker.check(candidate, in_worker=finding.item.heavy)
            if any(v.signature == signature for v in checked.findings):
                item, reduced = candidate, True
                break
        if not reduced:
            chunk //= 2
    return item
