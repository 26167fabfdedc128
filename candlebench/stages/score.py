"""``candlebench score``: each run's records → parsed.parquet and metrics.json, whose one writer it
is (infer, baseline and import write records alone). It dispatches on the task and knows no metric."""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import asdict
from typing import Any, Mapping

import pandas as pd

from candlebench.core.errors import CorruptFile, UserError
from candlebench.core.io import write_json, write_parquet
from candlebench.core.layout import RunPaths, TaskPaths
from candlebench.core.schema import stamped
from candlebench.core.lock import Held, run_lock
from candlebench.core.results import RunAnswers, answered_rows
from candlebench.stages import freshness
from candlebench.stages.freshness import same_market
from candlebench.stages.job import JobConfig
from candlebench.stages.run_identity import answered_under, current_inputs, samples_fingerprint, task_settings
from candlebench.stages.parsed import judged_run
from candlebench.stages.study import OtherSamples, check_answers_these
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import read_samples
from candlebench.task_api.base import Task


def score_names(job: JobConfig, paths: TaskPaths, task: Task, samples: pd.DataFrame, now: str) -> list[str]:
    """``score.run``: one run name, a list of them, or null = every run of the task's folder whose
    scores are not of its records now on the current samples (freshness's :func:`scores_are_current`):
    new, redone, written to since it was scored (an unfinished run), judged by another version of the
    task's judge, scored before the samples were rebuilt (``now``: the current samples' fingerprint),
    or whose scoring failed."""
    chosen = job.score.run
    if chosen is None:
        return [n for n in paths.run_names()
                if not freshness.scores_are_current(task, paths.run(n), now, len(samples)).fresh]
    return [str(n) for n in chosen] if isinstance(chosen, tuple) else [str(chosen)]


def answered_line(metrics: Mapping[str, Any]) -> str:
    """A run's answered/total as `score` prints it and the report shows it beside the run; a run
    missing samples is marked (the report stars it only beside runs over the same samples)."""
    answered, total = metrics.get("answered"), metrics.get("n_samples")
    if answered is None or total is None:
        return "answered unknown (scored before this was recorded)"
    return f"{answered}/{total} answered" + (
        "" if answered >= total else f", partial: {total - answered} missing, never starred beside complete runs")


class SettingsChanged(UserError, ValueError):
    """A run about to be scored under other task settings than it was answered under (``score
    task.horizon=5`` on answers to the 30-day prompt would label them with 5-day returns)."""


def _first_difference(a: str, b: str) -> str:
    for line_a, line_b in zip([*a.splitlines(), ""], [*b.splitlines(), ""]):
        if line_a != line_b:
            return f"{line_a.strip()[:120]!r} there, {line_b.strip()[:120]!r} here"
    return "same text"


def check_settings(job: JobConfig, info: RunInfo, run: RunPaths) -> None:
    """The task settings this config scores with are the ones the run was answered under: a model
    run's prompt and inputs, a baseline's task config (its pass bookkeeping aside)."""
    task = job.task
    if info.task != task.name:
        raise SettingsChanged(f"{run.info}: run {run.name} answered task {info.task}, not {task.name}; "
                              f"score it with task={info.task}")
    redo = (f"score it with the settings it ran under, or answer it again under these "
            f"(`candlebench {'infer' if info.kind == 'model' else 'baseline'}`)")
    if info.kind == "model":
        asked = answered_under(job.settings, info)
        prompt, inputs = task.prompt_identity(asked, job.context), asdict(task.inputs(asked))
        if prompt != info.identity.get("prompt", prompt):
            raise SettingsChanged(f"{run.info}: run {run.name} was asked another prompt than this config gives "
                                  f"({_first_difference(info.identity['prompt'], prompt)}); {redo}")
        if json.loads(json.dumps(inputs)) != info.identity.get("inputs", json.loads(json.dumps(inputs))):
            raise SettingsChanged(f"{run.info}: run {run.name} was given other inputs ({info.identity['inputs']}) than "
                                  f"this config gives ({inputs}); {redo}")
    elif info.kind == "baseline" and "task_config" in info.identity:
        now, then = task_settings(job), info.identity["task_config"]
        changed = sorted(k for k in {*now, *then} if now.get(k) != then.get(k))
        if changed:
            raise SettingsChanged(f"{run.info}: baseline {run.name} ran under other task settings than this config's: "
                                  + ", ".join(f"task.{k}={then.get(k)!r} there, {now.get(k)!r} here" for k in changed)
                                  + f"; {redo}")


