"""Agentic search as an agent reads it, next to classic search, on every question set, in one run.

The user's path: each set's documents go into their own CORPUS_HOME through `corpus ingest`
(Dagster assets and checks, one published revision; a document that fails stays in the question
set, its questions are misses), then every question goes to `corpus serve` over HTTP as
`POST /v1/search`: classic (top 10), and agentic (rule planner, no model, top 10) at budgets
512 / 1,000 / 2,000 / 4,000 / 8,000 / 16,000 tokens.

Sets:
- `dev`: the development corpus (`../shared/corpus`, 40 questions with answer strings: a result
  hits when its text holds one, the rule of the corpus's `score_search.py`);
- `questions`, `finance`: the real-world store (`../shared/realworld`, 117 PDFs; 199 and 100
  questions, page-exact: the rule of its `score_pages.py`); `questions single document`: the
  199 asked each with `filters.document_ids` = its document (the setting they were written for);
- `financebench`, `financebench single document`: `../shared/financebench_dev` (33 filings, 61
  analysts' questions, page-exact), in the shared store and with `filters.document_ids` = the
  question's document (its single-document setting).

Agentic search is scored on its primary answer alone: `results` in the order returned, each
citation's pages (and, for answer strings, its passage's text: its span of `evidence_text`).
Per set and budget: page-hit@1 / @5 / @10, evidence recall (any passage of the answer hits),
empty answers, the share of the response's tokens that is `evidence_text`, evidence tokens, and
latency; each also per half (documents split by a stable hash of the file name, as
`realworld_quality` does: `tuned` and `held out`).

On the development store, besides: latency over HTTP of classic and agentic (8,000) requests
alternating, the answer cache off; and the MCP payload, as the official client receives it over
streamable HTTP, of a top-10 `search` and an 8,000-token `agentic_search` (tokens of the tool's
text).

Targets (issue 47, budget 8,000): agentic ≥ classic at @1, @5 and @10 on `questions`, `finance`
and `financebench`; evidence ≥ 70 % of the response's tokens at 2,000 and 8,000, ≥ 50 % at
1,000; no empty primary answer at 1,000 and 8,000 where classic answers; agentic p50 ≤ 60 ms
and p95 ≤ 250 ms on the development store; evidence recall ≥ classic hit@10 + 0.05 (reported).

Writes benchmarks/results/agentic_quality.json and prints the tables.
Run: `python -m benchmarks.agentic_quality [--homes DIR [--reuse]] [--sets dev,questions,…]`
(`--reuse` asks already ingested homes `DIR/<set>` without ingesting again).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from benchmarks.harness import (
    REALWORLD,
    RESULTS,
    SHARED,
    SHARED_CORPUS,
    corpus_passwords,
    half_of,
    ingest_folder,
    load_script,
    log,
    machine_facts,
    percentile,
    search_client,
    write_json,
)
from corpus_pipeline.contracts.agentic import AgenticResponse
from corpus_pipeline.enrich.tokens import count_tokens

FINANCEBENCH = SHARED / "financebench_dev"
BUDGETS = (512, 1000, 2000, 4000, 8000, 16000)
TARGET_BUDGET = 8000
TOP_K = 10
LATENCY_ROUNDS = 3
Row = dict[str, Any]


@dataclass(frozen=True)
class QuestionSet:
    name: str
    store: str  # the home it is asked in
    docs: Path
    questions: Path
    rule: str  # "answers" or "pages"
    single_document: bool = False


SETS = (
    QuestionSet(
        "dev", "corpus", SHARED_CORPUS / "docs", SHARED_CORPUS / "questions.jsonl", "answers"
    ),
    QuestionSet(
        "questions", "realworld", REALWORLD / "docs", REALWORLD / "questions.jsonl", "pages"
    ),
    QuestionSet(
        "questions single document",
        "realworld",
        REALWORLD / "docs",
        REALWORLD / "questions.jsonl",
        "pages",
        single_document=True,
    ),
    QuestionSet(
        "finance", "realworld", REALWORLD / "docs", REALWORLD / "finance_questions.jsonl", "pages"
    ),
    QuestionSet(
        "financebench",
        "financebench",
        FINANCEBENCH / "docs",
        FINANCEBENCH / "questions.jsonl",
        "pages",
    ),
    QuestionSet(
        "financebench single document",
        "financebench",
        FINANCEBENCH / "docs",
        FINANCEBENCH / "questions.jsonl",
        "pages",
        single_document=True,
    ),
)


# -- relevance, as the sets' own scorers judge it --------------------------------------------------


def _scorers() -> tuple[Any, Any]:
    return load_script(SHARED_CORPUS / "score_search.py"), load_script(REALWORLD / "score_pages.py")


def first_hit(q: Row, lines: Sequence[Row], rule: str, scorers: tuple[Any, Any]) -> int | None:
    """1-based rank of the first line the set's scorer counts as a hit (no cut-off)."""
    answers_scorer, pages_scorer = scorers
    for rank, line in enumerate(lines, 1):
        name = line.get("source_file_name")
        if rule == "answers":
            text = answers_scorer.norm(line.get("content", ""))
            if answers_scorer.same_doc(name, q["doc"]) and any(
                answers_scorer.norm(a) in text for a in q["answers"]
            ):
                return rank
        elif pages_scorer.same_doc(name, q["doc"]) and pages_scorer.pages_of(
            line.get("pages")
        ) & set(q["pages"]):
            return rank
    return None


