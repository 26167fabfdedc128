"""Non-VLM baselines with the models' output contract, so they sit in the same tables.

Every entry of :data:`BASELINES` is called as ``fn(samples, market, horizon, **params)`` and returns
a ``pd.Series`` named ``prediction``, indexed by ``sample_id``, values in [-0.5, 1.0] (the paper's
answer range). A sample a baseline cannot predict is absent from the series, never filled with 0,
so scoring counts it as unanswered rather than as "no trend"; :class:`Answers` adds why (the task
records it, and the report counts each reason).

* ``xgboost`` — the paper's numerical baseline (Appendix A): gradient-boosted trees (squared error,
  hist) on the chart-aligned features of :mod:`candlebench.tasks.forecast.features`, trained walk-forward (see
  :func:`walk_forward`). The task trains it on a sample of every ``train_stride``-th trading day
  (default 1: every day) of the history and of the earlier test windows
  (:func:`candlebench.tasks.forecast.samples.training_spec`), not only on the test grid: on the paper's 30-day
  grid a market of 5 stocks with 18 months of history has about 45 training samples, under
  ``min_train``, and the baseline answered nothing. Daily samples overlap (neighbouring 30-day labels
  share 29 days), so they add fewer independent labels than rows; they are what the features and
  labels of those days are, under the same cutoff rule, and the leakage rule below is per row.
* ``momentum`` — the stock's past return over ``lookback`` market trading days (default: the
  horizon) up to ``T0``, measured exactly like the label measures the future one: "the last H days
  continue".
* ``constant`` — the same answer for every sample (default 0.001, "always slightly up"): the floor
  any forecaster must beat on accuracy in a rising market.
* ``random`` — uniform in [-0.5, 1.0], seeded by a hash of (seed, sample_id), so a sample's value
  does not depend on row order, sharding or which other samples are asked.

Leakage rule of the walk-forward (the one thing a numerical baseline can get wrong): a training
sample's label ``r_H = close(T0 + H) / close(T0) - 1`` becomes known on its *target day*
``calendar[T0 + H]`` (``T0`` = the market's last trading day before its cutoff; see
:mod:`candlebench.tasks.forecast.samples`). A model predicting samples with cutoff ``c`` trains only on samples whose
target day is strictly before ``c`` — a close the test sample's own chart could show. Training on
samples whose *cutoff* precedes ``c`` is not enough: their labels may still lie in the future.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from candlebench.market.market import Market
from candlebench.tasks.forecast.features import feature_table
from candlebench.tasks.forecast.parse import SCORE_MAX, SCORE_MIN

if TYPE_CHECKING:  # optional dependency: imported where a model is fit
    import xgboost

Baseline = Callable[..., pd.Series]


@dataclass(frozen=True)
class XGBSettings:
    """Booster settings (``XGBRegressor``'s names). Small and shallow for speed; a fixed seed and
    thread count make the fit reproducible."""

    n_estimators: int = 100
    max_depth: int = 3
    learning_rate: float = 0.1
    max_bin: int = 64
    subsample: float = 0.8
    colsample_bytree: float = 0.8
    min_child_weight: float = 5.0
    seed: int = 0
    n_jobs: int = 1


@dataclass(frozen=True)
class Answers:
    """A baseline's predictions (the contract's series) and, for each sample left out, why."""

    predictions: pd.Series
    unanswered: Mapping[str, str]  # sample_id -> reason


@dataclass(frozen=True)
class WalkForward:
    """Predictions plus, per test cutoff, the cutoffs of the training samples its model could use.

    ``train_cutoffs`` has every test cutoff, also those left unpredicted for lack of training data
    (then ``train_size`` is below ``min_train``).
    """

    predictions: pd.Series
    train_cutoffs: dict[pd.Timestamp, tuple[pd.Timestamp, ...]]
    train_size: dict[pd.Timestamp, int]
    min_train: int = 0

    def unanswered(self, test_cutoffs: pd.Series) -> dict[str, str]:
        """Why each test sample (``test_cutoffs``: sample_id → cutoff) has no prediction. One text
        per cause, without the count itself, so the report can add the samples up by reason."""
        missing = test_cutoffs[~test_cutoffs.index.isin(self.predictions.index)]
        why = (f"fewer than min_train={self.min_train} training samples with a label realised "
               "before the cutoff")
        return dict.fromkeys(map(str, missing.index), why)


def label_target_dates(cutoffs: pd.Series, calendar: pd.DatetimeIndex, horizon: int) -> pd.Series:
    """The day each label becomes known, ``calendar[T0 + horizon]``; NaT past the calendar's end."""
    t0 = calendar.searchsorted(cutoffs.to_numpy(dtype="datetime64[ns]"), side="left") - 1
    target = t0 + horizon
    inside = (t0 >= 0) & (target < len(calendar))
    dates = np.full(len(cutoffs), np.datetime64("NaT"), dtype="datetime64[ns]")
    dates[inside] = calendar.to_numpy()[target[inside]]
    return pd.Series(dates, index=cutoffs.index, name="known_from")


