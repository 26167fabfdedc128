"""``candlebench status RUN_DIR``: per-stage and per-shard progress of a run directory, from the
files the stages wrote (and SLURM's queue, for a sweep's jobs still there)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from inference.records import RecordStore
from inference.runner import Shard
from rendering.render_job import chart_path, read_manifest


def _shards_of(out_dir: Path) -> int:
    sweep = out_dir / "sweep.json"
    if not sweep.exists():
        return 1
    stages = json.loads(sweep.read_text())["stages"]
    return max([v["tasks"] for k, v in stages.items() if k.startswith("infer:")] or [1])


def report_lines(out_dir: Path) -> list[str]:
    samples_path = out_dir / "samples.parquet"
    if not samples_path.exists():
        return [f"{out_dir}: no samples.parquet yet (stage samples not done)"]
    samples = pd.read_parquet(samples_path)
    ids = set(samples["sample_id"])
    lines = [f"samples   {len(samples)} samples, {samples['cutoff'].nunique()} cutoffs, {samples['code'].nunique()} stocks"]

    needed = {chart_path(c, code, f) for c, code in zip(samples["cutoff"], samples["code"]) for f in ("daily", "weekly")}
    drawn = {r["path"] for p in (out_dir / "images").glob("manifest*.jsonl") for r in read_manifest(p)}
    merged = "image_daily" in samples.columns
    lines.append(f"render    {len(needed & drawn)}/{len(needed)} charts{'' if merged else ' (not merged into samples yet)'}")

    shards = _shards_of(out_dir)
    for run_dir in sorted(p for p in (out_dir / "runs").glob("*") if (p / "run.json").exists()):
        key = json.loads((run_dir / "run.json").read_text())["run_key"]
        done = RecordStore(run_dir).done(key) & ids
        parts = []
        if shards > 1:
            for index in range(shards):
                shard = Shard(index, shards)
                mine = {i for i in ids if shard.owns(i)}
                parts.append(f"{len(done & mine)}/{len(mine)}")
        scored = "scored" if (run_dir / "metrics.json").exists() else "not scored"
        shard_text = f" (shards: {' '.join(parts)})" if parts else ""
        lines.append(f"run       {run_dir.name}: {len(done)}/{len(ids)} answered{shard_text}, {scored}")
    report = out_dir / "report" / "report.html"
    lines.append(f"report    {report if report.exists() else 'not written yet'}")
    lines += _queue_lines(out_dir)
    return lines


def _queue_lines(out_dir: Path) -> list[str]:
    sweep = out_dir / "sweep.json"
    if not sweep.exists() or shutil.which("squeue") is None:
        return []
    stages = json.loads(sweep.read_text())["stages"]
    arrays = {v["jobs"][0].split("_")[0]: k for k, v in stages.items() if v.get("jobs")}
    if not arrays:
        return []
    queue = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", ",".join(arrays), "-o", "%i %T %r"], capture_output=True, text=True
    )
    return [f"slurm     {arrays.get(line.split()[0].split('_')[0], '?')}: {line}" for line in queue.stdout.splitlines()]


def status_command(args: list[str]) -> None:
    if len(args) != 1:
        raise SystemExit("usage: candlebench status RUN_DIR")
    print("\n".join(report_lines(Path(args[0]))))
