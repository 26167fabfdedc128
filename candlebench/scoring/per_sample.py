"""A task's results as one row per sample, and what follows from them: a run's means with 95%
intervals and paired differences between two runs. The default of ``Task.compare``
(task_api/base.py) is :meth:`PerSample.compare`, for a task that declares its :class:`PerSample`;
the report's results and comparison tables and the sample browser's verdicts that the defaults of
``Task.report`` and ``Task.browse`` show are in :mod:`candlebench.report.per_sample`.

The per-sample table a task's ``score`` builds: ``sample_id``, one number per :class:`Measure`
(NaN where the measure means nothing for that sample: it then counts nowhere) and, for a task
with a verdict, ``right`` (True, False, or NA: no verdict). :meth:`PerSample.metrics` returns it
as ``per_sample``, which the score stage keeps in parsed.parquet as ``score_<column>``: compare
and browse read it back from there, so neither judges again.

A :class:`Measure` is a mean of its column over the samples that define it, or a **ratio** of two
columns' sums (``ratio=(numerator, denominator)``: E2A's UCR_dir, its response UCRs over its
directional answers), each run over its own denominator, in a comparison too.

Intervals resample clusters whole (:mod:`candlebench.scoring.bootstrap`): the samples sharing a
value of ``PerSample.cluster`` (a cutoff date, whose stocks share the market's move; or the values
of several columns, E2A's stock-window: code and cutoff), or each sample on its own where the
samples lack such a column or the task declares none (a dataset of unrelated charts, captions of
charts scored each on its own).

Declared :class:`Grouping` s (a modality, a question type, a regime, a horizon) give the same
numbers per group: ``groups.<column>.<value>`` in the metrics and in a comparison, where each
measure's tests over a grouping's groups are one family, Holm-adjusted (``p_holm``). A task whose
run values are statistics of its own (corpus BLEU, not a mean of per-sample BLEU) says so with
``reported``; ``extras`` are further numbers its ``score`` computes per run, shown and compared a → b,
untested; :class:`Derived` numbers are functions of a run's column totals (E2A's NDR, a product of
four ratios), each with its interval from the same draws of clusters, compared a → b untested.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from candlebench.core.errors import UserError
from candlebench.core.io import json_safe
from candlebench.core.results import RunAnswers
from candlebench.scoring.bootstrap import date_weights, percentile_ci, resampled_sums, weighted_ratio
from candlebench.scoring.clustered import Clusters, adjust, clusters, paired_ratio

RIGHT = "right"  # the verdict column of a per-sample table
PREFIX = "score_"  # what the score stage puts before each per-sample column in parsed.parquet
SAMPLE = "sample"  # metrics' ``resampled`` where each sample was its own cluster


class MissingScores(UserError, ValueError):
    """A run's parsed.parquet has no per-sample scores (scored before they existed, or never)."""


@dataclass(frozen=True)
class Measure:
    """One per-sample score: its column, its title in the report, which way is better."""

    key: str
    title: str
    higher_is_better: bool = True
    digits: int = 3
    headline: bool = True  # a column of the results table; False: compared, and shown in the task's own tables
    # (numerator, denominator): the measure is sum(numerator) / sum(denominator) over the samples, each
    # run over its own denominator (NaN nowhere); None: the mean of the ``key`` column where defined.
    ratio: tuple[str, str] | None = None
    missing: str = ""  # why a run can lack it, said under the results table ("no directional answer")

    def inputs(self) -> tuple[str, ...]:
        """The per-sample columns it reads."""
        return self.ratio or (self.key,)


@dataclass(frozen=True)
class Derived:
    """A per-run number that is a function of the run's column totals, not a mean or ratio of its
    own (E2A's NDR = coverage x (1 - UCR_dir) x (1 - RCI) x (1 - ECI)): ``of`` maps each of the
    ``inputs`` columns to its total (a number, or an array of bootstrap replicates) to the number."""

    key: str
    title: str
    inputs: tuple[str, ...]
    of: Callable[[Mapping[str, np.ndarray]], np.ndarray]
    higher_is_better: bool = True
    digits: int = 3
    headline: bool = False
    missing: str = ""
    interval: bool = True  # False: the number alone (a replicate may leave it undefined, as BUY:SELL without a SELL)
    relative: bool = False  # a comparison shows b / a as well (``times``: BUY:SELL's amplification)

    def value(self, totals: Mapping[str, np.ndarray]) -> float | None:
        found = float(self.of(totals))
        return None if np.isnan(found) else found


