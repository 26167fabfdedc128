"""Whether an output on disk is still what its inputs give now, and if not, why: the one place the
stages ask (samples, render, infer, baseline, score, report, `status`, and the sweep's list of work
already done), so no stage reads another stage's bookkeeping to know whether its input is current.

Each artefact has one question, answered :class:`Fresh` or :class:`Stale` with the reason a person
reads (status prints it, score says it beside a run it scores again, a refusal quotes it):

* :func:`samples`: the task's samples are built; :func:`market`: the market data a stage is given
  are those the samples were built from (:func:`same_market` refuses otherwise);
* :func:`charts`: every input of every sample is drawn under this config's render settings and
  merged into the samples; :func:`drawn_under`: a render manifest is of these settings;
* :func:`answers`: a model run answered every sample under this config's run key, for the inputs
  the samples have now; :func:`under_key`: a run's parsed answers (and scores) are of its run key;
* :func:`scores`: a run's metrics.json is the score of its records now, by the task's judge of
  now, on the current samples (:func:`scored_on`).

The fingerprints they compare are made here too: the samples' (:func:`samples_fingerprint`), each
request's inputs (:func:`input_fingerprint`, :func:`current_inputs`), and the task settings a
baseline's answers depend on (:func:`task_settings`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from candlebench.core.errors import CorruptFile, UserError
from candlebench.core.io import fingerprint
from candlebench.core.layout import RunPaths, TaskPaths, run_paths, task_paths
from candlebench.core.schema import NewerSchema, read_versioned
from candlebench.market.data_source import open_market, source_stamp
from candlebench.market.market import Market
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.stages.task_setup import task_setup
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import read_samples, text_column
from candlebench.rendering.render import MANIFEST_COLUMNS, RenderSettings, collect_manifest, input_column
from candlebench.task_api.registry import get_task
from candlebench.task_api.base import FirstPassAnswer, Task


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


def samples_fingerprint(samples: pd.DataFrame, paths: TaskPaths) -> str:
    """Of the samples and their labels (not the input files render adds), in any row order, and the
    market data they came from (samples_summary.json): what a score and a baseline's answers are of."""
    columns = sorted(c for c in samples.columns if not c.startswith(("image_", "text_")))
    table = samples[columns].sort_values("sample_id").to_json(orient="split", index=False, date_format="iso")
    summary = json.loads(paths.summary.read_text()) if paths.summary.exists() else {}
    return fingerprint({"samples": table, "data": (summary.get("data") or {}).get("fingerprint")})


def samples(cfg: DictConfig) -> Freshness:
    """The task's samples are on disk (a study folder holds one set: settings changed since are refused
    by the stages that read them, never silently rebuilt)."""
    paths = task_paths(cfg)
    return FRESH if paths.samples.exists() else Stale(f"no samples yet under {paths.root}")


# ---- the market: every stage after samples ----

class MarketChanged(UserError, ValueError):
    """A stage's market data are not those its task's samples were built from: its predictions,
    charts or labels would mix two markets."""


def market(data: DictConfig, summary: Path, codes: Iterable[str], loaded: Market | None = None) -> Freshness:
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
                 f"(data={data.get('name')}) gives for its stocks now")


def same_market(data: DictConfig, summary: Path, codes: Iterable[str], loaded: Market | None = None) -> Market | None:
    """Refuses (:class:`MarketChanged`) a stage whose ``data`` is not the market its samples came
    from (:func:`market`); returns ``loaded``, so a stage that loads the market anyway checks it in
    the same expression."""
    now = market(data, summary, codes, loaded)
    if not now.fresh:
        raise MarketChanged(f"{now.reason}: run `candlebench samples` with this data first (then render, baseline, "
                            "infer and score), or point data.path at the data the samples came from")
    return loaded


# ---- charts: render ----

class StaleInputs(UserError, FileNotFoundError):
    """The rendered inputs on disk do not belong to this config: answers would describe other charts."""


def drawn_under(manifest: pd.DataFrame, settings: RenderSettings) -> Freshness:
    """The render manifest's inputs were drawn under ``settings`` (a manifest from before settings
    were recorded is of unknown ones)."""
    expected = settings.key()
    drawn = set(manifest["settings"]) if "settings" in manifest else {"(unknown)"}
    if drawn == {expected}:
        return FRESH
    return Stale(f"drawn under other render settings ({sorted(drawn)}) than this config's ({expected}: "
                 f"{settings.describe()})")


