"""``sweep:``, the block of `candlebench sweep` (and of `run`'s plan splits), as typed values built
by candlebench.core.settings.build: the models and variants it plans, how it splits the graph's
stages into array tasks, and what it asks of SLURM."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from candlebench.core.rules import integer
from candlebench.core.settings import setting


@dataclass(frozen=True, kw_only=True)
class Resources:
    """What one array task of a side (CPU stages, GPU stages) asks of SLURM."""

    partition: str | None
    cpus_per_task: int
    mem_gb: int
    timeout_min: int
    gpus_per_task: int = 0  # the GPU side's, per tensor-parallel rank


@dataclass(frozen=True, kw_only=True)
class SweepSettings:
    models: tuple[str, ...]
    variants: dict[str, Any]  # name -> the overrides of that variant
    compare: tuple[tuple[str, str], ...]
    baselines: bool
    render_chunks: int = setting(integer(1))
    infer_shards: int = setting(integer(1))
    executor: str  # slurm, or local: the same jobs in the same order on this machine
    wait: bool
    poll_s: float
    array_parallelism: int
    account: str | None
    setup: tuple[str, ...]
    additional_parameters: dict[str, Any]
    cpu: Resources
    gpu: Resources