@dataclass(frozen=True)
class Grouping:
    """Results per value of one of the samples' columns (``modality``, ``regime``, ...)."""

    column: str
    title: str


ACCURACY = Measure("accuracy", "Accuracy")  # the share of right verdicts, for a task that has them


@dataclass(frozen=True)
class PerSample:
    """How a task's results read per sample, and how the defaults show them."""

    measures: tuple[Measure, ...] = ()
    verdict: bool = False  # the table has ``right``: accuracy (tested like any measure), the browser's right / wrong
    # Two columns of the table whose agreement is the browser's right / wrong, not a measure (caption:
    # the closing sentiment of the answer and of the reference).
    agree: tuple[str, str] | None = None
    # A column of the table that is the browser's right / wrong, not a measure (1 right, 0 wrong, NaN no
    # verdict; E2A: its claims' verdicts), shown whether the answer parsed or not.
    outcome: str | None = None
    # The samples' column (or columns) whose values the bootstrap and the tests draw whole; None: each sample its own.
    cluster: str | tuple[str, ...] | None = "cutoff"
    cluster_unit: str = ""  # what a cluster is, in words ("stock-window"); "" = the cluster column's name
    title: str = ""  # the report section's title; "" = the task's name
    group: str | None = None  # the samples' column the browser groups by (a regime, a modality)
    label: str | None = None  # the samples' column the browser shows as each sample's label (its truth)
    groups: tuple[Grouping, ...] = ()  # results and comparisons per value of each
    # The runs' values are the task's own statistics in its metrics (corpus BLEU-4): a comparison shows
    # them as a and b beside the mean per-sample difference it tests; False: the means of the shared samples.
    reported: bool = False
    extras: tuple[Measure, ...] = ()  # per-run numbers of the task's score beyond the measures (SA F1)
    derived: tuple[Derived, ...] = ()  # per-run functions of the column totals, from the per-sample table
    # The measures of a pair are one Holm family; False: each overall test as it is (the pair's headline),
    # Holm over a grouping's groups only.
    holm_measures: bool = True
    unit: str = ""  # the unit of analysis in words, for the report's notes ("the sample (one chart, one caption)")
    note: str = ""  # said under the results table: what its numbers are
    parse_failures: bool = True  # the results table's Parse fail column (caption's Table 2 counts them instead)
    block: str | None = None  # the block of a run's metrics its overall figures are in (E2A's "all"); None: the top
    second_pass_note: str = ""  # said under the comparisons of a first pass with its second pass (what it saw)
    # Their tables' heading: the task's own name for what a second pass does (E2A's oracle-aided verification).
    second_pass_heading: str = "first pass → second pass (same samples)"

    def shown(self) -> tuple[Measure, ...]:
        return ((ACCURACY,) if self.verdict else ()) + self.measures

    def columns(self) -> list[str]:
        """The per-sample table's columns the measures and derived numbers read."""
        read = [c for m in self.measures for c in m.inputs()] + [c for d in self.derived for c in d.inputs]
        return list(dict.fromkeys(read)) + ([RIGHT] if self.verdict else [])

    def metrics(self, table: pd.DataFrame, run: RunAnswers, n_boot: int, seed: int) -> dict[str, Any]:
        """A run's metrics from its per-sample ``table``: ``n``, each measure's value over the samples
        (a mean over those where it is defined, ``accuracy`` right over samples with a verdict; a
        ratio of its columns' sums), each derived number, their 95% intervals under ``ci``, the parse
        failure rate over the samples with an answer on record, and the table as ``per_sample``."""
        missing = [c for c in ["sample_id", *self.columns()] if c not in table]
        if missing:
            raise ValueError(f"the per-sample table lacks the columns {missing} (has {list(table.columns)})")
        samples = run.parsed.set_index("sample_id").reindex(table["sample_id"])
        found = self.clusters(samples)
        values = self._values(table)
        out = {**self._means(values, found, n_boot, seed), "resampled": found.unit}
        out["parse_failure_rate"] = float(run.parsed["answer"].isna().mean()) if len(run.parsed) else None
        if self.groups:
            out["groups"] = {g.column: {str(k): self._means({c: v[rows] for c, v in values.items()}, found.subset(rows),
                                                              n_boot, seed)
                                        for k, rows in group_rows(samples, g.column)} for g in self.groups}
        return {**json_safe(out), "per_sample": table}

    def clusters(self, samples: pd.DataFrame) -> Clusters:
        """The samples' clusters: by the cluster column(s) where the samples have them all (the rows
        without a value together, as one more cluster), else each sample (its index, the sample ids) its own."""
        key = (self.cluster,) if isinstance(self.cluster, str) else tuple(self.cluster or ())
        if key and all(c in samples for c in key):
            return clusters(samples, key, self.cluster_unit or " × ".join(key))
        return Clusters(pd.factorize(samples.index.to_series(), sort=True, use_na_sentinel=False)[0], SAMPLE)

    def _means(self, values: dict[str, np.ndarray], found: Clusters, n_boot: int, seed: int) -> dict[str, Any]:
        """``n``, each shown measure's value and each derived number with its interval (under ``ci``)
        over these samples, every interval from the same draws of clusters."""
        weights = _weights(found.codes, n_boot, seed)
        out: dict[str, Any] = {"n": len(found.codes), "ci": {}}
        for m in self.shown():
            terms = _terms(m, values)
            out[m.key] = _value(m, values, terms)
            if weights is not None and out[m.key] is not None:
                out["ci"][m.key] = list(percentile_ci(weighted_ratio(weights, *found.sums(terms).T)))
        for d in self.derived:
            out[d.key] = d.value({c: values[c].sum() for c in d.inputs})
            if weights is not None and d.interval:
                sums = found.sums(np.column_stack([values[c] for c in d.inputs]))
                ci = percentile_ci(np.asarray(d.of({c: weights @ sums[:, i] for i, c in enumerate(d.inputs)}), float))
                if ci is not None:
                    out["ci"][d.key] = list(ci)
        return out

    def _values(self, table: pd.DataFrame) -> dict[str, np.ndarray]:
        """Each column the measures read as floats, NaN where undefined (a verdict: 1 right, 0 wrong)."""
        out = {c: pd.to_numeric(table[c], errors="coerce").to_numpy(float) for c in self.columns() if c != RIGHT}
        if self.verdict:
            out[ACCURACY.key] = pd.to_numeric(table[RIGHT].astype("boolean"), errors="coerce").to_numpy(
                float, na_value=np.nan)
        return out

    def compare(self, a: RunAnswers, b: RunAnswers, n_boot: int, seed: int) -> dict[str, Any]:
        """b - a per measure over the samples both runs scored: each run's value (a mean over the
        samples both define; a ratio, each run over its own denominator), the difference with its 95%
        interval (one bootstrap of clusters for every measure) and the paired sign-flip test over the
        clusters (:mod:`candlebench.scoring.clustered`); the measures of a pair are one family,
        Holm-adjusted (``p_holm``), unless ``holm_measures`` is False. A derived number: a, b and the
        difference with its interval from the same draws, untested. Per declared grouping, the same
        under ``groups.<column>.<value>``, each measure's tests over the grouping's groups one family."""
        scored = [f"{PREFIX}{c}" for c in self.columns()]
        missing = [r.name for r in (a, b) if not set(scored) <= set(r.parsed.columns)]
        if missing:
            raise MissingScores(f"runs {missing} have no per-sample scores ({', '.join(scored)}): run "
                                "`candlebench score` on them first")
        x, y = (r.parsed.set_index("sample_id") for r in (a, b))
        shared = sorted(set(x.index) & set(y.index))
        x, y = (f.loc[shared, scored].rename(columns=lambda c: c[len(PREFIX):]) for f in (x, y))
        found = a.parsed.set_index("sample_id").loc[shared]
        windows = self.clusters(found)
        values = (self._values(x), self._values(y))
        out: dict[str, Any] = {"n": len(shared), "unit": windows.unit, "n_clusters": windows.k,
                               **self._paired(windows, values, n_boot, seed)}
        if self.holm_measures:
            adjust([out[m.key] for m in self.shown()])
        if self.reported:  # the runs' own statistics as a and b; the test stays the per-sample one's
            for m in self.shown():
                out[m.key].update(a=(a.metrics or {}).get(m.key), b=(b.metrics or {}).get(m.key))
        for m in self.extras:
            out[m.key] = {"a": (a.metrics or {}).get(m.key), "b": (b.metrics or {}).get(m.key)}
        if self.groups:
            out["groups"] = {}
            for g in self.groups:
                parts = {str(k): self._group_pair(windows.subset(rows), rows, values, n_boot, seed)
                         for k, rows in group_rows(found, g.column)}
                for m in self.shown():  # a measure over a grouping's groups: one family
                    adjust([p[m.key] for p in parts.values()])
                out["groups"][g.column] = parts
        return json_safe(out)

    def _group_pair(self, found: Clusters, rows: np.ndarray, values: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
                    n_boot: int, seed: int) -> dict[str, Any]:
        """One group's comparison: its ``rows`` of both runs over its clusters ``found``."""
        return {"n": int(rows.sum()), "unit": found.unit, "n_clusters": found.k,
                **self._paired(found, tuple({c: v[rows] for c, v in run.items()} for run in values), n_boot, seed)}

    def _paired(self, found: Clusters, values: tuple[dict[str, np.ndarray], dict[str, np.ndarray]], n_boot: int,
                seed: int) -> dict[str, Any]:
        """Each shown measure's comparison (a mean over the samples where both runs define it; a ratio
        over all, each run its own denominator), then each derived number's."""
        out: dict[str, Any] = {}
        for m in self.shown():
            ta, tb = (_terms(m, v) for v in values)
            if m.ratio is None:  # a mean: the samples both runs define
                ok = (ta[:, 1] > 0) & (tb[:, 1] > 0)
                ta, tb = (t * ok[:, None] for t in (ta, tb))
            else:
                ok = (ta[:, 1] > 0) | (tb[:, 1] > 0)
            out[m.key] = {"n": int(ok.sum()), **paired_ratio(found.sums(ta), found.sums(tb), found.unit, n_boot, seed)}
        for d in self.derived:
            out[d.key] = _paired_derived(d, found, values, n_boot, seed)
        return out


