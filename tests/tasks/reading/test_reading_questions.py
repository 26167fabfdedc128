"""Each reading question's rule on hand-made bars (tasks/reading/questions.py, docs/reading.md):
the answer, and the ambiguous cases left out with their reason."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from candlebench.market.bars import chart_bars
from candlebench.tasks.reading.questions import RULES, Chart, LeftOut, is_right, marked_bars, question_set

pytestmark = pytest.mark.unit


def history(close, open_=None, volume=None, start="2020-01-01") -> pd.DataFrame:
    close = np.asarray(close, dtype=float)
    open_ = close if open_ is None else np.asarray(open_, dtype=float)
    return pd.DataFrame({
        "date": pd.bdate_range(start, periods=len(close)), "open": open_,
        "high": np.maximum(open_, close) * 1.01, "low": np.minimum(open_, close) * 0.99, "close": close,
        "volume": np.full(len(close), 1000.0) if volume is None else np.asarray(volume, dtype=float),
    })


def drawn(hist: pd.DataFrame, freq: str = "daily") -> pd.DataFrame:
    return chart_bars(hist, freq, (5, 20, 90), 50)


def chart(close=(), open_=None, high=None, low=None, volume=None, mas=None, marked=(0, 1, 2, 3)) -> Chart:
    close = np.asarray(close, dtype=float)
    open_ = close if open_ is None else np.asarray(open_, dtype=float)
    nan = np.full(len(close), np.nan)
    return Chart(open_, close * 1.01 if high is None else np.asarray(high, float),
                 close * 0.99 if low is None else np.asarray(low, float), close,
                 np.ones(len(close)) if volume is None else np.asarray(volume, float),
                 {5: nan, 20: nan, 90: nan, **({} if mas is None else {w: np.asarray(v, float) for w, v in mas.items()})},
                 marked)


def ask(rule: str, c: Chart):
    return RULES[rule](c)


def test_position_against_each_drawn_ma_and_the_close_calls_left_out():
    rising = drawn(history(np.linspace(10, 20, 120)))
    found = question_set(rising, "s")
    assert {found.answers[k] for k in ("ma5", "ma20", "ma90")} == {"above"}
    assert "ma90" not in question_set(drawn(history(np.linspace(20, 10, 60))), "s").answers  # MA90 not drawn
    assert question_set(drawn(history(np.linspace(20, 10, 60))), "s").left_out["ma90"] == "MA90 not drawn on the last bar"
    assert ask("ma20", chart([10, 9], mas={20: [10, 9.5]})) == "below"
    with pytest.raises(LeftOut, match="within 0.1% of MA5"):
        ask("ma5", chart([10, 10.005], mas={5: [10, 10.0]}))


def test_position_reads_the_weekly_bars_and_mas_on_the_weekly_chart():
    # Daily closes fall in the last week only: the daily close is below its MA5, the weekly (whose
    # last bar is that week) too; their MA5 are different averages.
    hist = history([*np.linspace(10, 20, 200), 19, 18, 17, 16, 15])
    daily, weekly = drawn(hist), drawn(hist, "weekly")
    assert len(weekly) < len(daily) and weekly["close"].iloc[-1] == daily["close"].iloc[-1] == 15
    assert weekly["ma5"].iloc[-1] != daily["ma5"].iloc[-1]
    assert question_set(weekly, "s").answers["ma20"] == "below"
    assert question_set(daily, "s").answers["ma90"] == "below"  # 15 under the daily MA90 (~18)


def test_extremes_among_the_marked_bars_and_ties_left_out():
    c = chart([10, 12, 9, 11, 13], marked=(0, 1, 2, 3))  # the 13 is not marked
    assert ask("highest", c) == "B" and ask("lowest", c) == "C"
    assert ask("highest_close", c) == 13.0
    with pytest.raises(LeftOut, match="tie"):
        ask("highest", chart([10, 12, 9, 12.01]))
    assert is_right("highest_close", 13.0, 13.12) and not is_right("highest_close", 13.0, 13.2)
    assert not is_right("highest_close", 13.0, "13") and not is_right("highest_close", 13.0, None)


def test_marked_bars_are_four_distinct_bars_from_a_seed():
    first = marked_bars(50, "AC|2020-01-02|daily")
    assert first == marked_bars(50, "AC|2020-01-02|daily") != marked_bars(50, "AC|2020-01-02|weekly")
    assert len(set(first)) == 4 and list(first) == sorted(first) and max(first) < 50
    assert marked_bars(3, "x") == ()
    with pytest.raises(LeftOut, match="fewer than 4"):
        ask("highest", chart([1, 2, 3], marked=()))


@pytest.mark.parametrize(("last", "bucket"), [(85, "A"), (95, "B"), (100.5, "C"), (105, "D"), (120, "E"), (102, "D")])
def test_change_buckets(last, bucket):
    if last == 102:  # exactly on the +2% edge: within 0.1 points of it, left out
        with pytest.raises(LeftOut, match="bucket edge"):
            ask("change", chart([100, 101, last]))
        return
    assert ask("change", chart([100, 101, last])) == bucket


def test_crossings_in_the_last_ten_bars():
    n = 15
    up = np.r_[np.full(10, 9.0), np.full(5, 11.0)]  # MA5 under MA20 (10), above on the 11th bar
    assert ask("cross", chart(np.ones(n), mas={5: up, 20: np.full(n, 10.0)})) == "golden"
    assert ask("cross", chart(np.ones(n), mas={5: 20 - up, 20: np.full(n, 10.0)})) == "death"
    early = np.r_[np.full(2, 9.0), np.full(13, 11.0)]  # crossed 13 bars ago: not in the last 10
    assert ask("cross", chart(np.ones(n), mas={5: early, 20: np.full(n, 10.0)})) == "none"
    twice = np.r_[np.full(8, 9.0), np.full(3, 11.0), np.full(4, 9.0)]
    with pytest.raises(LeftOut, match="more than once"):
        ask("cross", chart(np.ones(n), mas={5: twice, 20: np.full(n, 10.0)}))
    touch = np.r_[np.full(8, 9.0), [10.005], np.full(6, 11.0)]
    with pytest.raises(LeftOut, match="within 0.1% of MA20"):
        ask("cross", chart(np.ones(n), mas={5: touch, 20: np.full(n, 10.0)}))
    with pytest.raises(LeftOut, match="not drawn"):
        ask("cross", chart(np.ones(n), mas={5: up, 20: np.r_[np.full(5, np.nan), np.full(n - 5, 10.0)]}))


def test_up_candles_among_the_last_ten():
    open_ = np.full(12, 10.0)
    close = np.r_[[20, 20], np.full(7, 11.0), np.full(3, 9.0)]  # the first two are not among the last 10
    assert ask("up_candles", chart(close, open_)) == 7
    with pytest.raises(LeftOut, match="body within 0.1%"):
        ask("up_candles", chart(np.r_[close[:-1], 10.005], open_))


def test_volume_questions():
    c = chart(np.ones(5), volume=[100, 400, 200, 300, 500])
    assert ask("volume_above_mean", c) == "yes" and ask("max_volume", c) == "B"
    assert ask("volume_above_mean", chart(np.ones(3), volume=[100, 400, 10])) == "no"
    with pytest.raises(LeftOut, match="within 0.1% of the mean"):
        ask("volume_above_mean", chart(np.ones(3), volume=[100, 100, 100]))


def pattern_bars(last: tuple[float, float, float, float], prior: tuple[float, float, float, float]) -> Chart:
    """Ten ordinary bars (range 2, body 1, drifting down), the prior bar, then the last: (o, h, l, c)."""
    rows = [(12 - 0.1 * i, 12.5 - 0.1 * i, 10.5 - 0.1 * i, 11 - 0.1 * i) for i in range(10)] + [prior, last]
    o, h, l, c = (np.array(x) for x in zip(*rows))
    return chart(c, o, h, l)


@pytest.mark.parametrize(("last", "prior", "pattern"), [
    ((10.0, 10.8, 9.2, 10.01), (10.2, 10.6, 9.8, 10.0), "doji"),
    ((9.0, 9.32, 8.0, 9.3), (9.8, 9.9, 9.1, 9.2), "hammer"),
    ((9.9, 10.8, 9.8, 10.7), (10.5, 10.6, 9.9, 10.0), "bullish_engulfing"),
    ((10.6, 10.7, 9.8, 9.9), (10.0, 10.6, 9.9, 10.5), "bearish_engulfing"),
    ((10.0, 10.9, 9.7, 10.8), (10.2, 10.4, 9.9, 10.3), "none"),
])
def test_pattern_of_the_last_bars_by_talib(last, prior, pattern):
    assert ask("pattern", pattern_bars(last, prior)) == pattern


def test_two_patterns_at_once_are_left_out():
    with pytest.raises(LeftOut, match="several patterns: doji, hammer"):
        ask("pattern", pattern_bars((9.0, 9.02, 8.0, 9.01), (9.8, 9.9, 9.1, 9.2)))
    with pytest.raises(LeftOut, match="fewer than 11"):
        ask("pattern", chart(np.ones(5)))


def test_every_question_has_choices_or_a_numeric_kind_the_parser_reads_it_by():
    from candlebench.tasks.reading.questions import CANNOT_TELL, CHOICES, NUMERIC, QUESTIONS

    assert set(CHOICES) | set(NUMERIC) == set(QUESTIONS) and not set(CHOICES) & set(NUMERIC)
    assert set(NUMERIC.values()) <= {"price", "count"}
    assert CANNOT_TELL == "cannot_tell" and all(CANNOT_TELL in CHOICES[f"ma{w}"] for w in (5, 20, 90))
