"""The report's typed objects: a run's line in a table (:class:`RunMetrics`), what a report says of
a task's data (:class:`Dataset`), the tables and sections a task hands the writer, and a headline
metric (:class:`Headline`). Tasks build these; the writer (:mod:`candlebench.report.writer`) only
lays them out. Free of matplotlib: a task's ``report`` imports these without drawing anything."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

RANDOM_WEIGHTS = "(random weights)"
REFERENCE = "(reference)"


@dataclass(frozen=True)
class RunMetrics:
    name: str
    label: str  # the name as shown, with "(random weights)" where the model is a pipeline check
    metrics: dict
    market: str = ""  # the market(s) of its samples: a pooled report has runs of several
    reference: str = ""  # what it is when it is a reference or ceiling (Task.references), not a result


@dataclass(frozen=True)
class Dataset:
    """What a report says about a task's data: its market, the samples summary the samples stage
    wrote and how many files of each chart were rendered."""

    market: str
    summary: Mapping[str, Any]
    charts: Mapping[str, int]


@dataclass(frozen=True)
class Table:
    title: str
    frame: pd.DataFrame
    note: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    tables: tuple[Table, ...]
    plots: dict[str, bytes] = field(default_factory=dict)  # file stem -> PNG bytes
    collapsed: bool = False  # folded in the HTML page (provenance: whole in provenance.json, read on demand)


@dataclass(frozen=True)
class Headline:
    """One of a task's main metrics as its headline table shows it: its key in metrics.json (in the
    nested ``block`` where the task keeps its overall figures, e.g. E2A's "all"), its 95% interval
    under ``ci`` beside it when the run has one, and which way is better."""

    key: str
    title: str
    higher_is_better: bool = True
    digits: int = 3
    block: str | None = None
    missing: str = ""  # why a run can lack it, said under the table where one does ("–")


def scored_run(name: str, metrics: dict, random_weights: bool, market: str = "", reference: str = "") -> RunMetrics:
    label = f"{name} {RANDOM_WEIGHTS}" if random_weights else f"{name} {REFERENCE}" if reference else name
    return RunMetrics(name, label, metrics, market, reference)
