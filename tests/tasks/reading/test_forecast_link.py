"""Reading next to forecasting (tasks/reading/forecast_link.py) on simulated readers and forecasters:
a link that is only chart difficulty shows in the raw gap and not at equal difficulty; a real link
shows in both; the intervals are over cutoff dates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from candlebench.tasks.reading.forecast_link import link_figures, strata_of

pytestmark = pytest.mark.unit


def simulated(link: float, seed: int = 0, dates: int = 60, stocks: int = 80) -> pd.DataFrame:
    """A reader whose chance of reading the trend right rises with the chart's pixel margin, and a
    forecaster whose chance of the right direction rises with it too (hard charts are hard to
    forecast), plus ``link`` where the trend was read right."""
    rng = np.random.default_rng(seed)
    n = dates * stocks
    difficulty = rng.uniform(0, 40, n)
    read = rng.random(n) < 0.3 + 0.6 * difficulty / 40
    direction = rng.random(n) < 0.35 + 0.3 * difficulty / 40 + link * read
    cutoff = np.repeat(pd.bdate_range("2018-01-01", periods=dates), stocks)
    return pd.DataFrame({"cutoff": cutoff, "read_right": read, "direction_right": direction, "difficulty": difficulty})


def test_a_reader_and_a_forecaster_linked_by_difficulty_alone_show_no_gap_at_equal_difficulty():
    found = link_figures(simulated(0.0), n_boot=300)
    assert found["gap"] > 0.04 and found["ci"]["gap"][0] > 0  # the artefact: hard charts, wrong both ways
    lo, hi = found["ci"]["stratified_gap"]
    assert abs(found["stratified_gap"]) < 0.015 and lo < 0 < hi
    assert found["read_right"]["n"] + found["read_wrong"]["n"] == found["n"] and found["strata"] == 5
    assert found["read_right"]["ci"]["direction_accuracy"][0] < found["read_right"]["direction_accuracy"]


def test_a_real_link_shows_at_equal_difficulty():
    found = link_figures(simulated(0.1, seed=1), n_boot=300)
    assert found["stratified_gap"] == pytest.approx(0.1, abs=0.03) and found["ci"]["stratified_gap"][0] > 0.03


def test_strata_are_quantiles_of_difficulty_hardest_first():
    strata = strata_of(pd.Series([5.0, 1.0, 3.0, 2.0, 4.0, 9.0, 7.0, 8.0, 6.0, 10.0]))
    assert list(strata) == [2, 0, 1, 0, 1, 4, 3, 3, 2, 4]
    assert set(strata_of(pd.Series([1.0, 1.0, 1.0]))) == {0}
