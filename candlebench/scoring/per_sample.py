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

Intervals resample clusters whole (:mod:`candlebench.scoring.bootstrap`): the samples sharing a
value of ``PerSample.cluster`` (a cutoff date, whose stocks share the market's move), or each
sample on its own where the samples have no such column or the task declares none (a dataset of
unrelated charts, captions of charts scored each on its own).

Declared :class:`Grouping` s (a modality, a question type, a regime, a horizon) give the same
numbers per group: ``groups.<column>.<value>`` in the metrics and in a comparison, where each
measure's tests over a grouping's groups are one family, Holm-adjusted (``p_holm``). A task whose
run values are statistics of its own (corpus BLEU, not a mean of per-sample BLEU) says so with
``reported``; ``extras`` are further numbers its ``score`` computes per run, shown and compared a → b,
untested.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from candlebench.core.errors import UserError
from candlebench.core.io import json_safe
from candlebench.core.results import RunAnswers
from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_ratio
from candlebench.scoring.clustered import Clusters, adjust, paired_ratio

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
    # The samples' column whose values the bootstrap and the tests draw whole; None: each sample its own cluster.
    cluster: str | None = "cutoff"
    title: str = ""  # the report section's title; "" = the task's name
    group: str | None = None  # the samples' column the browser groups by (a regime, a modality)
    label: str | None = None  # the samples' column the browser shows as each sample's label (its truth)
    groups: tuple[Grouping, ...] = ()  # results and comparisons per value of each
    # The runs' values are the task's own statistics in its metrics (corpus BLEU-4): a comparison shows
    # them as a and b beside the mean per-sample difference it tests; False: the means of the shared samples.
    reported: bool = False
    extras: tuple[Measure, ...] = ()  # per-run numbers of the task's score beyond the measures (SA F1)
    unit: str = ""  # the unit of analysis in words, for the report's notes ("the sample (one chart, one caption)")
    note: str = ""  # said under the results table: what its numbers are
    parse_failures: bool = True  # the results table's Parse fail column (caption's Table 2 counts them instead)

    def shown(self) -> tuple[Measure, ...]:
        return ((ACCURACY,) if self.verdict else ()) + self.measures

    def columns(self) -> list[str]:
        return [m.key for m in self.measures] + ([RIGHT] if self.verdict else [])

    def metrics(self, table: pd.DataFrame, run: RunAnswers, n_boot: int, seed: int) -> dict[str, Any]:
        """A run's metrics from its per-sample ``table``: ``n``, each measure's mean over the samples
        where it is defined (``accuracy``: right over samples with a verdict), their 95% intervals
        under ``ci``, the parse failure rate over the samples with an answer on record, and the table as
        ``per_sample``."""
        missing = [c for c in ["sample_id", *self.columns()] if c not in table]
        if missing:
            raise ValueError(f"the per-sample table lacks the columns {missing} (has {list(table.columns)})")
        samples = run.parsed.set_index("sample_id").reindex(table["sample_id"])
        clusters = Clusters(cluster_codes(samples, self.cluster), self.unit_of(run.parsed))
        values = self._values(table)
        out = {**self._means(values, clusters.codes, n_boot, seed), "resampled": clusters.unit}
        out["parse_failure_rate"] = float(run.parsed["answer"].isna().mean()) if len(run.parsed) else None
        if self.groups:
            out["groups"] = {g.column: {str(k): self._means([v[rows] for v in values], clusters.subset(rows).codes,
                                                              n_boot, seed)
                                        for k, rows in group_rows(samples, g.column)} for g in self.groups}
        return {**json_safe(out), "per_sample": table}

    def unit_of(self, samples: pd.DataFrame) -> str:
        """What a cluster is: the cluster column's name where the samples have it, else each sample."""
        return self.cluster if self.cluster is not None and self.cluster in samples else SAMPLE

    def _means(self, values: list[np.ndarray], clusters: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
        """``n`` and each shown measure's mean with its interval (under ``ci``) over these samples."""
        weights = _weights(clusters, n_boot, seed)
        out: dict[str, Any] = {"n": len(clusters), "ci": {}}
        for m, v in zip(self.shown(), values):
            out[m.key], ci = cluster_mean(v, clusters, weights)
            if ci is not None:
                out["ci"][m.key] = list(ci)
        return out

    def _values(self, table: pd.DataFrame) -> list[np.ndarray]:
        """Each shown measure's values as floats, NaN where undefined (a verdict: 1 right, 0 wrong)."""
        right = [pd.to_numeric(table[RIGHT].astype("boolean"), errors="coerce").to_numpy(float, na_value=np.nan)
                 ] if self.verdict else []
        return right + [pd.to_numeric(table[m.key], errors="coerce").to_numpy(float) for m in self.measures]

    def compare(self, a: RunAnswers, b: RunAnswers, n_boot: int, seed: int) -> dict[str, Any]:
        """b - a per measure over the samples both runs scored: the means of each, the mean
        difference with its 95% interval (one bootstrap of clusters for every measure) and the paired
        sign-flip test over the clusters (:mod:`candlebench.scoring.clustered`); the measures of a
        pair are one family, Holm-adjusted (``p_holm``). Per declared grouping, the same under
        ``groups.<column>.<value>``, each measure's tests over the grouping's groups one family."""
        scored = [f"{PREFIX}{c}" for c in self.columns()]
        missing = [r.name for r in (a, b) if not set(scored) <= set(r.parsed.columns)]
        if missing:
            raise MissingScores(f"runs {missing} have no per-sample scores ({', '.join(scored)}): run "
                                "`candlebench score` on them first")
        x, y = (r.parsed.set_index("sample_id") for r in (a, b))
        shared = sorted(set(x.index) & set(y.index))
        x, y = (f.loc[shared, scored].rename(columns=lambda c: c[len(PREFIX):]) for f in (x, y))
        found = a.parsed.set_index("sample_id").loc[shared]
        clusters = Clusters(cluster_codes(found, self.cluster), self.unit_of(found))
        values = list(zip(self._values(x), self._values(y)))
        out: dict[str, Any] = {"n": len(shared), "unit": clusters.unit, **self._paired(clusters, values, n_boot, seed)}
        adjust([out[m.key] for m in self.shown()])
        if self.reported:  # the runs' own statistics as a and b; the test stays the per-sample one's
            for m in self.shown():
                out[m.key].update(a=(a.metrics or {}).get(m.key), b=(b.metrics or {}).get(m.key))
        for m in self.extras:
            out[m.key] = {"a": (a.metrics or {}).get(m.key), "b": (b.metrics or {}).get(m.key)}
        if self.groups:
            out["groups"] = {}
            for g in self.groups:
                parts = {str(k): {"n": int(rows.sum()), **self._paired(clusters.subset(rows), [(va[rows], vb[rows])
                                                                                         for va, vb in values],
                                                                  n_boot, seed)}
                         for k, rows in group_rows(found, g.column)}
                for m in self.shown():  # a measure over a grouping's groups: one family
                    adjust([p[m.key] for p in parts.values()])
                out["groups"][g.column] = parts
        return json_safe(out)

    def _paired(self, clusters: Clusters, values: list[tuple[np.ndarray, np.ndarray]], n_boot: int, seed: int
                ) -> dict[str, Any]:
        """Each shown measure's comparison over the samples where both runs define it."""
        out = {}
        for m, (va, vb) in zip(self.shown(), values):
            ok = np.isfinite(va) & np.isfinite(vb)
            terms = [clusters.ratio_terms(np.where(ok, v, np.nan)) for v in (va, vb)]
            out[m.key] = {"n": int(ok.sum()), **paired_ratio(*terms, clusters.unit, n_boot, seed)}
        return out


def cluster_codes(frame: pd.DataFrame, column: str | None) -> np.ndarray:
    """Each row's cluster as 0..k-1 in the order of its values: ``column``'s where ``frame`` has it
    (the rows without a value together, as one more cluster), else each row (its index, the sample
    ids) its own."""
    values = frame[column] if column is not None and column in frame else frame.index.to_series()
    return pd.factorize(values, sort=True, use_na_sentinel=False)[0]


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


def _cluster_sums(values: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster: the sum of the defined values and their count."""
    defined = np.isfinite(values)
    n = int(codes.max()) + 1 if codes.size else 0
    return (np.bincount(codes, np.where(defined, values, 0.0), minlength=n),
            np.bincount(codes, defined.astype(float), minlength=n))


def cluster_mean(values: np.ndarray, codes: np.ndarray, weights: np.ndarray | None
                 ) -> tuple[float | None, tuple[float, float] | None]:
    """The mean of the defined (finite) values and, with ``weights`` (replicates x clusters), its
    percentile interval: each replicate the mean over the samples of the clusters it drew."""
    defined = np.isfinite(values)
    if not defined.any():
        return None, None
    mean = float(values[defined].mean())
    return mean, None if weights is None else percentile_ci(weighted_ratio(weights, *_cluster_sums(values, codes)))