def walk_forward(
    features: pd.DataFrame,
    test_cutoffs: pd.Series,
    train: pd.DataFrame,
    min_train: int,
    settings: XGBSettings = XGBSettings(),
) -> WalkForward:
    """Predict each test cutoff with a model fit only on training rows known before that cutoff.

    ``features`` covers test and training sample ids; ``test_cutoffs`` maps test sample_id → cutoff;
    ``train`` is indexed by sample_id with ``cutoff``, ``label`` and ``known_from`` (the day the
    label became known). Row ``j`` trains the model of test cutoff ``c`` iff ``known_from[j] < c``.
    Training rows are put in a canonical order (known_from, sample_id) so the fit does not depend on
    input order, and one model serves every test cutoff that sees the same training rows.
    """
    train = train.dropna(subset=["label", "known_from"])
    train = train.assign(_id=train.index).sort_values(["known_from", "_id"], kind="stable")
    known = train["known_from"].to_numpy(dtype="datetime64[ns]")
    x_train = features.loc[train.index].to_numpy(dtype=np.float64)
    y_train = train["label"].to_numpy(dtype=np.float64)
    cutoff_of = train["cutoff"].to_numpy(dtype="datetime64[ns]")

    predictions: list[pd.Series] = []
    train_cutoffs: dict[pd.Timestamp, tuple[pd.Timestamp, ...]] = {}
    train_size: dict[pd.Timestamp, int] = {}
    models: dict[int, xgboost.Booster] = {}
    test_values = test_cutoffs.to_numpy(dtype="datetime64[ns]")
    for day in np.unique(test_values):
        n = int(np.searchsorted(known, day, side="left"))
        cutoff = pd.Timestamp(day)
        train_cutoffs[cutoff] = tuple(pd.Timestamp(d) for d in np.unique(cutoff_of[:n]))
        train_size[cutoff] = n
        if n < min_train:
            continue
        if n not in models:
            models[n] = _fit(x_train[:n], y_train[:n], settings)
        ids = test_cutoffs.index[test_values == day]
        raw = _predict(models[n], features.loc[ids].to_numpy(dtype=np.float64), settings.n_jobs)
        predictions.append(pd.Series(np.asarray(raw, dtype=np.float64), index=ids))
    return WalkForward(
        predictions=_as_predictions(predictions, test_cutoffs.index),
        train_cutoffs=train_cutoffs,
        train_size=train_size,
        min_train=min_train,
    )


def _fit(x: np.ndarray, y: np.ndarray, settings: XGBSettings) -> xgboost.Booster:
    """Fit the regressor ``XGBRegressor`` would build, through the core API: same booster, without
    the scikit-learn dependency the wrapper class needs."""
    import xgboost

    params = {
        "objective": "reg:squarederror",
        "tree_method": "hist",
        "max_depth": settings.max_depth,
        "eta": settings.learning_rate,
        "subsample": settings.subsample,
        "colsample_bytree": settings.colsample_bytree,
        "min_child_weight": settings.min_child_weight,
        "max_bin": settings.max_bin,
        "seed": settings.seed,
        "nthread": settings.n_jobs,
    }
    return xgboost.train(
        params, xgboost.DMatrix(x, label=y, nthread=settings.n_jobs), settings.n_estimators
    )


def _predict(booster: xgboost.Booster, x: np.ndarray, n_jobs: int) -> np.ndarray:
    import xgboost

    return booster.predict(xgboost.DMatrix(x, nthread=n_jobs))


def xgboost_walk_forward(
    samples: pd.DataFrame,
    market: Market,
    horizon: int,
    *,
    train_samples: pd.DataFrame | None = None,
    min_train: int = 100,
    settings: XGBSettings = XGBSettings(),
) -> WalkForward:
    """The ``xgboost`` baseline with its record of training cutoffs.

    The training pool defaults to ``samples`` themselves (each test cutoff learns from earlier
    cutoffs whose labels are realised). ``train_samples`` replaces the pool, e.g. with a denser one
    built by ``build_samples`` on the same market with a smaller interval; the same leakage rule
    applies to it. ``min_train``: fewest training samples a model needs; test cutoffs with fewer
    get no prediction.
    """
    label = f"r_{horizon}"
    pool = samples if train_samples is None else train_samples
    if label not in pool:
        raise ValueError(f"xgboost baseline: training samples have no label column {label!r}")
    everything = pd.concat([samples, pool], ignore_index=True).drop_duplicates("sample_id")
    features = feature_table(everything, market.bars)
    pool = pool.drop_duplicates("sample_id").set_index("sample_id")
    train = pd.DataFrame(
        {
            "cutoff": pool["cutoff"],
            "label": pool[label],
            "known_from": label_target_dates(pool["cutoff"], market.calendar, horizon),
        }
    )
    test_cutoffs = samples.set_index("sample_id")["cutoff"]
    return walk_forward(features, test_cutoffs, train, min_train, settings)


