"""What the report shows of a task that declares its :class:`~candlebench.scoring.per_sample.PerSample`:
the results table (every run's measures and extra numbers with their intervals, the best starred),
one table per declared grouping (each run's measures per group), the paired comparisons (overall,
then per group), and the sample browser's verdicts. The defaults of ``Task.report`` and
``Task.browse`` (task_api/base.py) are these; the numbers they show are
:mod:`candlebench.scoring.per_sample`'s. A task adds tables and plots of its own after them
(``Task.report_tables``: a paper's table layout)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from candlebench.report.model import Headline, RunMetrics, Section, Table
from candlebench.report.tables import headline_table
from candlebench.scoring.clustered import EXACT_MAX, MIN_CLUSTERS
from candlebench.scoring.numbers import fmt, fmt_ci
from candlebench.scoring.per_sample import PREFIX, RIGHT, SAMPLE, Grouping, Measure, PerSample


def headline(spec: PerSample) -> tuple[Headline, ...]:
    """The results table's columns: the headline derived numbers (a task's headline number derived from
    its measures, E2A's NDR, comes first), measures and extras, then the parse failures."""
    return (*(Headline(m.key, m.title, m.higher_is_better, m.digits, spec.block, m.missing)
              for m in (*spec.derived, *spec.shown(), *spec.extras) if m.headline),
            *((Headline("parse_failure_rate", "Parse fail", False, block=spec.block),) if spec.parse_failures else ()))


def sections(spec: PerSample, task: str, runs: list[RunMetrics], comparisons: Mapping[str, dict],
             own: Section | None = None) -> list[Section]:
    """The results table, the tables per group, the paired comparisons when runs were compared
    (overall, then per group; a first pass and its second pass apart, before the others), then
    ``own``: the task's tables and plots."""
    title = spec.title or task
    note = " ".join(filter(None, [spec.note, _resampled(runs)]))
    tables = [headline_table(f"{title}: results", runs, headline(spec), note)]
    tables += [t for t in (group_table(spec, title, g, runs) for g in spec.groups) if len(t.frame)]
    second = {k: c for k, c in comparisons.items() if second_pass(k, runs)}
    for heading, part, said in ((spec.second_pass_heading, second, spec.second_pass_note),
                                ("paired comparisons", {k: c for k, c in comparisons.items() if k not in second}, "")):
        if part:
            tables += [comparison_table(spec, title, part, g, heading, said) for g in (None, *spec.groups)]
    if own is not None:
        tables += own.tables
    return [Section(title, tuple(tables), dict(own.plots) if own is not None else {})]


def second_pass(pair: str, runs: list[RunMetrics]) -> bool:
    """A first pass → its second pass (a run whose metrics say which run it ``revises``; the
    report's keys may start with "<market>: ")."""
    return any(pair.endswith(f"{r.metrics.get('revises')} → {r.name}") for r in runs if r.metrics.get("revises"))


def _cell(block: Mapping[str, Any], m: Measure) -> str:
    return fmt_ci(block.get(m.key), (block.get("ci") or {}).get(m.key), m.digits)


def group_table(spec: PerSample, title: str, g: Grouping, runs: list[RunMetrics]) -> Table:
    """Each run's measures per value of the grouping, with their intervals (no rows where the runs
    keep no figures per group: the task shows them in a table of its own)."""
    rows = [{"Model": r.label, g.title: value, "n": block.get("n"), **{m.title: _cell(block, m) for m in spec.shown()}}
            for r in runs for value, block in ((r.metrics.get("groups") or {}).get(g.column) or {}).items()]
    return Table(f"{title}: results per {g.title.lower()}", pd.DataFrame(rows),
                 "Each group's samples alone: its measures and 95% intervals from a bootstrap of the clusters that "
                 f"hold them. {_resampled(runs)}".strip())


def _pairs(comparisons: Mapping[str, dict], g: Grouping | None) -> Iterable[tuple[str, str | None, dict]]:
    for pair, c in comparisons.items():
        if g is None:
            yield pair, None, c
        else:
            for value, block in ((c.get("groups") or {}).get(g.column) or {}).items():
                yield pair, value, block


