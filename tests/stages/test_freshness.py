"""Freshness, the one module the stages ask whether an output is still current (#41): each
artefact's question answered Fresh, or Stale with the reason status prints and score says, on a
real study (the slice's samples, their charts drawn, a run's requests built by infer, its answers
written through the record store, scored by score), in process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from candlebench.core.io import write_json, write_parquet
from candlebench.core.schema import NewerSchema
from candlebench.stages import freshness
from candlebench.stages.freshness import FRESH, NOT_SCORED, Stale
from candlebench.stages.graph import compose_job, run_stage
from candlebench.stages.infer import build_requests
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.stages.run_identity import other_render_settings, samples_fingerprint
from candlebench.stages.score import score_run
from candlebench.inference.records import RecordStore, ResponseRecord
from candlebench.rendering.inputs import read_samples
from candlebench.task_api.registry import get_task
from helpers import SLICE

COMMON = ["data=slice", "data.codes=[AC,ALI]", "task.samples.interval=180", "render.workers=1",
          "render.width=200", "render.height=200", "infer.run_name=r"]
OTHER_CHARTS = ["task.render.max_bars=20"]  # another chart design: the charts on disk are not its


def _job(out: Path, *extra: str):
    return compose_job([*COMMON, f"out_dir={out}", *extra]).job


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Path:
    """The slice's samples (2 stocks x 3 dates) and their charts."""
    out = tmp_path_factory.mktemp("fresh")
    job = _job(out)
    assert freshness.samples_are_built(job) == freshness.charts_are_drawn(job) == Stale(f"no samples yet under {out / 'forecast'}")
    run_stage("samples", [*COMMON, f"out_dir={out}"])
    assert freshness.samples_are_built(job) == FRESH
    assert freshness.charts_are_drawn(job) == Stale(f"{out / 'forecast' / 'images'}: 12 charts not rendered yet (e.g. "
                                          "images/2017-09-26/AC/daily.png); run every render chunk first")
    run_stage("render", [*COMMON, f"out_dir={out}"])
    return out


@pytest.fixture
def ws(tmp_path, drawn) -> Path:
    return Path(shutil.copytree(drawn, tmp_path / "ws"))


def test_the_market_is_fresh_while_it_gives_the_bars_the_samples_were_built_from(drawn, tmp_path):
    paths = _job(drawn).task_paths
    codes = read_samples(paths)["code"].unique()
    assert freshness.market_is_unchanged(_job(drawn).data, paths.summary, codes) == FRESH

    def csv(path: Path):
        return compose_job([*(o for o in COMMON if o != "data=slice"), "data=csv", f"data.path={path}",
                            "data.market=PSE", f"out_dir={drawn}"]).job.data

    frame = pd.read_csv(SLICE)
    later = (frame["code"] == "AC") & (frame["date"] >= "2019-06-01")
    frame.loc[later, ["open", "high", "low", "close"]] *= 1.1  # AC restated from a date
    frame.to_csv(tmp_path / "restated.csv", index=False)
    restated = csv(tmp_path / "restated.csv")
    assert freshness.market_is_unchanged(restated, paths.summary, codes) == Stale(
        f"{paths.samples} was built from other market data than data.path={tmp_path / 'restated.csv'} "
        f"(data={restated.name}) gives for its stocks now")
    with pytest.raises(freshness.MarketChanged, match="run `candlebench samples` with this data first"):
        freshness.same_market(restated, paths.summary, codes)
    shutil.copy(SLICE, tmp_path / "same.csv")  # the same bars under another name and time
    assert freshness.market_is_unchanged(csv(tmp_path / "same.csv"), paths.summary, codes) == FRESH
    summary = json.loads(paths.summary.read_text())
    before = tmp_path / "samples_summary.json"  # samples from before markets were recorded: nothing to check
    write_json({**summary, "data": {k: v for k, v in summary["data"].items() if k != "stocks_fingerprint"}}, before)
    assert freshness.market_is_unchanged(restated, before, codes) == FRESH


