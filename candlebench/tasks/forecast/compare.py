"""Paired comparison of two runs scored on the same samples.

Two models evaluated on the same charts share every date's market move, so their metrics are
strongly correlated; comparing two independent confidence intervals wastes that pairing. Here the
runs are joined sample by sample, only samples that both runs parsed (and that have a realised
return) are kept, and every difference is ``b - a`` (b the candidate, a the baseline). The unit of
analysis is the **cutoff date**: all stocks of a date share the market's move, so their errors
cluster by date, and every p-value and interval here treats a date as one observation
(:mod:`candlebench.scoring.clustered`: the paired sign-flip test over dates, exact up to 16 dates;
none below 10; a percentile bootstrap of dates):

* **IC / Rank IC**: per-date differences over the dates where both are defined; their mean, its
  interval and test (the test of the mean per-date difference).
* **Direction**: accuracy at 0, its difference tested over dates (each date's count of right
  directions of each run; a per-sample McNemar test rejected equal runs 44% of the time at 40 stocks x
  32 dates, docs/statistics.md).
* **Per horizon** (ΔIC against every realised ``r_<h>`` of the samples) and **per regime**
  (Δaccuracy on the dates of each market regime): two families, each Holm-adjusted (``p_holm``).
* **Bias**: the §5.2 bias and the up:down prediction ratio of each run on the joined samples.

Every figure is over the paired samples and dates only, so ``mean_a`` can differ from run a's own
``compute_metrics`` when run b failed to parse some of a's samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from candlebench.core.io import json_safe
from candlebench.scoring.clustered import adjust, clusters, paired_ratio
from candlebench.tasks.forecast.metrics import direction_metrics, horizons, per_date_ic, prepare, return_column

DIFF_DECIMALS = 12
UNIT = "cutoff date"


def _join_keys(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    return ["sample_id"] if "sample_id" in a.columns and "sample_id" in b.columns else ["cutoff", "code"]


def _check_unique(frame: pd.DataFrame, keys: list[str], name: str) -> None:
    """A duplicated key would silently multiply rows in the join and weight some samples twice."""
    duplicated = int(frame.duplicated(keys).sum())
    if duplicated:
        raise ValueError(f"run {name} has {duplicated} duplicated {keys} rows")


def join_runs(a: pd.DataFrame, b: pd.DataFrame, horizon: int = 30) -> tuple[pd.DataFrame, dict[str, int]]:
    """Samples present in both runs, with ``pred_a``, ``pred_b``, the realised return, and the counts.

    Both runs carry the realised return; where both know it they must agree, since a disagreement
    means the runs were labelled differently and no paired difference would mean anything. ``a``'s
    is kept (it may know a label ``b`` lacks), with a's other horizons' returns and regime.
    """
    ret_col = return_column(horizon)
    keys = _join_keys(a, b)
    rows_a, rows_b = prepare(a, horizon), prepare(b, horizon)
    _check_unique(rows_a, keys, "a")
    _check_unique(rows_b, keys, "b")
    extra = [return_column(h) for h in horizons(rows_a) if h != horizon] + (["regime"] if "regime" in rows_a else [])
    left = rows_a[[*dict.fromkeys([*keys, "cutoff"]), "pred", ret_col, *extra]]  # cutoff once, key or not
    right = rows_b[[*keys, "pred", ret_col]]
    joined = left.merge(right, on=keys, how="inner", suffixes=("_a", "_b"))
    ret_a, ret_b = joined[f"{ret_col}_a"], joined[f"{ret_col}_b"]
    both = ret_a.notna() & ret_b.notna()
    if not np.allclose(ret_a[both], ret_b[both], rtol=0.0, atol=1e-12):
        raise ValueError(f"runs a and b disagree on {ret_col} for the same samples")
    joined = joined.rename(columns={f"{ret_col}_a": ret_col}).drop(columns=f"{ret_col}_b")
    parsed = joined["pred_a"].notna() & joined["pred_b"].notna()
    counts = {
        "n_a": len(rows_a),
        "n_b": len(rows_b),
        "n_joined": len(joined),
        "n_parse_failed_a": int(joined["pred_a"].isna().sum()),
        "n_parse_failed_b": int(joined["pred_b"].isna().sum()),
        "n_both_parsed": int(parsed.sum()),
        "n_label_missing": int((parsed & joined[ret_col].isna()).sum()),
    }
    scored = joined[parsed & joined[ret_col].notna()].reset_index(drop=True)
    counts["n"] = len(scored)
    return scored, counts


def _ic_differences(
    scored: pd.DataFrame, ret_col: str, n_boot: int, seed: int
) -> tuple[dict[str, Any], pd.DataFrame]:
    """ΔIC and ΔRank IC over the dates where both runs' IC is defined: each date one cluster whose
    terms are its IC (a mean over dates)."""
    scored = scored[scored[ret_col].notna()]
    ret = scored[ret_col].to_numpy()
    table_a = per_date_ic(scored["cutoff"], scored["pred_a"].to_numpy(), ret)
    table_b = per_date_ic(scored["cutoff"], scored["pred_b"].to_numpy(), ret)
    keep = (table_a["defined"] & table_b["defined"]).to_numpy()
    dates = pd.DataFrame({"cutoff": table_a["cutoff"], "n": table_a["n"]})[keep].reset_index(drop=True)
    out: dict[str, Any] = {"n_dates": len(dates), "n_boot": n_boot, "seed": seed}
    ones = np.ones(len(dates))
    for name in ("ic", "rank_ic"):
        a_values, b_values = table_a[name].to_numpy()[keep], table_b[name].to_numpy()[keep]
        diff = np.round(b_values - a_values, DIFF_DECIMALS)
        dates[f"{name}_a"], dates[f"{name}_b"], dates[f"{name}_diff"] = a_values, b_values, diff
        found = paired_ratio(np.column_stack([a_values, ones]), np.column_stack([b_values, ones]), UNIT, n_boot, seed)
        out[name] = {"mean_a": found.pop("a"), "mean_b": found.pop("b"), "mean_diff": found.pop("diff"), **found}
    return out, dates


def _direction(scored: pd.DataFrame, ret_col: str, n_boot: int, seed: int) -> dict[str, Any]:
    """Δaccuracy at 0 tested over dates: each date's right directions of each run over its samples."""
    actual_up = scored[ret_col].to_numpy() > 0
    dates = clusters(scored, ["cutoff"], UNIT)
    ones = np.ones(len(scored))
    terms = [dates.sums(np.column_stack([(scored[f"pred_{k}"].to_numpy() > 0) == actual_up, ones])) for k in "ab"]
    return paired_ratio(*terms, UNIT, n_boot, seed)


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def compare_runs(
    a: pd.DataFrame,
    b: pd.DataFrame,
    horizon: int = 30,
    n_boot: int = 1000,
    seed: int = 0,
    split_date: str | None = None,
) -> dict[str, Any]:
    """Paired differences ``b - a`` in IC, Rank IC, direction accuracy and bias (JSON-serialisable),
    with the same per horizon and per regime.

    ``split_date`` (b's release date, when b is the later release of a's family) adds the same
    comparison on the cutoffs before it and on those from it on: the paper's §4.4 "peeping" test.
    A model that had seen the outcomes of pre-release cutoffs in training would beat its predecessor
    by more before its release than after; about the same gain on both sides says it did not."""
    scored, counts = join_runs(a, b, horizon)
    paired = _paired(scored, horizon, n_boot, seed)
    out = {"horizon": horizon, "join_on": _join_keys(a, b), "unit": UNIT, **counts, **paired,
           **_groups(scored, horizon, paired["ic"], n_boot, seed)}
    if split_date is not None:
        before = scored["cutoff"] < pd.Timestamp(split_date)
        out["split_date"] = str(split_date)
        for name, part in (("before_split", scored[before]), ("after_split", scored[~before])):
            found = _paired(part, horizon, n_boot, seed)
            found.pop("ic_by_date")
            out[name] = {"n": int(len(part)), **found}
    return json_safe(out)


