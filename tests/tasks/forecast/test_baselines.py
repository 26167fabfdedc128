"""Baselines on the real PSE slice: features see no future bar, XGBoost sees no unrealised label,
predictions are deterministic, and the naive rules equal hand computations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from candlebench.tasks.forecast.baselines import (
    BASELINES,
    label_target_dates,
    walk_forward,
    xgboost_walk_forward,
)
from candlebench.market.bars import history_before, weekly
from candlebench.market.market import Market
from candlebench.tasks.forecast.features import feature_table, features_for
from candlebench.tasks.forecast.parse import SCORE_MAX as HIGH
from candlebench.tasks.forecast.parse import SCORE_MIN as LOW
from candlebench.tasks.forecast.samples import build_samples
from helpers import ROOT, setup_of

pytestmark = pytest.mark.unit

H = 30
SAMPLES = setup_of("task=forecast").settings.samples  # task.samples as config.yaml gives it
MIN_TRAIN = 20  # the slice has 11 samples per cutoff: the walk-forward predicts from the 3rd on


@pytest.fixture(scope="module")
def samples(slice_market: Market) -> pd.DataFrame:
    return build_samples(slice_market, SAMPLES).frame


@pytest.fixture(scope="module")
def features(samples: pd.DataFrame, slice_market: Market) -> pd.DataFrame:
    return feature_table(samples, slice_market.bars)


# --- features -------------------------------------------------------------------------------------


def test_features_for_equals_the_table_row_and_independent_computations(samples, slice_market, features):
    for row in samples.iloc[[0, 57, 115, len(samples) - 1]].itertuples():
        history = history_before(slice_market.stock(row.code), row.cutoff)
        one = pd.Series(features_for(history))
        pd.testing.assert_series_equal(one, features.loc[row.sample_id], check_names=False)

        close = history["close"]
        assert one["d_ret_5"] == pytest.approx(close.iloc[-1] / close.iloc[-6] - 1, rel=1e-12)
        ma90 = close.rolling(90).mean().iloc[-1]
        assert one["d_close_ma90"] == pytest.approx(close.iloc[-1] / ma90 - 1, rel=1e-9)
        week = weekly(history)  # the chart's weekly bars, last week cut at the cutoff
        assert one["w_ret_1"] == pytest.approx(week["close"].iloc[-1] / week["close"].iloc[-2] - 1, rel=1e-12)
        last = week.iloc[-1]
        body = (last["close"] - last["open"]) / (last["high"] - last["low"])
        assert one["w_body_last"] == pytest.approx(body, rel=1e-12)
        volume_rel = week["volume"].iloc[-1] / week["volume"].iloc[-50:].mean()
        expected = volume_rel if len(week) >= 50 else np.nan
        assert one["w_volume_rel1"] == pytest.approx(expected, rel=1e-9, nan_ok=True)


def test_short_history_gives_nan_not_zero(slice_market):
    history = slice_market.stock("AC").head(30)
    feats = features_for(history)
    assert np.isnan(feats["d_close_ma90"]) and np.isnan(feats["d_ret_50"]) and np.isnan(feats["w_ret_20"])
    assert np.isfinite(feats["d_ret_20"]) and np.isfinite(feats["w_ret_1"])
    assert all(np.isnan(v) for v in features_for(history.head(0)).values())


def _scramble_from(bars: pd.DataFrame, cutoff: pd.Timestamp, seed: int) -> pd.DataFrame:
    """Bars with every row dated on or after ``cutoff`` given other prices and volumes."""
    out = bars.copy()
    late = out["date"] >= cutoff
    rng = np.random.default_rng(seed)
    factor = rng.uniform(0.3, 3.0, late.sum())
    for col in ("open", "high", "low", "close"):
        out.loc[late, col] *= factor
    out.loc[late, "volume"] *= rng.uniform(0.1, 10.0, late.sum())
    return out


def test_no_look_ahead_bars_on_or_after_the_cutoff_change_nothing(samples, slice_market, features):
    # Every cutoff of the slice, mid-week ones included (the cut weekly bar is the usual leak).
    assert (samples["cutoff"].dt.day_of_week.isin([1, 2, 3])).any()
    for i, (cutoff, group) in enumerate(samples.groupby("cutoff")):
        mutated = _scramble_from(slice_market.bars, cutoff, seed=i)
        after = feature_table(group, mutated)
        pd.testing.assert_frame_equal(after, features.loc[group["sample_id"]])


def test_the_last_bar_before_the_cutoff_does_change_features(samples, slice_market, features):
    """The control of the look-ahead test: a mutation one day earlier must show up."""
    cutoff = samples["cutoff"].iloc[len(samples) // 2]
    group = samples[samples["cutoff"] == cutoff]
    t0 = slice_market.calendar[slice_market.calendar < cutoff][-1]
    after = feature_table(group, _scramble_from(slice_market.bars, t0, seed=0))
    changed = (after != features.loc[group["sample_id"]]) & after.notna()
    assert changed[["d_ret_1", "w_ret_1", "d_close_ma5"]].all().all()


# --- walk-forward leakage -------------------------------------------------------------------------


def _independent_target(calendar: pd.DatetimeIndex, cutoff: pd.Timestamp, horizon: int) -> pd.Timestamp:
    """calendar[T0 + H] with T0 the market's last trading day before the cutoff, by plain counting."""
    days = list(calendar)
    t0 = max(i for i, d in enumerate(days) if d < cutoff)
    return days[t0 + horizon]