def test_charts_are_fresh_under_the_settings_they_were_drawn_under_and_merged(ws):
    job = _job(ws)
    assert freshness.charts_are_drawn(job) == FRESH
    other = freshness.charts_are_drawn(_job(ws, *OTHER_CHARTS))
    assert not other.fresh and "12 charts not rendered yet" in other.reason
    paths = job.task_paths
    samples = read_samples(paths)
    write_parquet(samples.drop(columns=["image_daily", "image_weekly"]), paths.samples)
    assert freshness.charts_are_drawn(job) == Stale(f"{paths.samples}: no ['image_daily', 'image_weekly'] yet "
                                          "(the last render chunk merges them)")


def test_a_manifest_is_fresh_only_under_the_settings_it_records(drawn):
    job = _job(drawn)
    manifest = pd.read_parquet(job.task_paths.manifest)
    assert other_render_settings(manifest, job.context.render) is None
    other = _job(drawn, *OTHER_CHARTS).context.render
    drawn_key = job.context.render.key()
    assert other_render_settings(manifest, other) == (
        f"drawn under other render settings (['{drawn_key}']) than this config's ({other.key()}: {other.describe()})")
    assert other_render_settings(manifest.drop(columns="settings"), other).startswith(
        "drawn under other render settings (['(unknown)'])")


def _answer(job, sample_ids: set[str], label: str, text: str = "<score>0.100</score>") -> None:
    """The run's answers to ``sample_ids``, for the inputs infer's requests send now."""
    paths = job.task_paths
    requests, _ = build_requests(job, read_samples(paths))
    key = model_run_info(job, model_spec(job)).run_key
    with RecordStore(job.run_paths.root).writer(label) as writer:
        writer.write(ResponseRecord.answered(key, r.sample_id, "m", "transformers", text, inputs=r.inputs)
                     for r in requests if r.sample_id in sample_ids)


def _start_run(job) -> list[str]:
    """What infer writes before its first answer: run.json and the inputs each request sends."""
    paths, run = job.task_paths, job.run_paths
    _, sent = build_requests(job, read_samples(paths))
    model_run_info(job, model_spec(job)).write(run.info)
    write_parquet(sent, run.inputs)
    return sorted(sent["sample_id"])


def test_a_run_is_fresh_once_every_sample_is_answered_for_its_inputs_of_now(ws):
    job = _job(ws)
    assert freshness.answers_are_complete(job) == Stale("not run yet")
    undrawn = freshness.answers_are_complete(_job(ws, *OTHER_CHARTS))
    assert undrawn.reason.startswith("its inputs are not ready: ") and "12 charts not rendered yet" in undrawn.reason
    ids = _start_run(job)
    key = model_run_info(job, model_spec(job)).run_key
    unanswered = f"samples not answered under run key {key} for the inputs they have now"
    assert freshness.answers_are_complete(job) == Stale(f"6 of 6 {unanswered}")
    _answer(job, set(ids[:5]), "first")
    assert freshness.answers_are_complete(job) == Stale(f"1 of 6 {unanswered}")
    _answer(job, set(ids[5:]), "second")
    assert freshness.answers_are_complete(job) == FRESH
    run = job.run_paths
    write_parquet(pd.read_parquet(run.inputs).iloc[1:], run.inputs)  # as if a sample was added since
    assert freshness.answers_are_complete(job) == Stale("1 of 6 samples never asked (samples added since it ran)")


