"""``parsed.parquet``: a run's samples with their parsed answers, for the run key in run.json.

Generic columns: ``run_key`` (which run the answers belong to: report checks it), ``answer`` (the
task's parsed answer as JSON text; null = nothing parsed), ``tier``, ``reason``, ``error``, ``text``,
``prompt`` and ``charts`` (what the model was given; null for baselines and imports); then the task's own flat columns in its declared dtypes
(the forecast task: ``pred`` float64, ``pred_in_range``). Samples without a record are absent
(an unfinished run), not failures: scoring counts them apart.
"""

from __future__ import annotations

import json
from typing import Mapping

import pandas as pd

from candlebench.core.io import write_parquet
from candlebench.core.layout import RunPaths
from inference.records import RecordStore, ResponseRecord
from inference.run_info import RunInfo
from tasks.base import Task

GENERIC = ("answer", "tier", "reason", "error", "text", "prompt", "charts")


def current_records(
    merged: list[ResponseRecord], key: str, inputs: Mapping[str, str | None] | None
) -> list[ResponseRecord]:
    """The merged records (one per run key, sample and inputs: ``RecordStore.merge`` already chose
    the answer over a failure) of the run key and of each sample's current input files; any inputs
    where ``inputs`` is None (baselines, imports, whose records carry none)."""
    return [
        r for r in merged
        if r.run_key == key and (inputs is None or inputs.get(r.sample_id, r.inputs) == r.inputs)
    ]


def parsed_table(
    samples: pd.DataFrame, merged: list[ResponseRecord], key: str, task: Task,
    inputs: Mapping[str, str | None] | None = None,
) -> pd.DataFrame:
    own = [c.name for c in task.columns]
    rows = pd.DataFrame(
        [
            {
                "sample_id": r.sample_id,
                "run_key": r.run_key,
                **{c: r.columns.get(c) for c in own},
                "answer": None if r.answer is None else json.dumps(r.answer, ensure_ascii=False),
                "tier": r.tier,
                "reason": r.reason,
                "error": r.error,
                "text": r.text,
                "prompt": r.prompt,
                # The time frames of the charts sent, comma-joined; None: not recorded (baselines, imports).
                "charts": ",".join(r.charts) if r.prompt is not None else None,
            }
            for r in current_records(merged, key, inputs)
        ],
        columns=["sample_id", "run_key", *own, *GENERIC],
    )
    table = samples.merge(rows, on="sample_id", how="inner")
    table = table.astype({c.name: c.dtype for c in task.columns})
    return table.sort_values("sample_id").reset_index(drop=True)


def finalize_run(
    run: RunPaths, samples: pd.DataFrame, task: Task, inputs: Mapping[str, str | None] | None = None
) -> pd.DataFrame:
    """Merge every part into responses.jsonl and write parsed.parquet for the key in run.json and
    the samples' current input files."""
    info = RunInfo.read(run.info)
    if info.task != task.name:
        raise ValueError(f"{run.info}: a run of task {info.task!r}, not {task.name!r}")
    table = parsed_table(samples, RecordStore(run.root).merge(), info.run_key, task, inputs)
    write_parquet(table, run.parsed)
    return table
