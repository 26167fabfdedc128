"""Whether an output on disk is still what its inputs give now, and if not, why: the one place the
stages ask (samples, render, infer, baseline, score, report, `status`, and the sweep's list of work
already done), so no stage reads another stage's bookkeeping to know whether its input is current.

Each artefact has one question, named as one, answered :class:`Fresh` or :class:`Stale` with the
reason a person reads (status prints it, score says it beside a run it scores again, a refusal
quotes it):

* :func:`samples_are_built`: the task's samples are built; :func:`market_is_unchanged`: the market
  data a stage is given are those the samples were built from (:func:`same_market` refuses otherwise);
* :func:`charts_are_drawn`: every input of every sample is drawn under this config's render
  settings and merged into the samples;
* :func:`answers_are_complete`: a model run answered every sample under this config's run key, for
  the inputs the samples have now; :func:`parsed_is_under_key`: a run's parsed answers (and scores)
  are of its run key;
* :func:`scores_are_current`: a run's metrics.json is the score of its records now, by the task's
  judge of now (:func:`judge_is_current`), on the current samples (:func:`scored_on_these_samples`,
  :func:`predictions_are_of_these_samples`).

The fingerprints they compare (the samples', each request's inputs, a baseline's task settings) are
a run's identity, made in :mod:`candlebench.stages.run_identity`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pyarrow.parquet as pq

from candlebench.core.errors import CorruptFile, UserError
from candlebench.core.layout import RunPaths, TaskPaths
from candlebench.core.schema import NewerSchema, read_versioned
from candlebench.market.data_source import DataSettings, open_market, source_stamp
from candlebench.market.market import Market
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.stages.job import JobConfig
from candlebench.stages.run_identity import FirstPassMissing, current_inputs
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import read_samples
from candlebench.rendering.render import collect_manifest, input_column
from candlebench.task_api.base import Task


@dataclass(frozen=True)
class Fresh:
    """The output is what its inputs give now: nothing to redo."""

    fresh: ClassVar[bool] = True


@dataclass(frozen=True)
class Stale:
    """The output is missing or of other inputs; ``reason`` says which, in words a person reads, and
    ``redo`` the command that makes it current."""

    reason: str
    redo: str = "candlebench score"
    fresh: ClassVar[bool] = False


Freshness = Fresh | Stale
FRESH = Fresh()


def samples_are_built(job: JobConfig) -> Freshness:
    """The task's samples are on disk (a study folder holds one set: settings changed since are refused
    by the stages that read them, never silently rebuilt)."""
    paths = job.task_paths
    return FRESH if paths.samples.exists() else Stale(f"no samples yet under {paths.root}")


# ---- the market: every stage after samples ----

class MarketChanged(UserError, ValueError):
    """A stage's market data are not those its task's samples were built from: its predictions,
    charts or labels would mix two markets."""


def market_is_unchanged(data: DataSettings, summary: Path, codes: Iterable[str], loaded: Market | None = None) -> Freshness:
    """``data`` gives the bars the samples in ``summary``'s folder were built from, for their stocks.
    Loads the market only when its files or reading settings changed since (their stamp), or takes
    ``loaded`` (a stage that loads it anyway)."""
    recorded = (read_versioned("samples summary", summary) if summary.exists() else {}).get("data") or {}
    if "stocks_fingerprint" not in recorded:
        return FRESH  # samples written before this check: nothing to check against
    if loaded is None:
        if recorded.get("stamp") == source_stamp(data):
            return FRESH
        loaded = open_market(data)
    if loaded.stocks_fingerprint(codes) == recorded["stocks_fingerprint"]:
        return FRESH
    return Stale(f"{summary.parent / 'samples.parquet'} was built from other market data than data.path={data.path} "
                 f"(data={data.name}) gives for its stocks now")


def same_market(data: DataSettings, summary: Path, codes: Iterable[str], loaded: Market | None = None) -> Market | None:
    """Refuses (:class:`MarketChanged`) a stage whose ``data`` is not the market its samples came
    from (:func:`market_is_unchanged`); returns ``loaded``, so a stage that loads the market anyway checks it in
    the same expression."""
    now = market_is_unchanged(data, summary, codes, loaded)
    if not now.fresh:
        raise MarketChanged(f"{now.reason}: run `candlebench samples` with this data first (then render, baseline, "
                            "infer and score), or point data.path at the data the samples came from")
    return loaded


# ---- charts: render ----

def charts_are_drawn(job: JobConfig) -> Freshness:
    """Every input of every sample is drawn under this config's settings and merged into the samples."""
    built = samples_are_built(job)
    if not built.fresh:
        return built
    if job.draws_nothing:
        return FRESH
    paths = job.task_paths
    table = read_samples(paths)
    settings = job.context.render
    try:
        collect_manifest(table, settings, paths.root)
    except FileNotFoundError as err:
        return Stale(str(err))
    unmerged = sorted({input_column(name) for name in settings.inputs} - set(table.columns))
    return Stale(f"{paths.samples}: no {unmerged} yet (the last render chunk merges them)") if unmerged else FRESH


