"""Where a run directory keeps its files: the one place that knows the names.

    <out_dir>/
      <task>/samples.parquet, samples_summary.json     one folder per task, so tasks that share
      <task>/images/<cutoff>/<code>/<input>.(png|txt)  a market never clobber each other
      <task>/images/manifest*.jsonl, manifest.parquet
      <task>/runs/<run>/parts/*.jsonl (the records), responses.jsonl (derived), parsed.parquet, run.json, metrics.json
      <task>/locks/*.lock                              who writes a run (a shard, or the whole) or a render chunk now
      report/                                          one report, a section per task
      sweep.json
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def parts(self) -> Path:
        return self.root / "parts"

    @property
    def responses(self) -> Path:
        return self.root / "responses.jsonl"

    @property
    def parsed(self) -> Path:
        return self.root / "parsed.parquet"

    @property
    def info(self) -> Path:
        return self.root / "run.json"

    @property
    def inputs(self) -> Path:
        """The inputs infer sent with each sample, by name (charts, text, the first-pass answer)."""
        return self.root / "inputs.parquet"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"

    @property
    def score_error(self) -> Path:
        """Why the run's last scoring failed (removed when it is scored)."""
        return self.root / "score_error.json"


@dataclass(frozen=True)
class TaskPaths:
    root: Path

    @property
    def task(self) -> str:
        return self.root.name

    @property
    def samples(self) -> Path:
        return self.root / "samples.parquet"

    @property
    def summary(self) -> Path:
        return self.root / "samples_summary.json"

    @property
    def images(self) -> Path:
        return self.root / "images"

    @property
    def manifest(self) -> Path:
        return self.images / "manifest.parquet"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run(self, name: str) -> RunPaths:
        if not name or "/" in name or name in {".", ".."}:
            raise ValueError(f"run name {name!r}: must be a plain folder name")
        return RunPaths(self.runs / name)

    def run_names(self) -> list[str]:
        """Every run folder, run.json or not: one that lost it is named by the stage that reads it
        (refused in one line), never passed over as if it were not there."""
        return sorted(p.name for p in self.runs.glob("*") if p.is_dir())

    def lock(self, name: str) -> Path:
        """The lock file of one writer's unit of this task (candlebench.core.lock)."""
        return self.root / "locks" / f"{name}.lock"


@dataclass(frozen=True)
class Layout:
    out_dir: Path

    @classmethod
    def of(cls, cfg: DictConfig) -> "Layout":
        return cls(Path(cfg.out_dir))

    def task(self, name: str) -> TaskPaths:
        return TaskPaths(self.out_dir / name)

    def tasks_present(self) -> list[str]:
        """Task folders with samples or runs (one whose samples.parquet is gone is still there: the
        stages that read it say so)."""
        return sorted({p.parent.name for pattern in ("*/samples.parquet", "*/runs") for p in self.out_dir.glob(pattern)})

    @property
    def sweep(self) -> Path:
        return self.out_dir / "sweep.json"


def task_paths(cfg: DictConfig) -> TaskPaths:
    """The folder of the task a stage runs (``task=<name>``)."""
    return Layout.of(cfg).task(cfg.task.name)


def run_paths(cfg: DictConfig, name: str | None = None) -> RunPaths:
    return task_paths(cfg).run(name or cfg.infer.run_name)
