"""The per-sample seam (scoring/per_sample.py, Task's defaults): a task that declares its
per-sample scores gets its metrics with intervals, paired comparisons, report tables and browser
verdicts without writing any of them (the tables and verdicts themselves:
tests/report/test_per_sample.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from candlebench.core.results import RunAnswers
from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_ratio
from candlebench.scoring.clustered import holm, paired_ratio
from candlebench.scoring.per_sample import Derived, Grouping, Measure, MissingScores, PerSample
from candlebench.report.model import scored_run
from candlebench.task_api.base import ScoreSettings, Task

pytestmark = pytest.mark.unit

SPEC = PerSample(measures=(Measure("error", "Error", higher_is_better=False),), verdict=True, title="Toy",
                 group="regime", label="truth")


def parsed(ids, cutoffs, answers):
    return pd.DataFrame({"sample_id": ids, "cutoff": pd.to_datetime(cutoffs), "regime": "calm", "truth": "up",
                         "answer": answers})


def test_metrics_are_means_over_defined_values_with_intervals_over_whole_cutoffs():
    ids = [f"s{i}" for i in range(6)]
    cutoffs = ["2020-01-01"] * 3 + ["2020-02-01"] * 3
    table = pd.DataFrame({"sample_id": ids, "right": pd.array([True, False, None, True, True, False], "boolean"),
                          "error": [1.0, np.nan, 3.0, 2.0, 2.0, 2.0]})
    run = RunAnswers("r", parsed(ids, cutoffs, ['"up"'] * 5 + [None]), pd.DataFrame(), {})
    m = SPEC.metrics(table, run, n_boot=200, seed=3)
    assert m["n"] == 6 and m["accuracy"] == pytest.approx(3 / 5) and m["error"] == pytest.approx(2.0)
    assert m["parse_failure_rate"] == pytest.approx(1 / 6) and m["resampled"] == "cutoff"
    assert m["per_sample"] is table
    # The interval of the accuracy: the two cutoffs drawn whole, as reading's date terms do it.
    weights = date_weights(2, 200, 3)
    expected = percentile_ci(weighted_ratio(weights, np.array([1.0, 2.0]), np.array([2.0, 3.0])))
    assert m["ci"]["accuracy"] == pytest.approx(list(expected))


def test_samples_without_the_cluster_column_are_each_their_own_cluster():
    ids = ["a", "b", "c", "d"]
    run = RunAnswers("r", pd.DataFrame({"sample_id": ids, "answer": ["1"] * 4}), pd.DataFrame(), {})
    table = pd.DataFrame({"sample_id": ids, "right": [True, True, False, False], "error": [0.5] * 4})
    m = SPEC.metrics(table, run, n_boot=500, seed=0)
    assert m["resampled"] == "sample" and m["ci"]["error"] == [0.5, 0.5]
    low, high = m["ci"]["accuracy"]
    assert 0 <= low < 0.5 < high <= 1
    # Samples without a cutoff where others have one: drawn together, as one more cluster.
    dated = RunAnswers("r", run.parsed.assign(cutoff=pd.to_datetime(["2020-01-01", None, "2020-01-01", None])),
                    pd.DataFrame(), {})
    assert SPEC.metrics(table, dated, n_boot=50, seed=0)["resampled"] == "cutoff"
    with pytest.raises(ValueError, match=r"lacks the columns \['error'\]"):
        SPEC.metrics(table.drop(columns="error"), run, 0, 0)


def scored(name, ids, right, error, cutoffs=None):
    frame = pd.DataFrame({"sample_id": ids, "answer": ['"x"'] * len(ids), "score_right": right, "score_error": error})
    if cutoffs is not None:
        frame["cutoff"] = pd.to_datetime(cutoffs)
    return RunAnswers(name, frame, pd.DataFrame(), {})


def test_compare_pairs_the_shared_samples_with_intervals_and_tests_over_clusters():
    ids = [f"s{i:02d}" for i in range(30)]
    a = scored("a", ids, [i % 2 == 0 for i in range(30)], [1.0] * 30)
    b = scored("b", ids[:28] + ["x1", "x2"], [True] * 30, [0.75] * 29 + [np.nan])
    c = SPEC.compare(a, b, n_boot=300, seed=0)
    assert c["n"] == 28
    assert c["error"]["diff"] == pytest.approx(-0.25) and c["error"]["ci"] == [-0.25, -0.25]
    # No cutoff column: each of the 28 samples its own cluster, over 16: the normal approximation, whose z
    # is sum(d) / sqrt(sum(d^2)): sqrt(28) for a constant difference, McNemar's sqrt(14) for 14 discordant verdicts.
    assert (c["unit"], c["error"]["n_clusters"]) == ("sample", 28) and "normal approximation" in c["error"]["method"]
    assert c["error"]["p"] == pytest.approx(math.erfc(math.sqrt(28 / 2)))
    acc = c["accuracy"]
    assert acc["a"] == pytest.approx(0.5) and acc["b"] == 1.0 and acc["diff"] == pytest.approx(0.5)
    assert acc["p"] == pytest.approx(math.erfc(math.sqrt(14 / 2)))
    # Holm over the pair's two measures: the smaller p times 2, the larger as it is.
    assert c["error"]["p_holm"] == pytest.approx(2 * c["error"]["p"]) and acc["p_holm"] == pytest.approx(acc["p"])
    low, high = acc["ci"]
    assert 0.2 < low <= 0.5 <= high < 0.8
    with pytest.raises(MissingScores, match=r"\['a'\]"):
        SPEC.compare(RunAnswers("a", a.parsed.drop(columns="score_error"), pd.DataFrame(), {}), b, 10, 0)


class _Declared(Task):
    """A task that declares its per-sample scores and writes no compare, report or browse."""

    name = "declared"
    per_sample = SPEC
    build_samples = inputs = prompt_identity = request = parser = score = None


def test_a_task_that_declares_per_sample_scores_gets_compare_report_and_browse():
    task = _Declared()
    ids = ["a", "b"]
    a, b = scored("a", ids, [True, False], [1.0, 2.0]), scored("b", ids, [True, True], [1.0, 1.0])
    assert task.compare(a, b, ScoreSettings(n_boot=0)) == SPEC.compare(a, b, 0, 0)
    assert [s.title for s in task.report([scored_run("a", {"accuracy": 0.5}, False)], {})] == ["Toy"]
    assert task.browse(b)["outcome"].tolist() == ["right", "right"]
    assert task.summary_line({"accuracy": 0.5, "error": 1.25, "parse_failure_rate": 0.0}) == \
        "accuracy 0.500, error 1.250, parse_failure_rate 0.0"


def test_a_task_without_per_sample_scores_must_bring_its_own_compare_and_report():
    class Bare(_Declared):
        name = "bare"
        per_sample = None

    with pytest.raises(NotImplementedError, match="bare task declares no per_sample scores and no compare"):
        Bare().compare(scored("a", ["x"], [True], [0.0]), scored("b", ["x"], [True], [0.0]), ScoreSettings())
    with pytest.raises(NotImplementedError, match="no report of its own"):
        Bare().report([], {})


GROUPED = PerSample(measures=(Measure("error", "Error", higher_is_better=False),), verdict=True, cluster=None,
                    groups=(Grouping("modality", "Modality"),), extras=(Measure("corpus", "Corpus"),))


def grouped(name, right, error, metrics=None):
    """24 samples, the first 12 of the chart modality, the others text."""
    frame = pd.DataFrame({"sample_id": [f"s{i:02d}" for i in range(24)], "modality": ["chart"] * 12 + ["text"] * 12,
                          "cutoff": pd.to_datetime("2020-01-01"), "answer": ['"x"'] * 24, "score_right": right,
                          "score_error": error})
    return RunAnswers(name, frame, pd.DataFrame(), {}, metrics)


def test_metrics_per_group_are_each_groups_own_means():
    run = grouped("r", [True] * 6 + [False] * 6 + [True] * 12, [1.0] * 12 + [3.0] * 11 + [np.nan])
    table = run.parsed[["sample_id"]].assign(right=run.parsed["score_right"], error=run.parsed["score_error"])
    m = GROUPED.metrics(table, run, n_boot=50, seed=0)
    chart, text = m["groups"]["modality"]["chart"], m["groups"]["modality"]["text"]
    assert (m["n"], m["accuracy"], m["error"]) == (24, pytest.approx(18 / 24), pytest.approx((12 + 33) / 23))
    assert (chart["n"], chart["accuracy"], chart["error"]) == (12, pytest.approx(0.5), pytest.approx(1.0))
    assert (text["n"], text["accuracy"], text["error"]) == (12, pytest.approx(1.0), pytest.approx(3.0))
    # cluster=None: each sample its own cluster, though the samples share a cutoff; a constant is its own interval.
    assert m["resampled"] == "sample" and chart["ci"]["error"] == [1.0, 1.0] and text["ci"]["accuracy"] == [1.0, 1.0]


def test_compare_per_group_tests_each_group_and_holm_runs_over_a_groupings_groups():
    a = grouped("a", [True] * 6 + [False] * 6 + [True] * 12, [1.0] * 24, {"corpus": 0.3, "accuracy": 0.9})
    b = grouped("b", [True] * 24, [1.0] * 24, {"corpus": 0.5, "accuracy": 0.95})
    c = GROUPED.compare(a, b, n_boot=0, seed=0)
    chart, text = c["groups"]["modality"]["chart"], c["groups"]["modality"]["text"]
    # Chart: 12 samples, 6 go b's way and 6 tie: exact, 2 x 2^6 of the 2^12 swaps as extreme = 1/32; text: no
    # difference, every swap as extreme, p = 1. Holm over the two modalities: 2/32 and max(2/32, 1).
    assert (chart["n"], chart["accuracy"]["diff"], chart["accuracy"]["n_clusters"]) == (12, pytest.approx(0.5), 12)
    assert chart["accuracy"]["p"] == pytest.approx(1 / 32) and chart["accuracy"]["p_holm"] == pytest.approx(2 / 32)
    assert text["accuracy"]["p"] == pytest.approx(1.0) and text["accuracy"]["p_holm"] == pytest.approx(1.0)
    assert "exact" in chart["accuracy"]["method"]
    # Overall: 24 samples, the normal approximation: 6 discordant, z = 6 / sqrt(6); Holm over the two measures.
    assert c["accuracy"]["p"] == pytest.approx(math.erfc(math.sqrt(6 / 2)))
    assert c["accuracy"]["p_holm"] == pytest.approx(2 * c["accuracy"]["p"])
    # Not reported: a and b are the means over the shared samples; the extra number a → b alone.
    assert (c["accuracy"]["a"], c["accuracy"]["b"]) == (pytest.approx(0.75), 1.0)
    assert c["corpus"] == {"a": 0.3, "b": 0.5}
    reported = PerSample(measures=GROUPED.measures, verdict=True, cluster=None, reported=True).compare(a, b, 0, 0)
    assert (reported["accuracy"]["a"], reported["accuracy"]["b"]) == (0.9, 0.95)
    assert reported["accuracy"]["diff"] == pytest.approx(0.25) and reported["error"]["a"] is None


def test_a_grouping_the_samples_lack_is_an_error():
    a = grouped("a", [True] * 24, [1.0] * 24)
    spec = PerSample(measures=GROUPED.measures, groups=(Grouping("regime", "Regime"),))
    with pytest.raises(ValueError, match="cannot group by regime"):
        spec.compare(a, a, 0, 0)


def test_groups_come_in_the_order_of_their_values():
    """Horizons 5 and 30 in that order (as numbers, not as text, where "30" < "5")."""
    run = grouped("r", [True] * 24, [1.0] * 24)
    run.parsed["horizon"] = [30, 5] * 12
    table = run.parsed[["sample_id"]].assign(right=True, error=1.0)
    spec = PerSample(measures=GROUPED.measures, verdict=True, groups=(Grouping("horizon", "Horizon"),))
    assert list(spec.metrics(table, run, 0, 0)["groups"]["horizon"]) == ["5", "30"]
    assert list(spec.compare(run, run, 0, 0)["groups"]["horizon"]) == ["5", "30"]


# A ratio measure: wrong answers over acting ones, each run over its own acting answers; coverage: acting
# over all. Clusters: stock-windows, the values of two columns. Derived: coverage x (1 - error).
RATIO = PerSample(measures=(Measure("coverage", "Coverage", ratio=("acted", "one")),
                            Measure("error", "Error", higher_is_better=False, ratio=("wrong", "acted"))),
                  cluster=("code", "cutoff"), cluster_unit="stock-window",
                  derived=(Derived("kept", "Kept", ("acted", "wrong", "one"),
                                   lambda t: (t["acted"] - t["wrong"]) / t["one"]),
                           Derived("ratio", "Acted:wrong", ("acted", "wrong"),
                                   lambda t: np.where(t["wrong"] > 0, t["acted"] / np.maximum(t["wrong"], 1), np.nan),
                                   interval=False, relative=True)))


def windowed(name, acted, wrong):
    """24 samples, two to each of 12 stock-windows: 3 stocks x 4 cutoffs, sample i in window i // 2 (the
    windows' order: code, then cutoff)."""
    window = np.arange(24) // 2
    return RunAnswers(name, pd.DataFrame({
        "sample_id": [f"s{i:02d}" for i in range(24)], "code": [f"S{w // 4}" for w in window],
        "cutoff": pd.to_datetime("2020-01-01") + pd.to_timedelta(window % 4, "D"), "answer": ['"x"'] * 24,
        "score_acted": acted.astype(float), "score_wrong": wrong.astype(float), "score_one": 1.0}), pd.DataFrame(), {})