def _terms(m: Measure, values: Mapping[str, np.ndarray]) -> np.ndarray:
    """(n, 2) per sample: the measure's numerator and denominator (a mean's: the value where
    defined, and 1 there)."""
    if m.ratio is not None:
        return np.column_stack([values[c] for c in m.ratio])
    v = values[m.key]
    defined = np.isfinite(v)
    return np.column_stack([np.where(defined, v, 0.0), defined.astype(float)])


def _value(m: Measure, values: Mapping[str, np.ndarray], terms: np.ndarray) -> float | None:
    """A mean of the defined values (as numpy sums them, to the last bit), or a ratio of sums."""
    if m.ratio is None:
        v = values[m.key]
        return float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else None
    num, den = terms.sum(0)
    return float(num / den) if den > 0 else None


def _paired_derived(d: Derived, found: Clusters, values: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
                    n_boot: int, seed: int) -> dict[str, Any]:
    """a, b, b - a and (``interval``) its percentile interval from the draws every measure's uses."""
    va, vb = (d.value({c: v[c].sum() for c in d.inputs}) for v in values)
    out: dict[str, Any] = {"a": va, "b": vb, "diff": None if va is None or vb is None else vb - va}
    if d.relative:
        out["times"] = None if not va or vb is None else vb / va
    if d.interval and n_boot > 0 and found.k:
        sums = resampled_sums(np.concatenate([found.sums(np.column_stack([v[c] for c in d.inputs])) for v in values],
                                             axis=1), n_boot, seed)
        k = len(d.inputs)
        ra, rb = ({c: sums[:, i + part * k] for i, c in enumerate(d.inputs)} for part in (0, 1))
        out["ci"] = percentile_ci(np.asarray(d.of(rb), float) - np.asarray(d.of(ra), float))
    return out


def group_rows(frame: pd.DataFrame, column: str) -> list[tuple[Any, np.ndarray]]:
    """(value, row mask) per value of ``frame``'s ``column``, in sorted order; rows without a value in
    no group. A missing column is an error: the task declared the grouping."""
    if column not in frame:
        raise ValueError(f"cannot group by {column}: the samples have no such column (columns: {list(frame.columns)})")
    values = frame[column].to_numpy()
    return [(k, values == k) for k in sorted(frame[column].dropna().unique())]


def _weights(codes: np.ndarray, n_boot: int, seed: int) -> np.ndarray | None:
    n = int(codes.max()) + 1 if codes.size else 0
    return date_weights(n, n_boot, seed) if n_boot > 0 and n else None
