"""The captioning comparison's report table (the per-sample default, report/per_sample.py, with the
caption task's declaration): one row per metric with its test over samples and Holm over the pair's
metrics; a corpus metric as a → b, untested."""

from __future__ import annotations

import pytest

from candlebench.report.per_sample import comparison_table
from candlebench.tasks.caption.task import TASK

pytestmark = pytest.mark.unit


def test_one_row_per_metric_with_its_p_and_holm():
    compared = {"n": 40, "unit": "sample",
                "cos": {"a": 0.5, "b": 0.6, "diff": 0.1, "ci": [0.05, 0.15], "p": 0.001, "p_holm": 0.008, "n_clusters": 40},
                "sa_f1": {"a": 0.4, "b": 0.5}}
    table = comparison_table(TASK.per_sample, "Captioning", {"base → tuned": compared})
    frame = table.frame.set_index("Measure")
    assert frame.loc["COS", "Δ (b − a)"] == "0.1000 [0.0500, 0.1500]"
    assert (frame.loc["COS", "p"], frame.loc["COS", "p (Holm)"], frame.loc["COS", "n"]) == ("0.001", "0.008", 40)
    assert (frame.loc["SA F1", "a"], frame.loc["SA F1", "p"]) == ("0.4000", "–")
    assert "the sample (one chart, one caption)" in table.note and "SA F1: per-run statistics" in table.note
    assert "as reported" in table.note
