"""Samples: cutoffs, labels, drops, regimes against hand computations; no look-ahead."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from candlebench.market.bars import chart_bars, history_before
from candlebench.market.market import Market
from candlebench.tasks.forecast.samples import INPUT_COLUMNS, build_samples, cutoff_dates, sample_id
from helpers import setup_of

pytestmark = pytest.mark.unit

SPEC = setup_of("task=forecast").settings.samples  # task.samples as config.yaml gives it


class Hand:
    """The cutoff rule, labels and regimes re-derived from the raw CSV rows with plain Python."""

    def __init__(self, rows):
        self.dates = sorted({r["date"] for r in rows})
        self.codes = sorted({r["code"] for r in rows})
        self.close = {(r["code"], r["date"]): float(r["close"]) for r in rows}

    def traded(self, code, i):
        return (code, self.dates[i]) in self.close

    def last_traded(self, code, i):
        """Index of the stock's last bar at or before calendar index i, or None."""
        for j in range(i, -1, -1):
            if self.traded(code, j):
                return j
        return None

    def close_at(self, code, i):
        return self.close[(code, self.dates[self.last_traded(code, i)])]

    def eligible(self, code, k, spec):
        if k == 0:
            return False
        n_bars = sum(self.traded(code, j) for j in range(k))
        if n_bars < spec.min_bars or (k - 1) - self.last_traded(code, k - 1) > spec.max_stale_days:
            return False
        end = k - 1 + max(spec.horizons)
        final = max(j for j in range(len(self.dates)) if self.traded(code, j))
        return end < len(self.dates) and end <= final

    def label(self, code, k, h):
        return self.close_at(code, k - 1 + h) / self.close_at(code, k - 1) - 1

    def regime(self, k, threshold=0.7):
        up = down = n = 0
        for code in self.codes:
            if self.traded(code, k) and self.last_traded(code, k - 1) is not None:
                change = self.close[(code, self.dates[k])] - self.close_at(code, k - 1)
                n += 1
                up += change > 0
                down += change < 0
        return "bull" if up / n > threshold else "bear" if down / n > threshold else "sideways"


@pytest.fixture(scope="module")
def hand(slice_rows):
    return Hand(slice_rows)


@pytest.fixture(scope="module")
def built(slice_market):
    return build_samples(slice_market, SPEC)


def test_cutoffs_every_interval_trading_days(slice_market, hand):
    assert [f"{d:%Y-%m-%d}" for d in cutoff_dates(slice_market.calendar, SPEC)] == hand.dates[::30]
    window = dataclasses.replace(SPEC, start="2018-01-01", end="2019-01-01", interval=20)
    in_window = [d for d in hand.dates if "2018-01-01" <= d < "2019-01-01"]
    assert [f"{d:%Y-%m-%d}" for d in cutoff_dates(slice_market.calendar, window)] == in_window[::20]


def test_every_label_equals_the_hand_computation(built, hand):
    frame = built.frame
    assert len(frame) > 200
    for row in frame.itertuples():
        k = hand.dates.index(f"{row.cutoff:%Y-%m-%d}")
        assert row.r_5 == pytest.approx(hand.label(row.code, k, 5), rel=1e-12, abs=1e-15)
        assert row.r_30 == pytest.approx(hand.label(row.code, k, 30), rel=1e-12, abs=1e-15)
        assert f"{row.t0:%Y-%m-%d}" == hand.dates[hand.last_traded(row.code, k - 1)]
        assert row.n_bars == sum(hand.traded(row.code, j) for j in range(k))


def test_labels_across_suspended_days_hold_the_last_price(built, hand):
    """PHN misses days in the slice: samples whose target day it did not trade use its last close."""
    phn = built.frame[built.frame["code"] == "PHN"]
    across = 0
    for row in phn.itertuples():
        k = hand.dates.index(f"{row.cutoff:%Y-%m-%d}")
        for h in (5, 30):
            if not hand.traded("PHN", k - 1 + h):
                across += 1
                j = hand.last_traded("PHN", k - 1 + h)
                expected = hand.close[("PHN", hand.dates[j])] / hand.close_at("PHN", k - 1) - 1
                assert getattr(row, f"r_{h}") == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert across >= 1


def test_sample_set_and_drops_match_the_rule(built, hand, slice_market):
    expected = {
        (code, d)
        for k, d in enumerate(hand.dates)
        if k % 30 == 0
        for code in hand.codes
        if hand.eligible(code, k, SPEC)
    }
    actual = {(r.code, f"{r.cutoff:%Y-%m-%d}") for r in built.frame.itertuples()}
    assert actual == expected
    n_candidates = len(hand.dates[::30]) * len(hand.codes)
    assert len(actual) + sum(built.dropped.values()) == n_candidates


