"""Reading next to forecasting: for a model run that also answered the forecast task in the same
out_dir (a forecast run of the same name), its forecast direction accuracy split by whether it read
the trend of those same charts right (a 2x2 per model), with intervals, and the same gap within
strata of chart difficulty, so that a link between reading and forecasting is not an artefact of
hard charts (hard to read *and* hard to forecast).

The trend questions are ``change`` (the drawn move, first to last bar) and ``ma20`` (the last close
against the medium MA); a stock and cutoff is *read right* when every trend question asked of its
daily and weekly charts (chart modality) got the right answer, *read wrong* otherwise; one with no
trend question asked is left out. Forecast direction right: sign of the score = sign of r_H
(``(pred > 0) == (r_H > 0)``, the forecast metrics' binarisation).

* ``gap``: direction accuracy read right minus read wrong.
* Difficulty: the smallest pixel margin of the stock and cutoff's trend questions (how far their
  answers lie from flipping, :data:`questions.MARGINS`), measured on the charts alone; strata are its
  quintiles (fewer where margins tie).
* ``stratified_gap``: the Mantel-Haenszel risk difference over the strata (each stratum's gap
  weighted by n_right * n_wrong / n; Greenland & Robins, Biometrics 1985): the gap between readers
  and misreaders of charts of the same difficulty. A reader whose mistakes depend on difficulty alone,
  beside a forecaster that never reads, shows a raw gap and a stratified gap of ~0.
  (By hand: scipy has no Mantel-Haenszel risk difference, and statsmodels' StratifiedTable pools odds
  ratios only; the formula is two sums.)

Every interval is a cluster bootstrap over cutoff dates (the forecast task's unit: stocks of one
date share the market's move). Computed when the reading run is scored, from the forecast run's
parsed.parquet as it is then (``run`` and ``sweep`` score forecast first:
``ReadingTask.scored_after``; score the reading run again after re-scoring forecast alone).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from candlebench.core.layout import RunPaths
from candlebench.scoring.bootstrap import date_weights, percentile_ci
from candlebench.tasks.reading.metrics import verdicts
from candlebench.tasks.reading.questions import MARGINS

TREND = ("change", "ma20")
assert set(TREND) <= set(MARGINS)
STRATA = 5


def read_trend(reading: pd.DataFrame) -> pd.DataFrame:
    """Per (code, cutoff) with a trend question asked on a chart: ``read_right`` and ``difficulty``
    (the smallest pixel margin of its trend questions)."""
    v = verdicts(reading)
    v = v[(v["modality"] == "chart") & v["question"].isin(TREND)]
    read = v.groupby(["code", "cutoff"])["right"].all().rename("read_right").reset_index()
    charts = reading[reading["modality"] == "chart"][["code", "cutoff", "margins"]]
    margins = [(code, cutoff, min((m for q, m in json.loads(found).items() if q in TREND), default=np.nan))
               for code, cutoff, found in charts.itertuples(index=False)]
    difficulty = pd.DataFrame(margins, columns=["code", "cutoff", "difficulty"]).groupby(["code", "cutoff"])["difficulty"].min()
    return read.merge(difficulty.reset_index(), on=["code", "cutoff"], how="left")


def strata_of(difficulty: pd.Series, n: int = STRATA) -> pd.Series:
    """Quantile strata of ``difficulty`` (0 = hardest), fewer where values tie."""
    if difficulty.nunique() < 2:
        return pd.Series(0, index=difficulty.index)
    return pd.qcut(difficulty.rank(method="first"), min(n, len(difficulty)), labels=False)


def _counts(joined: pd.DataFrame, dates: pd.Index, strata: int) -> np.ndarray:
    """(4, n_dates, strata): per date and stratum, direction right and all, read right then wrong."""
    out = np.zeros((4, len(dates), strata))
    date_of = dates.get_indexer(joined["cutoff"])
    for k, (read, column) in enumerate(((True, "direction_right"), (True, None), (False, "direction_right"), (False, None))):
        part = joined["read_right"].to_numpy() == read
        values = np.ones(part.sum()) if column is None else joined.loc[part, column].to_numpy(float)
        np.add.at(out[k], (date_of[part], joined.loc[part, "stratum"].to_numpy(int)), values)
    return out


def _gaps(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Raw and stratified (Mantel-Haenszel) gaps of counts (4, ..., strata), over the last axis."""
    a1, n1, a0, n0 = c
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = a1.sum(-1) / n1.sum(-1) - a0.sum(-1) / n0.sum(-1)
        n = n1 + n0
        weight = np.where(n > 0, n1 * n0 / np.where(n > 0, n, 1), 0.0)
        diff = np.where(weight > 0, a1 / np.where(n1 > 0, n1, 1) - a0 / np.where(n0 > 0, n0, 1), 0.0)
        stratified = (weight * diff).sum(-1) / weight.sum(-1)
    return raw, stratified