# ---- answers: infer ----

def parsed_keys(run: RunPaths) -> list[str]:
    """The run keys of the run's parsed.parquet; a missing or unreadable one is refused in one line
    naming it (:class:`CorruptFile`): `score` writes it again from the records."""
    again = f"run `candlebench score score.run={run.name}`"
    if not run.parsed.exists():
        raise CorruptFile(f"{run.parsed}: missing (its metrics.json is there); {again}")
    try:
        return pq.read_table(run.parsed, columns=["run_key"]).column("run_key").unique().to_pylist()
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise CorruptFile(f"{run.parsed}: unreadable ({type(err).__name__}), not a parsed table; {again}") from None


def parsed_is_under_key(run: RunPaths, key: str, metrics: Mapping | None = None) -> Freshness:
    """The run's parsed.parquet (and ``metrics``, its metrics.json, where given) hold answers of run
    key ``key`` alone, its run.json's."""
    keys = set(parsed_keys(run))
    if metrics is not None:
        keys |= {metrics.get("run_key")}
    if not keys - {key}:
        return FRESH
    files = "parsed.parquet holds" if metrics is None else "parsed.parquet / metrics.json hold"
    return Stale(f"{files} run key(s) {sorted(map(str, keys))}, but run.json says {key} "
                 "(the run was redone since they were written)")


def answers_are_complete(job: JobConfig) -> Freshness:
    """Every sample is answered under this config's run key, for the inputs it has now."""
    drawn = charts_are_drawn(job)
    if not drawn.fresh:
        return Stale(f"its inputs are not ready: {drawn.reason}")
    run = job.run_paths
    samples = read_samples(job.task_paths)
    try:
        current = current_inputs(job, samples, run)
    except FirstPassMissing as err:  # a second pass whose first is still to run
        return Stale(f"its first-pass run is not ready: {err}")
    if current is None:
        return Stale("not run yet")
    if len(current) < len(samples):
        return Stale(f"{len(samples) - len(current)} of {len(samples)} samples never asked (samples added since it ran)")
    key = model_run_info(job, model_spec(job)).run_key
    unanswered = set(current.items()) - RecordStore(run.root).done(key)
    if unanswered:
        return Stale(f"{len(unanswered)} of {len(samples)} samples not answered under run key {key} "
                     "for the inputs they have now")
    return FRESH


# ---- scores: score ----

def read_metrics(path: Path) -> dict:
    """metrics.json of any schema version this candlebench knows (version 1: no judge version,
    answered count or records stamp, so it reads as judged by no known judge); a newer one is refused,
    and so is a file that is no metrics.json, in one line naming it."""
    try:
        metrics = read_versioned("metrics", path)
    except FileNotFoundError:
        raise CorruptFile(f"{path}: missing; run `candlebench score score.run={path.parent.name}`") from None
    except CorruptFile:
        metrics = None
    if not isinstance(metrics, dict):
        raise CorruptFile(f"{path}: not a metrics.json (damaged or replaced); delete it and run "
                          f"`candlebench score score.run={path.parent.name}`")
    return metrics


class NewerJudge(UserError, ValueError):
    """Scores made by a newer version of a task's judge than this checkout's: judging the run again
    here would silently replace them with an older judge's."""