def test_horizon_past_the_end_of_data_is_dropped_and_counted(built, hand):
    late = [d for k, d in enumerate(hand.dates) if k % 30 == 0 and k - 1 + 30 >= len(hand.dates)]
    assert late, "the slice should end inside the last cutoff's horizon"
    assert not set(built.frame["cutoff"].dt.strftime("%Y-%m-%d")) & set(late)
    assert built.dropped["label horizon past the end of the market data"] == len(late) * len(hand.codes)


def test_the_summary_counts_the_cutoffs_with_samples_as_the_report_header_does(built, hand, slice_market):
    """The last grid cutoff loses every stock (its horizon ends past the data): the summary's
    cutoffs are the dates that have samples, the others counted apart, not 33 against 32."""
    from candlebench.tasks.forecast.samples import summarize

    summary = summarize(built, slice_market, SPEC)
    assert summary["cutoffs"] == built.frame["cutoff"].nunique()
    assert summary["cutoffs_without_samples"] == len(built.cutoffs) - summary["cutoffs"] > 0


def test_stock_whose_data_ends_inside_the_horizon_is_dropped(slice_market):
    last = slice_market.bars[slice_market.bars["code"] == "URC"]["date"].iloc[-200]
    bars = slice_market.bars[(slice_market.bars["code"] != "URC") | (slice_market.bars["date"] <= last)]
    delisted = dataclasses.replace(slice_market, bars=bars.reset_index(drop=True))
    built = build_samples(delisted, SPEC)
    assert built.dropped["label horizon past the stock's last bar"] >= 1
    urc = built.frame[built.frame["code"] == "URC"]
    pos = {d: i for i, d in enumerate(slice_market.calendar)}
    assert all(pos[c] - 1 + 30 <= pos[last] for c in urc["cutoff"])


def test_regime_of_each_cutoff_day(built, hand):
    for cutoff, group in built.frame.groupby("cutoff"):
        k = hand.dates.index(f"{cutoff:%Y-%m-%d}")
        assert set(group["regime"]) == {hand.regime(k)}
    assert {"bull", "bear", "sideways"} <= set(built.frame["regime"])


@pytest.mark.parametrize("trend_by", ["days", "cutoffs"])
def test_continuous_rise_and_fall_flags(slice_market, trend_by):
    """Over a window where a stock rose on more than 70% of its days, it is flagged (synthetic): in
    both readings, as every one of its 30-day labels rises too."""
    bars = slice_market.bars.copy()
    is_ac = bars["code"] == "AC"
    steps = np.where(np.arange(is_ac.sum()) % 5 == 4, 0.99, 1.01)  # 4 of 5 days up
    path = 100 * np.cumprod(steps)
    bars.loc[is_ac, ["open", "high", "low", "close"]] = np.repeat(path[:, None], 4, axis=1)
    bars.loc[bars["code"] == "ALI", ["open", "high", "low", "close"]] = np.repeat(
        (100 * np.cumprod(1 / steps))[:, None], 4, axis=1
    )[: (bars["code"] == "ALI").sum()]
    built = build_samples(dataclasses.replace(slice_market, bars=bars), dataclasses.replace(SPEC, trend_by=trend_by))
    flags = built.frame.groupby("code")[["continuous_rise", "continuous_fall"]].first()
    assert flags.loc["AC"].tolist() == [True, False]
    assert flags.loc["ALI"].tolist() == [False, True]
    assert not flags.drop(index=["AC", "ALI"]).any().any()


def test_continuous_groups_by_cutoff_returns_on_real_data(slice_market, slice_rows):
    """§5.4.2 on the real slice (2017, a cutoff every 10 days): no stock rose on 70% of its daily
    bars, but some rose (fell) over 30 days from more than 70% of their cutoffs — the reading the
    groups use by default. The shares are recomputed from the CSV rows by plain counting."""
    window = dict(start="2017-01-01", end="2018-01-01", interval=10)
    by_days = build_samples(slice_market, dataclasses.replace(SPEC, trend_by="days", **window)).frame
    assert not by_days["continuous_rise"].any() and not by_days["continuous_fall"].any()
    frame = build_samples(slice_market, dataclasses.replace(SPEC, **window)).frame
    rise = set(frame.loc[frame["continuous_rise"], "code"])
    fall = set(frame.loc[frame["continuous_fall"], "code"])
    assert rise and fall and not rise & fall

    closes: dict[str, dict[str, float]] = {}
    for row in slice_rows:
        closes.setdefault(row["code"], {})[row["date"]] = float(row["close"])
    days = sorted({row["date"] for row in slice_rows})
    for code, group in frame.groupby("code"):
        signs = []
        for cutoff in group["cutoff"]:
            t0 = max(i for i, d in enumerate(days) if d < f"{cutoff:%Y-%m-%d}")
            last = lambda k: next(closes[code][d] for d in reversed(days[: k + 1]) if d in closes[code])
            signs.append(last(t0 + 30) / last(t0) - 1)
        up = sum(r > 0 for r in signs) / len(signs)
        down = sum(r < 0 for r in signs) / len(signs)
        assert (code in rise) == (up > 0.7) and (code in fall) == (down > 0.7), code


