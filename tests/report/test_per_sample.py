"""The report's views of a task that declares its per-sample scores (report/per_sample.py, the
defaults of Task.report and Task.browse): the results table with intervals and the best starred,
the paired comparisons named by their unit, the browser's verdicts. The numbers they show are
scoring/per_sample.py's (tests/scoring/test_per_sample.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from candlebench.core.results import RunAnswers
from candlebench.report.model import scored_run
from candlebench.report.per_sample import browse, sections
from candlebench.scoring.per_sample import Derived, Grouping, Measure, PerSample

pytestmark = pytest.mark.unit

SPEC = PerSample(measures=(Measure("error", "Error", higher_is_better=False),), verdict=True, title="Toy",
                 group="regime", label="truth")
IDS = [f"s{i}" for i in range(10)]


def _answers(name: str, right, error) -> RunAnswers:
    """A scored run of the ten samples, its per-sample scores as the score stage keeps them."""
    frame = pd.DataFrame({"sample_id": IDS, "answer": ['"x"'] * 10, "score_right": right, "score_error": error})
    return RunAnswers(name, frame, pd.DataFrame(), {})


def test_sections_show_every_measure_with_its_interval_and_the_comparisons():
    table = pd.DataFrame({"sample_id": IDS, "right": [True] * 7 + [False] * 3, "error": np.linspace(0, 1, 10)})
    run = RunAnswers("m", pd.DataFrame({"sample_id": IDS, "answer": ["1"] * 10}), pd.DataFrame(), {})
    metrics = {k: v for k, v in SPEC.metrics(table, run, 100, 0).items() if k != "per_sample"}
    runs = [scored_run("m", metrics, False), scored_run("base", {**metrics, "accuracy": 0.5}, False)]
    compared = SPEC.compare(_answers("base", [False] * 10, [1.0] * 10), _answers("m", table["right"], table["error"]),
                            100, 0)
    (section,) = sections(SPEC, "toy", runs, {"base → m": compared})
    results, pairs = section.tables
    assert section.title == "Toy" and list(results.frame.columns) == ["Model", "n", "Accuracy", "Error", "Parse fail"]
    assert results.frame["Accuracy"].iloc[0].startswith("0.700 [") and results.frame["Accuracy"].iloc[0].endswith("★")
    assert "The bootstrap draws samples." in results.note
    row = pairs.frame.set_index("Measure").loc["Accuracy"]
    # Ten samples, exact: 7 go b's way, 3 tie: 2 x 2^3 of the 2^10 swaps are as extreme (16/1024, as McNemar's exact
    # test); Error's p (9 samples one way: 4/1024) is the smaller, so Holm leaves Accuracy's at max(2 x 4, 16)/1024.
    assert compared["accuracy"]["p"] == pytest.approx(16 / 1024) and compared["error"]["p"] == pytest.approx(4 / 1024)
    assert row["a → b"] == "base → m" and row["Δ (b − a)"].startswith("0.700 [") and row["p"] == "0.016"
    assert (row["a"], row["b"], row["p (Holm)"], row["n"]) == ("0.000", "0.700", "0.016", 10)
    assert "sign-flip" in pairs.note and "samples" in pairs.note
    (alone,) = sections(SPEC, "toy", runs, {})  # nothing compared: no comparison table
    assert [t.title for t in alone.tables] == ["Toy: results"]


def test_browse_gives_the_declared_group_and_label_and_the_scored_verdict():
    frame = pd.DataFrame({"sample_id": ["a", "b", "c"], "regime": ["calm", None, "wild"], "truth": ["up", "down", "up"],
                          "answer": ['"up"', '"up"', None], "score_right": [True, False, False]})
    view = browse(SPEC, frame)
    assert view["outcome"].tolist() == ["right", "wrong", None]  # nothing parsed: no verdict shown
    assert view["group"].tolist() == ["calm", "", "wild"] and view["label"].tolist() == ["up", "down", "up"]
    assert browse(PerSample(), frame)["outcome"].tolist() == [None] * 3
    # A declared outcome column, not a measure (E2A's claims): shown whether the answer parsed or not.
    claims = frame.assign(score_claims=[np.nan, 0.0, 1.0])
    assert browse(PerSample(outcome="claims"), claims)["outcome"].tolist() == [None, "wrong", "right"]


def test_a_grouping_gets_its_results_table_and_its_comparison_table():
    spec = PerSample(measures=(Measure("error", "Error", higher_is_better=False),), verdict=True, title="Toy",
                     groups=(Grouping("modality", "Modality"),), extras=(Measure("corpus", "Corpus F1", digits=2),))
    block = {"n": 2, "accuracy": 0.5, "error": 1.25, "ci": {"accuracy": [0.25, 0.75]}}
    metrics = {"n": 4, "accuracy": 0.75, "corpus": 0.4, "groups": {"modality": {"chart": block, "text": {"n": 2}}}}
    compared = {"n": 4, "unit": "sample", "accuracy": {"a": 0.5, "b": 0.75, "diff": 0.25, "p": 0.5, "p_holm": 0.5,
                                                        "n_clusters": 4},
                "corpus": {"a": 0.3, "b": 0.4},
                "groups": {"modality": {"chart": {"n": 2, "error": {"diff": -0.5, "ci": [-1.0, 0.0], "p": None,
                                                                    "n_clusters": 2}}}}}
    (section,) = sections(spec, "toy", [scored_run("m", metrics, False)], {"a → m": compared})
    titles = [t.title for t in section.tables]
    assert titles == ["Toy: results", "Toy: results per modality", "Toy: paired comparisons",
                      "Toy: paired comparisons per modality"]
    results, per_group, pairs, pairs_per_group = (t.frame for t in section.tables)
    assert list(results.columns) == ["Model", "n", "Accuracy", "Error", "Corpus F1", "Parse fail"]
    chart, text = per_group.set_index("Modality").loc["chart"], per_group.set_index("Modality").loc["text"]
    assert (chart["n"], chart["Accuracy"], chart["Error"]) == (2, "0.500 [0.250, 0.750]", "1.250")
    assert (text["Accuracy"], text["Error"]) == ("–", "–")
    overall = pairs.set_index("Measure")
    assert overall.loc["Corpus F1", ["a", "b", "p"]].tolist() == ["0.30", "0.40", "–"]
    assert overall.loc["Accuracy", ["n", "Δ (b − a)"]].tolist() == [4, "0.250"]
    row = pairs_per_group.set_index(["Modality", "Measure"]).loc[("chart", "Error")]
    assert (row["n"], row["Δ (b − a)"], row["p"]) == (2, "-0.500 [-1.000, 0.000]", "–")
    assert "Corpus F1" not in pairs_per_group["Measure"].tolist()  # an extra is the run's alone: no groups
    assert "modality groups, measure by measure" in section.tables[3].note


def test_a_first_pass_and_its_second_pass_are_compared_apart_and_derived_numbers_untested():
    spec = PerSample(measures=(Measure("coverage", "Coverage", ratio=("acted", "one"), missing="nothing asked"),),
                     derived=(Derived("kept", "Kept", ("acted",), lambda t: t["acted"], headline=True, relative=True),),
                     block="all", title="Toy", second_pass_note="The second pass saw the first's answer.")
    runs = [scored_run("direct", {"all": {"n": 4, "coverage": 0.5, "kept": 2.0, "ci": {"coverage": [0.25, 0.75]}}},
                       False),
            scored_run("verify", {"all": {"n": 4, "coverage": None, "kept": 3.0}, "revises": "direct"}, False)]
    block = {"n": 4, "unit": "stock-window", "n_clusters": 4,
             "coverage": {"a": 0.5, "b": 0.75, "diff": 0.25, "ci": [0.0, 0.5], "p": None, "n_clusters": 4},
             "kept": {"a": 2.0, "b": 3.0, "diff": 1.0, "ci": [0.0, 2.0], "times": 1.5}}
    tables = sections(spec, "toy", runs, {"direct → verify": block, "m → verify": block})[0].tables
    results = tables[0].frame.set_index("Model")
    # The figures read from the declared block; a derived number in the headline; a missing one explained.
    assert results.loc["direct", "Coverage"] == "0.500 [0.250, 0.750]" and results.loc["verify", "Kept"] == "3.000 ★"
    assert "'–' under Coverage: nothing asked." in tables[0].note
    second, other = tables[1], tables[2]
    assert second.title == "Toy: first pass → second pass (same samples)" and other.title == "Toy: paired comparisons"
    assert second.frame["a → b"].unique().tolist() == ["direct → verify"] and second.note.startswith("The second pass saw")
    kept = second.frame.set_index("Measure").loc["Kept"]
    assert (kept["Δ (b − a)"], kept["b / a"], kept["p"]) == ("1.000 [0.000, 2.000]", "1.50", "–")
    assert "Coverage: each run's ratio of sums over its own denominator" in other.note
    assert "Kept: functions of each run's totals" in other.note