def judge_is_current(task: Task, metrics: Mapping, path: Path) -> Freshness:
    """The judge that scored ``metrics`` is the task's of now; an older one (or none recorded) is stale,
    a newer one refused (:class:`NewerJudge`)."""
    judge = metrics.get("judge_version")
    if isinstance(judge, int) and judge > task.judge_version:
        raise NewerJudge(f"{path}: scored by the {task.name} judge v{judge}, newer than this candlebench's "
                         f"v{task.judge_version}; update candlebench (its scores are not this one's to replace)")
    if judge == task.judge_version:
        return FRESH
    then = "before judges had versions" if judge is None else f"by the {task.name} judge v{judge}"
    return Stale(f"judged {then}; the judge is now v{task.judge_version}")


def predictions_are_of_these_samples(info: RunInfo, paths: TaskPaths, now: str, metrics: Mapping | None) -> Freshness:
    """A baseline's predictions are of the samples there now: made on them (its run.json's samples),
    or from the market data they were built from and not scored since on other samples. Its answers
    are the labels' neighbours (walk-forward models train on them): scored against rebuilt samples
    they would be another data set's predictions under its labels."""
    if info.kind != "baseline" or info.identity.get("samples") in (None, now):
        return FRESH
    again = f"candlebench baseline task={info.task} 'task.baseline.names=[{info.model_name}]'"
    summary = read_versioned("samples summary", paths.summary) if paths.summary.exists() else {}
    built_from, made_from = (summary.get("data") or {}).get("fingerprint"), info.identity.get("data")
    if built_from and made_from and built_from != made_from:
        return Stale(f"baseline {info.model_name} predicted from other market data than {paths.samples} was "
                     "built from (rebuilt since)", again)
    if metrics is not None and metrics.get("run_key") == info.run_key and metrics.get("samples_fingerprint") not in (None, now):
        return Stale(f"baseline {info.model_name} predicted on other samples than {paths.samples} (rebuilt since)",
                     again)
    return FRESH


def scored_on_these_samples(metrics: Mapping, now: str, n_samples: int) -> Freshness:
    """metrics.json was scored on the samples of fingerprint ``now``; one written before the
    fingerprint was recorded, on as many samples."""
    recorded = metrics.get("samples_fingerprint")
    same = recorded == now if recorded else metrics.get("n_samples", n_samples) == n_samples
    return FRESH if same else Stale("scored on other samples (rebuilt since)")


NOT_SCORED = Stale("not scored yet")


def scores_are_current(task: Task, run: RunPaths, samples_now: str, n_samples: int) -> Freshness:
    """Whether the run's metrics.json is the score of its records now under the task's judge on the
    samples of fingerprint ``samples_now``: `score` scores again exactly the stale runs, `status`
    says why."""
    if not run.info.exists():
        return Stale(f"{run.info} is missing", "candlebench infer (or baseline / import) for this run")
    if run.score_error.exists():
        return Stale("its last scoring failed")
    if not run.metrics.exists():
        return NOT_SCORED
    try:
        metrics, info = read_metrics(run.metrics), RunInfo.read(run.info)
    except NewerSchema:
        raise  # a newer candlebench's scores are not this one's to replace
    except (ValueError, UserError):
        return Stale("damaged metrics.json or run.json")  # scoring it again says what is wrong
    made = predictions_are_of_these_samples(info, TaskPaths(run.root.parent.parent), samples_now, metrics)
    if not made.fresh:
        return made
    if metrics.get("run_key") != info.run_key:
        return Stale("redone since it was scored")
    same = scored_on_these_samples(metrics, samples_now, n_samples)
    if not same.fresh:
        return same
    judged = judge_is_current(task, metrics, run.metrics)
    if not judged.fresh:
        return judged
    stamp = str(metrics.get("records") or "")
    if not stamp.startswith(STAMPED):
        return Stale("scored before its records were stamped by their content (an older candlebench)")
    if stamp != RecordStore(run.root).stamp():
        return Stale(f"its records changed since it was scored ({metrics.get('answered')}/{metrics.get('n_samples')} "
                     "answered then)")
    try:
        parsed_keys(run)
    except CorruptFile as err:
        return Stale(str(err))
    return FRESH


# How a records stamp made from the records' content begins (RecordStore.stamp): older ones were counts of bytes.
STAMPED = "sha256:"
