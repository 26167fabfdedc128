"""The forecast task's settings: its config.yaml as frozen dataclasses (candlebench.task_api.settings),
read by the samples, the prompt, the baselines and the judge alike."""

from __future__ import annotations

from dataclasses import dataclass, field

from candlebench.core.rules import ConfigError, integer, one_of, share
from candlebench.core.settings import setting
from candlebench.task_api.settings import MarketWindow, TaskSettings

# How a stock's continuous rise / fall is read: from its samples' labels, or from its own trading
# days in the window (tasks/forecast/samples.py's module docstring).
TREND_READINGS = ("cutoffs", "days")


@dataclass(frozen=True, kw_only=True)
class ForecastSamples(MarketWindow):
    horizons: tuple[int, ...] = setting((lambda v: isinstance(v, list) and len(v) > 0 and all(integer(1)[0](h) for h in v),
                                         "a non-empty list of integers >= 1"))
    regime_threshold: float = setting(share(closed=False))
    trend_threshold: float = setting(share(closed=False))
    trend_by: str = setting(one_of(TREND_READINGS))
    trend_horizon: int


@dataclass(frozen=True, kw_only=True)
class ForecastSettings(TaskSettings):
    images: tuple[str, ...]
    text: bool
    feed: tuple[str, ...] | None
    horizon: int = setting(integer(1))
    prompt: str
    # Named alternative prompts, which an experiment adds and picks with task.prompt=${task.prompts.<name>}
    # (conf/experiment/ablation_*.yaml); not in config.yaml, whose keys are every forecast
    # baseline's identity (stages/baseline.py).
    prompts: dict[str, str] = field(default_factory=dict)
    samples: ForecastSamples

    def __post_init__(self) -> None:
        # Here rather than in ForecastSamples: trend_horizon defaults to ${task.horizon}, so a bad
        # task.horizon is said as the key the user typed, before the key that copies it.
        w = self.samples
        if self.horizon not in w.horizons:
            raise ConfigError(f"task.horizon={self.horizon}: must be one of task.samples.horizons="
                              f"{list(w.horizons)} (its label is scored)")
        if w.trend_by == "cutoffs" and w.trend_horizon not in w.horizons:
            raise ConfigError(f"task.samples.trend_horizon={w.trend_horizon}: must be one of task.samples.horizons="
                              f"{list(w.horizons)} (trend_by=cutoffs reads that label)")