def test_a_second_pass_is_fresh_only_over_the_answers_of_its_first_pass_now(tmp_path):
    """E2A's verify pass shows each sample's first answer, judged from the first pass's records (no
    score of it needed): a first pass answered again makes its answers stale, and a first pass redone
    under another key is not one to revise until it is answered again."""
    first = [*COMMON, "task=e2a", "data.codes=[AC]", f"out_dir={tmp_path}"]
    run_stage("samples", first)
    run_stage("render", first)
    job = compose_job(first).job
    verify = compose_job([*first, "infer.run_name=r-verify", "task.method=verify", "task.revises=r"]).job
    ids = _start_run(job)
    _answer(job, set(ids), "first", "up")
    assert not job.run_paths.parsed.exists()  # never scored: its records are what the second pass reads
    assert _start_run(verify) == ids
    _answer(verify, set(ids), "verify")
    assert freshness.answers_are_complete(verify) == FRESH
    shutil.rmtree(job.run_paths.root / "parts")  # the first pass answered again, otherwise
    _answer(job, set(ids), "again", "down")
    key = model_run_info(verify, model_spec(verify)).run_key
    assert freshness.answers_are_complete(verify) == Stale(
        f"{len(ids)} of {len(ids)} samples not answered under run key {key} for the inputs they have now")
    first_run = job.run_paths
    redone = model_run_info(compose_job([*first, "infer.generation.max_new_tokens=20"]).job, model_spec(job))
    redone.write(first_run.info)
    assert freshness.answers_are_complete(verify) == Stale(
        f"its first-pass run is not ready: run r has no answer under its run key {redone.run_key} for the inputs of now "
        f"for {len(ids)} of {len(ids)} samples (first: {ids[:3]}); finish the first pass first "
        "(`candlebench infer task=e2a` with the model that wrote r)")
    first_run.info.unlink()
    assert freshness.answers_are_complete(verify).reason.startswith(
        f"its first-pass run is not ready: task.method=verify is a second pass over run r (task.revises), "
        f"which {first_run.root} does not hold")


def test_parsed_answers_and_scores_are_of_the_run_key_in_run_json(ws):
    job = _job(ws)
    ids = _start_run(job)
    _answer(job, set(ids), "all")
    paths, run = job.task_paths, job.run_paths
    samples = read_samples(paths)
    score_run(job, run, samples, samples_fingerprint(samples, paths))
    key = json.loads(run.info.read_text())["run_key"]
    assert freshness.parsed_is_under_key(run, key) == freshness.parsed_is_under_key(run, key, {"run_key": key}) == FRESH
    assert freshness.parsed_is_under_key(run, "other") == Stale(
        f"parsed.parquet holds run key(s) ['{key}'], but run.json says other (the run was redone since they were written)")
    assert freshness.parsed_is_under_key(run, key, {"run_key": "old"}) == Stale(
        f"parsed.parquet / metrics.json hold run key(s) ['{key}', 'old'], but run.json says {key} "
        "(the run was redone since they were written)")


def _metrics(run, **changed) -> None:
    write_json({**json.loads(run.metrics.read_text()), **changed}, run.metrics)


