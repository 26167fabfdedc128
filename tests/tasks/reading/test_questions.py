"""Each reading question's rule on hand-made bars (tasks/reading/questions.py, docs/reading.md):
the answer, and the cases a few pixels could change left out with their reason. Hand-made charts
draw a price unit as 10 pixels (``PX``), so values 0.4 apart are 4 px apart: the edge of "told apart"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from candlebench.market.bars import chart_bars
from candlebench.rendering.chart import ChartSpec, geometry
from candlebench.tasks.reading.patterns import last_pattern
from candlebench.tasks.reading.questions import (CANNOT_TELL, CHOICES, MIN_LINE_BARS, NUMERIC, QUESTIONS, RULES, Chart,
                                                 LeftOut, is_right, question_set)

pytestmark = pytest.mark.unit
PX = 10.0  # pixels per price unit of the hand-made charts
SPEC = ChartSpec(marks=4)


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


def asked(bars: pd.DataFrame, freq: str = "daily", cutoff: str | None = None):
    cutoff = pd.Timestamp(cutoff) if cutoff else bars["date"].iloc[-1] + pd.Timedelta(days=7)
    return question_set(bars, SPEC, "T", cutoff, freq)


def chart(close=(), open_=None, high=None, low=None, volume=None, mas=None, marked=(0, 1, 2, 3), **kw) -> Chart:
    close = np.asarray(close, dtype=float)
    open_ = close if open_ is None else np.asarray(open_, dtype=float)
    nan = np.full(len(close), np.nan)
    return Chart(open_, close + 0.5 if high is None else np.asarray(high, float),
                 close - 0.5 if low is None else np.asarray(low, float), close,
                 np.ones(len(close)) if volume is None else np.asarray(volume, float),
                 {5: nan, 20: nan, 90: nan, **({} if mas is None else {w: np.asarray(v, float) for w, v in mas.items()})},
                 marked, px=lambda p: np.asarray(p, dtype=float) * PX, vol_px=lambda v: np.asarray(v, dtype=float), **kw)


def ask(rule: str, c: Chart):
    return RULES[rule](c)


def test_every_question_has_choices_or_a_numeric_kind_the_parser_reads_it_by():
    assert set(CHOICES) | set(NUMERIC) == set(QUESTIONS) and not set(CHOICES) & set(NUMERIC)
    assert set(NUMERIC.values()) <= {"price", "count"} and all(isinstance(c, tuple) for c in CHOICES.values())
    assert CANNOT_TELL == "cannot_tell" and all(CANNOT_TELL in CHOICES[f"ma{w}"] for w in (5, 20, 90))
    assert CANNOT_TELL in CHOICES["mark_color"]


def test_position_against_each_drawn_ma_in_pixels():
    line = np.full(MIN_LINE_BARS, 10.0)
    assert ask("ma20", chart(np.r_[line[:-1], 9.0], mas={20: line})) == "below"
    assert ask("ma5", chart(np.r_[line[:-1], 10.5], mas={5: line})) == "above"  # 5 px above
    with pytest.raises(LeftOut, match="last close and MA5 within 4 px"):
        ask("ma5", chart(np.r_[line[:-1], 10.3], mas={5: line}))  # 3 px: a careful reader may say either


def test_a_line_not_drawn_cannot_be_told_and_a_stub_is_not_asked():
    close = np.full(30, 10.0)
    assert ask("ma90", chart(close)) == CANNOT_TELL
    stub = np.r_[np.full(30 - MIN_LINE_BARS + 1, np.nan), np.full(MIN_LINE_BARS - 1, 9.0)]
    with pytest.raises(LeftOut, match=f"MA90 drawn over fewer than {MIN_LINE_BARS} bars"):
        ask("ma90", chart(close, mas={90: stub}))
    # Real bars: MA90 of a 95-bar history is drawn over 6 daily bars; of 150 weekly bars' none.
    daily = asked(drawn(history(np.linspace(10, 20, 95))))
    assert "ma90" not in daily.answers and "fewer than" in daily.left_out["ma90"]
    assert asked(drawn(history(np.linspace(10, 20, 150)), "weekly"), "weekly").answers["ma90"] == CANNOT_TELL


def test_ambiguity_is_judged_in_the_charts_pixels_by_the_renderers_own_axis():
    # The same 0.3% gap between the last close and MA5: apart on a chart spanning 10-11, a pixel
    # or so on a chart spanning 5-20 (the layout's scale decides, not a share of the price).
    narrow = drawn(history(np.r_[np.full(119, 10.0), 10.8]))
    lay = geometry(narrow, SPEC)
    gap = abs(lay.y_of(narrow["close"].iloc[-1]) - lay.y_of(narrow["ma5"].iloc[-1]))
    assert gap > 4 and asked(narrow).answers["ma5"] == "above"
    wide = history(np.r_[np.linspace(5, 20, 100), np.full(19, 10.0), 10.03])
    assert "within 4 px" in asked(drawn(wide)).left_out["ma5"]


def test_position_reads_the_weekly_bars_and_mas_on_the_weekly_chart():
    # Daily closes fall in the last week only: the daily close is below its MA5, the weekly (whose
    # last bar is that week) too; their MA5 are different averages.
    hist = history([*np.linspace(10, 20, 400), 19, 18, 17, 16, 15])
    daily, weekly = drawn(hist), drawn(hist, "weekly")
    assert len(weekly) == len(daily) and weekly["close"].iloc[-1] == daily["close"].iloc[-1] == 15
    assert weekly["ma5"].iloc[-1] != daily["ma5"].iloc[-1]
    assert asked(weekly, "weekly").answers["ma20"] == "below"
    assert asked(daily).answers["ma90"] == "below"  # 15 under the daily MA90 (~18)


def test_extremes_among_the_lettered_bars_and_pixel_ties_left_out():
    c = chart([10, 12, 9, 11, 13], marked=(0, 1, 2, 3))  # the 13 is not marked
    assert ask("highest", c) == "B" and ask("lowest", c) == "C"
    with pytest.raises(LeftOut, match="tie: two marked bars within 4 px"):
        ask("highest", chart([10, 12, 9, 12.3]))  # 3 px apart
    with pytest.raises(LeftOut, match="fewer than 4"):
        ask("highest", chart([1, 2, 3], marked=()))


def test_prices_read_off_the_axis_within_one_percent_where_two_pixels_are_finer():
    c = chart([100, 120, 90, 110, 130])  # 2 px = 0.2, under 1% of these prices
    assert ask("highest_close", c) == 130.0 and ask("last_close", c) == 130.0
    assert is_right("last_close", 13.0, 13.12) and not is_right("last_close", 13.0, 13.2)
    assert not is_right("highest_close", 13.0, "13") and not is_right("highest_close", 13.0, None)
    coarse = chart([1.0, 2.0])  # 2 px = 0.2: 10% of a price of 2
    with pytest.raises(LeftOut, match="2 px span more than 1%"):
        ask("last_close", coarse)


@pytest.mark.parametrize(("last", "bucket"), [(85, "A"), (95, "B"), (100.5, "C"), (105, "D"), (120, "E"), (102.3, None)])
def test_change_buckets(last, bucket):
    c = chart([100, 101, last])
    if bucket is None:  # 0.3 from the +2% edge: 3 px
        with pytest.raises(LeftOut, match="within 4 px of a bucket edge"):
            ask("change", c)
        return
    assert ask("change", c) == bucket


def test_direction_over_the_last_five_bars_survives_a_miscount():
    assert ask("direction", chart([9, 9, 9, 9, 9, 9, 9.2, 9.5, 9.8, 10])) == "up"
    assert ask("direction", chart([11, 11, 11, 11, 11, 11, 10.8, 10.5, 10.2, 10])) == "down"
    with pytest.raises(LeftOut, match="a bar more or fewer back"):  # up from 5 back, down from 6 back
        ask("direction", chart([12, 12, 12, 11, 9, 9, 9, 9, 9, 10]))
    with pytest.raises(LeftOut, match="within 4 px"):
        ask("direction", chart([9.8, 9.8, 9.8, 9.8, 9.8, 9.8, 9.8, 9.9, 9.9, 10]))


def test_range_position_in_thirds():
    assert ask("range_position", chart([10, 20, 19])) == "top"  # range 9.5-20.5
    assert ask("range_position", chart([10, 20, 15])) == "middle"
    assert ask("range_position", chart([10, 20, 11])) == "bottom"
    with pytest.raises(LeftOut, match="third of the range"):
        ask("range_position", chart([10, 20, 13.2]))  # the lower third ends at 13.17


def test_crossings_in_the_last_ten_bars_and_the_windows_edge():
    n = 16
    slow = np.full(n, 10.0)
    up = np.r_[np.full(10, 9.0), np.full(6, 11.0)]  # MA5 under MA20 until 6 bars ago
    assert ask("cross", chart(np.ones(n), mas={5: up, 20: slow})) == "golden"
    assert ask("cross", chart(np.ones(n), mas={5: 20 - up, 20: slow})) == "death"
    early = np.r_[np.full(2, 9.0), np.full(14, 11.0)]  # crossed 14 bars ago: not in the last 10
    assert ask("cross", chart(np.ones(n), mas={5: early, 20: slow})) == "none"
    edge = np.r_[np.full(5, 9.0), np.full(11, 11.0)]  # crossed on the 11th bar back: a miscount finds it
    with pytest.raises(LeftOut, match="at the window's edge"):
        ask("cross", chart(np.ones(n), mas={5: edge, 20: slow}))
    twice = np.r_[np.full(8, 9.0), np.full(3, 11.0), np.full(5, 9.0)]
    with pytest.raises(LeftOut, match="more than once"):
        ask("cross", chart(np.ones(n), mas={5: twice, 20: slow}))
    near = np.r_[np.full(15, 9.0), 10.3]  # ends 3 px above MA20
    with pytest.raises(LeftOut, match="within 4 px of MA20"):
        ask("cross", chart(np.ones(n), mas={5: near, 20: slow}))
    with pytest.raises(LeftOut, match="not drawn"):
        ask("cross", chart(np.ones(n), mas={5: up, 20: np.r_[np.full(5, np.nan), np.full(n - 5, 10.0)]}))


def test_moving_average_order_and_slope():
    n = 12
    mas = {5: np.full(n, 12.0), 20: np.linspace(9, 11, n), 90: np.full(n, 10.0)}
    assert ask("ma_order", chart(np.ones(n), mas=mas)) == "ma5>ma20>ma90"
    assert ask("ma_slope", chart(np.ones(n), mas=mas)) == "rising"
    assert ask("ma_slope", chart(np.ones(n), mas={**mas, 20: np.linspace(11, 9, n)})) == "falling"
    with pytest.raises(LeftOut, match="two MAs within 4 px"):
        ask("ma_order", chart(np.ones(n), mas={**mas, 90: np.full(n, 11.2)}))
    with pytest.raises(LeftOut, match="MA20 now and 5 bars back within 4 px"):
        ask("ma_slope", chart(np.ones(n), mas={**mas, 20: np.linspace(10, 10.3, n)}))


def test_up_candles_by_colour_and_flat_candles_left_out():
    open_ = np.full(12, 10.0)
    close = np.r_[[20, 20], np.full(7, 11.0), np.full(3, 9.0)]  # the first two are not among the last 10
    assert ask("up_candles", chart(close, open_)) == 7
    with pytest.raises(LeftOut, match="flat candle"):
        ask("up_candles", chart(np.r_[close[:-1], 10.0], open_))


def test_volume_questions_and_the_partial_week():
    c = chart(np.ones(5), volume=[100, 400, 200, 300, 500])
    assert ask("volume_above_mean", c) == "yes" and ask("max_volume", c) == "B"
    assert ask("volume_above_mean", chart(np.ones(3), volume=[100, 400, 10])) == "no"
    with pytest.raises(LeftOut, match="within 4 px"):
        ask("volume_above_mean", chart(np.ones(3), volume=[100, 100, 102]))
    with pytest.raises(LeftOut, match="partial week"):
        ask("volume_above_mean", chart(np.ones(5), volume=[100, 400, 200, 300, 500], partial_last=True))


def test_a_weekly_chart_cut_mid_week_reads_no_volume_or_pattern_of_that_week():
    hist = history(np.linspace(10, 20, 300), volume=np.linspace(1000, 500, 300))
    weekly = drawn(hist, "weekly")
    last = weekly["date"].iloc[-1]
    mid_week, next_week = last + pd.Timedelta(days=1), last + pd.Timedelta(days=7 - last.weekday())
    cut = asked(weekly, "weekly", f"{mid_week:%Y-%m-%d}")
    assert last.weekday() < 4 and "partial week" in cut.left_out["volume_above_mean"]
    assert "partial week" in cut.left_out["pattern"] and len(cut.marked) == 4
    assert all(back > 1 for _, back, _ in cut.marked)  # the partial week is never lettered
    assert "volume_above_mean" in asked(weekly, "weekly", f"{next_week:%Y-%m-%d}").answers


def pattern_of(prior, last) -> str:
    """(open, high, low, close) of the prior and the last bar in price units (100 px each: a
    pattern's bodies and shadows are far more than 2 px)."""
    return last_pattern(tuple(v * 100 for v in prior), tuple(v * 100 for v in last), 2.0)


@pytest.mark.parametrize(("prior", "last", "pattern"), [
    ((10.2, 10.6, 9.8, 10.0), (10.0, 11.0, 9.0, 10.05), "doji"),
    ((9.8, 9.9, 9.1, 9.2), (9.0, 9.32, 7.0, 9.3), "hammer"),
    ((10.5, 10.6, 9.9, 10.0), (9.9, 10.8, 9.8, 10.7), "bullish_engulfing"),
    ((10.0, 10.6, 9.9, 10.5), (10.6, 10.7, 9.8, 9.9), "bearish_engulfing"),
    ((10.2, 10.4, 9.9, 10.3), (10.0, 10.9, 9.7, 10.8), "none"),
])
def test_patterns_by_the_textbooks_rules(prior, last, pattern):
    assert pattern_of(prior, last) == pattern


def test_what_talib_called_a_pattern_and_the_textbook_does_not():
    # Lower shadow 1.5 bodies: TA-Lib's hammer (longer than the body), not the textbook's (twice).
    assert pattern_of((9.8, 9.9, 9.1, 9.2), (9.0, 9.65, 8.4, 9.6)) == "none"
    # Engulfing a flat prior candle (a doji): TA-Lib counts it, the textbook wants a real body.
    assert pattern_of((10.0, 10.8, 9.6, 10.01), (9.5, 10.8, 9.4, 10.7)) == "none"


def test_a_pattern_two_pixels_would_change_is_left_out():
    with pytest.raises(LeftOut, match="2 px move changes the pattern"):  # body 1.1 px of an 11 px range
        ask("pattern", chart([9.0, 10.11], [9.0, 10.0], high=[9.5, 10.6], low=[8.5, 9.5]))
    with pytest.raises(LeftOut, match="several patterns"):  # a hammer that engulfs
        ask("pattern", chart([9.6, 9.7], [10.0, 9.5], high=[10.1, 9.72], low=[9.5, 7.0]))


def test_mark_color_and_the_bar_outside_the_drawn_window():
    c = chart([10, 12, 9, 11], [11, 11, 10, 10])
    assert ask("mark_color", c) == "down"  # A = bar 0, closed below its open
    assert ask("mark_color", chart([10, 12, 9, 11], [11, 11, 10, 10], outside=True)) == CANNOT_TELL
    close = np.linspace(10, 20, 300)
    longer = chart_bars(history(close, close * np.where(np.arange(300) % 2, 0.99, 1.01)), "daily", (5, 20, 90), 60)
    found = [question_set(longer.tail(50).reset_index(drop=True), SPEC, code, pd.Timestamp("2021-06-01"), "daily",
                          longer.head(10)) for code in map(str, range(40))]
    outside = [f for f in found if f.mark_color == "E"]
    assert 0 < len(outside) < len(found) / 2 and all(f.answers["mark_color"] == CANNOT_TELL for f in outside)
    assert all(f.marked[-1][0] == "E" and f.marked[-1][1] > 50 for f in outside)
    assert all(len(f.marked) == 4 and f.answers["mark_color"] in ("up", "down") for f in found if f.mark_color == "A")


def test_whether_the_daily_and_the_weekly_chart_agree():
    from candlebench.tasks.reading.questions import PAIR_RULES

    rising, falling, flat = chart([10, 11, 12]), chart([12, 11, 10]), chart([10, 10.1, 10.2])
    assert PAIR_RULES["frames_agree"](rising, rising) == "yes" and PAIR_RULES["frames_agree"](rising, falling) == "no"
    with pytest.raises(LeftOut, match="the weekly chart's last and first close within 4 px"):
        PAIR_RULES["frames_agree"](rising, flat)
