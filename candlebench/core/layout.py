"""Where a run directory keeps its files: the one place that knows the names.

    <out_dir>/
      <task>/samples.parquet, samples_summary.json     one folder per task, so tasks that share
      <task>/images/<cutoff>/<code>/<input>.(png|txt)  a market never clobber each other
      <task>/images/manifest*.jsonl, manifest.parquet
      <task>/runs/<run>/parts/*.jsonl (the records), responses.jsonl (derived from them) and its
                  .sha256 sidecar, run.json, inputs.parquet (written by infer, baseline, import);
                  parsed.parquet, metrics.json, score_error.json (written by score alone)
      <task>/locks/run.<run>.<unit>.lock, run.<run>.gate, render.chunk<i>of<n>.lock
                                                       who writes a run (a shard, or the whole) or a render chunk now
      report/                                          one report, a section per task
      sweep.json
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    def responses_sidecar(self) -> Path:
        """The hash responses.jsonl was last written with (an edit there is refused, not lost)."""
        return self.root / "responses.jsonl.sha256"

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

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    def lock(self, name: str) -> Path:
        """The lock file of one writer's unit of this task (candlebench.core.lock)."""
        return self.locks / f"{name}{LOCK_SUFFIX}"

    def render_lock(self, index: int, count: int) -> Path:
        """The lock of render chunk ``index`` of ``count``."""
        return self.lock(f"render.chunk{index}of{count}")

    def run_lock(self, run: str, unit: str) -> Path:
        """The lock of one writer's ``unit`` of run ``run`` (a shard's, or the whole run's)."""
        return self.lock(f"{_RUN_LOCK}{run}.{unit}")

    def run_gate(self, run: str) -> Path:
        """Held a moment by a writer of run ``run`` while it looks at the run's other locks."""
        return self.locks / f"{_RUN_LOCK}{run}.gate"

    def run_locks(self, run: str) -> dict[str, Path]:
        """Every lock file of run ``run`` on disk, by its unit."""
        prefix = f"{_RUN_LOCK}{run}."
        return {p.name[len(prefix):-len(LOCK_SUFFIX)]: p for p in sorted(self.locks.glob(f"{prefix}*{LOCK_SUFFIX}"))}


LOCK_SUFFIX = ".lock"
_RUN_LOCK = "run."  # every lock file of a run begins so, then the run's name


@dataclass(frozen=True)
class StudyLayout:
    """A study's folder (the config's out_dir) and the files in it: its task folders, the sweep's record."""

    study_dir: Path

    def task(self, name: str) -> TaskPaths:
        return TaskPaths(self.study_dir / name)

    def tasks_present(self) -> list[str]:
        """Task folders with samples or runs (one whose samples.parquet is gone is still there: the
        stages that read it say so)."""
        return sorted({p.parent.name for pattern in ("*/samples.parquet", "*/runs") for p in self.study_dir.glob(pattern)})

    @property
    def sweep(self) -> Path:
        return self.study_dir / "sweep.json"