@pytest.mark.parametrize("interval, horizon", [(30, 30), (5, 30), (2, 5), (10, 5)])
def test_recorded_training_cutoffs_have_realised_labels(samples, slice_market, interval, horizon):
    """A training pool with cutoffs every ``interval`` days: with interval < horizon the latest
    earlier cutoffs are still unrealised; with interval >= horizon the previous one's label is known
    (at interval == horizon its target is the last trading day before the test cutoff: the boundary)."""
    pool = build_samples(slice_market, dataclasses.replace(SAMPLES, interval=interval, horizons=(5, 30))).frame
    wf = xgboost_walk_forward(samples, slice_market, horizon, train_samples=pool, min_train=MIN_TRAIN)
    cal = slice_market.calendar
    target = {c: _independent_target(cal, c, horizon) for c in pool["cutoff"].unique()}
    excluded_earlier = 0
    assert set(wf.train_cutoffs) == set(samples["cutoff"])
    for test_cutoff, used in wf.train_cutoffs.items():
        assert all(target[c] < test_cutoff for c in used)
        # ... and every realised one is used: the rule is not merely conservative.
        assert set(used) == {c for c, t in target.items() if t < test_cutoff}
        assert wf.train_size[test_cutoff] == pool["cutoff"].isin(used).sum()
        excluded_earlier += sum(1 for c in target if c < test_cutoff and c not in used)
    assert (excluded_earlier > 0) == (interval < horizon)
    predicted = samples.set_index("sample_id").loc[wf.predictions.index, "cutoff"]
    assert set(predicted) == {c for c, n in wf.train_size.items() if n >= MIN_TRAIN}


def _plant(samples: pd.DataFrame, unrealised: pd.Series, values: np.ndarray) -> pd.DataFrame:
    out = samples.copy()
    out.loc[unrealised.to_numpy(), f"r_{H}"] = values
    return out


def _leaky(pool: pd.DataFrame, features: pd.DataFrame, known_from: pd.Series, test_ids: pd.Series) -> pd.Series:
    """The walk-forward with a wrong availability date for labels, predicting ``test_ids``."""
    indexed = pool.set_index("sample_id")
    train = pd.DataFrame(
        {"cutoff": indexed["cutoff"], "label": indexed[f"r_{H}"], "known_from": known_from.to_numpy()}
    )
    return walk_forward(features, indexed.loc[test_ids, "cutoff"], train, MIN_TRAIN).predictions