def window_sums(x):
    return x.reshape(12, 2).sum(1)


def test_ratio_measures_take_each_runs_own_denominator_over_whole_stock_windows():
    i = np.arange(24)
    acted_a, acted_b = i % 3 == 0, i % 2 == 0
    wrong_a, wrong_b = acted_a & (i % 4 == 0), acted_b & (i % 6 == 0)
    a, b = windowed("a", acted_a, wrong_a), windowed("b", acted_b, wrong_b)
    table = a.parsed[["sample_id"]].assign(acted=acted_a * 1.0, wrong=wrong_a * 1.0, one=1.0)
    m = RATIO.metrics(table, a, n_boot=200, seed=4)
    # 8 acting answers of 24, 2 of them wrong (samples 0 and 12); kept (8 - 2) / 24; acted:wrong 8 / 2.
    assert (m["coverage"], m["error"], m["kept"], m["ratio"]) == (pytest.approx(8 / 24), pytest.approx(2 / 8),
                                                                  pytest.approx(6 / 24), pytest.approx(4.0))
    assert m["resampled"] == "stock-window" and "ratio" not in m["ci"]
    weights = date_weights(12, 200, 4)
    sa, wa, one = window_sums(acted_a * 1.0), window_sums(wrong_a * 1.0), np.full(12, 2.0)
    assert m["ci"]["error"] == pytest.approx(list(percentile_ci(weighted_ratio(weights, wa, sa))))
    assert m["ci"]["kept"] == pytest.approx(list(percentile_ci((weights @ sa - weights @ wa) / (weights @ one))))

    c = RATIO.compare(a, b, n_boot=200, seed=4)
    assert (c["unit"], c["n"], c["n_clusters"]) == ("stock-window", 24, 12)
    # b acts on 12, wrong on 4 (samples 0, 6, 12, 18): its error 4/12 over its own 12, a's 2/8 over its 8.
    assert (c["error"]["a"], c["error"]["b"]) == (pytest.approx(2 / 8), pytest.approx(4 / 12))
    assert c["error"]["n"] == 16  # the samples where either run acted
    sb, wb = window_sums(acted_b * 1.0), window_sums(wrong_b * 1.0)
    expected = paired_ratio(np.column_stack([wa, sa]), np.column_stack([wb, sb]), "stock-window", 200, 4)
    assert {k: c["error"][k] for k in expected} == expected  # the same draws, the same sums: bit for bit
    assert c["coverage"]["diff"] == pytest.approx(12 / 24 - 8 / 24)
    assert [c[k]["p_holm"] for k in ("coverage", "error")] == pytest.approx(holm([c[k]["p"] for k in ("coverage", "error")]))
    # Derived: a → b untested, its interval from the draws of every measure: date_weights(12, 200, 4).
    kept = c["kept"]
    assert (kept["a"], kept["b"], kept["diff"]) == (pytest.approx(6 / 24), pytest.approx(8 / 24),
                                                    pytest.approx(2 / 24)) and "p" not in kept
    assert kept["ci"] == pytest.approx(list(percentile_ci(((weights @ sb - weights @ wb) - (weights @ sa - weights @ wa))
                                                          / (weights @ one))))
    assert c["ratio"] == {"a": 4.0, "b": 3.0, "diff": -1.0, "times": 0.75}