def link_figures(joined: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The 2x2, the raw and stratified gaps and their intervals of ``joined``: one row per stock
    and cutoff with ``cutoff``, ``read_right``, ``direction_right`` and ``difficulty``."""
    joined = joined.assign(stratum=strata_of(joined["difficulty"].fillna(joined["difficulty"].min())))
    strata = int(joined["stratum"].max()) + 1 if len(joined) else 1
    dates = pd.Index(sorted(joined["cutoff"].unique()))
    counts = _counts(joined, dates, strata)
    total = counts.sum(axis=1)  # (4, strata)
    raw, stratified = _gaps(total)

    def cell(read: bool) -> dict[str, Any]:
        part = joined[joined["read_right"] == read]
        return {"n": len(part), "direction_accuracy": float(part["direction_right"].mean()) if len(part) else None}

    out: dict[str, Any] = {"n": len(joined), "read_right": cell(True), "read_wrong": cell(False),
                           "gap": None if np.isnan(raw) else float(raw),
                           "stratified_gap": None if np.isnan(stratified) else float(stratified), "strata": strata,
                           "per_stratum": [{"stratum": k, "n_right": int(total[1, k]), "n_wrong": int(total[3, k]),
                                            "difficulty_max": float(joined.loc[joined["stratum"] == k, "difficulty"].max())}
                                           for k in range(strata)]}
    if n_boot > 0 and len(dates):
        weights = date_weights(len(dates), n_boot, seed)
        replicated = np.einsum("bd,xds->xbs", weights, counts)  # (4, n_boot, strata)
        raw_r, stratified_r = _gaps(replicated)
        out["ci"] = {"gap": percentile_ci(raw_r), "stratified_gap": percentile_ci(stratified_r)}
        for read, k in ((True, 0), (False, 2)):
            with np.errstate(invalid="ignore", divide="ignore"):
                accuracy = replicated[k].sum(-1) / replicated[k + 1].sum(-1)
            out["read_right" if read else "read_wrong"]["ci"] = {"direction_accuracy": percentile_ci(accuracy)}
    return out


def forecast_link(reading: pd.DataFrame, forecast: RunPaths, n_boot: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """None when no scored forecast run of that name exists."""
    if not (forecast.parsed.exists() and forecast.metrics.exists()):
        return None
    metrics = json.loads(forecast.metrics.read_text())
    horizon = int(metrics["horizon"])
    answers = pd.read_parquet(forecast.parsed, columns=["code", "cutoff", "pred", f"r_{horizon}"]).dropna(subset=["pred"])
    joined = read_trend(reading).merge(answers, on=["code", "cutoff"])
    joined["direction_right"] = (joined["pred"] > 0) == (joined[f"r_{horizon}"] > 0)
    return {"run": forecast.name, "horizon": horizon, "ic_mean": metrics.get("ic_mean"),
            "direction_accuracy": metrics.get("accuracy"), **link_figures(joined, n_boot, seed)}
