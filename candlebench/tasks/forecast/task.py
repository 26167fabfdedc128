"""The multi-scale candlestick forecast task (Hu et al. 2026) on the Task interface.

A sample is a stock and a cutoff; the model sees its daily and weekly charts and answers a score
in [-0.5, 1.0], the expected return over ``task.horizon`` trading days. Labels, regimes and the
continuous-trend groups come from :mod:`candlebench.tasks.forecast.samples`, the parser's rule table is
:mod:`candlebench.tasks.forecast.parse`, the metrics :mod:`candlebench.tasks.forecast.metrics`, the paired comparison
:mod:`candlebench.tasks.forecast.compare`, the report's tables and plots :mod:`candlebench.tasks.forecast.report` and the
numerical baselines :mod:`candlebench.tasks.forecast.baselines`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping

import pandas as pd

from candlebench.core.results import Parsed, RunAnswers
from candlebench.market.market import Market
from candlebench.rendering.inputs import TEXT_INPUT, text_column
from candlebench.scoring.numbers import fmt, pct
from candlebench.task_api.base import (BuiltSamples, Column, FirstPassAnswer, Inputs, NoAnswer, RequestSpec,
                                    ScoreSettings, Task, TaskContext)
from candlebench.tasks.forecast import baselines
from candlebench.tasks.forecast.parse import parse_score
from candlebench.tasks.forecast.samples import build_samples, summarize, training_spec
from candlebench.tasks.forecast.settings import ForecastSettings


def _score_text(value: float | None) -> str | None:
    """A baseline's number as the answer the prompt asks for, so the task's parser reads it."""
    return None if value is None or pd.isna(value) else f"<score>{value:.3f}</score>"


def _baseline(predict: Callable[..., baselines.Answers | pd.Series]) -> Callable[..., Mapping[str, str | NoAnswer | None]]:
    def answers(samples: pd.DataFrame, market: Market, s: ForecastSettings, **params: Any) -> Mapping[str, str | NoAnswer | None]:
        found = predict(samples, market, s, **params)
        found = found if isinstance(found, baselines.Answers) else baselines.Answers(found, {})
        values, why = found.predictions, found.unanswered
        return {sid: _score_text(values.get(sid)) if sid in values.index else NoAnswer(why[sid]) if sid in why else None
                for sid in samples["sample_id"]}

    answers.__doc__ = predict.__doc__
    return answers


def _xgboost(samples: pd.DataFrame, market: Market, s: ForecastSettings, *, train_start: str | None = None,
             train_stride: int = 1, min_train: int = 100, **params: Any) -> baselines.Answers:
    """Walk-forward XGBoost trained on every ``train_stride``-th trading day of the history before the
    test window (from ``train_start``) and of the test window, under the samples' own rules
    (:func:`training_spec`), plus the test samples; each test cutoff learns only from those whose
    labels are realised before it."""
    start = None if train_start is None else str(train_start)
    days = training_spec(market.calendar, s.samples, start, int(train_stride), samples["cutoff"].max()) if len(samples) else None
    pool = samples if days is None else pd.concat([build_samples(market, days, TASK.name).frame, samples], ignore_index=True)
    wf = baselines.xgboost_walk_forward(samples, market, s.horizon, train_samples=pool, min_train=min_train,
                                        settings=baselines.XGBSettings(**params))
    return baselines.Answers(wf.predictions, wf.unanswered(samples.set_index("sample_id")["cutoff"]))


def _on_horizon(predict: Callable[..., baselines.Answers | pd.Series]) -> Callable[..., baselines.Answers | pd.Series]:
    def run(samples: pd.DataFrame, market: Market, s: ForecastSettings, **params: Any) -> baselines.Answers | pd.Series:
        return predict(samples, market, s.horizon, **params)

    run.__doc__ = predict.__doc__
    return run


class ForecastTask(Task[ForecastSettings]):
    name = "forecast"
    settings_type = ForecastSettings
    columns = (Column("pred", "float64"), Column("pred_in_range", "boolean"))
    judge_version = 2  # 2: a score past a float's range is no answer, no longer inf (parse.py rule 22)
    baselines = MappingProxyType({
        "xgboost": _baseline(_xgboost),
        "momentum": _baseline(_on_horizon(baselines.momentum_answers)),
        **{name: _baseline(_on_horizon(baselines.BASELINES[name])) for name in ("constant", "random")},
    })

    def build_samples(self, market: Market, s: ForecastSettings, ctx: TaskContext) -> BuiltSamples:
        built = build_samples(market, s.samples, self.name)
        return BuiltSamples(built.frame, summarize(built, market, s.samples, self.name))

    def inputs(self, s: ForecastSettings) -> Inputs:
        return Inputs(charts=tuple(s.images), text=bool(s.text))

    def given_inputs(self, s: ForecastSettings) -> tuple[str, ...]:
        """What the model is given out of what is rendered (``task.feed``; null = the charts of
        ``task.images``): the ablations give one chart, or the OHLCV text instead of or beside them."""
        rendered = (*s.images, *((TEXT_INPUT,) if s.text else ()))
        if s.feed is None:
            return tuple(s.images)
        feed = tuple(str(f) for f in s.feed)
        unknown = [f for f in feed if f not in rendered]
        if unknown or not feed:
            raise ValueError(f"task.feed={list(feed)}: feed from what is rendered, {list(rendered)} "
                             "(task.images, and 'ohlcv' when task.text=true)")
        return feed

    def _prompt(self, s: ForecastSettings, ctx: TaskContext, ohlcv: str) -> str:
        up, down = ctx.render.colors
        return s.prompt.format(up=up.upper(), down=down.upper(), horizon=s.horizon, ohlcv=ohlcv)

    def prompt_identity(self, s: ForecastSettings, ctx: TaskContext) -> str:
        # {ohlcv} stays a placeholder here: the sample's own OHLCV text goes there (request).
        prompt = self._prompt(s, ctx, "{ohlcv}")
        if s.feed is None:
            return prompt
        return f"[inputs given: {', '.join(self.given_inputs(s))}]\n{prompt}"

    def request(self, s: ForecastSettings, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str],
                first_pass: FirstPassAnswer | None = None) -> RequestSpec:
        given = self.given_inputs(s)
        charts = tuple(c for c in s.images if c in given)
        if TEXT_INPUT not in given:
            return RequestSpec(self._prompt(s, ctx, ""), charts)
        if "{ohlcv}" not in s.prompt:
            raise ValueError("task.feed gives the OHLCV text, but task.prompt has no {ohlcv} placeholder to put it in")
        return RequestSpec(self._prompt(s, ctx, texts[text_column()]), charts, (text_column(),))

    def parser(self, s: ForecastSettings) -> Callable[[str | None], Parsed]:
        def parse(text: str | None) -> Parsed:
            p = parse_score(text)
            return Parsed(p.value, p.tier, p.reason, {"pred": p.value, "pred_in_range": p.in_range})

        return parse

    def score(self, run: RunAnswers, s: ForecastSettings, ctx: TaskContext, settings: ScoreSettings) -> dict:
        from candlebench.tasks.forecast.metrics import compute_metrics

        return compute_metrics(run.parsed, horizon=s.horizon, release_date=run.info.get("release_date"),
                               n_boot=settings.n_boot, seed=settings.seed)

    def compare(self, a: RunAnswers, b: RunAnswers, settings: ScoreSettings) -> dict:
        from candlebench.tasks.forecast.compare import compare_runs

        # b released after a (a later version of the family): split at b's release (§4.4).
        release_a, release_b = a.info.get("release_date"), b.info.get("release_date")
        split = release_b if release_a and release_b and str(release_b) > str(release_a) else None
        return compare_runs(a.parsed, b.parsed, horizon=int(a.metrics["horizon"]), n_boot=settings.n_boot,
                            seed=settings.seed, split_date=split)

    def report(self, runs, comparisons, datasets=()):
        from candlebench.tasks.forecast.report import sections

        return sections(runs, comparisons, datasets)

    def browse(self, run: RunAnswers) -> pd.DataFrame:
        # Right / wrong as the metrics binarise it: up = pred > 0 against up = r_H > 0.
        parsed = run.parsed
        label = parsed[f"r_{int(run.metrics['horizon'])}"] if run.metrics else parsed[[c for c in parsed if c.startswith("r_")][0]]
        pred = parsed["pred"].astype("Float64")
        right = (pred > 0) == (label > 0)
        return pd.DataFrame({
            "sample_id": parsed["sample_id"], "group": parsed["regime"].astype(str),
            "label": [label_text(label.name, r) for r in label],
            "outcome": [None if pd.isna(p) else "right" if ok else "wrong" for p, ok in zip(pred, right.fillna(False))],
            "detail": None,
        })

    def summary_line(self, m: Mapping[str, Any]) -> str:
        return (
            f"IC {fmt(m['ic_mean'], 4)}, Rank IC {fmt(m['rank_ic_mean'], 4)} over {m.get('n_dates', 0)} dates, "
            f"accuracy {fmt(m['accuracy'], 3)}, bias {fmt(m['bias'], 3)} ({m['bias_grade']}), "
            f"no answer {pct(m['parse_failure_rate'])}, missing records {m['n_missing_records']}"
            + (f", {m['n_reasoning_cut']} answers cut while reasoning (raise model.max_new_tokens)"
               if m.get("n_reasoning_cut") else "")
        )


def label_text(name: str, r: float) -> str:
    """A realised return as the browser shows it, in per cent: ``r_30 = +1.25% (up)``; a return of
    exactly 0 is flat, which the metrics count with the falls (up means r > 0)."""
    if pd.isna(r):
        return f"{name}: not realised"
    return f"{name} = {r:+.2%} ({'up' if r > 0 else 'down' if r < 0 else 'flat, counted as not up'})"


TASK = ForecastTask()
