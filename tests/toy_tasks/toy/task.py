"""A toy task, found as the shipped ones are (task_api/registry.py): this folder, its task.py and its
config.yaml, on the registry's path through CANDLEBENCH_TASKS; nothing shared names it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import pandas as pd

from candlebench.core.results import Parsed, RunAnswers
from candlebench.market.market import Market
from candlebench.report.model import RunMetrics, Section, Table
from candlebench.core.rules import integer
from candlebench.task_api.base import BuiltSamples, Column, Inputs, RequestSpec, ScoreSettings, Task, TaskContext
from candlebench.core.settings import setting
from candlebench.task_api.settings import TaskSettings


@dataclass(frozen=True, kw_only=True)
class ToySamples:
    every: int = setting(integer(1))  # trading days between cutoffs
    min_bars: int = setting(integer(1))


@dataclass(frozen=True, kw_only=True)
class ToySettings(TaskSettings):
    prompt: str
    samples: ToySamples


def _always_up(samples: pd.DataFrame, market: Market, s: ToySettings, **params) -> Mapping[str, str | None]:
    return {sid: "UP" for sid in samples["sample_id"]}


class ToyTask(Task[ToySettings]):
    """Did the stock close up on the cutoff day? One daily chart and the OHLCV text per sample."""

    name = "toy"
    settings_type = ToySettings
    columns = (Column("direction", "string"),)
    baselines = {"always_up": _always_up}

    def build_samples(self, market: Market, s: ToySettings, ctx: TaskContext) -> BuiltSamples:
        cal, bars = market.calendar, market.bars
        rows = []
        for cutoff in cal[s.samples.min_bars:: s.samples.every]:
            day = bars[bars["date"] == cutoff].set_index("code")["close"]
            before = bars[bars["date"] < cutoff].groupby("code")["close"].last()
            for code in sorted(set(day.index) & set(before.index)):
                rows.append({"sample_id": f"toy-{code}-{cutoff:%Y%m%d}", "task": "toy", "market": market.name,
                             "code": code, "cutoff": cutoff, "up": bool(day[code] > before[code])})
        frame = pd.DataFrame(rows)
        return BuiltSamples(frame, {"samples": len(frame)})

    def inputs(self, s: ToySettings) -> Inputs:
        return Inputs(charts=("daily",), text=True)

    def prompt_identity(self, s: ToySettings, ctx: TaskContext) -> str:
        return s.prompt

    def request(self, s: ToySettings, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str]) -> RequestSpec:
        prompt = s.prompt.format(cutoff=f"{sample['cutoff']:%Y-%m-%d}", ohlcv=texts["text_ohlcv"])
        return RequestSpec(prompt, ("daily",), ("text_ohlcv",))

    def parser(self, s: ToySettings) -> Callable[[str | None], Parsed]:
        def parse(text: str | None) -> Parsed:
            found = re.search(r"\b(UP|DOWN)\b", text or "")
            if found is None:
                return Parsed(None, "none", "no UP or DOWN", {"direction": None})
            return Parsed(found.group(1), "word", None, {"direction": found.group(1).lower()})

        return parse

    def score(self, run: RunAnswers, s: ToySettings, ctx: TaskContext, settings: ScoreSettings) -> dict:
        answered = run.parsed[run.parsed["direction"].notna()]
        right = (answered["direction"] == "up") == answered["up"]
        return {"accuracy": float(right.mean()) if len(answered) else None,
                "parse_failure_rate": float(run.parsed["direction"].isna().mean())}

    def compare(self, a: RunAnswers, b: RunAnswers, settings: ScoreSettings) -> dict:
        return {"accuracy_diff": b.metrics["accuracy"] - a.metrics["accuracy"]}

    def report(self, runs: list[RunMetrics], comparisons: Mapping[str, dict], datasets=()) -> list[Section]:
        frame = pd.DataFrame({"Run": [r.label for r in runs], "Accuracy": [r.metrics["accuracy"] for r in runs]})
        return [Section("Toy task", (Table("Accuracy on the cutoff day's direction", frame),))]


TASK = ToyTask()
