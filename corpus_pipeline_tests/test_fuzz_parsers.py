"""Every parser fuzzed for a short, fixed budget: whatever bytes arrive, the door admits or
refuses them, and the profile and the routed parser succeed or fail with an error that names
the problem; nothing crashes, hangs past the parse time limit or outgrows the memory limit.

The formats are the router's (`benchmarks.harness.fuzz.targets`), so a format added to it is
fuzzed here without a change, and fails here until it has a seed. The engine is shared with
`python -m benchmarks.fuzz_parsers` (the long run, which writes each crash it finds to
`regressions/fuzz/`); the inputs come from a fixed seed, so a failure names the input that
reproduces it. Every regression file keeps going through the same checks.
"""

from __future__ import annotations

import io
import traceback
import zipfile
from pathlib import Path
from random import Random
from typing import Any

import pytest

from benchmarks.harness import SHARED_CORPUS
from benchmarks.harness.fuzz import (
    Checked,
    Checker,
    Finding,
    FuzzConfig,
    Target,
    fuzz_format,
    fuzz_input,
    fuzz_settings,
    regression_input,
    seed_sets,
    stack_top,
    targets,
)
from benchmarks.harness.fuzz_mutations import zip_member
from benchmarks.harness.fuzz_seeds import Seed, odt_seeds
from corpus_pipeline.contracts import FileFormat
from corpus_pipeline.pipeline import processes
from corpus_pipeline.pipeline.isolation import run_parse_isolated
from corpus_pipeline.profiling import profile_source
from corpus_pipeline.profiling.sniff import sniff_format

# Inputs that once crashed a parser, the door or the profile (README there).
REGRESSIONS = Path(__file__).parent / "regressions" / "fuzz"

TARGETS = targets()
CI = FuzzConfig(seed=40, inputs=12, worker_every=4, conversions=1)
SHARED_MAX_BYTES = 64 * 1024


@pytest.fixture(scope="module")
def checker(tmp_path_factory: pytest.TempPathFactory) -> Checker:
    processes.start_forkserver()
    folder = tmp_path_factory.mktemp("fuzz")
    settings = fuzz_settings(folder / "home", timeout=30, memory_mb=1024)
    return Checker(folder / "work", settings, slow_seconds=10)


def _describe(findings: list[Finding], seed: int) -> list[str]:
    return [
        f"{f.verdict.outcome} in {f.verdict.stage} of {f.verdict.file}: {f.verdict.error} "
        f"{f.verdict.message!r} at {f.verdict.where} (format {f.item.format.value}, seed {seed}, "
        f"input {f.item.index}, {f.item.mutation}; x{f.count})"
        for f in findings
    ]


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.format.value)
def test_fuzzed_files_are_parsed_or_refused_by_name_never_crash(
    target: Target, checker: Checker
) -> None:
    seeds = seed_sets([target.format], SHARED_CORPUS / "docs", SHARED_MAX_BYTES)[target.format]
    assert seeds.seeds, f"no seed for {target.format.value}: {seeds.problems}"

    run = fuzz_format(target, seeds, CI, checker)

    assert run.inputs == CI.inputs
    assert _describe(list(run.findings.values()), CI.seed) == []


def _refusals(checked: Checked) -> list[str]:
    return [f"{v.stage}: {v.message}" for v in checked.verdicts if v.outcome != "ok"]


@pytest.mark.slow
@pytest.mark.parametrize("target", [t for t in TARGETS if t.routed], ids=lambda t: t.format.value)
def test_every_seed_is_admitted_and_parsed(target: Target, checker: Checker) -> None:
    """The seeds are valid files of their format, so mutations start from what a parser reads."""
    seeds = seed_sets([target.format], None, 0)[target.format]
    assert seeds.seeds, f"no seed for {target.format.value}: {seeds.problems}"
    for index, seed in enumerate(seeds.seeds):
        item = fuzz_input(target.format, seeds.seeds, CI.seed, index)

        checked = checker.check(item, in_worker=False)

        assert (seed.name, _refusals(checked)) == (seed.name, [])