def charts(cfg: DictConfig) -> Freshness:
    """Every input of every sample is drawn under this config's settings and merged into the samples."""
    built = samples(cfg)
    if not built.fresh:
        return built
    setup = task_setup(cfg)
    if setup.draws_nothing:
        return FRESH
    paths = task_paths(cfg)
    table = read_samples(paths)
    settings = setup.context.render
    try:
        collect_manifest(table, settings, paths.root)
    except FileNotFoundError as err:
        return Stale(str(err))
    unmerged = sorted({input_column(name) for name in settings.inputs} - set(table.columns))
    return Stale(f"{paths.samples}: no {unmerged} yet (the last render chunk merges them)") if unmerged else FRESH


def rendered_inputs(cfg: DictConfig, task: Task, samples: pd.DataFrame, paths: TaskPaths) -> pd.DataFrame:
    """The render manifest (sample_id, freq -> sha256), checked against this config's settings."""
    setup = task_setup(cfg)
    if setup.draws_nothing:  # a task whose prompts carry all it asks about: nothing was drawn, nothing to check
        return pd.DataFrame(columns=MANIFEST_COLUMNS)
    inputs = task.inputs(setup.settings)
    needed = [f"image_{freq}" for freq in inputs.charts] + ([text_column()] if inputs.text else [])
    missing = [c for c in needed if c not in samples]
    if missing or not paths.manifest.exists():
        raise FileNotFoundError(f"{paths.samples} has no {missing or 'rendered inputs'}: "
                                f"run `candlebench render task={task.name}` first")
    rerender = f"run `candlebench render task={task.name}` again"
    try:
        manifest = pd.read_parquet(paths.manifest)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise CorruptFile(f"{paths.manifest}: unreadable ({type(err).__name__}); {rerender}") from None
    lacking = sorted({"sample_id", "freq", "sha256"} - set(manifest.columns))
    if lacking:
        raise CorruptFile(f"{paths.manifest}: no column {lacking}, not a render manifest of this candlebench; {rerender}")
    drawn = drawn_under(manifest, setup.context.render)
    if not drawn.fresh:
        raise StaleInputs(f"{paths.images}: the inputs there were {drawn.reason}; run `candlebench render` with the "
                          "same settings first, so the prompt and the charts agree")
    return manifest


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


def under_key(run: RunPaths, key: str, metrics: Mapping | None = None) -> Freshness:
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


class FirstPassMissing(UserError, FileNotFoundError):
    """A second pass names a first-pass run that is absent, unfinished or stale."""


def first_pass_answers(cfg: DictConfig, task: Task, samples: pd.DataFrame,
                       paths: TaskPaths) -> dict[str, FirstPassAnswer]:
    """Every sample's answer in the first-pass run a second pass shows it (none for a first pass);
    that run must be finished and parsed under its current key."""
    settings = task.settings(cfg.task)
    name = task.first_pass_run(settings)
    if name is None:
        return {}
    run = paths.run(name)
    first = f"finish the first pass first (`candlebench infer task={paths.task}` with the model that wrote {name})"
    if not run.parsed.exists() or not run.info.exists():
        raise FirstPassMissing(f"task.method={settings.method} is a second pass over run {name} (task.revises), "
                               f"which {run.root} does not hold; {first}")
    keyed = under_key(run, RunInfo.read(run.info).run_key)
    if not keyed.fresh:
        raise FirstPassMissing(f"{run.root}: {keyed.reason}; {first}")
    table = pd.read_parquet(run.parsed)
    missing = sorted(set(samples["sample_id"]) - set(table["sample_id"]))
    if missing:
        raise FirstPassMissing(f"run {name} has no answer for {len(missing)} of {len(samples)} samples "
                               f"(first: {missing[:3]}); {first}")
    def text(value) -> str | None:
        return None if pd.isna(value) else str(value)

    return {
        row["sample_id"]: FirstPassAnswer(name, text(row["text"]),
                                          None if text(row["answer"]) is None else json.loads(row["answer"]),
                                          text(row["error"]) or text(row["reason"]))
        for row in table.to_dict("records")
    }


# The name under which a second pass's first-pass answer enters a sample's input fingerprint, and
# the column of run/inputs.parquet saying whether one was shown. Its value is the word the code used
# before ("earlier"): it is stored and hashed, so another would make every second pass's answers stale.
FIRST_PASS = "earlier"


def input_fingerprint(shas: Mapping[str, str], first_pass: FirstPassAnswer | None) -> str:
    """A request's inputs: the render manifest's sha256 of each file it sends, and the text of the
    first-pass answer a second pass shows (a redone first pass makes the second one's answers stale)."""
    return fingerprint(shas if first_pass is None else {**shas, FIRST_PASS: first_pass.text})


