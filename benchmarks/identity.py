"""Document identity after a real ingest: issuer, form, period end, fiscal year and quarter and
the primary trading symbol of every filing, against values read off the documents.

The 33 filings of `../shared/financebench_dev` (10-Ks, 10-Qs, 8-Ks, earnings releases) and the
20 10-Qs of `../shared/realworld` go whole through `corpus ingest` into one fresh home (or
`--home` reuses one that holds them); each stored manifest's `subject` is checked field by field
against `benchmarks/data/identity/filings.jsonl` (the test checks the same fields on
each document's first pages; this checks what the store holds, every page read).

Writes benchmarks/results/identity.json. Run: `python -m benchmarks.identity [--home DIR]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    REALWORLD,
    RESULTS,
    SHARED,
    ingest_folder,
    linked_inbox,
    log,
    machine_facts,
    write_json,
)
from corpus_pipeline.contracts import DocumentSubject
from corpus_pipeline.finance.subject import entity_key

TRUTH = Path(__file__).resolve().parent / "data" / "identity" / "filings.jsonl"
FOLDERS = (SHARED / "financebench_dev" / "docs", REALWORLD / "docs")
Row = dict[str, Any]
Check = Callable[[DocumentSubject, Row], bool]

# Each field as routing and filters use it: an issuer as questions name it (legal forms, case
# and punctuation aside); the primary symbol (the common stock's, listed first) where the
# document prints any.
CHECKS: dict[str, Check] = {
    "issuer": lambda s, t: entity_key(s.entity or "") == entity_key(t["issuer"]),
    "form": lambda s, t: (s.form_type or "").lower() == t["form"].lower(),
    "fiscal_year": lambda s, t: s.fiscal_year == t["fiscal_year"],
    "fiscal_quarter": lambda s, t: s.fiscal_quarter == t["fiscal_quarter"],
    "period_end": lambda s, t: s.period_end == t["period_end"],
    "ticker": lambda s, t: not t["tickers"] or t["tickers"][0] in s.tickers,
}
# Issuer, form, fiscal year and quarter: what routing and filters rely on.
CORE = ("issuer", "form", "fiscal_year", "fiscal_quarter")


def truth() -> list[Row]:
    return [json.loads(line) for line in TRUTH.read_text(encoding="utf-8").splitlines()]


def stored_subjects(home: Path) -> dict[str, DocumentSubject]:
    """Source file name → the subject its stored manifest holds."""
    out: dict[str, DocumentSubject] = {}
    for manifest in sorted((home / "artifacts").glob("*/manifest.json")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        out[data["source_file_name"]] = DocumentSubject.model_validate(data.get("subject") or {})
    return out


def ingest(home: Path) -> Row:
    """The truth's files through `corpus ingest` (one folder of links to them)."""
    files = [next(f / t["file"] for f in FOLDERS if (f / t["file"]).is_file()) for t in truth()]
    inbox = linked_inbox(files, home.parent / f"{home.name}-inbox")
    started = time.perf_counter()
    done = ingest_folder(inbox, home)
    return {
        "documents": len(done.results),
        "failed": done.failed,
        "seconds": round(time.perf_counter() - started, 1),
    }


def check(home: Path) -> Row:
    subjects = stored_subjects(home)
    rows: list[Row] = []
    for t in truth():
        subject = subjects.get(t["file"])
        got = subject or DocumentSubject()
        rows.append(
            {
                "file": t["file"],
                "form": t["form"],
                "stored": subject is not None,
                "right": {f: subject is not None and c(got, t) for f, c in CHECKS.items()},
                "got": {
                    "issuer": got.entity,
                    "form": got.form_type,
                    "period_end": got.period_end,
                    "fiscal_year": got.fiscal_year,
                    "fiscal_quarter": got.fiscal_quarter,
                    "tickers": got.tickers[:3],
                },
            }
        )
    fields = {f: sum(r["right"][f] for r in rows) for f in CHECKS}
    core = sum(fields[f] for f in CORE)
    by_form: dict[str, Row] = {}
    for r in rows:
        group = by_form.setdefault(r["form"], {"documents": 0, **dict.fromkeys(CHECKS, 0)})
        group["documents"] += 1
        for f in CHECKS:
            group[f] += r["right"][f]
    return {
        "documents": len(rows),
        "fields_right": fields,
        "core_right": core,
        "core_checked": len(rows) * len(CORE),
        "core_share": round(core / (len(rows) * len(CORE)), 3),
        "by_form": by_form,
        "wrong": [
            {"file": r["file"], "fields": [f for f, ok in r["right"].items() if not ok], **r["got"]}
            for r in rows
            if not all(r["right"].values())
        ],
        "target": {"core_share >= 0.97": core / (len(rows) * len(CORE)) >= 0.97},
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--home", type=Path, default=None, help="a home that holds the filings")
    ap.add_argument("--out", type=Path, default=RESULTS / "identity.json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home or Path(tmp) / "home"
        facts = {"reused": str(home)} if args.home else ingest(home)
        log(f"checking {len(truth())} documents")
        result = {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": machine_facts(),
            "ingest": facts,
            **check(home),
        }
    write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("fields_right", "core_share", "wrong")}, indent=1))


if __name__ == "__main__":
    main()
