"""candlebench.tasks.forecast.compare against hand computations: joined samples, McNemar counts, per-date IC differences."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from candlebench.tasks.forecast.compare import compare_runs, mcnemar

pytestmark = pytest.mark.unit

NAN = float("nan")


def hand_pearson(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def hand_ranks(x: list[float]) -> list[float]:
    return [1 + sum(b < a for b in x) + (sum(b == a for b in x) - 1) / 2 for a in x]


def hand_exact_mcnemar_p(a_only: int, b_only: int) -> float:
    n, k = a_only + b_only, min(a_only, b_only)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def two_runs(dates: int = 6, stocks: int = 10, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run b tracks the return more closely than run a; both have a few parse failures."""
    rng = np.random.default_rng(seed)
    cutoffs = pd.date_range("2024-01-05", periods=dates, freq="30B")
    rows = []
    for d in cutoffs:
        for i in range(stocks):
            r = float(np.round(rng.normal(0, 0.05), 4))
            rows.append({"cutoff": d, "code": f"S{i}", "r_30": r,
                         "pred_a": float(np.round(0.2 * r + rng.normal(0, 0.05), 3)),
                         "pred_b": float(np.round(0.8 * r + rng.normal(0, 0.03), 3))})
    frame = pd.DataFrame(rows)
    frame.loc[[2, 15], "pred_a"] = NAN
    frame.loc[[15, 33], "pred_b"] = NAN
    frame.loc[40, "r_30"] = NAN
    a = frame[["cutoff", "code", "r_30", "pred_a"]].rename(columns={"pred_a": "pred"})
    b = frame[["cutoff", "code", "r_30", "pred_b"]].rename(columns={"pred_b": "pred"})
    return a, b


def hand_joined(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[object, float, float, float]]:
    """(cutoff, pred_a, pred_b, r) for samples both runs parsed and with a label, via dict lookups."""
    b_pred = {(r.cutoff, r.code): r.pred for r in b.itertuples()}
    out = []
    for r in a.itertuples():
        pb = b_pred.get((r.cutoff, r.code), NAN)
        if not (math.isnan(r.pred) or math.isnan(pb) or math.isnan(r.r_30)):
            out.append((r.cutoff, r.pred, pb, r.r_30))
    return out


def test_counts_and_mcnemar_match_hand() -> None:
    a, b = two_runs()
    out = compare_runs(a, b, n_boot=0)
    joined = hand_joined(a, b)
    assert out["n"] == len(joined) == 60 - 3 - 1
    assert (out["n_parse_failed_a"], out["n_parse_failed_b"], out["n_label_missing"]) == (2, 2, 1)
    cells = {"both_correct": 0, "a_only": 0, "b_only": 0, "both_wrong": 0}
    for _, pa, pb, r in joined:
        ca, cb = (pa > 0) == (r > 0), (pb > 0) == (r > 0)
        key = "both_correct" if ca and cb else "a_only" if ca else "b_only" if cb else "both_wrong"
        cells[key] += 1
    assert {k: out["mcnemar"][k] for k in cells} == cells
    a_only, b_only = cells["a_only"], cells["b_only"]
    assert a_only + b_only == 25  # exactly at the switch: chi-square from 25 discordant samples on
    assert out["mcnemar"]["method"] == "chi2 continuity-corrected"
    statistic = (abs(a_only - b_only) - 1) ** 2 / (a_only + b_only)
    assert out["mcnemar"]["p"] == pytest.approx(math.erfc(math.sqrt(statistic / 2)))
    acc_a = (cells["both_correct"] + cells["a_only"]) / len(joined)
    acc_b = (cells["both_correct"] + cells["b_only"]) / len(joined)
    assert out["accuracy_diff"] == pytest.approx(acc_b - acc_a)