def test_scores_are_fresh_for_the_records_judge_run_key_and_samples_they_were_made_of(ws):
    job = _job(ws)
    ids = _start_run(job)
    _answer(job, set(ids[:5]), "first")
    task, paths, run = get_task("forecast"), job.task_paths, job.run_paths
    samples = read_samples(paths)
    now = samples_fingerprint(samples, paths)
    assert freshness.scores_are_current(task, run, now, len(samples)) == NOT_SCORED == Stale("not scored yet")
    score_run(job, run, samples, now)
    assert freshness.scores_are_current(task, run, now, len(samples)) == FRESH
    _answer(job, set(ids[5:]), "second")  # the run goes on after it was scored
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale(
        "its records changed since it was scored (5/6 answered then)")
    score_run(job, run, samples, now)
    assert freshness.scores_are_current(task, run, now, len(samples)) == FRESH
    # An answer edited in place to another of the same length (#51): the stamp is of the content, not the size.
    part = sorted(run.parts.glob("*.jsonl"))[0]
    text = part.read_text(encoding="utf-8")
    answer = json.loads(text.splitlines()[0])["text"]
    edited = answer.replace("0", "9", 1) if "0" in answer else answer.replace("1", "2", 1)
    assert len(edited) == len(answer) and edited != answer
    part.write_text(text.replace(answer, edited, 1), encoding="utf-8")
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale(
        "its records changed since it was scored (6/6 answered then)")
    score_run(job, run, samples, now)
    assert freshness.scores_are_current(task, run, "rebuilt", len(samples)) == Stale("scored on other samples (rebuilt since)")
    _metrics(run, judge_version=task.judge_version + 1)
    with pytest.raises(freshness.NewerJudge, match=rf"^{run.metrics}: scored by the forecast judge v{task.judge_version + 1}, "
                                                   rf"newer than this candlebench's v{task.judge_version}; update"):
        freshness.scores_are_current(task, run, now, len(samples))
    _metrics(run, judge_version=task.judge_version - 1)
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale(
        f"judged by the forecast judge v{task.judge_version - 1}; the judge is now v{task.judge_version}")
    _metrics(run, judge_version=None)
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale(
        f"judged before judges had versions; the judge is now v{task.judge_version}")
    _metrics(run, run_key="an earlier run's")
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale("redone since it was scored")
    run.metrics.write_text("{")
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale("damaged metrics.json or run.json")
    write_json({"error": "ValueError: boom"}, run.score_error)
    assert freshness.scores_are_current(task, run, now, len(samples)) == Stale("its last scoring failed")
    run.score_error.unlink()
    write_json({"schema": 99}, run.metrics)
    with pytest.raises(NewerSchema):  # a newer candlebench's scores are not this one's to call stale
        freshness.scores_are_current(task, run, now, len(samples))


@pytest.mark.unit
def test_scores_from_before_samples_fingerprints_are_of_these_samples_when_as_many():
    assert freshness.scored_on_these_samples({"samples_fingerprint": "a"}, "a", 6) == FRESH
    assert freshness.scored_on_these_samples({"samples_fingerprint": "a"}, "b", 6) == Stale("scored on other samples (rebuilt since)")
    assert freshness.scored_on_these_samples({"n_samples": 6}, "b", 6) == FRESH
    assert not freshness.scored_on_these_samples({"n_samples": 5}, "b", 6).fresh


def test_the_samples_fingerprint_is_of_their_definitions_and_market_in_any_row_order(drawn, tmp_path):
    paths = _job(drawn).task_paths
    samples = read_samples(paths)
    now = samples_fingerprint(samples, paths)
    assert samples_fingerprint(samples.iloc[::-1], paths) == now
    assert samples_fingerprint(samples.drop(columns=["image_daily", "image_weekly"]), paths) == now
    relabelled = samples.assign(cutoff=samples["cutoff"].iloc[::-1].to_numpy())
    assert samples_fingerprint(relabelled, paths) != now
    other = _job(tmp_path).task_paths
    other.summary.parent.mkdir(parents=True)
    summary = json.loads(paths.summary.read_text())
    write_json({**summary, "data": {**summary["data"], "fingerprint": "another market"}}, other.summary)
    assert samples_fingerprint(samples, other) != now


def test_a_baseline_keeps_its_answers_over_the_same_samples_in_another_row_order(ws):
    """A baseline's run key holds the samples' fingerprint that scores hold (one notion of "the same
    samples"), not a hash of the rows in file order."""
    stage = [*COMMON, f"out_dir={ws}", "task.baseline.names=[momentum]"]
    run_stage("baseline", stage)
    paths = _job(ws).task_paths
    run = paths.run("momentum")
    key, parts = json.loads(run.info.read_text())["run_key"], sorted(run.root.glob("parts/*"))
    write_parquet(read_samples(paths).iloc[::-1], paths.samples)
    run_stage("baseline", stage)
    assert (json.loads(run.info.read_text())["run_key"], sorted(run.root.glob("parts/*"))) == (key, parts)
