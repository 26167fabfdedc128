"""candlebench.tasks.forecast.compare against hand computations: joined samples, direction and per-date IC
differences with their tests over dates (every swap of the two runs' dates enumerated by hand)."""

from __future__ import annotations

import itertools
import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest

from candlebench.tasks.forecast.compare import compare_runs

pytestmark = pytest.mark.unit

NAN = float("nan")


def hand_pearson(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def hand_ranks(x: list[float]) -> list[float]:
    return [1 + sum(b < a for b in x) + (sum(b == a for b in x) - 1) / 2 for a in x]


def hand_swap_p(per_date: list[tuple[float, float, float]]) -> float:
    """The exact sign-flip p by enumeration: (a's sum, b's sum, count) per date; every subset of dates
    whose a and b are swapped, its |Δ| against the observed one's."""
    def delta(pairs):
        n = sum(c for _, _, c in pairs)
        return sum(b for _, b, _ in pairs) / n - sum(a for a, _, _ in pairs) / n

    observed = abs(delta(per_date))
    swapped = [abs(delta([(b, a, c) if flip else (a, b, c) for (a, b, c), flip in zip(per_date, flips)]))
               for flips in itertools.product([False, True], repeat=len(per_date))]
    return sum(s >= observed - 1e-12 for s in swapped) / len(swapped)


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


def test_counts_and_the_direction_test_over_dates_match_hand() -> None:
    a, b = two_runs(dates=12)
    out = compare_runs(a, b, n_boot=0)
    joined = hand_joined(a, b)
    assert out["n"] == len(joined) == 120 - 3 - 1
    assert (out["n_parse_failed_a"], out["n_parse_failed_b"], out["n_label_missing"]) == (2, 2, 1)
    per_date: dict[object, list[float]] = {}
    for cutoff, pa, pb, r in joined:
        right = per_date.setdefault(cutoff, [0.0, 0.0, 0.0])
        right[0] += (pa > 0) == (r > 0)
        right[1] += (pb > 0) == (r > 0)
        right[2] += 1
    n = len(joined)
    acc_a, acc_b = (sum(v[k] for v in per_date.values()) / n for k in (0, 1))
    direction = out["direction"]
    assert out["accuracy_diff"] == direction["diff"] == pytest.approx(acc_b - acc_a)
    assert (direction["n_clusters"], direction["unit"]) == (12, "cutoff date")
    assert direction["method"].startswith("paired sign-flip test over clusters (exact")
    assert direction["p"] == pytest.approx(hand_swap_p([tuple(v) for v in per_date.values()]))
    assert direction["p"] < 0.01  # b was built to track the returns


def test_per_date_ic_differences_match_hand() -> None:
    a, b = two_runs(dates=12)
    out = compare_runs(a, b, n_boot=500, seed=3)
    by_date: dict[object, list[tuple[float, float, float]]] = {}
    for cutoff, pa, pb, r in hand_joined(a, b):
        by_date.setdefault(cutoff, []).append((pa, pb, r))
    ic_diff, rank_diff, ic_pairs = [], [], []
    for cutoff in sorted(by_date):
        pa, pb, r = (list(v) for v in zip(*by_date[cutoff]))
        ic_pairs.append((hand_pearson(pa, r), hand_pearson(pb, r), 1.0))
        ic_diff.append(hand_pearson(pb, r) - hand_pearson(pa, r))
        rank_diff.append(hand_pearson(hand_ranks(pb), hand_ranks(r)) - hand_pearson(hand_ranks(pa), hand_ranks(r)))
    assert out["n_dates"] == len(ic_diff) == 12
    assert [d["ic_diff"] for d in out["ic_by_date"]] == pytest.approx(ic_diff, abs=1e-11)
    assert [d["rank_ic_diff"] for d in out["ic_by_date"]] == pytest.approx(rank_diff, abs=1e-11)
    assert out["ic"]["mean_diff"] == pytest.approx(statistics.mean(ic_diff), abs=1e-11)
    assert out["rank_ic"]["mean_diff"] == pytest.approx(statistics.mean(rank_diff), abs=1e-11)
    assert out["ic"]["p"] == pytest.approx(hand_swap_p(ic_pairs))
    assert out["ic"]["unit"] == "cutoff date" and out["ic"]["n_clusters"] == 12
    low, high = out["ic"]["ci"]
    assert low < out["ic"]["mean_diff"] < high
    assert out["ic"]["mean_diff"] > 0  # b was built to track returns more closely


def test_fewer_than_ten_dates_give_no_p_value() -> None:
    a, b = two_runs(dates=9)
    out = compare_runs(a, b, n_boot=50)
    for block in (out["ic"], out["direction"]):
        assert block["p"] is None and block["method"].startswith("fewer than 10 clusters") and block["ci"] is not None


def test_ci_resamples_dates_with_the_documented_draws() -> None:
    a, b = two_runs(dates=8)
    out = compare_runs(a, b, n_boot=300, seed=9)
    diffs = [d["ic_diff"] for d in out["ic_by_date"]]
    draws = np.random.default_rng(9).integers(0, len(diffs), size=(300, len(diffs)))
    means = [sum(diffs[k] for k in drawn) / len(drawn) for drawn in draws]
    assert out["ic"]["ci"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    assert out == compare_runs(a, b, n_boot=300, seed=9)


def test_run_against_itself_is_all_zero_with_p_one() -> None:
    a, _ = two_runs(dates=12)
    out = compare_runs(a, a.copy(), n_boot=200)
    for name in ("ic", "rank_ic"):
        assert out[name]["mean_diff"] == 0.0
        assert out[name]["ci"] == [0.0, 0.0]
        assert out[name]["p"] == 1.0
    assert out["direction"]["p"] == 1.0 and out["direction"]["ci"] == [0.0, 0.0]
    assert out["accuracy_diff"] == 0.0 and out["bias_change"] == 0.0
    assert out["pred_up_down_ratio_change"] == 0.0


def test_horizons_and_regimes_are_families_adjusted_by_holm() -> None:
    a, b = two_runs(dates=12)
    rng = np.random.default_rng(5)
    for frame in (a, b):
        frame["r_5"] = np.round(frame["r_30"].fillna(0) * 0.5 + rng.normal(0, 0.01, len(frame)), 4) if frame is a else 0.0
    b["r_5"] = a["r_5"]
    regime = {d: "bull" if i % 3 else "bear" for i, d in enumerate(sorted(a["cutoff"].unique()))}
    a["regime"] = a["cutoff"].map(regime)
    out = compare_runs(a, b, n_boot=0)
    horizon = out["by_horizon"]
    assert set(horizon) == {"r_5", "r_30"} and horizon["r_30"]["mean_diff"] == out["ic"]["mean_diff"]
    ps = sorted(h["p"] for h in horizon.values())
    assert sorted(h["p_holm"] for h in horizon.values()) == pytest.approx([min(1, 2 * ps[0]), max(min(1, 2 * ps[0]), ps[1])])
    regimes = out["by_regime"]
    assert (regimes["bull"]["n_clusters"], regimes["bear"]["n_clusters"]) == (8, 4)
    assert regimes["bull"]["p"] is None and regimes["bull"]["p_holm"] is None  # 8 dates: too few


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


def test_comparison_tables_name_the_unit_and_show_a_dash_without_a_test() -> None:
    from candlebench.tasks.forecast.report import comparison_table, groups_comparison_table

    few, enough = (compare_runs(*two_runs(dates=d), n_boot=50) for d in (9, 12))
    table = comparison_table({"a → b": few, "a → c": enough})
    rows = table.frame.set_index("a → b")
    assert rows.loc["a → b", "ΔAcc p"] == "–" and rows.loc["a → b", "ΔIC p"] == "–"  # 9 dates: too few
    assert rows.loc["a → c", "ΔAcc p"] != "–" and rows.loc["a → b", "ΔAcc 95% CI"].startswith("[")
    assert "Unit of analysis: the cutoff date" in table.note and "fewer than 10 dates" in table.note
    groups = groups_comparison_table({"a → c": enough})
    assert list(groups.frame["Group"]) == ["r_30"] and "Holm" in groups.note
