"""``infer:``, the infer stage's block of the config, as typed values (built by
candlebench.core.settings.build, so every key is checked in one line before any work)."""

from __future__ import annotations

from dataclasses import dataclass

from candlebench.core.rules import integer, optional_integer, share
from candlebench.core.settings import setting
from candlebench.inference.backends.base import GenerationSpec
from candlebench.inference.runner import RunnerSettings, Shard, default_gil_switch_ms
from candlebench.rendering.model_input import ImagePolicy

PROMPT_LAYOUTS = ("images_first", "text_first")


@dataclass(frozen=True, kw_only=True)
class InferSettings:
    run_name: str
    # None: the job's batch size rule decides (candlebench.stages.job.JobConfig.batch_size).
    batch_size: int | None = setting(optional_integer(1))
    prefetch_batches: int = setting(integer(0))
    loader_threads: int = setting(integer(1))
    gil_switch_ms: float | None  # None: the runner's default (0.5 ms on a GPU, Python's elsewhere)
    max_error_rate: float = setting(share(closed=True))
    min_samples_for_error_rate: int = setting(integer(0))
    shard: Shard
    generation: GenerationSpec  # its regex is the task's and the model's (JobConfig.generation)
    prompt_layout: str = setting((lambda v: v in PROMPT_LAYOUTS, "images_first or text_first"))
    image: ImagePolicy

    def run_settings(self, batch_size: int) -> RunnerSettings:
        return RunnerSettings(
            batch_size=batch_size,
            prefetch_batches=self.prefetch_batches,
            loader_threads=self.loader_threads,
            gil_switch_ms=default_gil_switch_ms() if self.gil_switch_ms is None else float(self.gil_switch_ms),
            max_error_rate=float(self.max_error_rate),
            min_samples_for_error_rate=self.min_samples_for_error_rate,
        )
