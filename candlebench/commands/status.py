"""``candlebench status RUN_DIR``: per-stage and per-shard progress of a run directory, as each
stage reads it from the files it wrote (``render_progress``, ``infer_progress``: no config, a
folder), and SLURM's queue for a sweep's jobs still there."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path


from candlebench.core.errors import UserError
from candlebench.core.layout import StudyLayout, RunPaths, TaskPaths
from candlebench.stages import freshness
from candlebench.stages.infer import infer_progress
from candlebench.stages.render import render_progress
from candlebench.stages.run_identity import samples_fingerprint
from candlebench.stages.study import other_data, report_tasks
from candlebench.inference.runner import Shard
from candlebench.rendering.inputs import read_samples
from candlebench.task_api.registry import get_task
from candlebench.task_api.base import Task


def _shards_of(layout: StudyLayout) -> int:
    if not layout.sweep.exists():
        return 1
    stages = json.loads(layout.sweep.read_text())["stages"]
    return max([v["tasks"] for k, v in stages.items() if k.startswith("infer:")] or [1])


def task_lines(paths: TaskPaths, shards: int) -> list[str]:
    samples = read_samples(paths)
    ids = set(samples["sample_id"])
    now = samples_fingerprint(samples, paths)
    name = paths.task
    task = get_task(name)
    lines = [f"{name:<9} samples  {len(samples)} samples" + "".join(
        f", {samples[c].nunique()} {what}" for c, what in (("cutoff", "cutoffs"), ("code", "stocks")) if c in samples)]
    drawn = render_progress(paths, samples)
    lines.append(f"{name:<9} render   nothing to draw (its prompts carry its inputs)" if drawn.nothing_to_draw else
                 f"{name:<9} render   {drawn.drawn}/{drawn.needed} inputs ({', '.join(drawn.inputs) or 'none yet'})"
                 f"{'' if drawn.merged else ' (not merged into samples yet)'}")
    for run_name in paths.run_names():
        try:
            lines.append(_run_line(task, paths.run(run_name), ids, now, len(samples), shards))
        except UserError as err:  # a damaged or newer file of one run: say which, show the rest
            lines.append(f"{name:<9} run      {run_name}: error: {err}")
    return lines


def _run_line(task: Task, run: RunPaths, ids: set[str], now: str, n_samples: int, shards: int) -> str:
    if not run.info.exists():
        return f"{task.name:<9} run      {run.name}: error: {run.info} is missing; the run's answers cannot be read"
    progress = infer_progress(run, ids)
    done, failed = progress.answered, progress.failed
    parts = []
    if shards > 1:
        for index in range(shards):
            shard = Shard(index, shards)
            mine = {i for i in ids if shard.owns(i)}
            parts.append(f"{len(done & mine)}/{len(mine)}")
    scored = _scored(task, run, now, n_samples)
    shard_text = f" (shards: {' '.join(parts)})" if parts else ""
    failed_text = f", {len(failed)} failed (retried on the next infer)" if failed else ""
    empty = f", {len(progress.no_answer)} recorded without an answer" if progress.no_answer else ""
    return (f"{task.name:<9} run      {run.name}: {len(done)}/{len(ids)} answered{failed_text}{empty}{shard_text}, "
            f"{scored}")


def _scored(task: Task, run: RunPaths, samples_now: str, n_samples: int) -> str:
    """"scored" only for the scores of the run's records now, by the task's judge of now; else why not."""
    scored = freshness.scores_are_current(task, run, samples_now, n_samples)
    if scored.fresh:
        return f"scored (judge v{task.judge_version})"
    return ("not scored" if scored == freshness.NOT_SCORED
            else f"scores out of date: {scored.reason} (`{scored.redo}` redoes it)")


def report_lines(out_dir: Path) -> list[str]:
    layout = StudyLayout(out_dir)
    tasks = layout.tasks_present()
    if not tasks:
        return [f"{out_dir}: no samples yet (stage samples not done)"]
    lines = []
    try:
        ours, other = other_data(layout, report_tasks([], set(tasks)))
    except (UserError, ValueError) as err:  # a damaged samples summary: its task's own lines say so too
        ours, other = {}, {}
        lines.append(f"study     error    {err}")
    for name, built in other.items():
        lines.append(f"{name:<9} data     built from other bars ({', '.join(built.get('files') or [])}) than the study's "
                     f"({', '.join(ours.get('files') or [])}): `report` leaves it out; rebuild its samples with that data")
    for task in tasks:
        try:
            lines += task_lines(layout.task(task), _shards_of(layout))
        except (UserError, FileNotFoundError) as err:  # a damaged file of one task: say which, show the rest
            lines.append(f"{task:<9} error    {err}")
    report = out_dir / "report" / "report.html"
    lines.append(f"report    {report if report.exists() else 'not written yet'}")
    return lines + _queue_lines(layout)


def _queue_lines(layout: StudyLayout) -> list[str]:
    if not layout.sweep.exists() or shutil.which("squeue") is None:
        return []
    stages = json.loads(layout.sweep.read_text())["stages"]
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
    out = Path(args[0])
    if not out.is_dir():
        raise SystemExit(f"error: {out}: no such directory; give the out_dir of a run (e.g. outputs/<data.name>)")
    print("\n".join(report_lines(out)))