def test_a_cluster_of_several_columns_needs_them_all():
    i = np.arange(24)
    run = windowed("a", i % 2 == 0, i < 0)
    table = run.parsed[["sample_id"]].assign(acted=(i % 2 == 0) * 1.0, wrong=0.0, one=1.0)
    lacking = RunAnswers("a", run.parsed.drop(columns="cutoff"), pd.DataFrame(), {})
    assert RATIO.metrics(table, lacking, 0, 0)["resampled"] == "sample"
    assert RATIO.compare(lacking, lacking, 0, 0)["n_clusters"] == 24
    # Without cluster_unit, the columns name it.
    named = PerSample(measures=RATIO.measures, cluster=("code", "cutoff"))
    assert named.compare(run, run, 0, 0)["unit"] == "code × cutoff"
    # Holm off over the measures: the overall tests stand alone.
    alone = PerSample(measures=RATIO.measures, cluster=("code", "cutoff"), holm_measures=False)
    assert "p_holm" not in alone.compare(run, run, 0, 0)["coverage"]


def test_a_tasks_browse_detail_replaces_the_defaults_label_and_detail():
    class Detailed(_Declared):
        def browse_detail(self, run):
            return pd.DataFrame({"label": ["facts a", "facts b"], "detail": [{"claims": []}, None]})

    run = scored("b", ["a", "b"], [True, False], [1.0, 1.0])
    view = Detailed().browse(run)
    assert view["label"].tolist() == ["facts a", "facts b"] and view["detail"].tolist() == [{"claims": []}, None]
    assert view["outcome"].tolist() == ["right", "wrong"]  # the default's, from the declared verdict