def classic_lines(payload: Row) -> list[Row]:
    return [
        {k: r[k] for k in ("content", "source_file_name", "pages", "section_path")}
        for r in payload["results"]
    ]


def agentic_lines(response: AgenticResponse) -> list[Row]:
    """The primary answer: the results in order, each with its passage's text."""
    return [
        {
            "content": text,
            "source_file_name": c.source_file_name,
            "pages": c.pages,
            "section_path": c.section_path,
        }
        for c, text in response.passages()
    ]


# -- asking -------------------------------------------------------------------------------------


def ask_set(client: httpx.Client, qs: QuestionSet, scorers: tuple[Any, Any]) -> Row:
    """Every question of the set, classic and agentic at every budget; per-question rows."""
    questions = [json.loads(line) for line in qs.questions.read_text().splitlines() if line.strip()]
    ids: dict[str, str] = {}
    if qs.single_document:
        listed = client.get("/v1/documents", params={"limit": 500}).json()["items"]
        ids = {d["source_file_name"]: d["document_id"] for d in listed}
    rows: list[Row] = []
    for q in questions:
        body: Row = {"query": q["question"], "top_k": TOP_K}
        if qs.single_document:
            if q["doc"] not in ids:  # not ingested: a miss in every system
                rows.append({"id": q["id"], "doc": q["doc"], "missing": True})
                continue
            body["filters"] = {"document_ids": [ids[q["doc"]]]}
        row: Row = {
            "id": q["id"],
            "doc": q["doc"],
            "half": half_of(q["doc"]),
            "kind": q.get("kind"),
            "doc_type": q.get("doc_type"),
        }
        started = time.perf_counter()
        classic = client.post("/v1/search", json=body)
        classic.raise_for_status()
        row["classic"] = {
            "rank": first_hit(q, classic_lines(classic.json()), qs.rule, scorers),
            "ms": (time.perf_counter() - started) * 1000,
            "empty": not classic.json()["results"],
        }
        for budget in BUDGETS:
            started = time.perf_counter()
            answer = client.post(
                "/v1/search", json={**body, "mode": "agentic", "token_budget": budget}
            )
            took = (time.perf_counter() - started) * 1000
            if answer.status_code == 422:  # refused (the budget holds not even the frame)
                row[str(budget)] = {"rank": None, "empty": True, "refused": True, "ms": took}
                continue
            answer.raise_for_status()
            response = AgenticResponse.model_validate_json(answer.content)
            lines = agentic_lines(response)
            ranks = [first_hit(q, [line], qs.rule, scorers) for line in lines]
            row[str(budget)] = {
                "rank": first_hit(q, lines, qs.rule, scorers),
                "recall": any(r is not None for r in ranks),
                "empty": not response.results,
                "evidence_tokens": count_tokens(response.evidence_text),
                "response_tokens": count_tokens(answer.text),
                "passages": len(response.results),
                "stop_reason": response.stop_reason,
                "ms": took,
            }
        rows.append(row)
    return {"questions": rows}


def summary(rows: Sequence[Row], system: str) -> Row:
    n = len(rows)
    got = [r.get(system, {}) for r in rows]
    ranks = [g.get("rank") for g in got]
    out: Row = {"n": n}
    for k in (1, 5, 10):
        out[f"hit@{k}"] = round(sum(1 for x in ranks if x is not None and x <= k) / n, 3)
    if system == "classic":
        out["recall"] = out["hit@10"]
        out["empty"] = sum(1 for g in got if g.get("empty", True))
    else:
        out["recall"] = round(sum(1 for g in got if g.get("recall")) / n, 3)
        out["empty"] = sum(1 for g in got if g.get("empty", True))
        # The share of evidence in the responses that hold any (where nothing matches, the
        # response is its frame alone, as classic's is an empty list).
        answered = [g for g in got if g.get("response_tokens") and not g.get("empty")]
        if answered:
            shares = [g["evidence_tokens"] / g["response_tokens"] for g in answered]
            out["evidence_share_mean"] = round(statistics.fmean(shares), 3)
            out["evidence_share_min"] = round(min(shares), 3)
            out["evidence_tokens_mean"] = round(
                statistics.fmean(g["evidence_tokens"] for g in answered)
            )
            out["response_tokens_mean"] = round(
                statistics.fmean(g["response_tokens"] for g in answered)
            )
    took = [g["ms"] for g in got if "ms" in g]
    if took:
        out["p50_ms"] = round(percentile(took, 50), 1)
        out["p95_ms"] = round(percentile(took, 95), 1)
    return out