def test_walk_forward_cannot_exploit_labels_unrealised_at_the_test_cutoff(samples, slice_market):
    # A pool with cutoffs every 5 days: at each test cutoff the last five earlier pool cutoffs hold
    # labels that are not yet realised (their H = 30 day horizon runs past the test cutoff).
    pool = build_samples(slice_market, dataclasses.replace(SAMPLES, interval=5)).frame
    test_cutoff = sorted(samples["cutoff"].unique())[12]
    known = label_target_dates(pool["cutoff"], slice_market.calendar, H)
    unrealised = known >= test_cutoff
    assert (unrealised & (pool["cutoff"] < test_cutoff)).sum() >= 40
    pool_features = feature_table(pool, slice_market.bars)

    # Unrealised labels become a perfect function of a feature the model sees ...
    signal = pool_features.loc[pool.loc[unrealised, "sample_id"], "d_ret_20"].to_numpy()
    planted = _plant(pool, unrealised, np.clip(5.0 * np.nan_to_num(signal), LOW, HIGH))
    # ... or noise.
    scrambled = _plant(pool, unrealised, np.random.default_rng(0).uniform(LOW, HIGH, unrealised.sum()))
    runs = {"planted": planted, "scrambled": scrambled}

    # Only cutoffs up to the test cutoff: later ones may (rightly) learn from the planted labels.
    tested = samples[samples["cutoff"] <= test_cutoff]
    honest = {
        name: xgboost_walk_forward(tested, slice_market, H, train_samples=frame, min_train=MIN_TRAIN).predictions
        for name, frame in runs.items()
    }
    predicted_at = tested.set_index("sample_id").loc[honest["planted"].index, "cutoff"]
    assert (predicted_at == test_cutoff).any() and predicted_at.nunique() > 5
    pd.testing.assert_series_equal(honest["planted"], honest["scrambled"])

    # Deliberately leaky: every label is available from the start ("train on everything").
    at_test = pool.loc[pool["cutoff"] == test_cutoff, "sample_id"]
    everything = pd.Series(pd.Timestamp.min, index=pool.index)
    leaky = {name: _leaky(frame, pool_features, everything, at_test) for name, frame in runs.items()}
    assert not np.allclose(leaky["planted"].loc[at_test], leaky["scrambled"].loc[at_test])
    planted_truth = planted.set_index("sample_id").loc[at_test, f"r_{H}"]
    assert np.corrcoef(leaky["planted"].loc[at_test], planted_truth)[0, 1] > 0.8

    # The natural mistake, training on samples whose *cutoff* precedes the test cutoff, leaks too.
    by_cutoff = {name: _leaky(frame, pool_features, frame["cutoff"], at_test) for name, frame in runs.items()}
    assert not np.allclose(by_cutoff["planted"].loc[at_test], by_cutoff["scrambled"].loc[at_test])


# --- determinism and the output contract ----------------------------------------------------------


def test_xgboost_is_deterministic_and_independent_of_row_order(samples, slice_market):
    first = BASELINES["xgboost"](samples, slice_market, H, min_train=MIN_TRAIN)
    again = BASELINES["xgboost"](samples, slice_market, H, min_train=MIN_TRAIN)
    pd.testing.assert_series_equal(first, again)
    shuffled = samples.sample(frac=1.0, random_state=3)
    other = BASELINES["xgboost"](shuffled, slice_market, H, min_train=MIN_TRAIN)
    pd.testing.assert_series_equal(other.loc[first.index], first)


def test_xgboost_leaves_cutoffs_without_enough_training_data_out(samples, slice_market):
    wf = xgboost_walk_forward(samples, slice_market, H, min_train=MIN_TRAIN)
    first_cutoffs = sorted(samples["cutoff"].unique())[:2]
    early = samples.loc[samples["cutoff"].isin(first_cutoffs), "sample_id"]
    assert not early.isin(wf.predictions.index).any()
    assert [wf.train_size[c] for c in first_cutoffs] == [0, 10]
    assert len(wf.predictions) == len(samples) - len(early)
    nothing = xgboost_walk_forward(samples, slice_market, H, min_train=len(samples) + 1)
    assert nothing.predictions.empty