def test_sample_ids_are_stable_and_unique(built):
    assert built.frame["sample_id"].is_unique
    row = built.frame.iloc[0]
    assert row["sample_id"] == sample_id("forecast", row["code"], row["cutoff"])
    expected = hashlib.sha256(b"forecast|AC|2018-01-02").hexdigest()[:16]
    assert sample_id("forecast", "AC", pd.Timestamp("2018-01-02")) == expected
    assert sample_id("e2a", "AC", pd.Timestamp("2018-01-02")) != expected


def test_min_bars_and_staleness_settings(slice_market):
    strict = build_samples(slice_market, dataclasses.replace(SPEC, min_bars=400))
    assert strict.frame["n_bars"].min() >= 400
    assert "fewer than 400 bars before cutoff" in strict.dropped
    loose = build_samples(slice_market, dataclasses.replace(SPEC, max_stale_days=0))
    assert (loose.frame["t0"] < loose.frame["cutoff"]).all()
    cal = {d: i for i, d in enumerate(slice_market.calendar)}
    assert all(cal[c] - 1 == cal[t] for c, t in zip(loose.frame["cutoff"], loose.frame["t0"]))


# --- no look-ahead ---------------------------------------------------------------------------

def mutate_from(market: Market, cutoff: pd.Timestamp, code: str, n: int, factor: float, seed: int) -> Market:
    """Rescale prices and volumes of ``n`` random bars of ``code`` dated on or after ``cutoff``."""
    bars = market.bars.copy()
    future = bars.index[(bars["code"] == code) & (bars["date"] >= cutoff)]
    hit = np.random.default_rng(seed).choice(future, size=min(n, len(future)), replace=False)
    bars.loc[hit, ["open", "high", "low", "close"]] *= factor
    bars.loc[hit, "volume"] *= 1 / factor
    return dataclasses.replace(market, bars=bars)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.integers(min_value=1, max_value=23),
    code_index=st.integers(min_value=0, max_value=10),
    n=st.integers(min_value=1, max_value=300),
    factor=st.floats(min_value=0.2, max_value=5.0).filter(lambda f: abs(f - 1) > 1e-3),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_mutating_bars_on_or_after_a_cutoff_changes_only_its_labels(
    slice_market, built, which, code_index, n, factor, seed
):
    cutoff = built.cutoffs[which]
    code = sorted(slice_market.bars["code"].unique())[code_index]
    mutated = mutate_from(slice_market, cutoff, code, n, factor, seed)
    after = build_samples(mutated, SPEC)

    before_rows = built.frame[built.frame["cutoff"] == cutoff]
    after_rows = after.frame[after.frame["cutoff"] == cutoff]
    pd.testing.assert_frame_equal(
        before_rows[list(INPUT_COLUMNS)].reset_index(drop=True),
        after_rows[list(INPUT_COLUMNS)].reset_index(drop=True),
    )
    # what a chart, a text prompt or a feature is built from: identical bars and MAs
    for freq in ("daily", "weekly"):
        pd.testing.assert_frame_equal(
            chart_bars(history_before(slice_market.stock(code), cutoff), freq, (5, 20, 90), 50),
            chart_bars(history_before(mutated.stock(code), cutoff), freq, (5, 20, 90), 50),
        )
    # the mutation is real: a label changes exactly when the close it is read from was touched
    if code in set(before_rows["code"]):
        k = slice_market.calendar.get_loc(cutoff)
        stock_dates = slice_market.stock(code)["date"]
        touched = set(mutated.bars.loc[mutated.bars["close"] != slice_market.bars["close"], "date"])
        for h in (5, 30):
            read_from = stock_dates[stock_dates <= slice_market.calendar[k - 1 + h]].iloc[-1]
            changed = (
                before_rows.set_index("code").loc[code, f"r_{h}"] != after_rows.set_index("code").loc[code, f"r_{h}"]
            )
            assert changed == (read_from in touched)