def summarize(asked: Row) -> Row:
    rows = [r for r in asked["questions"] if not r.get("missing")]
    missing = [r for r in asked["questions"] if r.get("missing")]
    systems = ["classic", *(str(b) for b in BUDGETS)]
    groups: Row = {}
    for group, kept in (
        ("all", [*rows, *missing]),
        ("tuned", [r for r in rows if r.get("half") == "tuned"]),
        ("held out", [r for r in rows if r.get("half") == "held out"]),
    ):
        if kept:
            groups[group] = {s: summary(kept, s) for s in systems}
    # By question kind and document type (classic and agentic at 8,000): where each stands.
    for field, label in (("kind", "kind"), ("doc_type", "type")):
        for value in sorted({r[field] for r in rows if r.get(field)}):
            kept = [r for r in rows if r.get(field) == value]
            groups[f"{label}: {value}"] = {s: summary(kept, s) for s in ("classic", "8000")}
    return groups


# -- latency and MCP on the development store ------------------------------------------------------


def latency(client: httpx.Client, questions: Sequence[Row]) -> Row:
    """Classic and agentic (8,000) alternating over every question, LATENCY_ROUNDS times (the
    answer cache is off, so every request is searched)."""
    times: dict[str, list[float]] = {"classic": [], "agentic": []}
    for round_ in range(LATENCY_ROUNDS + 1):
        for i, q in enumerate(questions):
            order = ("classic", "agentic") if (i + round_) % 2 else ("agentic", "classic")
            for system in order:
                body: Row = {"query": q["question"], "top_k": TOP_K}
                if system == "agentic":
                    body |= {"mode": "agentic", "token_budget": TARGET_BUDGET}
                started = time.perf_counter()
                client.post("/v1/search", json=body).raise_for_status()
                if round_:  # the first round warms the revision's caches
                    times[system].append((time.perf_counter() - started) * 1000)
    return {
        s: {
            "requests": len(t),
            "p50_ms": round(percentile(t, 50), 1),
            "p95_ms": round(percentile(t, 95), 1),
        }
        for s, t in times.items()
    }


def mcp_payload(url: str, key: str, questions: Sequence[Row]) -> Row:
    """Tokens of the tools' text as the official MCP client receives it, and of the document
    text in it (`evidence_text`), per question."""
    sizes: dict[str, list[int]] = {"search top 10": [], "agentic_search 8000": []}
    document_text: dict[str, list[int]] = {name: [] for name in sizes}

    async def main() -> None:
        async with (
            httpx2.AsyncClient(headers={"X-API-Key": key}, timeout=60) as http,
            Client(streamable_http_client(f"{url}/mcp/", http_client=http)) as client,
        ):
            for q in questions:
                for name, tool, arguments in (
                    ("search top 10", "search", {"query": q["question"], "top_k": TOP_K}),
                    (
                        "agentic_search 8000",
                        "agentic_search",
                        {"query": q["question"], "token_budget": TARGET_BUDGET},
                    ),
                ):
                    result = await client.call_tool(tool, arguments)
                    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
                    sizes[name].append(count_tokens(text))
                    document_text[name].append(
                        count_tokens(json.loads(text).get("evidence_text", ""))
                    )

    anyio.run(main)
    return {
        name: {
            "tokens_mean": round(statistics.fmean(v)),
            "tokens_max": max(v),
            "evidence_tokens_mean": round(statistics.fmean(document_text[name])),
        }
        for name, v in sizes.items()
    }


# -- the run ------------------------------------------------------------------------------------


def store_home(homes: Path, store: str, reuse: bool) -> tuple[Path, Row]:
    home = homes / store
    if reuse:
        return home, {"reused": True}
    docs = {"corpus": SHARED_CORPUS / "docs", "realworld": REALWORLD / "docs"}.get(
        store, FINANCEBENCH / "docs"
    )
    passwords = corpus_passwords(SHARED_CORPUS) if store == "corpus" else None
    started = time.perf_counter()
    ingested = ingest_folder(docs, home, passwords)
    if ingested.pointer is None or ingested.publish_error:
        raise RuntimeError(f"{store}: nothing published: {ingested.publish_error}")
    return home, {
        "documents": len(ingested.results),
        "ingested": len(ingested.ok),
        "failed_documents": ingested.failed,
        "seconds": round(time.perf_counter() - started, 1),
    }


