"""Weekly aggregation and moving averages against hand computations on the real slice."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from candlebench.market.bars import chart_bars, history_before, weekly

pytestmark = pytest.mark.unit


def hand_week(rows, code, first, last):
    """Aggregate the slice's rows of ``code`` dated in [first, last] with plain Python."""
    days = sorted((r for r in rows if r["code"] == code and first <= r["date"] <= last), key=lambda r: r["date"])
    return {
        "date": pd.Timestamp(days[-1]["date"]),
        "open": float(days[0]["open"]),
        "high": max(float(r["high"]) for r in days),
        "low": min(float(r["low"]) for r in days),
        "close": float(days[-1]["close"]),
        "volume": sum(float(r["volume"]) for r in days),
    }


def assert_bar(actual: pd.Series, expected: dict):
    assert actual["date"] == expected["date"]
    for key in ("open", "high", "low", "close", "volume"):
        assert actual[key] == pytest.approx(expected[key], rel=1e-12), key


def test_full_week_equals_hand_aggregation(slice_market, slice_rows):
    weeks = weekly(slice_market.stock("AC"))
    row = weeks[weeks["date"] == pd.Timestamp("2018-03-09")].iloc[0]
    assert_bar(row, hand_week(slice_rows, "AC", "2018-03-05", "2018-03-09"))


def test_week_cut_by_a_midweek_cutoff_holds_only_days_before_it(slice_market, slice_rows):
    cutoff = pd.Timestamp("2018-03-14")  # a Wednesday
    assert cutoff.weekday() == 2 and cutoff in slice_market.calendar
    weeks = weekly(history_before(slice_market.stock("AC"), cutoff))
    last = weeks.iloc[-1]
    assert_bar(last, hand_week(slice_rows, "AC", "2018-03-12", "2018-03-13"))
    assert last["date"] == pd.Timestamp("2018-03-13")
    assert_bar(weeks.iloc[-2], hand_week(slice_rows, "AC", "2018-03-05", "2018-03-09"))


def test_week_with_suspended_days_aggregates_the_days_that_traded(slice_market, slice_rows):
    # PHN did not trade on 2018-03-22 and 2018-03-23 (missing rows in the export).
    traded = {r["date"] for r in slice_rows if r["code"] == "PHN"}
    assert "2018-03-22" not in traded and "2018-03-23" not in traded
    weeks = weekly(slice_market.stock("PHN"))
    row = weeks[weeks["date"] == pd.Timestamp("2018-03-21")].iloc[0]
    assert_bar(row, hand_week(slice_rows, "PHN", "2018-03-19", "2018-03-25"))


def test_weeks_run_monday_to_sunday_across_a_year_end(slice_market):
    weeks = weekly(slice_market.stock("AC"))
    # 2018-12-31 (Mon) .. 2019-01-04 (Fri) is one week even though it spans two years.
    row = weeks[(weeks["date"] >= pd.Timestamp("2018-12-31")) & (weeks["date"] <= pd.Timestamp("2019-01-06"))]
    assert len(row) == 1
    iso = {d.isocalendar()[:2] for d in pd.to_datetime(weeks["date"]).dt.date}
    assert len(iso) == len(weeks)


def test_moving_averages_use_history_beyond_the_shown_bars(slice_market):
    history = history_before(slice_market.stock("ALI"), pd.Timestamp("2018-06-01"))
    shown = chart_bars(history, "daily", (5, 20, 90), max_bars=50)
    assert len(shown) == 50 and shown["date"].iloc[-1] == history["date"].iloc[-1]
    closes = list(history["close"])
    first = len(closes) - 50
    assert shown["ma90"].iloc[0] == pytest.approx(sum(closes[first - 89 : first + 1]) / 90)
    assert shown["ma5"].iloc[-1] == pytest.approx(sum(closes[-5:]) / 5)
    assert shown["ma20"].iloc[-1] == pytest.approx(sum(closes[-20:]) / 20)


def test_moving_average_is_undefined_until_enough_bars(slice_market):
    history = history_before(slice_market.stock("ALI"), pd.Timestamp("2017-02-01"))
    shown = chart_bars(history, "weekly", (5, 20), max_bars=50)
    assert shown["ma5"].isna().sum() == 4 and shown["ma20"].isna().all()


def test_unknown_frequency_is_rejected(slice_market):
    with pytest.raises(ValueError, match="monthly"):
        chart_bars(slice_market.stock("ALI"), "monthly", (5,), 50)


def test_history_before_excludes_the_cutoff_day(slice_market):
    cutoff = pd.Timestamp(date(2018, 3, 14))
    history = history_before(slice_market.stock("AC"), cutoff)
    assert history["date"].max() == pd.Timestamp("2018-03-13")
