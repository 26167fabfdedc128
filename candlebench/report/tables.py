"""Tables made of runs: a task's headline (models x its main metrics, intervals, the best starred),
each run's answered/total beside it, and ranks as the papers print them. Free of matplotlib."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from candlebench.report.model import REFERENCE, Headline, RunMetrics, Section, Table
from candlebench.scoring.numbers import fmt_ci

BEST = "★"
ANSWERED = "Answered"


def _block(r: RunMetrics, h: Headline) -> Mapping[str, Any]:
    return (r.metrics.get(h.block) or {}) if h.block else r.metrics


def complete(r: RunMetrics) -> bool:
    """Whether the run answered every sample (scores from before answered counts were kept: taken as complete)."""
    answered, total = r.metrics.get("answered"), r.metrics.get("n_samples")
    return answered is None or total is None or answered >= total


def answered_cell(r: RunMetrics) -> str:
    answered, total = r.metrics.get("answered"), r.metrics.get("n_samples")
    if answered is None or total is None:
        return "–"
    return f"{answered}/{total}" + ("" if answered >= total else " (partial)")


def ranked(values: pd.Series, higher_is_better: bool = True, runs: list[RunMetrics] | None = None) -> pd.Series:
    """Ranks with ties sharing their average rank, as the paper's Table 5 prints them (three IC Sig.
    of 0.750 after a 0.813 are all ranked 3); a missing value gets no rank. With ``runs`` (one per
    value), only the runs over the same samples are ranked, those that answered every one: a partial
    run gets no rank (:func:`complete`)."""
    if runs is not None:
        values = values.where(pd.Series([complete(r) for r in runs], index=values.index))
    return values.rank(ascending=not higher_is_better, method="average")


def fmt_rank(rank) -> str:
    """3.0 -> "3", a two-way tie's 2.5 -> "2.5"."""
    return "–" if rank is None or pd.isna(rank) else f"{rank:g}"


def with_answered(section: Section, runs: list[RunMetrics]) -> Section:
    """Every table of ``section`` with a row per run (a "Model" column) shows each run's
    answered/total beside it, a run missing samples marked "(partial)": its numbers are over fewer
    samples than its neighbours'."""
    # A pooled report labels a run with its market too (forecast: "name · market").
    cells = {**{f"{r.label} · {r.market}": answered_cell(r) for r in runs}, **{r.label: answered_cell(r) for r in runs}}
    tables = []
    for table in section.tables:
        frame = table.frame
        if "Model" in frame and ANSWERED not in frame:  # last: the task's own columns keep their places
            frame = frame.assign(**{ANSWERED: [cells.get(m, "–") for m in frame["Model"]]})
        tables.append(Table(table.title, frame, table.note))
    return Section(section.title, tuple(tables), section.plots, section.collapsed)


def headline_table(title: str, runs: list[RunMetrics], metrics: tuple[Headline, ...], note: str = "") -> Table:
    """Models x the task's main metrics, each "value [low, high]", the best of each column marked
    with a star (every run that ties it; only where two runs or more have the metric). Stars rank
    the runs over the same samples, those that answered every one: a partial run (marked so in its
    Answered cell) is never starred, its numbers rest on other samples. Runs keep their labels, so a
    random-weight pipeline check says so in its own row. References (ceilings) come last and are
    never starred; each "–" is explained under the table."""
    def value(r: RunMetrics, h: Headline) -> tuple[float | None, list | None]:
        block = _block(r, h)
        v = block.get(h.key)
        return (None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)), (block.get("ci") or {}).get(h.key)

    runs = [r for r in runs if not r.reference] + [r for r in runs if r.reference]
    rows = [{"Model": r.label, "n": _block(r, metrics[0]).get("n")} for r in runs]
    dashes: dict[str, list[str]] = {}  # why -> the columns it empties
    for h in metrics:
        cells = [value(r, h) for r in runs]
        defined = [v for (v, _), r in zip(cells, runs) if v is not None and not r.reference and complete(r)]
        best = (max if h.higher_is_better else min)(defined) if len(defined) > 1 else None
        for row, r, (v, ci) in zip(rows, runs, cells):
            row[h.title] = (fmt_ci(v, ci, h.digits)
                            + (f" {BEST}" if v is not None and v == best and not r.reference else ""))
        if h.missing and any(v is None for v, _ in cells):
            dashes.setdefault(h.missing, []).append(h.title)
    better = ", ".join(f"{h.title} {'higher' if h.higher_is_better else 'lower'}" for h in metrics)
    references = [f"{r.name}: {r.reference}" for r in runs if r.reference]
    partial = "Partial runs are not starred: they answered fewer samples." if not all(map(complete, runs)) else ""
    return Table(title, pd.DataFrame(rows), " ".join(filter(None, [
        f"{BEST}: best in its column ({better} is better), among the models and naive baselines that answered "
        "every sample.", partial,
        "Brackets: 95% bootstrap intervals.", note, *(f"'–' under {', '.join(t)}: {why}." for why, t in dashes.items()),
        f"Last, marked {REFERENCE}: ceilings, not results, never starred ({'; '.join(references)})." if references else ""])))