def score_run(job: JobConfig, run: RunPaths, samples: pd.DataFrame, now: str) -> dict:
    """Judge the run's records with the task's judge of now (its parser, then its metrics) under the
    key in its run.json (never a stale parsed.parquet), for the input files the samples have now (a
    model's answers about other charts do not count), and score under the task settings the run was
    answered under (else refused: :class:`SettingsChanged`)."""
    task, paths = job.task, job.task_paths
    info = RunInfo.read(run.info)
    check_settings(job, info, run)
    inputs = current_inputs(job, samples, run) if info.kind == "model" else None
    if info.kind == "model" and inputs is None:
        raise FileNotFoundError(f"{run.inputs}: missing; this run's answers cannot be matched to the inputs of now: "
                                f"run `candlebench infer task={task.name} infer.run_name={run.name}` again (it answers only what is missing)")
    check_answers_these(run, info, samples, paths)
    made = freshness.predictions_are_of_these_samples(info, paths, now, _last_scores(run))
    if not made.fresh:
        raise OtherSamples(f"{run.root}: {made.reason}: its predictions are of other samples than these labels; "
                           f"run `{made.redo}` first")
    stamp = RecordStore(run.root).stamp()  # before reading them: answers written after it make the run stale
    parsed = judged_run(run, samples, task, task.judge(job.settings), inputs)
    metrics = task.score(RunAnswers(run.name, parsed, samples, asdict(info)), job.settings, job.context, job.score)
    per_sample = metrics.pop("per_sample", None)
    if per_sample is not None:  # a task's per-sample scores join parsed.parquet as score_<name> columns
        scores = per_sample.set_index("sample_id").add_prefix("score_")
        parsed = parsed.drop(columns=[c for c in scores.columns if c in parsed]).join(scores, on="sample_id")
    # The one writer of parsed.parquet and metrics.json (tests/stages/test_one_writer.py holds it so).
    write_parquet(parsed, run.parsed)
    # Samples with no record at all (an unfinished run) are not parse failures: report them apart.
    metrics["n_samples"] = len(samples)
    metrics["n_missing_records"] = int((~samples["sample_id"].isin(parsed["sample_id"])).sum())
    metrics["samples_fingerprint"] = now
    # Samples with an answer (core.results.has_answer: a text and no error), as every stage counts them.
    metrics["answered"] = int(answered_rows(parsed).sum())
    metrics["run_key"] = info.run_key
    metrics["task"] = task.name
    metrics["judge_version"] = task.judge_version
    metrics["records"] = stamp
    write_json(stamped("metrics", metrics), run.metrics)
    return metrics


def _last_scores(run: RunPaths) -> dict | None:
    """The run's metrics.json as scored last, if it can be read (a damaged one is what scoring replaces)."""
    try:
        return freshness.read_metrics(run.metrics) if run.metrics.exists() else None
    except CorruptFile:
        return None


class ScoringFailed(UserError, RuntimeError):
    """Runs that could not be scored; each one's reason is in its score_error.json and the report."""


def score(job: JobConfig) -> None:
    """Score each run; one that fails is recorded (score_error.json: the one-line reason and the
    traceback) and listed in the report, the others are still scored, and the command fails at the
    end naming every run that did not score."""
    task, paths = job.task, job.task_paths
    samples = read_samples(paths, task.sample_columns)
    if task.uses_market(job.settings):
        same_market(job.data, paths.summary, samples["code"].unique())
    failed = []
    now = samples_fingerprint(samples, paths)  # once: every run is checked against and scored on it
    names = score_names(job, paths, task, samples, now)
    if not names:
        print(f"{task.name}: every run under {paths.root} is scored under its current key, from all its answers, "
              f"by the {task.name} judge v{task.judge_version}")
    for name in names:
        run = paths.run(name)
        was = freshness.scores_are_current(task, run, now, len(samples))
        try:
            with run_lock(paths, name, instead="score it once that command ends").hold():
                metrics = score_run(job, run, samples, now)
        except Held as err:  # being written: not a failure of its scoring, nothing to record in its folder
            failed.append(f"{task.name}/{name}: {err}")
            print(f"{task.name}/{name}: not scored: {err}", file=sys.stderr)
            continue
        except Exception as err:  # noqa: BLE001 - recorded as data, raised below once every run was tried
            why = " ".join(f"{type(err).__name__}: {err}".split())
            write_json({"error": why, "traceback": traceback.format_exc()}, run.score_error)
            failed.append(f"{task.name}/{name}: {why}")
            print(f"{task.name}/{name}: not scored: {why}", file=sys.stderr)
            continue
        run.score_error.unlink(missing_ok=True)
        reference = task.references.get(name) if RunInfo.read(run.info).kind == "baseline" else None
        print(f"{task.name}/{name}: {answered_line(metrics)}; judge v{task.judge_version}{'' if was.fresh else f' (scored because: {was.reason})'}; "
              f"{task.summary_line(metrics)} -> {run.metrics}"
              + (f" (a reference, not a result: {reference})" if reference else ""))
    if failed:
        raise ScoringFailed(f"{len(failed)} run(s) not scored: " + "; ".join(failed))