def run(homes: Path, reuse: bool, wanted: Sequence[str]) -> Row:
    scorers = _scorers()
    result: Row = {"stores": {}, "sets": {}}
    sets = [s for s in SETS if s.name in wanted]
    for store in dict.fromkeys(s.store for s in sets):
        home, facts = store_home(homes, store, reuse)
        result["stores"][store] = facts
        with search_client(home, answer_cache=False) as client:
            for qs in (s for s in sets if s.store == store):
                log(f"{qs.name}: classic and agentic at {len(BUDGETS)} budgets")
                asked = ask_set(client, qs, scorers)
                result["sets"][qs.name] = {"summary": summarize(asked), **asked}
            if store == "corpus":
                questions = [
                    json.loads(line)
                    for line in (SHARED_CORPUS / "questions.jsonl").read_text().splitlines()
                    if line.strip()
                ]
                log("dev store: latency over HTTP, MCP payloads")
                result["latency"] = latency(client, questions)
                key = client.headers["Authorization"].removeprefix("Bearer ")
                result["mcp"] = mcp_payload(str(client.base_url).rstrip("/"), key, questions)
    return result


def targets(result: Row) -> Row:
    out: Row = {}
    b = str(TARGET_BUDGET)
    for name in ("questions", "finance", "financebench"):
        if name in result["sets"]:
            s = result["sets"][name]["summary"]["all"]
            out[f"{name}: agentic >= classic at @1/@5/@10"] = {
                "met": all(s[b][f"hit@{k}"] >= s["classic"][f"hit@{k}"] for k in (1, 5, 10))
            }
            out[f"{name}: evidence recall >= classic hit@10 + 0.05"] = {
                "recall": s[b]["recall"],
                "classic_hit@10": s["classic"]["hit@10"],
                # Where classic's top 10 already holds every gold page, recall cannot be higher.
                "met": s[b]["recall"] >= min(1.0, s["classic"]["hit@10"] + 0.05),
            }
    for budget, least in ((1000, 0.5), (2000, 0.7), (8000, 0.7)):
        shares = {
            name: data["summary"]["all"][str(budget)].get("evidence_share_mean")
            for name, data in result["sets"].items()
        }
        out[f"evidence share at {budget} >= {least}"] = {
            "shares": shares,
            "met": all(v is not None and v >= least for v in shares.values()),
        }
    for budget in (1000, 8000):
        empty = {
            name: sum(
                1
                for r in data["questions"]
                if not r.get("missing") and not r["classic"]["empty"] and r[str(budget)]["empty"]
            )
            for name, data in result["sets"].items()
        }
        out[f"no empty answer at {budget} where classic answers"] = {
            "empty": empty,
            "met": not any(empty.values()),
        }
    if "latency" in result:
        agentic = result["latency"]["agentic"]
        out["agentic p50 <= 60 ms and p95 <= 250 ms (dev store, HTTP)"] = {
            **agentic,
            "met": agentic["p50_ms"] <= 60 and agentic["p95_ms"] <= 250,
        }
    return out


def print_report(result: Row) -> None:
    for name, data in result["sets"].items():
        print(f"\n## {name}\n")
        print(
            "| group | system | hit@1 | hit@5 | hit@10 | recall | empty | evidence share | ms p50 |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for group, systems in data["summary"].items():
            for system, s in systems.items():
                label = system if system == "classic" else f"agentic {system}"
                print(
                    f"| {group} | {label} | {s['hit@1']:.3f} | {s['hit@5']:.3f} | "
                    f"{s['hit@10']:.3f} | {s['recall']:.3f} | {s['empty']} | "
                    f"{s.get('evidence_share_mean', '-')} | {s.get('p50_ms', '-')} |"
                )
    if "latency" in result:
        print(f"\nlatency (dev store, HTTP): {json.dumps(result['latency'])}")
        print(f"MCP payloads (dev store): {json.dumps(result['mcp'])}")
    print("\n## Targets\n")
    for name, target in result["targets"].items():
        print(f"- {name}: {json.dumps(target)}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--homes", type=Path, default=None, help="a home per store under DIR")
    ap.add_argument("--reuse", action="store_true", help="ask --homes without ingesting")
    ap.add_argument("--sets", default=",".join(s.name for s in SETS))
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.reuse and args.homes is None:
        ap.error("--reuse needs --homes")
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    started = time.perf_counter()
    result: Row = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_facts(),
        "budgets": list(BUDGETS),
        "path": "corpus ingest → corpus serve → POST /v1/search (answer cache off); agentic "
        "scored on its primary answer (results in order)",
    }
    with tempfile.TemporaryDirectory() as tmp:
        result |= run(args.homes or Path(tmp), args.reuse, wanted)
    result["targets"] = targets(result)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    out = write_json(args.out / "agentic_quality.json", result)
    print_report(result)
    print(f"\nwritten: {out} ({result['total_seconds']}s)")


if __name__ == "__main__":
    main()
