"""Forecast metrics of Hu et al. (2026): IC series, confusion matrix at 0, bias, group accuracies.

Input: one row per sample with ``cutoff``, ``code``, ``pred`` (NaN = unparseable answer) and realised
forward returns ``r_<h>``; optional ``regime``, ``continuous_rise``, ``continuous_fall`` and
``pred_in_range``. Conventions, chosen to stay comparable with the paper's Table 4 and Table 5:

* **Parse failures** (NaN ``pred``) are excluded from every metric; ``parse_failure_rate`` is their
  share of all rows, and ``no_answer_reasons`` counts them by their recorded ``reason`` (the parser's,
  the generation error, or a baseline's "no prediction: ..."), most frequent first, so the headline
  table says how many samples a run left unanswered and why. Rows whose realised return is NaN are
  excluded too (``n_label_missing``).
* **Clipping**: predictions are clipped to the prompt's range [-0.5, 1.0]. A parsed row counts as
  clipped when the parser flagged it (``pred_in_range`` False) or its value lies outside the range.
* **Cut reasoning**: ``n_reasoning_cut`` counts answers whose ``<think>`` block never closed
  (the budget ran out while reasoning); they are parse failures unless a score was found anyway.
* **Direction**: predicted up = ``pred > 0``, actual up = ``r > 0``, as the paper's code binarises.
  A prediction of exactly 0 ("unclear trend" in the prompt) therefore counts as predicted *down*,
  and a realised return of exactly 0 as actual *down*. ``n_unclear`` counts the zeros and
  ``accuracy_excl_unclear`` is the accuracy without them.
* **IC**: Pearson (IC) and Spearman with average ranks (Rank IC) across stocks on each cutoff date.
  A date with fewer than 3 scored stocks, or a constant prediction or return, has no defined
  correlation and is left out of the series (``n_dates_skipped``); it still counts for accuracy.
* **ICIR** = mean / standard deviation of the per-date series with ddof=1: the dates are a sample of
  the dates the model could be run on, and ddof=1 is also pandas' ``Series.std`` default, which the
  paper's tables most likely used. It needs at least 2 dates and a non-zero spread, else None.
* **Significance**: two-sided p < 0.05 of the per-date correlation (t test with n - 2 degrees of
  freedom, as scipy's ``pearsonr``/``spearmanr``); ``*_sig_ratio`` is the share of defined dates.
* **Undefined ratios**: precision, recall, specificity and F1 are 0 when their denominator is 0 (the
  paper's and sklearn's convention, so a model that never predicts up has precision 0); FPR, FNR,
  accuracy and bias are None then, having no convention to match.
* **FP/FN rates**: Table 4's "FP Rate"/"FN Rate" are FP/N and FN/N (shares of all samples), named
  ``fp_share``/``fn_share`` here; ``fpr``/``fnr`` are the usual FP/(FP+TN) and FN/(FN+TP).
* **Bias** (§5.2) = (pred_up - pred_down)/N - (true_up - true_down)/N with the binarisation above
  (so an unclear 0 is a predicted down); positive = optimistic. Grade bounds are inclusive.
* **Intervals**: 95% percentile bootstrap resampling cutoff dates (see ``candlebench.scoring.bootstrap``).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from candlebench.core.io import json_safe
from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_mean_of_defined, weighted_ratio
from candlebench.task_api.base import REASONING_CUT
from candlebench.tasks.forecast.parse import SCORE_MAX, SCORE_MIN

MIN_STOCKS_PER_DATE = 3
SIGNIFICANCE = 0.05
REGIMES = ("bull", "bear", "sideways")
# §5.2 calibration grades: upper bound of |bias| (inclusive) for each grade, exact fractions so a
# bias of exactly 0.05 lands in "well-calibrated" whatever the float rounding.
BIAS_GRADES = (
    (Fraction(1, 20), "well-calibrated"),
    (Fraction(3, 20), "slightly biased"),
    (Fraction(2, 5), "moderately biased"),
)
STRONG_BIAS = "strongly biased"
SERIES_COLUMNS = ["cutoff", "n", "ic", "ic_p", "rank_ic", "rank_ic_p"]
_HORIZON_COLUMN = re.compile(r"^r_(\d+)$")


def return_column(horizon: int) -> str:
    return f"r_{horizon}"


def horizons(frame: pd.DataFrame) -> list[int]:
    """Every realised horizon present as an ``r_<h>`` column, ascending."""
    return sorted(int(m.group(1)) for c in frame.columns if (m := _HORIZON_COLUMN.match(str(c))))


def prepare(frame: pd.DataFrame, horizon: int) -> pd.DataFrame:
    """A copy with datetime cutoffs, float predictions clipped to the prompt range and a ``clipped`` flag.

    Clipping keeps a runaway value (a price quoted instead of a return) from dominating a date's
    Pearson IC; it never changes a sign, so directions are unaffected.
    """
    missing = [c for c in ("cutoff", "code", "pred", return_column(horizon)) if c not in frame.columns]
    if missing:
        raise ValueError(f"forecast table lacks columns {missing}")
    rows = frame.copy()
    rows["cutoff"] = pd.to_datetime(rows["cutoff"])
    pred = rows["pred"].astype(float)
    flagged = rows["pred_in_range"].eq(False).fillna(False).astype(bool) if "pred_in_range" in rows else False
    outside = (pred < SCORE_MIN) | (pred > SCORE_MAX)
    rows["clipped"] = pred.notna() & (flagged | outside)
    rows["pred"] = pred.clip(SCORE_MIN, SCORE_MAX)
    return rows


def _grouped_pearson(codes: np.ndarray, n: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r per group from centred sums (centring first avoids the cancellation of raw moments)."""
    groups = len(n)
    xc = x - (np.bincount(codes, x, groups) / n)[codes]
    yc = y - (np.bincount(codes, y, groups) / n)[codes]
    sxy = np.bincount(codes, xc * yc, groups)
    sxx = np.bincount(codes, xc * xc, groups)
    syy = np.bincount(codes, yc * yc, groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)