def input_shas(manifest: pd.DataFrame) -> dict[tuple[str, str], str]:
    return dict(zip(zip(manifest["sample_id"], manifest["freq"]), manifest["sha256"]))


def current_inputs(cfg: DictConfig, task: Task, samples: pd.DataFrame, paths: TaskPaths, run: RunPaths) -> dict[str, str] | None:
    """Each sample's input fingerprint as its request would send it now: the inputs infer sent, by
    name (run/inputs.parquet), under the render manifest's sha256s and the first-pass run's answers of
    now, so answers about charts redrawn since (or a redone first pass) are not current. No prompt is
    built and no text input read. None: infer has not written the run's inputs."""
    if not run.inputs.exists():
        return None
    try:
        sent = pd.read_parquet(run.inputs, columns=["sample_id", "names", FIRST_PASS])
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise CorruptFile(f"{run.inputs}: unreadable ({type(err).__name__}); run `candlebench infer "
                          f"infer.run_name={run.name}` again, which writes it (and answers only what is missing)") from None
    sha = input_shas(rendered_inputs(cfg, task, samples, paths))
    first_pass = first_pass_answers(cfg, task, samples, paths) if sent[FIRST_PASS].any() else {}
    wanted = set(samples["sample_id"])
    return {
        row["sample_id"]: input_fingerprint({name: sha[(row["sample_id"], name)] for name in filter(None, row["names"].split(","))},
                                            first_pass.get(row["sample_id"]) if row[FIRST_PASS] else None)
        for row in sent.to_dict("records") if row["sample_id"] in wanted
    }


def answers(cfg: DictConfig) -> Freshness:
    """Every sample is answered under this config's run key, for the inputs it has now."""
    drawn = charts(cfg)
    if not drawn.fresh:
        return Stale(f"its inputs are not ready: {drawn.reason}")
    paths, task, run = task_paths(cfg), get_task(cfg.task.name), run_paths(cfg)
    samples = read_samples(paths)
    try:
        current = current_inputs(cfg, task, samples, paths, run)
    except FirstPassMissing as err:  # a second pass whose first is still to run
        return Stale(f"its first-pass run is not ready: {err}")
    if current is None:
        return Stale("not run yet")
    if len(current) < len(samples):
        return Stale(f"{len(samples) - len(current)} of {len(samples)} samples never asked (samples added since it ran)")
    key = model_run_info(cfg, task, model_spec(cfg)).run_key
    unanswered = set(current.items()) - RecordStore(run.root).done(key)
    if unanswered:
        return Stale(f"{len(unanswered)} of {len(samples)} samples not answered under run key {key} "
                     "for the inputs they have now")
    return FRESH


# ---- baselines ----

# Keys of the task's config that say nothing of a baseline's answers: which pass a run is, the
# chart design (baselines read bars, not charts), and the baselines' own list (its params are kept apart).
NOT_ITS_SETTINGS = ("method", "revises", "passes", "render", "baseline")


def task_settings(cfg: DictConfig) -> dict:
    """The task settings a baseline's answers depend on: part of its run key, checked by score."""
    return {k: v for k, v in OmegaConf.to_container(cfg.task, resolve=True).items() if k not in NOT_ITS_SETTINGS}


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


def judged_by(task: Task, metrics: Mapping, path: Path) -> Freshness:
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


def predicted_on(info: RunInfo, paths: TaskPaths, now: str, metrics: Mapping | None) -> Freshness:
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


def scored_on(metrics: Mapping, now: str, n_samples: int) -> Freshness:
    """metrics.json was scored on the samples of fingerprint ``now``; one written before the
    fingerprint was recorded, on as many samples."""
    recorded = metrics.get("samples_fingerprint")
    same = recorded == now if recorded else metrics.get("n_samples", n_samples) == n_samples
    return FRESH if same else Stale("scored on other samples (rebuilt since)")


NOT_SCORED = Stale("not scored yet")


def scores(task: Task, run: RunPaths, samples_now: str, n_samples: int) -> Freshness:
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
    made = predicted_on(info, TaskPaths(run.root.parent.parent), samples_now, metrics)
    if not made.fresh:
        return made
    if metrics.get("run_key") != info.run_key:
        return Stale("redone since it was scored")
    same = scored_on(metrics, samples_now, n_samples)
    if not same.fresh:
        return same
    judged = judged_by(task, metrics, run.metrics)
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
