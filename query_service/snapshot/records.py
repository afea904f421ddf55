"""Append-only run and step records of agentic searches.

Each run is written once as its own Parquet file under `<CORPUS_HOME>/runs/<namespace>/`
(a dataset readable with polars/pyarrow); nothing is ever updated in place.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

RECORD_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("record_type", pa.string()),
        ("step_id", pa.string()),
        ("action", pa.string()),
        ("inputs", pa.string()),
        ("outputs", pa.string()),
        ("latency_ms", pa.float64()),
        ("tokens", pa.int64()),
        ("model", pa.string()),
        ("error", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)


@dataclass
class RunRecorder:
    runs_dir: Path
    namespace: str
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(
        self,
        record_type: str,
        action: str,
        *,
        step_id: str = "",
        inputs: Any = None,
        outputs: Any = None,
        latency_ms: float = 0.0,
        tokens: int = 0,
        model: str = "",
        error: str | None = None,
    ) -> None:
        self.rows.append(
            {
                "run_id": self.run_id,
                "record_type": record_type,
                "step_id": step_id,
                "action": action,
                "inputs": json.dumps(inputs, default=str, ensure_ascii=False),
                "outputs": json.dumps(outputs, default=str, ensure_ascii=False),
                "latency_ms": round(latency_ms, 3),
                "tokens": tokens,
                "model": model,
                "error": error,
                "created_at": datetime.now(UTC),
            }
        )

    def write(self) -> Path:
        """Write this run's records as a new file (never touching earlier runs)."""
        folder = self.runs_dir / self.namespace
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        path = folder / f"run-{stamp}-{self.run_id}.parquet"
        tmp = folder / f".{path.name}.tmp"
        pq.write_table(pa.Table.from_pylist(self.rows, schema=RECORD_SCHEMA), tmp)
        tmp.rename(path)
        return path


def read_runs(runs_dir: Path, namespace: str | None = None) -> pa.Table:
    folders = (
        [runs_dir / namespace]
        if namespace
        else [p for p in runs_dir.iterdir() if p.is_dir()]
        if runs_dir.is_dir()
        else []
    )
    files = sorted(f for folder in folders if folder.is_dir() for f in folder.glob("run-*.parquet"))
    if not files:
        return RECORD_SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(f) for f in files])