def test_per_date_ic_differences_match_hand() -> None:
    a, b = two_runs()
    out = compare_runs(a, b, n_boot=500, seed=3)
    by_date: dict[object, list[tuple[float, float, float]]] = {}
    for cutoff, pa, pb, r in hand_joined(a, b):
        by_date.setdefault(cutoff, []).append((pa, pb, r))
    ic_diff, rank_diff = [], []
    for cutoff in sorted(by_date):
        pa, pb, r = (list(v) for v in zip(*by_date[cutoff]))
        ic_diff.append(hand_pearson(pb, r) - hand_pearson(pa, r))
        rank_diff.append(hand_pearson(hand_ranks(pb), hand_ranks(r)) - hand_pearson(hand_ranks(pa), hand_ranks(r)))
    assert out["n_dates"] == len(ic_diff) == 6
    assert [d["ic_diff"] for d in out["ic_by_date"]] == pytest.approx(ic_diff, abs=1e-11)
    assert [d["rank_ic_diff"] for d in out["ic_by_date"]] == pytest.approx(rank_diff, abs=1e-11)
    assert out["ic"]["mean_diff"] == pytest.approx(statistics.mean(ic_diff), abs=1e-11)
    assert out["rank_ic"]["mean_diff"] == pytest.approx(statistics.mean(rank_diff), abs=1e-11)
    ic_a = [d["ic_a"] for d in out["ic_by_date"]]
    ic_b = [d["ic_b"] for d in out["ic_by_date"]]
    assert out["ic"]["t_p"] == pytest.approx(stats.ttest_rel(ic_b, ic_a).pvalue, rel=1e-6)
    assert out["ic"]["wilcoxon_p"] == pytest.approx(stats.wilcoxon(ic_diff).pvalue)
    low, high = out["ic"]["ci"]
    assert low < out["ic"]["mean_diff"] < high
    assert out["ic"]["mean_diff"] > 0  # b was built to track returns more closely


