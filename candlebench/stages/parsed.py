"""``parsed.parquet``: a run's samples with their answers judged by the task's current judge, for
the run key in run.json. Records keep only what the model said; every verdict (answer, tier,
reason, the task's columns) is made here from the text, so a judge fixed since reaches every run.

Generic columns: ``run_key`` (which run the answers belong to: report checks it), ``answer`` (the
task's parsed answer as JSON text; null = nothing parsed), ``tier``, ``reason``, ``error``, ``text``,
``prompt`` and ``charts`` (what the model was given; null for baselines and imports); then the task's own flat columns in its declared dtypes
(the forecast task: ``pred`` float64, ``pred_in_range``). Samples without a record are absent
(an unfinished run), not failures: scoring counts them apart.
"""

from __future__ import annotations

import json
from typing import Callable, Mapping

import pandas as pd

from candlebench.core.bulk import collector_paused
from candlebench.core.layout import RunPaths
from candlebench.core.results import Parsed
from candlebench.inference.records import RecordStore, ResponseRecord
from candlebench.inference.run_info import RunInfo
from candlebench.task_api.base import Task

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


Parser = Callable[[str | None], Parsed]


def judged(records: list[ResponseRecord], parse: Parser, own: tuple[str, ...] = ()) -> list[tuple]:
    """Each record's verdict by ``parse`` (the task's parser) as the row parsed.parquet holds:
    (answer as JSON text, tier, reason, then the task's ``own`` columns). A record without text keeps
    why (a failed generation, a baseline's no-answer) as its reason. The parser is a pure function
    of the text, so a text said again (a baseline's "<score>0.050</score>", a model's set phrase) is
    judged once."""

    def row(p: Parsed) -> tuple:
        answer = None if p.answer is None else json.dumps(p.answer, ensure_ascii=False)
        return (answer, p.tier, p.reason, *(p.columns.get(c) for c in own))

    seen: dict[str, tuple] = {}
    rows = []
    for r in records:
        if r.text is None:
            empty = parse(None)
            rows.append(row(Parsed(None, "none", r.reason or empty.reason, empty.columns)))
            continue
        verdict = seen.get(r.text)
        if verdict is None:
            verdict = seen[r.text] = row(parse(r.text))
        rows.append(verdict)
    return rows


def parsed_table(
    samples: pd.DataFrame, merged: list[ResponseRecord], key: str, task: Task, parse: Parser,
    inputs: Mapping[str, str | None] | None = None,
) -> pd.DataFrame:
    own = tuple(c.name for c in task.columns)
    current = current_records(merged, key, inputs)
    with collector_paused():
        rows = _rows(current, list(zip(*judged(current, parse, own))), own)
    table = samples.merge(rows, on="sample_id", how="inner")
    table = table.astype({c.name: c.dtype for c in task.columns})
    return table.sort_values("sample_id").reset_index(drop=True)


def _rows(current: list[ResponseRecord], verdicts: list[tuple], own: tuple[str, ...]) -> pd.DataFrame:
    columns = ["sample_id", "run_key", *own, *GENERIC]
    if not current:  # no answer yet (a run stopped before its first): text columns, not float ones
        return pd.DataFrame(columns=columns, dtype=object)
    return pd.DataFrame(
        {
            "sample_id": [r.sample_id for r in current],
            "run_key": [r.run_key for r in current],
            **dict(zip(own, verdicts[3:])),
            **dict(zip(("answer", "tier", "reason"), verdicts[:3])),
            "error": [r.error for r in current],
            "text": [r.text for r in current],
            "prompt": [r.prompt for r in current],
            # The time frames of the charts sent, comma-joined; None: not recorded (baselines, imports).
            "charts": [",".join(r.charts) if r.prompt is not None else None for r in current],
        },
        columns=columns,
    )


def judged_run(
    run: RunPaths, samples: pd.DataFrame, task: Task, parse: Parser, inputs: Mapping[str, str | None] | None = None
) -> pd.DataFrame:
    """The run's parsed table, judged by ``parse``, for the key in run.json and the samples' current
    input files; its parts merged into responses.jsonl on the way. `score` alone calls it and writes
    the table (with its per-sample scores) to parsed.parquet: one writer per file."""
    info = RunInfo.read(run.info)
    if info.task != task.name:
        raise ValueError(f"{run.info}: a run of task {info.task!r}, not {task.name!r}")
    return parsed_table(samples, RecordStore(run.root).merge(), info.run_key, task, parse, inputs)


def run_records(run: RunPaths, ids: set[str], inputs: Mapping[str, str | None] | None = None) -> list[ResponseRecord]:
    """The run's records of ``ids`` under its run.json's key (one per sample: the answer, or while
    there is none the latest failure) and, where ``inputs`` is given, of each sample's current input
    files: what infer, baseline, import and status count answers from, without writing a file."""
    key = RunInfo.read(run.info).run_key
    return [r for r in current_records(RecordStore(run.root).merged(), key, inputs) if r.sample_id in ids]
