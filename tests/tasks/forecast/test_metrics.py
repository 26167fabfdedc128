"""candlebench.tasks.forecast.metrics against hand computations in plain Python loops, and against the paper's Table 4.

The ``hand_*`` helpers below never call pandas or the code under test: lists, dicts, loops and the
``statistics`` module only. Per-date p-values are checked against scipy's ``pearsonr`` /
``spearmanr``, an implementation independent of the vectorised one being tested.
"""

from __future__ import annotations

import json
import math
import statistics
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from candlebench.tasks.forecast.metrics import bias_grade, compute_metrics, ic_series
from helpers import ROOT

pytestmark = pytest.mark.unit

D1, D2, D3, D4, D5, D6, D7 = (
    "2024-01-05", "2024-02-05", "2024-03-05", "2024-04-05", "2024-05-05", "2024-06-05", "2024-07-05",
)
NAN = float("nan")


# ---------------------------------------------------------------- hand side


def row(cutoff: str, code: str, pred: float, r_30: float, **extra: object) -> dict[str, object]:
    return {"cutoff": cutoff, "code": code, "pred": pred, "r_30": r_30, **extra}


def hand_clip(p: float) -> float:
    return min(max(p, -0.5), 1.0)


def hand_scored(rows: list[dict], col: str = "r_30") -> list[tuple[str, float, float]]:
    """(cutoff, clipped pred, realised) for rows with a parsed pred and a realised return."""
    return [
        (r["cutoff"], hand_clip(r["pred"]), r[col])
        for r in rows
        if not math.isnan(r["pred"]) and not math.isnan(r[col])
    ]