def test_ci_resamples_dates_with_the_documented_draws() -> None:
    a, b = two_runs(dates=8)
    out = compare_runs(a, b, n_boot=300, seed=9)
    diffs = [d["ic_diff"] for d in out["ic_by_date"]]
    draws = np.random.default_rng(9).integers(0, len(diffs), size=(300, len(diffs)))
    means = [sum(diffs[k] for k in drawn) / len(drawn) for drawn in draws]
    assert out["ic"]["ci"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    assert out == compare_runs(a, b, n_boot=300, seed=9)


def test_run_against_itself_is_all_zero_with_p_one() -> None:
    a, _ = two_runs()
    out = compare_runs(a, a.copy(), n_boot=200)
    for name in ("ic", "rank_ic"):
        assert out[name]["mean_diff"] == 0.0
        assert out[name]["ci"] == [0.0, 0.0]
        assert out[name]["t_p"] == 1.0 and out[name]["wilcoxon_p"] == 1.0
    assert out["mcnemar"]["a_only"] == out["mcnemar"]["b_only"] == 0
    assert out["mcnemar"]["p"] == 1.0
    assert out["accuracy_diff"] == 0.0 and out["bias_change"] == 0.0
    assert out["pred_up_down_ratio_change"] == 0.0


def test_mcnemar_switches_to_continuity_corrected_chi_square() -> None:
    correct_a = np.array([True] * 20 + [False] * 10 + [True] * 5 + [False] * 7)
    correct_b = np.array([False] * 20 + [True] * 10 + [True] * 5 + [False] * 7)
    out = mcnemar(correct_a, correct_b)
    assert (out["a_only"], out["b_only"], out["both_correct"], out["both_wrong"]) == (20, 10, 5, 7)
    assert out["method"] == "chi2 continuity-corrected"
    statistic = (abs(20 - 10) - 1) ** 2 / 30
    assert out["statistic"] == pytest.approx(statistic)
    assert out["p"] == pytest.approx(math.erfc(math.sqrt(statistic / 2)))  # chi2(1) survival
    small = mcnemar(correct_a[18:], correct_b[18:])  # 2 + 10 discordant
    assert small["method"] == "exact binomial"
    assert small["p"] == pytest.approx(hand_exact_mcnemar_p(2, 10))


def test_bias_and_ratio_changes_match_hand() -> None:
    a, b = two_runs()
    out = compare_runs(a, b, n_boot=0)
    joined = hand_joined(a, b)
    n = len(joined)

    def bias_and_ratio(k: int) -> tuple[float, float]:
        up = sum(row[k] > 0 for row in joined)
        true_up = sum(row[3] > 0 for row in joined)
        return (up - (n - up)) / n - (true_up - (n - true_up)) / n, up / (n - up)

    (bias_a, ratio_a), (bias_b, ratio_b) = bias_and_ratio(1), bias_and_ratio(2)
    assert out["bias_a"] == pytest.approx(bias_a) and out["bias_b"] == pytest.approx(bias_b)
    assert out["bias_change"] == pytest.approx(bias_b - bias_a)
    assert out["pred_up_down_ratio_change"] == pytest.approx(ratio_b - ratio_a)


def test_joins_on_sample_id_when_both_have_it() -> None:
    a, b = two_runs()
    a = a.assign(sample_id=[f"id{i}" for i in range(len(a))])
    b = b.assign(sample_id=[f"id{i}" for i in range(len(b))], code=lambda f: f["code"].str.lower())
    b = b.sample(frac=1.0, random_state=0)
    out = compare_runs(a, b, n_boot=0)
    assert out["join_on"] == ["sample_id"]
    assert out["n_joined"] == 60 and out["n"] == 56
    b_no_id = b.drop(columns="sample_id")
    assert compare_runs(a, b_no_id, n_boot=0)["n_joined"] == 0  # codes differ: nothing pairs on cutoff+code


def test_rejects_disagreeing_labels_and_duplicate_keys() -> None:
    a, b = two_runs()
    with pytest.raises(ValueError, match="disagree"):
        compare_runs(a, b.assign(r_30=b["r_30"] + 0.01), n_boot=0)
    with pytest.raises(ValueError, match="duplicated"):
        compare_runs(pd.concat([a, a.iloc[:1]]), b, n_boot=0)


def test_output_is_strict_json() -> None:
    a, b = two_runs()
    out = compare_runs(a, b, n_boot=100)
    assert json.loads(json.dumps(out, allow_nan=False)) == out


def test_release_split_is_the_same_comparison_on_each_side_of_the_date() -> None:
    """§4.4 peeping test: split at b's release, each side equals the comparison of that side alone;
    a b that "knew" the pre-release outcomes gains more before its release than after."""
    a, b = two_runs(dates=8, stocks=12, seed=4)
    cutoffs = sorted(a["cutoff"].unique())
    split = cutoffs[4]
    peeked = b.copy()
    late = peeked["cutoff"] >= split
    peeked.loc[late, "pred"] = a.loc[late, "pred"].to_numpy()  # after release: no better than a
    out = compare_runs(a, peeked, n_boot=0, split_date=f"{split:%Y-%m-%d}")
    for side, mask in (("before_split", a["cutoff"] < split), ("after_split", a["cutoff"] >= split)):
        alone = compare_runs(a[mask], peeked[mask], n_boot=0)
        got = out[side]
        assert got["n"] == alone["n"]
        for key in ("n_dates", "accuracy_diff", "bias_change"):
            assert got[key] == alone[key], (side, key)
        assert got["ic"]["mean_diff"] == alone["ic"]["mean_diff"]
    assert out["before_split"]["ic"]["mean_diff"] > 0.2 and out["after_split"]["ic"]["mean_diff"] == 0
    assert "before_split" not in compare_runs(a, peeked, n_boot=0)


def test_task_splits_at_the_later_release_only() -> None:
    from candlebench.core.results import RunAnswers
    from candlebench.task_api.base import ScoreSettings
    from candlebench.tasks.forecast.task import TASK

    a, b = two_runs()
    run = lambda frame, date: RunAnswers("x", frame, frame, {"release_date": date}, {"horizon": 30})
    settings = ScoreSettings(n_boot=0)
    assert TASK.compare(run(a, "2024-01-01"), run(b, "2024-05-01"), settings)["split_date"] == "2024-05-01"
    assert "split_date" not in TASK.compare(run(b, "2024-05-01"), run(a, "2024-01-01"), settings)
    assert "split_date" not in TASK.compare(run(a, None), run(b, "2024-05-01"), settings)