def xgboost_baseline(
    samples: pd.DataFrame,
    market: Market,
    horizon: int,
    *,
    train_samples: pd.DataFrame | None = None,
    min_train: int = 100,
    **xgb: float | int,
) -> pd.Series:
    """Walk-forward XGBoost (see :func:`xgboost_walk_forward`); ``xgb`` overrides :class:`XGBSettings`."""
    settings = XGBSettings(**xgb)
    return xgboost_walk_forward(
        samples, market, horizon, train_samples=train_samples, min_train=min_train, settings=settings
    ).predictions


def past_return(samples: pd.DataFrame, market: Market, lookback: int) -> pd.Series:
    """``close(T0) / close(T0 - lookback) - 1`` in market trading days, ``close(d)`` the stock's last
    close on or before ``d`` — the label's rule turned backwards. NaN where ``T0 - lookback`` falls
    before the calendar or before the stock's first bar."""
    calendar = market.calendar
    close = market.bars.pivot(index="date", columns="code", values="close").reindex(calendar).ffill()
    t0 = calendar.searchsorted(samples["cutoff"].to_numpy(dtype="datetime64[ns]"), side="left") - 1
    start = t0 - lookback
    column = close.columns.get_indexer(samples["code"])
    ok = (start >= 0) & (column >= 0)
    values = close.to_numpy()
    result = np.full(len(samples), np.nan)
    result[ok] = values[t0[ok], column[ok]] / values[start[ok], column[ok]] - 1.0
    return pd.Series(result, index=pd.Index(samples["sample_id"].to_numpy(), name="sample_id"))


def momentum_baseline(
    samples: pd.DataFrame, market: Market, horizon: int, *, lookback: int | None = None
) -> pd.Series:
    """The past ``lookback``-day return (default: the horizon), clipped to the answer range."""
    return momentum_answers(samples, market, horizon, lookback=lookback).predictions


def momentum_answers(
    samples: pd.DataFrame, market: Market, horizon: int, *, lookback: int | None = None
) -> Answers:
    """:func:`momentum_baseline` with why a sample has none: no close ``lookback`` days back."""
    days = horizon if lookback is None else lookback
    past = past_return(samples, market, days)
    why = f"no close {days} trading days before the cutoff's last trading day (before the data or the stock's first bar)"
    return Answers(_as_predictions([past.dropna()], past.index), dict.fromkeys(map(str, past.index[past.isna()]), why))


def constant_baseline(
    samples: pd.DataFrame, market: Market, horizon: int, *, value: float = 0.001
) -> pd.Series:
    """``value`` for every sample."""
    if not SCORE_MIN <= value <= SCORE_MAX:
        raise ValueError(f"constant baseline: value {value} is outside [{SCORE_MIN}, {SCORE_MAX}]")
    ids = pd.Index(samples["sample_id"].to_numpy(), name="sample_id")
    return _as_predictions([pd.Series(float(value), index=ids)], ids)


def random_baseline(
    samples: pd.DataFrame, market: Market, horizon: int, *, seed: int = 0
) -> pd.Series:
    """Uniform in [-0.5, 1.0] from sha256(seed, sample_id): the same sample always gets the same value."""
    ids = pd.Index(samples["sample_id"].to_numpy(), name="sample_id")
    unit = [_unit_hash(f"{seed}|{sid}") for sid in ids]
    return _as_predictions([pd.Series(SCORE_MIN + (SCORE_MAX - SCORE_MIN) * np.array(unit), index=ids)], ids)


def _unit_hash(key: str) -> float:
    """A number in [0, 1) fixed by ``key``."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2.0**64


def _as_predictions(parts: list[pd.Series], order: pd.Index) -> pd.Series:
    """The contract's series: clipped, float64, named, in the samples' order, unpredicted absent."""
    found = pd.concat(parts) if parts else pd.Series(dtype=np.float64)
    kept = order[order.isin(found.index)]
    out = found.reindex(kept).astype(np.float64).clip(SCORE_MIN, SCORE_MAX)
    out.index.name = "sample_id"
    return out.rename("prediction")


BASELINES: Mapping[str, Baseline] = MappingProxyType(
    {
        "xgboost": xgboost_baseline,
        "momentum": momentum_baseline,
        "constant": constant_baseline,
        "random": random_baseline,
    }
)