def test_random_is_seeded_per_sample_not_per_order(samples, slice_market):
    full = BASELINES["random"](samples, slice_market, H, seed=7)
    shard = samples.sample(frac=0.3, random_state=1)
    part = BASELINES["random"](shard, slice_market, H, seed=7)
    pd.testing.assert_series_equal(part, full.loc[shard["sample_id"]])
    other_seed = BASELINES["random"](samples, slice_market, H, seed=8)
    assert (other_seed != full).all()
    assert full.min() < 0.0 < full.max()  # spread over the range, not stuck at one end


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_baseline_honours_the_output_contract(name, samples, slice_market):
    params = {"min_train": MIN_TRAIN} if name == "xgboost" else {}
    out = BASELINES[name](samples, slice_market, H, **params)
    assert out.name == "prediction" and out.index.name == "sample_id"
    assert out.dtype == np.float64 and out.index.is_unique and out.notna().all()
    assert out.index.isin(samples["sample_id"]).all() and len(out) > 0
    assert ((out >= LOW) & (out <= HIGH)).all()


def test_constant_is_the_configured_value(samples, slice_market):
    assert (BASELINES["constant"](samples, slice_market, H) == 0.001).all()
    assert (BASELINES["constant"](samples, slice_market, H, value=-0.2) == -0.2).all()
    with pytest.raises(ValueError, match="outside"):
        BASELINES["constant"](samples, slice_market, H, value=1.5)


# --- momentum -------------------------------------------------------------------------------------


def test_momentum_equals_a_hand_computation_from_the_csv(samples, slice_market, slice_rows):
    dates = sorted({r["date"] for r in slice_rows})
    close = {(r["code"], r["date"]): float(r["close"]) for r in slice_rows if float(r["volume"]) > 0}

    def close_at(code: str, i: int) -> float:
        while (code, dates[i]) not in close:
            i -= 1
        return close[(code, dates[i])]

    momentum = BASELINES["momentum"](samples, slice_market, H)
    chosen = pd.concat([samples.iloc[[0, 100, len(samples) - 1]], samples[samples["code"] == "PHN"].head(2)])
    for row in chosen.itertuples():
        t0 = sum(d < f"{row.cutoff:%Y-%m-%d}" for d in dates) - 1
        expected = close_at(row.code, t0) / close_at(row.code, t0 - H) - 1
        assert momentum[row.sample_id] == pytest.approx(expected, rel=1e-12)


def test_momentum_at_one_cutoff_is_the_label_of_the_previous_one(samples, slice_market):
    """With cutoffs every H trading days, the past H-day return is the previous sample's r_H."""
    momentum = BASELINES["momentum"](samples, slice_market, H)
    frame = samples.assign(momentum=samples["sample_id"].map(momentum)).sort_values(["code", "cutoff"])
    previous_label = frame.groupby("code")[f"r_{H}"].shift(1)
    position = frame["cutoff"].map(slice_market.calendar.get_loc)
    consecutive = position - position.groupby(frame["code"]).shift(1) == SAMPLES.interval
    pairs = frame[consecutive]
    assert len(pairs) > 100
    np.testing.assert_allclose(pairs["momentum"], previous_label[consecutive], rtol=1e-12)


