"""``parsed.parquet``: a run's samples with their parsed answers, for the run key in run.json.

Generic columns: ``answer`` (the task's parsed answer as JSON text; null = nothing parsed),
``tier``, ``reason``, ``error``, ``text``; then the task's own flat columns in its declared dtypes
(the forecast task: ``pred`` float64, ``pred_in_range``). Samples without a record are absent
(an unfinished run), not failures: scoring counts them apart.
"""

from __future__ import annotations

import json

import pandas as pd

from candlebench.io import write_parquet
from candlebench.layout import RunPaths
from inference.records import RecordStore, ResponseRecord
from inference.run_info import RunInfo
from tasks.base import Task

GENERIC = ("answer", "tier", "reason", "error", "text")


def parsed_table(samples: pd.DataFrame, records: list[ResponseRecord], key: str, task: Task) -> pd.DataFrame:
    own = [c.name for c in task.columns]
    rows = pd.DataFrame(
        [
            {
                "sample_id": r.sample_id,
                **{c: r.columns.get(c) for c in own},
                "answer": None if r.answer is None else json.dumps(r.answer, ensure_ascii=False),
                "tier": r.tier,
                "reason": r.reason,
                "error": r.error,
                "text": r.text,
            }
            for r in records
            if r.run_key == key
        ],
        columns=["sample_id", *own, *GENERIC],
    )
    table = samples.merge(rows, on="sample_id", how="inner")
    table = table.astype({c.name: c.dtype for c in task.columns})
    return table.sort_values("sample_id").reset_index(drop=True)


def finalize_run(run: RunPaths, samples: pd.DataFrame, task: Task) -> pd.DataFrame:
    """Merge every part into responses.jsonl and write parsed.parquet for the key in run.json."""
    info = RunInfo.read(run.info)
    if info.task != task.name:
        raise ValueError(f"{run.info}: a run of task {info.task!r}, not {task.name!r}")
    table = parsed_table(samples, RecordStore(run.root).merge(), info.run_key, task)
    write_parquet(table, run.parsed)
    return table