def test_an_input_is_the_same_for_the_same_seed_and_index() -> None:
    seeds = odt_seeds()

    first = [fuzz_input(FileFormat.ODT, seeds, 40, i) for i in range(1, 30)]
    again = [fuzz_input(FileFormat.ODT, seeds, 40, i) for i in range(1, 30)]
    other = [fuzz_input(FileFormat.ODT, seeds, 41, i) for i in range(1, 30)]

    assert [i.data for i in first] == [i.data for i in again]
    assert [i.data for i in first] != [i.data for i in other]
    assert all(i.mutation != "none" for i in first)


def test_the_seeds_come_first_and_unchanged() -> None:
    seeds = [Seed("a.md", b"# A\n\ntext\n"), Seed("b.md", b"# B\n\nmore\n")]

    items = [fuzz_input(FileFormat.MARKDOWN, seeds, 40, i) for i in range(3)]

    assert [(i.data, i.mutation) for i in items[:2]] == [(s.data, "none") for s in seeds]
    assert items[2].mutation != "none"


def test_a_damaged_member_leaves_the_package_readable() -> None:
    """The package mutations reach the parser: the zip opens, one member differs."""
    seed = odt_seeds()[0].data
    with zipfile.ZipFile(io.BytesIO(seed)) as archive:
        before = {n: archive.read(n) for n in archive.namelist()}

    damaged = zip_member(Random("40:odt:7"), seed, [])

    with zipfile.ZipFile(io.BytesIO(damaged)) as archive:
        after = {n: archive.read(n) for n in archive.namelist()}
    assert sorted(after) == sorted(before)
    assert sum(after[n] != before[n] for n in before) == 1
    assert sniff_format(damaged, "odt").format is FileFormat.ODT


def test_a_crash_is_placed_at_the_deepest_product_frame() -> None:
    with pytest.raises(AttributeError) as caught:
        sniff_format(None, "txt")  # type: ignore[arg-type]
    frames = traceback.extract_tb(caught.value.__traceback__)

    where = stack_top([(f.filename, f.lineno or 0, f.name) for f in frames])

    assert where.startswith("corpus_pipeline/profiling/sniff.py:")
    assert " in sniff_format" in where


def _regression_files() -> list[Path]:
    return sorted(p for p in REGRESSIONS.glob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", _regression_files(), ids=lambda p: p.name)
def test_a_file_that_once_crashed_a_parser_is_now_parsed_or_refused(
    path: Path, checker: Checker
) -> None:
    item = regression_input(path)

    in_process = checker.check(item, in_worker=False)
    in_worker = checker.check(item, in_worker=True)

    # A small file stopped at the memory limit is a bug too: a span or repeat count taken at
    # its word (a decompression bomb stays out of this folder).
    found = [*in_process.findings, *in_worker.findings, *in_worker.limited]
    assert [f"{v.stage}: {v.outcome} {v.error} {v.message!r} at {v.where}" for v in found] == []


def _striped_scan(path: Path) -> Path:
    """A4 scanned at 300 dpi, all thin diagonal stripes (a period of 11 pixels over rows of
    2480): Tesseract runs for minutes on it (over 400 s measured on the damaged scan stream the
    fuzz run found, which decodes to such stripes)."""
    import pymupdf
    from PIL import Image

    width, height, period = 2480, 3508, 11
    row = bytes(255 if i < period // 2 else 0 for i in range(period))
    pixels = (row * (width * height // period + 1))[: width * height]
    buffer = io.BytesIO()
    Image.frombytes("L", (width, height), pixels).save(buffer, "PNG")
    mu: Any = pymupdf  # only partly annotated
    doc = mu.open()
    page = doc.new_page()
    page.insert_image(page.rect, stream=buffer.getvalue())
    doc.save(path)
    return path


@pytest.mark.slow
def test_a_page_ocr_cannot_read_in_time_loses_its_text_the_document_is_still_parsed(
    tmp_path: Path, checker: Checker
) -> None:
    settings = fuzz_settings(tmp_path / "home", timeout=30, memory_mb=2048)
    path = _striped_scan(tmp_path / "stripes.pdf")
    profiled = profile_source(path, "stripes.pdf", settings=settings)

    parsed = run_parse_isolated("stripes", profiled, tmp_path / "out", settings)

    failed = [d for d in parsed.diagnostics if d.code == "ocr.failed"]
    assert [(d.page, d.exception) for d in failed] == [(1, "RuntimeError")]