def _groups(scored: pd.DataFrame, horizon: int, ic: dict[str, Any], n_boot: int, seed: int) -> dict[str, Any]:
    """Two families, each Holm-adjusted: ΔIC against every realised horizon of the samples (``ic``:
    the task horizon's, already found), and Δaccuracy on the dates of each market regime (a regime is
    a property of the date, so each regime's dates are its clusters)."""
    by_horizon = {return_column(h): dict(ic) if h == horizon else _ic_differences(scored, return_column(h), n_boot, seed)[0]["ic"]
                  for h in sorted({horizon, *horizons(scored)})}
    by_regime = ({} if "regime" not in scored else
                 {str(r): _direction(part.reset_index(drop=True), return_column(horizon), n_boot, seed)
                  for r, part in scored.groupby("regime", sort=True)})
    adjust(list(by_horizon.values()))
    adjust(list(by_regime.values()))
    return {"by_horizon": by_horizon, "by_regime": by_regime}


def _paired(scored: pd.DataFrame, horizon: int, n_boot: int, seed: int) -> dict[str, Any]:
    ret_col = return_column(horizon)
    ic, dates = _ic_differences(scored, ret_col, n_boot, seed)
    ret = scored[ret_col].to_numpy()
    pred_a, pred_b = scored["pred_a"].to_numpy(), scored["pred_b"].to_numpy()
    direction_a, direction_b = direction_metrics(pred_a, ret), direction_metrics(pred_b, ret)
    ratio_a, ratio_b = direction_a["pred_up_down_ratio"], direction_b["pred_up_down_ratio"]
    return {
        **ic,
        "accuracy_a": direction_a["accuracy"],
        "accuracy_b": direction_b["accuracy"],
        "accuracy_diff": _difference(direction_a["accuracy"], direction_b["accuracy"]),
        "direction": _direction(scored, ret_col, n_boot, seed),
        "bias_a": direction_a["bias"],
        "bias_b": direction_b["bias"],
        "bias_change": _difference(direction_a["bias"], direction_b["bias"]),
        "pred_up_down_ratio_a": ratio_a,
        "pred_up_down_ratio_b": ratio_b,
        "pred_up_down_ratio_change": _difference(ratio_a, ratio_b),
        "ic_by_date": dates.to_dict("records"),
    }
