"""The example task of docs/development.md ("Write a task"): one daily candle, its prices written
out; is it bullish, bearish or a doji, and how far did it close from its open?

A folder of its own (this file and config.yaml), found through CANDLEBENCH_TASKS. Its samples come
from no market, so they carry no market, code or cutoff. It writes no comparison, report or
browser view: its per-sample scores (``per_sample``) give them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pandas as pd

from candlebench.core.results import Parsed, RunAnswers
from candlebench.core.rules import integer
from candlebench.scoring.per_sample import Measure, PerSample
from candlebench.task_api.base import BuiltSamples, Column, Inputs, RequestSpec, ScoreSettings, Task, TaskContext
from candlebench.core.settings import setting
from candlebench.task_api.settings import TaskSettings

ANSWER = re.compile(r"\b(bullish|bearish|doji)\b(?:\W+([-+]?\d+(?:\.\d+)?)\s*%)?", re.I)


@dataclass(frozen=True, kw_only=True)
class CandleSamples:
    n: int = setting(integer(1))
    seed: int = setting(integer(0))


@dataclass(frozen=True, kw_only=True)
class CandleSettings(TaskSettings):  # config.yaml's keys, checked once per job
    prompt: str
    doji: float = setting((lambda v: isinstance(v, (int, float)) and 0 <= v < 0.1, "a share in [0, 0.1)"))
    samples: CandleSamples


def always_bullish(samples: pd.DataFrame, market, s: CandleSettings, **params) -> Mapping[str, str]:
    return {sid: "bullish +1.0%" for sid in samples["sample_id"]}


def coin(samples: pd.DataFrame, market, s: CandleSettings, seed: int = 0) -> Mapping[str, str]:
    rng = random.Random(seed)
    return {sid: f"{rng.choice(['bullish', 'bearish'])} 0.0%" for sid in samples["sample_id"]}


class CandleTask(Task[CandleSettings]):
    name = "candle"
    settings_type = CandleSettings
    columns = (Column("colour", "string"), Column("change", "float64"))  # parsed.parquet's own columns
    baselines = {"always_bullish": always_bullish, "coin": coin}
    # right: the colour named is the candle's; change_error: |change given - true change|, NaN
    # where the answer gave none (it then counts nowhere). The truth is the browser's group and label.
    per_sample = PerSample(measures=(Measure("change_error", "Change error (pp)", higher_is_better=False, digits=2),),
                           verdict=True, title="Candle colour", group="truth", label="truth")

    def uses_market(self, s: CandleSettings) -> bool:
        return False  # its candles are drawn at random, not read from the market data

    def build_samples(self, market, s: CandleSettings, ctx: TaskContext) -> BuiltSamples:
        rng = random.Random(s.samples.seed)
        rows = []
        for i in range(s.samples.n):
            open_ = round(rng.uniform(20, 200), 2)
            close = round(open_ * (1 + rng.choice([-1, 1]) * rng.choice([0.0005, 0.01, 0.03])), 2)
            change = (close - open_) / open_
            truth = "doji" if abs(change) <= s.doji else "bullish" if change > 0 else "bearish"
            rows.append({"sample_id": f"candle-{i:03d}", "task": self.name, "open": open_, "close": close,
                         "high": round(max(open_, close) * 1.01, 2), "low": round(min(open_, close) * 0.99, 2),
                         "truth": truth, "true_change": 100 * change})
        frame = pd.DataFrame(rows)
        return BuiltSamples(frame, {"samples": len(frame), "truths": frame["truth"].value_counts().to_dict()})

    def inputs(self, s: CandleSettings) -> Inputs:
        return Inputs(charts=())  # the prices are in the prompt: nothing to draw

    def prompt_identity(self, s: CandleSettings, ctx: TaskContext) -> str:
        return s.prompt

    def request(self, s: CandleSettings, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str],
                first_pass=None) -> RequestSpec:
        return RequestSpec(s.prompt.format(**{k: sample[k] for k in ("open", "high", "low", "close")}), ())

    def parser(self, s: CandleSettings) -> Callable[[str | None], Parsed]:
        def parse(text: str | None) -> Parsed:
            found = ANSWER.search(text or "")
            if found is None:
                return Parsed(None, "none", "no bullish, bearish or doji", {"colour": None, "change": None})
            colour, change = found.group(1).lower(), found.group(2) and float(found.group(2))
            return Parsed({"colour": colour, "change": change}, "word", None, {"colour": colour, "change": change})

        return parse

    def score(self, run: RunAnswers, s: CandleSettings, ctx: TaskContext, settings: ScoreSettings) -> dict:
        p = run.parsed
        table = pd.DataFrame({"sample_id": p["sample_id"], "right": (p["colour"] == p["truth"]).fillna(False),
                              "change_error": (p["change"] - p["true_change"]).abs()})
        return self.per_sample.metrics(table, run, settings.n_boot, settings.seed)


TASK = CandleTask()