def _grouped_constant(codes: np.ndarray, groups: int, x: np.ndarray) -> np.ndarray:
    """Whether x takes a single value in each group: exact min == max, not a variance near 0."""
    low = np.full(groups, np.inf)
    high = np.full(groups, -np.inf)
    np.minimum.at(low, codes, x)
    np.maximum.at(high, codes, x)
    return low == high


def correlation_p(r: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Two-sided p of a correlation r over n points: t = r sqrt((n-2)/(1-r^2)) with n-2 dof."""
    df = n - 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        t = r * np.sqrt(df / ((1.0 - r) * (1.0 + r)))
    return 2.0 * stats.t.sf(np.abs(t), df)


def per_date_ic(cutoff: pd.Series, pred: np.ndarray, ret: np.ndarray) -> pd.DataFrame:
    """Per-date IC and Rank IC over already-scored rows, every date kept (undefined ones as NaN)."""
    codes, dates = pd.factorize(cutoff, sort=True)
    groups = len(dates)
    n = np.bincount(codes, minlength=groups)
    ranks = pd.DataFrame({"x": pred, "y": ret}).groupby(codes).rank(method="average")
    defined = (
        (n >= MIN_STOCKS_PER_DATE)
        & ~_grouped_constant(codes, groups, pred)
        & ~_grouped_constant(codes, groups, ret)
    )
    table = pd.DataFrame({"cutoff": dates, "n": n})
    for name, (x, y) in {
        "ic": (pred, ret),
        "rank_ic": (ranks["x"].to_numpy(), ranks["y"].to_numpy()),
    }.items():
        r = np.where(defined, _grouped_pearson(codes, n, x, y), np.nan)
        table[name] = r
        table[f"{name}_p"] = np.where(defined, correlation_p(r, n.astype(float)), np.nan)
    table["defined"] = defined
    return table


def _scored(rows: pd.DataFrame, ret_col: str) -> pd.DataFrame:
    return rows[rows["pred"].notna() & rows[ret_col].notna()]


def ic_series(frame: pd.DataFrame, horizon: int = 30) -> pd.DataFrame:
    """The per-date IC series behind every IC summary: one row per date whose IC is defined."""
    ret_col = return_column(horizon)
    scored = _scored(prepare(frame, horizon), ret_col)
    table = per_date_ic(scored["cutoff"], scored["pred"].to_numpy(), scored[ret_col].to_numpy())
    return table.loc[table["defined"], SERIES_COLUMNS].reset_index(drop=True)


def _or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def ic_summary(series: pd.DataFrame) -> dict[str, Any]:
    """Mean, median, std, ICIR and significant share of the IC and Rank IC series (defined dates only)."""
    out: dict[str, Any] = {"n_dates": int(len(series))}
    for name in ("ic", "rank_ic"):
        values = series[name].to_numpy(float)
        has = values.size > 0
        std = float(np.std(values, ddof=1)) if values.size >= 2 else math.nan
        out[f"{name}_mean"] = _or_none(float(np.mean(values))) if has else None
        out[f"{name}_median"] = _or_none(float(np.median(values))) if has else None
        out[f"{name}_std"] = _or_none(std)
        out[f"{name}ir"] = _or_none(float(np.mean(values)) / std) if std > 0 else None
        out[f"{name}_sig_ratio"] = float(np.mean(series[f"{name}_p"] < SIGNIFICANCE)) if has else None
    return out


def bias_grade(bias: Fraction | float) -> str:
    """§5.2 calibration grade of a distribution bias (upper bounds inclusive).

    An exact Fraction is compared exactly; a float against the float nearest each bound, so that a
    float 0.05 (just above 1/20 in binary) still reads "well-calibrated".
    """
    exact = isinstance(bias, Fraction)
    return next(
        (grade for bound, grade in BIAS_GRADES if abs(bias) <= (bound if exact else float(bound))),
        STRONG_BIAS,
    )


def _bias_direction(bias: Fraction) -> str:
    """§5.2 sign convention: positive bias over-predicts rises (optimistic)."""
    return "optimistic" if bias > 0 else "pessimistic" if bias < 0 else "neutral"


def _ratio(num: int, den: int, undefined: float | None) -> float | None:
    return num / den if den else undefined


def direction_metrics(pred: np.ndarray, actual: np.ndarray) -> dict[str, Any]:
    """Confusion matrix at 0, the ratios of Table 4, and the §5.2 bias, all from one binarisation.

    With pred_down = N - pred_up, the bias reduces to 2 (FP - FN) / N: a model is optimistic exactly
    when it makes more false ups than false downs.
    """
    pred_up, actual_up = pred > 0, actual > 0
    tp = int(np.sum(pred_up & actual_up))
    fp = int(np.sum(pred_up & ~actual_up))
    fn = int(np.sum(~pred_up & actual_up))
    tn = int(np.sum(~pred_up & ~actual_up))
    n = tp + fp + fn + tn
    precision = _ratio(tp, tp + fp, 0.0)
    recall = _ratio(tp, tp + fn, 0.0)
    clear = pred != 0
    clear_correct = int(np.sum(pred_up[clear] == actual_up[clear]))
    n_pred_up, n_true_up = tp + fp, tp + fn
    n_pred_down, n_true_down = n - n_pred_up, n - n_true_up
    bias = Fraction((n_pred_up - n_pred_down) - (n_true_up - n_true_down), n) if n else None
    return {
        "tp": tp, "tn": tn, "fp": fp, "fn": fn,
        "accuracy": _ratio(tp + tn, n, None),
        "precision": precision,
        "recall": recall,
        "specificity": _ratio(tn, tn + fp, 0.0),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn, 0.0),
        "fpr": _ratio(fp, fp + tn, None),
        "fnr": _ratio(fn, fn + tp, None),
        "fp_share": _ratio(fp, n, None),
        "fn_share": _ratio(fn, n, None),
        "n_unclear": int(np.sum(~clear)),
        "accuracy_excl_unclear": _ratio(clear_correct, int(clear.sum()), None),
        "n_pred_up": n_pred_up, "n_pred_down": n_pred_down,
        "n_true_up": n_true_up, "n_true_down": n_true_down,
        "bias": None if bias is None else float(bias),
        "bias_grade": None if bias is None else bias_grade(bias),
        "bias_direction": None if bias is None else _bias_direction(bias),
        "pred_up_down_ratio": _ratio(n_pred_up, n_pred_down, None),
    }


def _group_accuracy(correct: pd.Series, mask: pd.Series) -> dict[str, Any]:
    n, n_correct = int(mask.sum()), int(correct[mask].sum())
    return {"n": n, "n_correct": n_correct, "accuracy": _ratio(n_correct, n, None)}


def _summarise(rows: pd.DataFrame, ret_col: str) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """The main metrics of one set of prepared rows, with the scored rows and per-date table behind them."""
    parsed = rows["pred"].notna()
    scored = _scored(rows, ret_col)
    table = per_date_ic(scored["cutoff"], scored["pred"].to_numpy(), scored[ret_col].to_numpy())
    summary = ic_summary(table[table["defined"]])
    out: dict[str, Any] = {
        "n_rows": int(len(rows)),
        "n_parse_failed": int((~parsed).sum()),
        "parse_failure_rate": _ratio(int((~parsed).sum()), int(len(rows)), None),
        "n_clipped": int(rows["clipped"].sum()),
        "n_label_missing": int((parsed & rows[ret_col].isna()).sum()),
        "n": int(len(scored)),
        "n_dates": summary.pop("n_dates"),
        "n_dates_skipped": int((~table["defined"]).sum()),
        **summary,
        **direction_metrics(scored["pred"].to_numpy(), scored[ret_col].to_numpy()),
    }
    return out, scored, table


def _by_horizon(rows: pd.DataFrame) -> dict[str, Any]:
    """§5.5: the same predictions against every realised horizon, to see which one they track."""
    out = {}
    for h in horizons(rows):
        col = return_column(h)
        scored = _scored(rows, col)
        table = per_date_ic(scored["cutoff"], scored["pred"].to_numpy(), scored[col].to_numpy())
        summary = ic_summary(table[table["defined"]])
        correct = (scored["pred"] > 0) == (scored[col] > 0)
        out[col] = {
            "n": int(len(scored)),
            "n_dates": summary.pop("n_dates"),
            "n_dates_skipped": int((~table["defined"]).sum()),
            **summary,
            "accuracy": _ratio(int(correct.sum()), int(len(scored)), None),
        }
    return out


def _by_regime(scored: pd.DataFrame, correct: pd.Series) -> dict[str, Any] | None:
    """§5.4.1 accuracy per market regime; the paper's three always listed so an absent one reads n=0."""
    if "regime" not in scored.columns:
        return None
    present = [str(r) for r in scored["regime"].dropna().unique() if r not in REGIMES]
    return {r: _group_accuracy(correct, scored["regime"] == r) for r in [*REGIMES, *sorted(present)]}


def _trend_accuracy(scored: pd.DataFrame, correct: pd.Series, column: str) -> dict[str, Any] | None:
    """§5.4.2 accuracy on the stocks flagged by ``column`` (continuous rise / fall)."""
    if column not in scored.columns:
        return None
    return _group_accuracy(correct, scored[column].fillna(False).astype(bool))


def _bootstrap(
    scored: pd.DataFrame, table: pd.DataFrame, ret_col: str, n_boot: int, seed: int
) -> dict[str, Any]:
    """95% percentile intervals resampling dates; see candlebench.scoring.bootstrap for why dates, not rows."""
    correct = ((scored["pred"] > 0) == (scored[ret_col] > 0)).to_numpy()
    codes = pd.Index(table["cutoff"]).get_indexer(scored["cutoff"])
    n_correct = np.bincount(codes, correct.astype(float), len(table))
    weights = date_weights(len(table), n_boot, seed)
    replicates = {
        "ic_mean": weighted_mean_of_defined(weights, table["ic"].to_numpy()),
        "rank_ic_mean": weighted_mean_of_defined(weights, table["rank_ic"].to_numpy()),
        "accuracy": weighted_ratio(weights, n_correct, table["n"].to_numpy(float)),
    }
    out: dict[str, Any] = {"n_boot": n_boot, "seed": seed, "level": 0.95, "unit": "cutoff"}
    for name, values in replicates.items():
        ci = percentile_ci(values)
        out[name] = None if ci is None else list(ci)
    return out


def no_answer_reasons(frame: pd.DataFrame) -> dict[str, int]:
    """Rows without a parsed prediction, counted by reason (most frequent first, then by text)."""
    missing = frame["pred"].isna()
    if not missing.any():
        return {}
    reasons = frame["reason"] if "reason" in frame else pd.Series(None, index=frame.index, dtype=object)
    counts = reasons[missing].fillna("(no reason given)").astype(str).value_counts()
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {reason: int(n) for reason, n in ordered}


def _reasoning_cut(frame: pd.DataFrame) -> int:
    """Answers whose reasoning block never closed: the generation budget ran out while thinking
    (the parser's "unclosed <think> block" flag). Raise the model's ``max_new_tokens``."""
    if "reason" not in frame:
        return 0
    return int(frame["reason"].fillna("").str.contains(REASONING_CUT, regex=False).sum())


def compute_metrics(
    frame: pd.DataFrame,
    horizon: int = 30,
    release_date: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Every forecast metric of one run, as a JSON-serialisable dict (conventions in the module doc).

    ``release_date`` splits the main metrics into cutoffs strictly before it and on/after it (the
    paper's "peeping" check, generalised): a model whose training data already held the outcomes
    of pre-release cutoffs would score visibly better before than after. ``n_boot=0`` skips the
    bootstrap.
    """
    ret_col = return_column(horizon)
    rows = prepare(frame, horizon)
    main, scored, table = _summarise(rows, ret_col)
    correct = (scored["pred"] > 0) == (scored[ret_col] > 0)
    out: dict[str, Any] = {
        "horizon": horizon,
        **main,
        "n_reasoning_cut": _reasoning_cut(frame),
        "no_answer_reasons": no_answer_reasons(frame),
        "by_regime": _by_regime(scored, correct),
        "continuous_rise": _trend_accuracy(scored, correct, "continuous_rise"),
        "continuous_fall": _trend_accuracy(scored, correct, "continuous_fall"),
        "by_horizon": _by_horizon(rows),
        "release_date": release_date,
        "before_release": None,
        "after_release": None,
        "ci": _bootstrap(scored, table, ret_col, n_boot, seed) if n_boot > 0 and len(table) else None,
        "ic_by_date": table.loc[table["defined"], SERIES_COLUMNS].to_dict("records"),
    }
    if release_date is not None:
        before = rows["cutoff"] < pd.Timestamp(release_date)
        out["before_release"] = _summarise(rows[before], ret_col)[0]
        out["after_release"] = _summarise(rows[~before], ret_col)[0]
    return json_safe(out)
