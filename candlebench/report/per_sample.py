"""What the report shows of a task that declares its :class:`~candlebench.scoring.per_sample.PerSample`:
the results table (every run's measures with their intervals, the best starred), the paired
comparisons, and the sample browser's verdicts. The defaults of ``Task.report`` and ``Task.browse``
(task_api/base.py) are these; the numbers they show are :mod:`candlebench.scoring.per_sample`'s."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from candlebench.report.model import Headline, RunMetrics, Section, Table
from candlebench.report.tables import headline_table
from candlebench.scoring.clustered import EXACT_MAX, MIN_CLUSTERS
from candlebench.scoring.numbers import fmt
from candlebench.scoring.per_sample import PREFIX, RIGHT, SAMPLE, PerSample


def sections(spec: PerSample, task: str, runs: list[RunMetrics], comparisons: Mapping[str, dict]) -> list[Section]:
    """The results table and, when runs were compared, the paired differences."""
    title = spec.title or task
    headline = (*(Headline(m.key, m.title, m.higher_is_better, m.digits) for m in spec.shown()),
                Headline("parse_failure_rate", "Parse fail", False))
    tables = [headline_table(f"{title}: results", runs, headline, _resampled(runs))]
    if comparisons:
        tables.append(comparison_table(spec, title, comparisons))
    return [Section(title, tuple(tables))]


def comparison_table(spec: PerSample, title: str, comparisons: Mapping[str, dict]) -> Table:
    rows = []
    for pair, c in comparisons.items():
        row: dict[str, Any] = {"a → b": pair, "n": c.get("n")}
        for m in spec.shown():
            d = c.get(m.key) or {}
            ci = d.get("ci")
            row[f"Δ {m.title}"] = fmt(d.get("diff"), m.digits) + (
                f" [{fmt(ci[0], m.digits)}, {fmt(ci[1], m.digits)}]" if ci else "")
            row[f"p {m.title}"] = fmt(d.get("p_holm"), 3)
        rows.append(row)
    unit = {str(c.get("unit")) for c in comparisons.values()}
    named = " or ".join(sorted(f"whole {u} groups" if u != SAMPLE else "samples" for u in unit))
    return Table(f"{title}: paired comparisons", pd.DataFrame(rows),
                 f"Δ = b - a over the samples both runs scored. Unit of analysis: {named} (the declared cluster "
                 "column's values; each sample alone where the samples lack it): a 95% interval from one percentile "
                 "bootstrap of clusters for every measure, and p from the paired sign-flip test over clusters "
                 f"(exact up to {EXACT_MAX}, its normal approximation beyond; '–' with fewer than {MIN_CLUSTERS} "
                 "clusters), Holm-adjusted over the pair's measures (docs/statistics.md).")


def browse(spec: PerSample, parsed: pd.DataFrame) -> pd.DataFrame:
    """The browser's view: the declared group and label columns, right / wrong from the scored
    verdict (none where nothing parsed or the run was scored without one)."""
    def text(column: str | None) -> Any:
        return parsed[column].astype(str).where(parsed[column].notna(), "") if column is not None and column in parsed else ""

    verdict = f"{PREFIX}{RIGHT}"
    if spec.verdict and verdict in parsed:
        outcome = [None if pd.isna(a) or pd.isna(r) else "right" if r else "wrong"
                   for a, r in zip(parsed["answer"], parsed[verdict])]
    else:
        outcome = [None] * len(parsed)
    return pd.DataFrame({"sample_id": parsed["sample_id"], "group": text(spec.group), "label": text(spec.label),
                         "outcome": pd.Series(outcome, index=parsed.index, dtype=object), "detail": None})


def _resampled(runs: list[RunMetrics]) -> str:
    """What the runs' bootstraps drew, said under the table."""
    kinds = sorted({str(r.metrics["resampled"]) for r in runs if r.metrics.get("resampled")})
    drawn = " or ".join("samples" if k == SAMPLE else f"whole {k} groups (their samples share it)" for k in kinds)
    return f"The bootstrap draws {drawn}." if drawn else ""