def hand_pearson(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def hand_ranks(x: list[float]) -> list[float]:
    """Average ranks: 1 + number strictly below + half of the other tied values."""
    return [1 + sum(b < a for b in x) + (sum(b == a for b in x) - 1) / 2 for a in x]


def hand_series(rows: list[dict], col: str = "r_30") -> list[tuple[str, int, float, float]]:
    """(cutoff, n, ic, rank_ic) for each date whose correlation is defined, by date."""
    by_date: dict[str, list[tuple[float, float]]] = {}
    for cutoff, p, r in hand_scored(rows, col):
        by_date.setdefault(cutoff, []).append((p, r))
    out = []
    for cutoff in sorted(by_date):
        xs = [p for p, _ in by_date[cutoff]]
        ys = [r for _, r in by_date[cutoff]]
        if len(xs) < 3 or len(set(xs)) == 1 or len(set(ys)) == 1:
            continue
        out.append((cutoff, len(xs), hand_pearson(xs, ys), hand_pearson(hand_ranks(xs), hand_ranks(ys))))
    return out


def hand_confusion(rows: list[dict], col: str = "r_30") -> dict[str, int]:
    counts = {"tp": 0, "tn": 0, "fp": 0, "fn": 0}
    for _, p, r in hand_scored(rows, col):
        key = ("t" if (p > 0) == (r > 0) else "f") + ("p" if p > 0 else "n")
        counts[key] += 1
    return counts


def hand_accuracy(triples: list[tuple[str, float, float]]) -> float | None:
    if not triples:
        return None
    return sum((p > 0) == (r > 0) for _, p, r in triples) / len(triples)


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def small_rows() -> list[dict]:
    """Ties, one- and two-stock dates, a constant-pred and a constant-return date, NaNs, a clipped value."""
    return [
        # D1: ties in pred (A, B) and in returns (A, D); a parse failure (G); a missing label (H).
        row(D1, "A", 0.10, 0.02), row(D1, "B", 0.10, -0.01), row(D1, "C", -0.20, -0.03),
        row(D1, "D", 0.30, 0.02), row(D1, "E", 0.00, 0.01), row(D1, "F", 0.05, 0.04),
        row(D1, "G", NAN, 0.05), row(D1, "H", 0.20, NAN),
        # D2: 3.0 is out of range, flagged by the parser, scored as 1.0.
        row(D2, "A", 0.20, 0.03), row(D2, "B", -0.10, 0.01), row(D2, "C", 0.05, -0.02),
        row(D2, "D", 3.00, 0.015, pred_in_range=False),
        # D3: one stock -> IC undefined.
        row(D3, "A", 0.10, 0.02),
        # D4: constant prediction -> IC undefined, accuracy still counted.
        row(D4, "A", 0.10, 0.01), row(D4, "B", 0.10, -0.02), row(D4, "C", 0.10, 0.03),
        # D5: constant (zero) return -> IC undefined.
        row(D5, "A", 0.10, 0.0), row(D5, "B", 0.20, 0.0), row(D5, "C", -0.30, 0.0),
        # D6: a third defined date, monotone so its Rank IC is 1.
        row(D6, "A", -0.10, -0.05), row(D6, "B", 0.10, 0.00), row(D6, "C", 0.30, 0.06),
        # D7: two stocks always correlate +-1 -> below the 3-stock minimum, skipped.
        row(D7, "A", 0.10, -0.01), row(D7, "B", -0.20, 0.02),
    ]


def frame_of(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["cutoff"] = pd.to_datetime(frame["cutoff"])
    if "pred_in_range" in frame.columns:
        frame["pred_in_range"] = frame["pred_in_range"].fillna(True).astype(bool)
    return frame


def from_counts(tp: int, tn: int, fp: int, fn: int, dates: int = 16) -> pd.DataFrame:
    """A run with exactly these confusion counts, spread over dates, returns varied so IC is defined."""
    kinds = [(0.1, 1.0)] * tp + [(-0.1, -1.0)] * tn + [(0.1, -1.0)] * fp + [(-0.1, 1.0)] * fn
    cutoffs = pd.date_range("2023-01-02", periods=dates, freq="30B")
    return pd.DataFrame(
        {
            "cutoff": [cutoffs[i % dates] for i in range(len(kinds))],
            "code": [f"S{i}" for i in range(len(kinds))],
            "pred": [p * (1 + (i % 7) / 10) for i, (p, _) in enumerate(kinds)],
            "r_30": [s * (0.01 + (i % 11) / 100) for i, (_, s) in enumerate(kinds)],
        }
    )


# ---------------------------------------------------------------- IC series


def test_ic_series_matches_hand(small_rows: list[dict]) -> None:
    series = ic_series(frame_of(small_rows), horizon=30)
    expected = hand_series(small_rows)
    assert [str(c.date()) for c in series["cutoff"]] == [c for c, *_ in expected] == [D1, D2, D6]
    assert series["n"].tolist() == [n for _, n, _, _ in expected] == [6, 4, 3]
    assert series["ic"].to_numpy() == pytest.approx([ic for *_, ic, _ in expected], abs=1e-12)
    assert series["rank_ic"].to_numpy() == pytest.approx([ric for *_, ric in expected], abs=1e-12)


def test_ic_p_values_match_scipy(small_rows: list[dict]) -> None:
    series = ic_series(frame_of(small_rows), horizon=30)
    by_date: dict[str, list[tuple[float, float]]] = {}
    for cutoff, p, r in hand_scored(small_rows):
        by_date.setdefault(cutoff, []).append((p, r))
    for cutoff, ic_p, rank_ic_p in zip(series["cutoff"], series["ic_p"], series["rank_ic_p"]):
        xs, ys = zip(*by_date[str(cutoff.date())])
        assert ic_p == pytest.approx(stats.pearsonr(xs, ys).pvalue, rel=1e-9, abs=1e-12)
        assert rank_ic_p == pytest.approx(stats.spearmanr(xs, ys).pvalue, rel=1e-9, abs=1e-12)


def test_ic_summary_matches_hand(small_rows: list[dict]) -> None:
    m = compute_metrics(frame_of(small_rows), n_boot=0)
    expected = hand_series(small_rows)
    ics = [ic for *_, ic, _ in expected]
    rics = [ric for *_, ric in expected]
    assert m["n_dates"] == 3 and m["n_dates_skipped"] == 4
    assert m["ic_mean"] == pytest.approx(statistics.mean(ics))
    assert m["ic_median"] == pytest.approx(statistics.median(ics))
    assert m["icir"] == pytest.approx(statistics.mean(ics) / statistics.stdev(ics))
    assert m["rank_ic_mean"] == pytest.approx(statistics.mean(rics))
    assert m["rank_ic_median"] == pytest.approx(statistics.median(rics))
    assert m["rank_icir"] == pytest.approx(statistics.mean(rics) / statistics.stdev(rics))
    by_date: dict[str, list[tuple[float, float]]] = {}
    for cutoff, p, r in hand_scored(small_rows):
        by_date.setdefault(cutoff, []).append((p, r))
    pairs = [list(zip(*by_date[c])) for c, *_ in expected]
    assert m["ic_sig_ratio"] == pytest.approx(sum(stats.pearsonr(x, y).pvalue < 0.05 for x, y in pairs) / 3)
    assert m["rank_ic_sig_ratio"] == pytest.approx(sum(stats.spearmanr(x, y).pvalue < 0.05 for x, y in pairs) / 3)
    assert m["rank_ic_sig_ratio"] > 0  # D6 is perfectly monotone: the ratio is not vacuously 0


def test_spearman_uses_average_ranks_for_ties() -> None:
    rows = [row(D1, c, p, r) for c, p, r in [("A", 0.1, 0.01), ("B", 0.1, 0.02), ("C", 0.2, 0.02), ("D", -0.1, 0.03)]]
    rank_ic = ic_series(frame_of(rows))["rank_ic"].iloc[0]
    # x ranks (2.5, 2.5, 4, 1), y ranks (1, 2.5, 2.5, 4): hand Pearson of those.
    assert rank_ic == pytest.approx(hand_pearson([2.5, 2.5, 4, 1], [1, 2.5, 2.5, 4]))
    assert rank_ic != pytest.approx(hand_pearson([2, 3, 4, 1], [1, 2, 3, 4]))  # ordinal ranks differ


def test_icir_is_over_the_per_date_series_not_one_ic() -> None:
    """The eval card divides one IC by the std of a scalar (always 0 -> ICIR 0); the paper does not."""
    rows = []
    for d, slope in zip(["2024-01-05", "2024-02-05", "2024-03-05", "2024-04-05"], [1.0, 0.5, 1.0, -0.2]):
        for i, noise in enumerate([0.03, -0.01, 0.02, -0.04, 0.0]):
            rows.append(row(d, f"S{i}", (i - 2) / 10, slope * (i - 2) / 100 + noise))
    m = compute_metrics(frame_of(rows), n_boot=0)
    ics = [ic for *_, ic, _ in hand_series(rows)]
    assert len(ics) == 4
    assert m["icir"] == pytest.approx(statistics.mean(ics) / statistics.stdev(ics))
    assert m["icir"] != pytest.approx(0.0, abs=1e-6)
    pooled = hand_pearson([hand_clip(r["pred"]) for r in rows], [r["r_30"] for r in rows])
    assert m["icir"] != pytest.approx(pooled)


# ---------------------------------------------------------------- direction metrics


def test_confusion_and_ratios_match_hand(small_rows: list[dict]) -> None:
    m = compute_metrics(frame_of(small_rows), n_boot=0)
    c = hand_confusion(small_rows)
    assert {k: m[k] for k in c} == c
    tp, tn, fp, fn = c["tp"], c["tn"], c["fp"], c["fn"]
    n = tp + tn + fp + fn
    assert m["n"] == n == 22
    assert m["accuracy"] == pytest.approx((tp + tn) / n)
    assert m["precision"] == pytest.approx(tp / (tp + fp))
    assert m["recall"] == pytest.approx(tp / (tp + fn))
    assert m["specificity"] == pytest.approx(tn / (tn + fp))
    assert m["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
    assert m["fpr"] == pytest.approx(fp / (fp + tn))
    assert m["fnr"] == pytest.approx(fn / (fn + tp))
    assert m["fp_share"] == pytest.approx(fp / n)
    assert m["fn_share"] == pytest.approx(fn / n)


def test_zero_pred_is_predicted_down_and_zero_return_actual_down() -> None:
    rows = [
        row(D1, "A", 0.0, 0.02),   # unclear, actual up -> FN
        row(D1, "B", 0.0, -0.01),  # unclear, actual down -> TN
        row(D1, "C", 0.1, 0.0),    # predicted up, flat return counts as down -> FP
        row(D1, "D", -0.1, 0.0),   # predicted down, flat -> TN
        row(D1, "E", 0.2, 0.03),   # TP
    ]
    m = compute_metrics(frame_of(rows), n_boot=0)
    assert (m["tp"], m["tn"], m["fp"], m["fn"]) == (1, 2, 1, 1)
    assert m["n_unclear"] == 2
    # Without the two unclear rows: C wrong, D right, E right.
    assert m["accuracy_excl_unclear"] == pytest.approx(2 / 3)


def test_all_zero_predictions() -> None:
    rets = [0.02, -0.01, 0.03, 0.0, -0.02, 0.01]
    rows = [row(D1 if i < 3 else D2, f"S{i}", 0.0, r) for i, r in enumerate(rets)]
    m = compute_metrics(frame_of(rows), n_boot=100)
    up = sum(r > 0 for r in rets)
    assert m["n_unclear"] == 6
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (0, 0, up, 6 - up)
    assert m["accuracy"] == pytest.approx((6 - up) / 6)
    assert m["accuracy_excl_unclear"] is None
    assert m["precision"] == 0.0 and m["recall"] == 0.0 and m["f1"] == 0.0  # documented: 0 when undefined
    assert m["n_dates"] == 0 and m["n_dates_skipped"] == 2
    assert m["ic_mean"] is None and m["icir"] is None
    assert m["bias"] == pytest.approx((0 - 6) / 6 - (up - (6 - up)) / 6)
    assert m["pred_up_down_ratio"] == 0.0
    assert m["ci"]["ic_mean"] is None and m["ci"]["accuracy"] is not None


def test_constant_prediction_skips_ic_but_keeps_accuracy() -> None:
    rets = [0.02, -0.01, 0.03, 0.04, -0.02, 0.01]
    rows = [row(D1 if i < 3 else D2, f"S{i}", 0.1, r) for i, r in enumerate(rets)]
    m = compute_metrics(frame_of(rows), n_boot=0)
    assert m["n_dates"] == 0 and m["n_dates_skipped"] == 2 and m["ic_mean"] is None
    assert m["accuracy"] == pytest.approx(sum(r > 0 for r in rets) / 6)
    assert m["pred_up_down_ratio"] is None  # nothing predicted down
    assert ic_series(frame_of(rows)).empty


def test_parse_failures_missing_labels_and_clipping(small_rows: list[dict]) -> None:
    m = compute_metrics(frame_of(small_rows), n_boot=0)
    assert m["n_rows"] == len(small_rows)
    assert m["n_parse_failed"] == 1
    assert m["parse_failure_rate"] == pytest.approx(1 / len(small_rows))
    assert m["n_label_missing"] == 1
    assert m["n"] == len(small_rows) - 2
    assert m["n_clipped"] == 1
    unclipped = [dict(r, pred=2.999) if r["pred"] == 3.0 else r for r in small_rows]
    d2_raw = [r for r in unclipped if r["cutoff"] == D2]
    raw_ic = hand_pearson([r["pred"] for r in d2_raw], [r["r_30"] for r in d2_raw])
    d2_ic = next(ic for c, _, ic, _ in hand_series(small_rows) if c == D2)
    assert m["ic_by_date"][1]["ic"] == pytest.approx(d2_ic)
    assert m["ic_by_date"][1]["ic"] != pytest.approx(raw_ic)  # the clip changed the IC


def test_clipped_counts_flags_and_out_of_range_values() -> None:
    rows = [
        row(D1, "A", 1.5, 0.01, pred_in_range=True),    # outside the range, not flagged
        row(D1, "B", 0.5, 0.02, pred_in_range=False),   # flagged, already in range
        row(D1, "C", -0.7, -0.01, pred_in_range=False),
        row(D1, "D", NAN, 0.01, pred_in_range=False),   # parse failure, not a clip
        row(D1, "E", 0.2, 0.03, pred_in_range=True),
    ]
    m = compute_metrics(frame_of(rows), n_boot=0)
    assert m["n_clipped"] == 3
    assert m["ic_by_date"][0]["ic"] == pytest.approx(hand_pearson([1.0, 0.5, -0.5, 0.2], [0.01, 0.02, -0.01, 0.03]))


# ---------------------------------------------------------------- the paper's Table 4

# (model, TP, TN, FP, FN, FP rate %, FN rate %, accuracy %, precision %, recall %, specificity %, F1)
TABLE_4 = [
    ("Claude-haiku-4-5 HS300", 623, 1834, 648, 1670, 13.57, 34.97, 51.46, 49.02, 27.17, 73.89, 0.3496),
    ("Claude-sonnet-4-5 (thinking) HS300", 580, 1170, 471, 1051, 14.39, 32.12, 53.48, 55.19, 35.56, 71.30, 0.4325),
    ("Gemini2.5-flash S&P500", 2754, 1596, 2324, 1794, 27.44, 21.19, 51.37, 54.23, 60.55, 40.71, 0.5722),
    ("GPT5mini HS300", 1206, 1161, 1321, 1087, 27.66, 22.76, 49.57, 47.72, 52.59, 46.78, 0.5004),
    ("XGBoost HS300", 775, 1846, 840, 1691, 16.30, 32.82, 50.87, 47.99, 31.43, 68.73, 0.3798),
]


@pytest.mark.parametrize("model,tp,tn,fp,fn,fp_rate,fn_rate,acc,prec,rec,spec,f1", TABLE_4, ids=[r[0] for r in TABLE_4])
def test_table_4_reproduces_from_counts(
    model: str, tp: int, tn: int, fp: int, fn: int,
    fp_rate: float, fn_rate: float, acc: float, prec: float, rec: float, spec: float, f1: float,
) -> None:
    m = compute_metrics(from_counts(tp, tn, fp, fn), n_boot=0)
    assert (m["tp"], m["tn"], m["fp"], m["fn"]) == (tp, tn, fp, fn)
    assert round(100 * m["fp_share"], 2) == fp_rate
    assert round(100 * m["fn_share"], 2) == fn_rate
    assert round(100 * m["accuracy"], 2) == acc
    assert round(100 * m["precision"], 2) == prec
    assert round(100 * m["recall"], 2) == rec
    assert round(100 * m["specificity"], 2) == spec
    assert round(m["f1"], 4) == f1


def test_table_4_haiku_bias() -> None:
    m = compute_metrics(from_counts(623, 1834, 648, 1670), n_boot=0)
    n = 4775
    pred_up, pred_down, true_up, true_down = 623 + 648, 1834 + 1670, 623 + 1670, 1834 + 648
    assert m["bias"] == pytest.approx((pred_up - pred_down) / n - (true_up - true_down) / n)
    assert m["bias"] == pytest.approx(-0.4281, abs=1e-4)
    assert (m["bias_grade"], m["bias_direction"]) == ("strongly biased", "pessimistic")
    assert m["pred_up_down_ratio"] == pytest.approx(pred_up / pred_down)


# ---------------------------------------------------------------- bias grades


@pytest.mark.parametrize(
    "bias,grade",
    [
        (0.0, "well-calibrated"), (0.05, "well-calibrated"), (-0.05, "well-calibrated"),
        (0.0500001, "slightly biased"), (0.15, "slightly biased"), (-0.15, "slightly biased"),
        (0.1500001, "moderately biased"), (0.40, "moderately biased"),
        (0.4000001, "strongly biased"), (-1.0, "strongly biased"),
        (Fraction(1, 20), "well-calibrated"), (Fraction(3, 20), "slightly biased"), (Fraction(2, 5), "moderately biased"),
    ],
)
def test_bias_grade_boundaries(bias: float, grade: str) -> None:
    assert bias_grade(bias) == grade


def test_bias_exactly_on_a_boundary_through_compute_metrics() -> None:
    # 40 samples, one FP more than FN: bias = 2 (FP - FN) / N = 0.05 exactly.
    m = compute_metrics(from_counts(10, 19, 6, 5, dates=4), n_boot=0)
    assert m["bias"] == pytest.approx(0.05)
    assert (m["bias_grade"], m["bias_direction"]) == ("well-calibrated", "optimistic")


# ---------------------------------------------------------------- groups, horizons, release split


def grouped_rows() -> list[dict]:
    rng = np.random.default_rng(7)
    dates = ["2024-01-05", "2024-02-05", "2024-03-05", "2024-04-05", "2024-05-05"]
    regimes = {"2024-01-05": "bull", "2024-02-05": "sideways", "2024-03-05": "bear",
               "2024-04-05": "sideways", "2024-05-05": "sideways"}
    rows = []
    for d in dates:
        for i in range(12):
            r5 = float(np.round(rng.normal(0, 0.03), 4))
            rows.append(row(
                d, f"S{i}", float(np.round(rng.normal(0, 0.1), 3)), float(np.round(r5 + rng.normal(0, 0.05), 4)),
                r_5=r5, regime=regimes[d], continuous_rise=i % 4 == 0, continuous_fall=i % 5 == 1,
            ))
    rows[3]["pred"] = NAN
    rows[17]["r_30"] = NAN
    return rows


def test_regime_and_continuous_accuracy_match_hand() -> None:
    rows = grouped_rows()
    m = compute_metrics(frame_of(rows), n_boot=0)
    scored = [r for r in rows if not math.isnan(r["pred"]) and not math.isnan(r["r_30"])]
    for regime in ("bull", "bear", "sideways"):
        part = [(r["cutoff"], r["pred"], r["r_30"]) for r in scored if r["regime"] == regime]
        assert m["by_regime"][regime]["n"] == len(part)
        assert m["by_regime"][regime]["accuracy"] == pytest.approx(hand_accuracy(part))
    assert m["by_regime"]["bull"]["n"] == 11  # the parse failure sits on the bull date
    for flag in ("continuous_rise", "continuous_fall"):
        part = [(r["cutoff"], r["pred"], r["r_30"]) for r in scored if r[flag]]
        assert m[flag]["n"] == len(part) > 0
        assert m[flag]["accuracy"] == pytest.approx(hand_accuracy(part))


def test_missing_regime_reads_zero_and_absent_columns_none(small_rows: list[dict]) -> None:
    rows = [dict(r, regime="sideways") for r in small_rows]
    m = compute_metrics(frame_of(rows), n_boot=0)
    assert m["by_regime"]["bull"] == {"n": 0, "n_correct": 0, "accuracy": None}
    bare = compute_metrics(frame_of(small_rows), n_boot=0)
    assert bare["by_regime"] is None and bare["continuous_rise"] is None


def test_by_horizon_matches_hand() -> None:
    rows = grouped_rows()
    m = compute_metrics(frame_of(rows), n_boot=0)
    assert set(m["by_horizon"]) == {"r_5", "r_30"}
    for col in ("r_5", "r_30"):
        ics = [ic for *_, ic, _ in hand_series(rows, col)]
        rics = [ric for *_, ric in hand_series(rows, col)]
        h = m["by_horizon"][col]
        assert h["n"] == len(hand_scored(rows, col))
        assert h["n_dates"] == len(ics) == 5
        assert h["ic_mean"] == pytest.approx(statistics.mean(ics))
        assert h["rank_ic_mean"] == pytest.approx(statistics.mean(rics))
        assert h["icir"] == pytest.approx(statistics.mean(ics) / statistics.stdev(ics))
        assert h["accuracy"] == pytest.approx(hand_accuracy(hand_scored(rows, col)))
    assert m["by_horizon"]["r_30"]["ic_mean"] == m["ic_mean"]
    assert m["by_horizon"]["r_5"]["n"] == m["n"] + 1  # the row missing r_30 has an r_5


def test_release_split_matches_hand() -> None:
    rows = grouped_rows()
    release = "2024-03-05"  # a cutoff on the release date belongs to "after"
    m = compute_metrics(frame_of(rows), release_date=release, n_boot=0)
    assert m["release_date"] == release
    before = [r for r in rows if r["cutoff"] < release]
    after = [r for r in rows if r["cutoff"] >= release]
    for key, part in (("before_release", before), ("after_release", after)):
        split = m[key]
        ics = [ic for *_, ic, _ in hand_series(part)]
        assert split["n_rows"] == len(part)
        assert split["n"] == len(hand_scored(part))
        assert split["n_dates"] == len(ics)
        assert split["ic_mean"] == pytest.approx(statistics.mean(ics))
        assert split["accuracy"] == pytest.approx(hand_accuracy(hand_scored(part)))
        assert {k: split[k] for k in ("tp", "tn", "fp", "fn")} == hand_confusion(part)
    assert (m["before_release"]["n_dates"], m["after_release"]["n_dates"]) == (2, 3)
    assert m["before_release"]["n_parse_failed"] == 1 and m["after_release"]["n_parse_failed"] == 0
    assert compute_metrics(frame_of(rows), n_boot=0)["before_release"] is None


# ---------------------------------------------------------------- bootstrap


def blocky_rows(dates: int = 8, per_date: int = 150) -> list[dict]:
    """Every stock on a date right, or every stock wrong: correctness is clustered by date."""
    rows = []
    for d in range(dates):
        cutoff = str((pd.Timestamp("2024-01-01") + pd.Timedelta(days=30 * d)).date())
        sign = 1 if d % 2 == 0 else -1
        for i in range(per_date):
            r = 0.01 + (i * 37 % per_date) / 1000
            rows.append(row(cutoff, f"S{i}", sign * (0.01 + i / 1000), r))
    return rows


def test_bootstrap_is_deterministic_and_seeded() -> None:
    frame = frame_of(grouped_rows())
    a = compute_metrics(frame, n_boot=300, seed=11)["ci"]
    assert a == compute_metrics(frame, n_boot=300, seed=11)["ci"]
    assert a != compute_metrics(frame, n_boot=300, seed=12)["ci"]


def test_bootstrap_ci_contains_point_estimate() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for d in range(20):
        cutoff = str((pd.Timestamp("2023-01-01") + pd.Timedelta(days=30 * d)).date())
        for i in range(50):
            r = float(rng.normal(0, 0.05))
            rows.append(row(cutoff, f"S{i}", float(0.5 * r + rng.normal(0, 0.05)), r))
    m = compute_metrics(frame_of(rows), n_boot=1000, seed=0)
    for key in ("ic_mean", "rank_ic_mean", "accuracy"):
        low, high = m["ci"][key]
        assert low < m[key] < high


def test_bootstrap_resamples_dates_not_rows() -> None:
    rows = blocky_rows()
    n_boot, seed = 400, 5
    m = compute_metrics(frame_of(rows), n_boot=n_boot, seed=seed)
    # Hand replication: draw dates with the documented generator, pool the drawn dates' rows.
    dates = sorted({r["cutoff"] for r in rows})
    correct = {d: [(r["pred"] > 0) == (r["r_30"] > 0) for r in rows if r["cutoff"] == d] for d in dates}
    draws = np.random.default_rng(seed).integers(0, len(dates), size=(n_boot, len(dates)))
    accs = []
    for drawn in draws:
        hits = [h for k in drawn for h in correct[dates[k]]]
        accs.append(sum(hits) / len(hits))
    assert m["ci"]["accuracy"] == pytest.approx(list(np.percentile(accs, [2.5, 97.5])))
    # Half the dates are all right and half all wrong: date resampling gives a wide interval,
    # row resampling of 1200 independent rows would give about 0.5 +- 0.03.
    low, high = m["ci"]["accuracy"]
    assert high - low > 0.4


# ---------------------------------------------------------------- output


def test_output_is_strict_json(small_rows: list[dict]) -> None:
    m = compute_metrics(frame_of([dict(r, regime="bull") for r in small_rows]), release_date=D2, n_boot=50)
    text = json.dumps(m, allow_nan=False)
    assert json.loads(text) == m
    for key in ("ic_mean", "ic_median", "icir", "ic_sig_ratio", "rank_ic_mean", "rank_ic_median",
                "rank_icir", "rank_ic_sig_ratio", "tp", "tn", "fp", "fn", "accuracy", "precision",
                "recall", "specificity", "f1", "bias"):
        assert key in m


def test_all_parse_failures() -> None:
    rows = [row(D1, f"S{i}", NAN, 0.01 * i) for i in range(4)]
    m = compute_metrics(frame_of(rows), n_boot=100)
    assert m["parse_failure_rate"] == 1.0 and m["n"] == 0
    assert m["accuracy"] is None and m["bias"] is None and m["ci"] is None
    json.dumps(m, allow_nan=False)


def test_answers_cut_while_reasoning_are_counted() -> None:
    """A thinking model whose budget ran out inside <think>: the parser flags it, the metrics count
    it (whether or not a score was found), the report shows the count."""
    from candlebench.report.model import RunMetrics
    from candlebench.tasks.forecast.parse import parse_score
    from candlebench.tasks.forecast.report import table4

    texts = ["<think>The MA20 is rising and volume", "<think>draft <score>0.2</score> but then",
             "<think>fine</think><score>0.1</score>", "<score>-0.1</score>"]
    parsed = [parse_score(t) for t in texts]
    rows = [row(D1, code, NAN if p.value is None else p.value, r, reason=p.reason)
            for code, p, r in zip("ABCD", parsed, (0.01, 0.02, -0.01, 0.03))]
    metrics = compute_metrics(frame_of(rows), n_boot=0)
    assert metrics["n_reasoning_cut"] == 2 and metrics["n_parse_failed"] == 1
    assert compute_metrics(frame_of([{k: v for k, v in r.items() if k != "reason"} for r in rows]), n_boot=0)["n_reasoning_cut"] == 0
    table = table4([RunMetrics("thinker", "thinker", metrics)]).frame
    assert table["Reasoning cut"].tolist() == [2]


def test_reasoning_models_get_a_budget_that_fits():
    """Chain-of-thought and thinking checkpoints carry budgets in the thousands; the direct ones the
    32 tokens a score needs; infer.generation.max_new_tokens follows the model unless set."""
    from hydra import compose, initialize_config_dir

    from candlebench.core.paths import register_resolvers
    from candlebench.task_api.registry import store_configs

    register_resolvers()
    store_configs()  # each task's config.yaml, as every candlebench command registers them
    with initialize_config_dir(config_dir=str(ROOT / "candlebench" / "conf"), version_base=None):
        budget = {m: compose("config", overrides=[f"model={m}"]).infer.generation.max_new_tokens
                  for m in ("qwen2_5_vl_7b", "pyfi_qwenvl_7b_cot", "pyfi_qwenvl_3b_cot", "qwen3_vl_8b_thinking")}
        forced = compose("config", overrides=["model=pyfi_qwenvl_7b_cot", "infer.generation.max_new_tokens=64"])
    assert budget == {"qwen2_5_vl_7b": 32, "pyfi_qwenvl_7b_cot": 4096, "pyfi_qwenvl_3b_cot": 4096,
                      "qwen3_vl_8b_thinking": 4096}
    assert forced.infer.generation.max_new_tokens == 64


def test_unanswered_samples_are_counted_by_reason_in_the_headline_table() -> None:
    """A baseline's "no prediction: <why>" and a model's parse failures, counted per reason in the
    metrics and shown in Table 4 (the headline), most frequent first, the rest summed."""
    from candlebench.report.model import RunMetrics
    from candlebench.tasks.forecast.report import table4

    few = "no prediction: fewer than min_train=100 training samples with a label realised before the cutoff"
    rows = ([row(D1, f"A{i}", NAN, 0.01, reason=few) for i in range(3)]
            + [row(D2, f"B{i}", 0.1 * (i + 1), 0.02 * (i - 1), reason=None) for i in range(4)]
            + [row(D2, "C", 0.2, 0.01, reason="out of range: clipped")])  # a flag on an answer: not a no-answer
    baseline = compute_metrics(frame_of(rows), n_boot=0)
    assert baseline["no_answer_reasons"] == {few: 3} and baseline["n_parse_failed"] == 3
    answered = compute_metrics(frame_of(rows[3:]), n_boot=0)
    assert answered["no_answer_reasons"] == {}
    mixed = [row(D1, f"M{i}", NAN, 0.01, reason=why) for i, why in enumerate(["b", "a", "b", "c", "d", None, "a", "b"])]
    model = compute_metrics(frame_of(mixed + rows[3:]), n_boot=0)
    assert list(model["no_answer_reasons"].items()) == [("b", 3), ("a", 2), ("(no reason given)", 1), ("c", 1), ("d", 1)]

    runs = [RunMetrics(n, n, m) for n, m in (("xgboost", baseline), ("momentum", answered), ("model", model),
                                            ("old", {k: v for k, v in answered.items() if k != "no_answer_reasons"}))]
    cells = table4(runs).frame.set_index("Model")["No answer: why"]
    assert cells["xgboost"] == f"3 of 8: {few} (3)"
    assert cells["momentum"] == "none"
    assert cells["model"] == "8 of 13: b (3); a (2); (no reason given) (1); 2 other reasons (2)"
    assert cells["old"] == "–"  # metrics scored before the count: no claim either way


def test_console_line_and_browser_label_at_meaningful_precision() -> None:
    """IC to 4 decimals, shares as per cent, not 16 digits; a zero return is flat, not "down"."""
    import re

    from candlebench.tasks.forecast.task import TASK, label_text

    line = TASK.summary_line({"ic_mean": 0.0191371374765635, "rank_ic_mean": -0.00123456789, "n_dates": 31,
                              "accuracy": 0.5416666666666666, "bias": 0.08333333333333337, "bias_grade": "slightly biased",
                              "parse_failure_rate": 0.0625, "n_missing_records": 0})
    assert "IC 0.0191, Rank IC -0.0012 over 31 dates, accuracy 0.542" in line and "no answer 6.2%" in line
    assert not re.search(r"\d\.\d{5}", line), line
    assert label_text("r_30", 0.0) == "r_30 = +0.00% (flat, counted as not up)"
    assert label_text("r_30", -0.01234) == "r_30 = -1.23% (down)" and label_text("r_5", 0.05) == "r_5 = +5.00% (up)"