def test_momentum_is_clipped_and_absent_without_history(samples, slice_market):
    row = samples.iloc[len(samples) // 2]
    bars = slice_market.bars.copy()
    # Before T0 - H (about 43 calendar days before the cutoff), after T0 - H - 1 day.
    early = (bars["code"] == row.code) & (bars["date"] < row.cutoff - pd.Timedelta(days=20))
    bars.loc[early, ["open", "high", "low", "close"]] /= 5.0  # the stock quintupled since
    boosted = dataclasses.replace(slice_market, bars=bars)
    out = BASELINES["momentum"](samples, boosted, H)
    assert out[row.sample_id] == HIGH
    long_lookback = BASELINES["momentum"](samples, slice_market, H, lookback=400)
    assert 0 < len(long_lookback) < len(samples)
    assert (long_lookback.index == samples["sample_id"][samples["sample_id"].isin(long_lookback.index)]).all()


# --- training on the history before the test window ------------------------------------------------


def _settings(samples):
    """The forecast task's settings with the ``samples`` block and the horizon H."""
    return dataclasses.replace(setup_of("task=forecast").settings, horizon=H, samples=samples)


def _job_config(start: str, **xgb):
    return _settings(dataclasses.replace(SAMPLES, start=start))


def test_xgboost_trains_on_history_before_the_test_window(slice_market):
    """The paper's XGBoost learns from the years before its test window: the first test cutoff is
    predicted, and the history is on the test grid, before the window, with realised labels only."""
    from candlebench.tasks.forecast.samples import history_spec
    from candlebench.tasks.forecast.task import TASK

    cfg = _job_config("2018-09-01")
    test = build_samples(slice_market, dataclasses.replace(SAMPLES, start="2018-09-01")).frame
    first = test["cutoff"].min()
    answers = TASK.baselines["xgboost"](test, slice_market, cfg, min_train=MIN_TRAIN)
    assert all(answers[sid] is not None for sid in test.loc[test["cutoff"] == first, "sample_id"])
    # Without the history the first two test cutoffs have nothing to learn from.
    alone = BASELINES["xgboost"](test, slice_market, H, min_train=MIN_TRAIN)
    assert not test.loc[test["cutoff"] == first, "sample_id"].isin(alone.index).any()

    spec = history_spec(slice_market.calendar, dataclasses.replace(SAMPLES, start="2018-09-01"), None)
    history = build_samples(slice_market, spec).frame
    cal = list(slice_market.calendar)
    steps = {(cal.index(first) - cal.index(c)) for c in history["cutoff"].unique()}
    assert steps and all(s > 0 and s % 30 == 0 for s in steps)  # the test grid, stepped back
    assert history["cutoff"].max() < pd.Timestamp("2018-09-01")
    pool = pd.concat([history, test], ignore_index=True)
    wf = xgboost_walk_forward(test, slice_market, H, train_samples=pool, min_train=MIN_TRAIN)
    target = {c: _independent_target(slice_market.calendar, c, H) for c in pool["cutoff"].unique()}
    assert all(target[c] < t for t, used in wf.train_cutoffs.items() for c in used)
    assert wf.train_size[first] == history["cutoff"].isin([c for c, d in target.items() if d < first]).sum() > 0

    # train_start moves the floor of the history; a start after the window start leaves none.
    later = history_spec(slice_market.calendar, dataclasses.replace(SAMPLES, start="2018-09-01"), "2018-03-01")
    assert pd.Timestamp(later.start) >= pd.Timestamp("2018-03-01") > pd.Timestamp(spec.start)
    assert history_spec(slice_market.calendar, dataclasses.replace(SAMPLES, start="2018-09-01"), "2018-09-01") is None
    assert history_spec(slice_market.calendar, SAMPLES, None) is None


# --- training on every trading day (task.baseline.params.xgboost.train_stride) ---------------------------

SHORT = ["AC", "ALI", "BPI", "SM", "TEL"]
# 18 months of history before the test window (the slice starts 2017-01-03): on the 30-day grid that
# is about 45 training samples for 5 stocks, under the default min_train of 100.
SHORT_START, SHORT_END = "2018-07-03", "2019-03-01"


@pytest.fixture(scope="module")
def short_market(slice_market: Market) -> Market:
    from candlebench.market.market import load_market
    from helpers import SLICE

    return load_market([SLICE], name="PSE", codes=SHORT)


def _defaults() -> dict:
    """The xgboost block of tasks/forecast/config.yaml, as `candlebench baseline` passes it."""
    from omegaconf import OmegaConf

    conf = OmegaConf.load(ROOT / "candlebench" / "tasks" / "forecast" / "config.yaml")
    return OmegaConf.to_container(conf.baseline.params.xgboost)


def _window_config(start: str | None, end: str | None = None, interval: int = 30):
    return _settings(dataclasses.replace(SAMPLES, start=start, end=end, interval=interval))


def test_xgboost_predicts_every_test_cutoff_of_a_short_history(short_market):
    """5 stocks, 18 months before task.samples.start, the shipped defaults: every test sample is answered
    (training on every trading day); on the test grid alone (train_stride = task.samples.interval, the
    former rule) none is, and each says why."""
    from candlebench.task_api.base import NoAnswer
    from candlebench.tasks.forecast.task import TASK

    cal = short_market.calendar
    test = build_samples(short_market, dataclasses.replace(SAMPLES, start=SHORT_START, end=SHORT_END)).frame
    history = cal[cal < pd.Timestamp(SHORT_START)]
    assert (history[-1] - history[0]).days // 30 == 18 and len(history) == 364
    assert test["code"].nunique() == 5 and test["cutoff"].nunique() == 6 and len(test) == 30
    params = _defaults()
    assert params["train_stride"] == 1 and params["min_train"] == 100
    cfg = _window_config(SHORT_START, SHORT_END)
    answers = TASK.baselines["xgboost"](test, short_market, cfg, **params)
    assert all(isinstance(answers[sid], str) and answers[sid].startswith("<score>") for sid in test["sample_id"])

    grid = TASK.baselines["xgboost"](test, short_market, cfg, **{**params, "train_stride": 30})
    reasons = {a.reason for a in grid.values() if isinstance(a, NoAnswer)}
    assert len(grid) == len(test) and all(isinstance(a, NoAnswer) for a in grid.values())
    assert reasons == {"fewer than min_train=100 training samples with a label realised before the cutoff"}


def test_daily_training_days_are_every_day_whose_label_is_realised_before_the_test_cutoff(short_market):
    """The pool of train_stride=1: one sample per stock and trading day from the data's start (those
    with min_bars of history) to the last test cutoff. Each test cutoff's model uses exactly the days
    whose label's target day precedes the cutoff: never a later one, and no earlier one left out."""
    from candlebench.tasks.forecast.samples import training_spec

    spec = dataclasses.replace(SAMPLES, start=SHORT_START, end=SHORT_END)
    test = build_samples(short_market, spec).frame
    days = training_spec(short_market.calendar, spec, None, 1, test["cutoff"].max())
    pool = build_samples(short_market, days).frame
    cal = short_market.calendar
    eligible = cal[90:]  # every stock trades from the first day: day 90 is the first with 90 bars
    assert set(pool["cutoff"]) == set(eligible[eligible < test["cutoff"].max()])
    assert set(test["sample_id"]) - set(pool["sample_id"]) == set(test.loc[test["cutoff"] == test["cutoff"].max(), "sample_id"])
    wf = xgboost_walk_forward(test, short_market, H, train_samples=pd.concat([pool, test]), min_train=100)
    target = {c: _independent_target(cal, c, H) for c in pool["cutoff"].unique()}
    for test_cutoff, used in wf.train_cutoffs.items():
        assert set(used) == {c for c, t in target.items() if t < test_cutoff}
        assert all(target[c] < test_cutoff for c in used)
        assert wf.train_size[test_cutoff] == pool["cutoff"].isin(used).sum() >= 100


def test_no_look_ahead_daily_training_sees_no_bar_on_or_after_the_test_cutoff(short_market):
    """Prices and volumes from a test cutoff on replaced at random: with train_stride=1 the
    predictions at that cutoff and before are bit for bit unchanged (no training label, no feature
    reaches it). The control: training on the daily samples whose *cutoff* precedes the test cutoff
    (their labels not yet realised) does change them."""
    from candlebench.tasks.forecast.samples import training_spec
    from candlebench.tasks.forecast.task import _xgboost

    spec = dataclasses.replace(SAMPLES, start=SHORT_START, end=SHORT_END)
    cfg = _window_config(SHORT_START, SHORT_END)
    cutoff = sorted(build_samples(short_market, spec).cutoffs)[3]
    mutated = dataclasses.replace(short_market, bars=_scramble_from(short_market.bars, cutoff, seed=5))
    upto = {}
    for name, market in (("real", short_market), ("mutated", mutated)):
        frame = build_samples(market, spec).frame
        upto[name] = frame[frame["cutoff"] <= cutoff]
    honest = {name: _xgboost(upto[name], market, cfg, **_defaults()).predictions
              for name, market in (("real", short_market), ("mutated", mutated))}
    assert len(honest["real"]) == len(upto["real"]) and upto["real"]["cutoff"].nunique() == 4
    pd.testing.assert_series_equal(honest["real"], honest["mutated"])

    test = upto["real"]
    at_cutoff = test[test["cutoff"] == cutoff].set_index("sample_id")["cutoff"]
    leaked = []
    for market in (short_market, mutated):
        pool = build_samples(market, training_spec(market.calendar, spec, None, 1, cutoff)).frame
        features = feature_table(pd.concat([pool, test]).drop_duplicates("sample_id"), market.bars)
        pool = pool.set_index("sample_id")
        by_cutoff = pd.DataFrame({"cutoff": pool["cutoff"], "label": pool[f"r_{H}"], "known_from": pool["cutoff"]})
        leaked.append(walk_forward(features, at_cutoff, by_cutoff, 100).predictions)
    assert len(leaked[0]) == len(at_cutoff) and not np.allclose(leaked[0], leaked[1])


def test_daily_training_is_reproducible_and_independent_of_row_order(short_market):
    from candlebench.tasks.forecast.task import TASK

    cfg = _window_config(SHORT_START, SHORT_END)
    test = build_samples(short_market, dataclasses.replace(SAMPLES, start=SHORT_START, end=SHORT_END)).frame
    first = TASK.baselines["xgboost"](test, short_market, cfg, **_defaults())
    assert first == TASK.baselines["xgboost"](test, short_market, cfg, **_defaults())
    shuffled = test.sample(frac=1.0, random_state=4)
    assert TASK.baselines["xgboost"](shuffled, short_market, cfg, **_defaults()) == first


@pytest.mark.parametrize("start, interval, train_start", [("2018-09-01", 30, None), ("2018-09-01", 20, "2017-06-01"),
                                                          ("2018-09-01", 30, "2019-01-01")])
def test_a_stride_of_the_interval_trains_on_the_test_grid_as_before(slice_market, start, interval, train_start):
    """train_stride = task.samples.interval gives the former pool: history_spec's cutoffs (from
    train_start, which floors the history only) followed by the test cutoffs."""
    from candlebench.tasks.forecast.samples import history_spec, training_spec

    spec = dataclasses.replace(SAMPLES, start=start, interval=interval)
    test = build_samples(slice_market, spec).frame
    days = training_spec(slice_market.calendar, spec, train_start, interval, test["cutoff"].max())
    history = history_spec(slice_market.calendar, spec, train_start)
    before = [] if history is None else list(build_samples(slice_market, history).cutoffs)
    expected = before + [c for c in test["cutoff"].unique() if c < test["cutoff"].max()]
    assert list(build_samples(slice_market, days).cutoffs) == expected


def test_momentum_says_why_a_sample_has_no_answer(samples, slice_market):
    """A lookback reaching before the data: those samples are NoAnswer with the reason, the rest scores."""
    from candlebench.task_api.base import NoAnswer
    from candlebench.tasks.forecast.task import TASK

    answers = TASK.baselines["momentum"](samples, slice_market, _window_config(None), lookback=400)
    missing = {sid: a for sid, a in answers.items() if not isinstance(a, str)}
    expected = set(samples["sample_id"]) - set(BASELINES["momentum"](samples, slice_market, H, lookback=400).index)
    assert set(missing) == expected and 0 < len(missing) < len(samples)
    assert {a for a in missing.values()} == {NoAnswer(
        "no close 400 trading days before the cutoff's last trading day (before the data or the stock's first bar)")}