def comparison_table(spec: PerSample, title: str, comparisons: Mapping[str, dict], g: Grouping | None = None,
                     heading: str = "paired comparisons", note: str = "") -> Table:
    """One row per pair (per group) and measure: each run's value, the difference b - a with its
    interval, the test and its Holm adjustment; an extra number as a → b alone, a derived one with
    its interval, both untested (b / a beside a derived number that asks for it)."""
    rows = []
    relative = any(d.relative for d in spec.derived)
    for pair, value, c in _pairs(comparisons, g):
        for m in (*spec.shown(), *(spec.extras if g is None else ()), *spec.derived):
            d = c.get(m.key) or {}
            rows.append({"a → b": pair, **({g.title: value} if g is not None else {}), "Measure": m.title,
                         "n": d.get("n_clusters", c.get("n_clusters", c.get("n"))), "a": fmt(d.get("a"), m.digits),
                         "b": fmt(d.get("b"), m.digits), "Δ (b − a)": fmt_ci(d.get("diff"), d.get("ci"), m.digits),
                         **({"b / a": fmt(d.get("times"), 2)} if relative else {}),
                         "p": fmt(d.get("p"), 3), "p (Holm)": fmt(d.get("p_holm"), 3)})
    return Table(f"{title}: {heading}" + (f" per {g.title.lower()}" if g else ""), pd.DataFrame(rows),
                 " ".join(filter(None, [note, _compared(spec, comparisons, g)])))


def _compared(spec: PerSample, comparisons: Mapping[str, dict], g: Grouping | None) -> str:
    """The comparison table's note: the unit of analysis, the interval, the test and its family."""
    units = {str(c.get("unit")) for c in comparisons.values()}
    named = spec.unit or " or ".join(sorted(f"whole {u} groups" if u != SAMPLE else "samples" for u in units))
    clusters = "samples" if units == {SAMPLE} else "clusters"
    values = ("a, b: each run's value as reported; Δ: the mean per-sample difference" if spec.reported
              else "a, b: each run's value over those samples; Δ = b - a")
    ratios = [m.title for m in spec.measures if m.ratio is not None]
    family = (f"over the pair's {g.title.lower()} groups, measure by measure" if g is not None
              else "over the pair's measures" if spec.holm_measures else "none: each overall test is the pair's headline")
    extras = [m.title for m in spec.extras]
    derived = [m.title for m in spec.derived]
    return (f"Over the samples both runs scored{f', per {g.title.lower()}' if g else ''}. Unit of analysis: {named} "
            f"(n: {clusters} compared). {values}"
            + (f" ({', '.join(ratios)}: each run's ratio of sums over its own denominator)" if ratios else "")
            + f", with a 95% interval from one percentile bootstrap of {clusters} for both "
            f"runs and every measure. p: the paired sign-flip test over {clusters} (exact up to {EXACT_MAX}, its normal "
            f"approximation beyond; '–' with fewer than {MIN_CLUSTERS}); p (Holm): Holm's adjustment {family}."
            + (f" {', '.join(extras)}: per-run statistics of the task, a → b alone, untested." if extras and g is None
               else "")
            + (f" {', '.join(derived)}: functions of each run's totals, the interval from the same draws, untested."
               if derived else "") + " (docs/statistics.md)")


def browse(spec: PerSample, parsed: pd.DataFrame) -> pd.DataFrame:
    """The browser's view: the declared group and label columns, right / wrong from the declared
    outcome column, or the scored verdict, or the agreement of the declared pair of scores (none
    where nothing parsed or the run was scored without them)."""
    def text(column: str | None) -> Any:
        return parsed[column].astype(str).where(parsed[column].notna(), "") if column is not None and column in parsed else ""

    verdict, declared = f"{PREFIX}{RIGHT}", f"{PREFIX}{spec.outcome}"
    agree = [f"{PREFIX}{c}" for c in spec.agree or ()]
    right = (parsed[verdict] if spec.verdict and verdict in parsed
             else parsed[agree[0]] == parsed[agree[1]] if agree and set(agree) <= set(parsed) else None)
    if spec.outcome is not None and declared in parsed:
        outcome = [None if pd.isna(r) else "right" if r else "wrong" for r in parsed[declared]]
    elif right is not None:
        outcome = [None if pd.isna(a) or pd.isna(r) else "right" if r else "wrong" for a, r in zip(parsed["answer"], right)]
    else:
        outcome = [None] * len(parsed)
    return pd.DataFrame({"sample_id": parsed["sample_id"], "group": text(spec.group), "label": text(spec.label),
                         "outcome": pd.Series(outcome, index=parsed.index, dtype=object), "detail": None})


def _resampled(runs: list[RunMetrics]) -> str:
    """What the runs' bootstraps drew, said under the table."""
    kinds = sorted({str(r.metrics["resampled"]) for r in runs if r.metrics.get("resampled")})
    drawn = " or ".join("samples" if k == SAMPLE else f"whole {k} groups (their samples share it)" for k in kinds)
    return f"The bootstrap draws {drawn}." if drawn else ""
