"""Every experiment config composes, passes the config checks and plans its sweep (compare names
that are runs of the sweep, variants with their own run names and prompts)."""

from __future__ import annotations

import pytest

from helpers import ROOT, SLICE

EXPERIMENTS = sorted(p.stem for p in (ROOT / "candlebench" / "conf" / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes_validates_and_plans(name):
    from candlebench.stages.graph import compose_config
    from candlebench.stages.job import job_config
    from candlebench.commands.sweep import sweep_plan

    # Forecast only: a task another test registered in this process would join a plain plan.
    base = [f"experiment={name}", f"data.path={SLICE}", "tasks=[forecast]"]
    cfg = compose_config(base)
    jobs = sweep_plan(job_config(cfg), base)
    infer = [j for j in jobs if j.stage == "infer"]
    assert len(infer) == len(cfg.sweep.models) * max(1, len(cfg.sweep.get("variants") or {}))
    report = next(j for j in jobs if j.stage == "report").overrides[0]
    compare = next(o for o in report if o.startswith("report.compare="))
    assert compare.count("[") - 1 == len(cfg.sweep.compare) * (len(cfg.sweep.models) if any(
        str(a).startswith("@") for a, _ in cfg.sweep.compare) else 1)
    for job in infer:  # each variant's prompt resolves to text with the placeholders it needs
        from candlebench.tasks.forecast.task import TASK
        from helpers import setup_of

        run = setup_of(*job.overrides[0])
        identity = TASK.prompt_identity(run.settings, run.context)
        assert "<score>" in identity and ("ohlcv" not in TASK.given_inputs(run.settings) or "{ohlcv}" in identity)


def test_paper_experiments_train_xgboost_on_history_from_2015():
    from candlebench.stages.graph import compose_config

    for name in ("paper_hs300", "paper_sp500"):
        cfg = compose_config([f"experiment={name}", f"data.path={SLICE}"])
        assert str(cfg.task.baseline.params.xgboost.train_start) == "2015-01-01"
        assert str(cfg.task.samples.start) == "2023-01-01" and str(cfg.task.samples.end) == "2025-01-01"


def test_every_task_by_default_and_a_verify_pass_after_each_e2a_model_run():
    from candlebench.commands.run import chosen_tasks
    from candlebench.stages.graph import compose_config, compose_job
    from candlebench.commands.sweep import sweep_plan

    assert {"forecast", "e2a"} <= set(chosen_tasks(compose_job([]).job))
    models = ["tiny_qwen2_5_vl", "tiny_qwen2_5_vl_lora"]
    base = [f"data.path={SLICE}", "tasks=[forecast,e2a]", f"sweep.models=[{','.join(models)}]",
            f"sweep.compare=[[{models[0]},{models[1]}]]"]
    jobs = {j.key: j for j in sweep_plan(compose_job(base).job, base)}
    for model in models:
        direct, verify = f"infer:e2a:{model}", f"infer:e2a:{model}:verify"
        assert jobs[verify].after == (direct,) and f"infer:forecast:{model}:verify" not in jobs
        overrides = jobs[verify].overrides[0]
        run = f"{model}-transformers"
        assert {"task.method=verify", f"task.revises={run}", f"infer.run_name={run}-verify"} <= set(overrides)
        assert jobs[f"score:e2a:{model}:verify"].after == (verify,)
        assert f"score:e2a:{model}:verify" in jobs["report"].after
    # The study's report holds every run of the out_dir (#51: a sweep's runs alone once replaced it); the
    # sweep's own view of its runs goes beside it, after the same scores.
    study, view = jobs["report"], jobs["report:sweep"]
    assert not [o for o in study.overrides[0] if o.startswith("report.runs=")] and view.after == study.after
    study_cfg, view_cfg = (compose_config(list(j.overrides[0])) for j in (study, view))
    assert study_cfg.report.dir == f"{study_cfg.out_dir}/report" and view_cfg.report.dir == f"{view_cfg.out_dir}/sweep/report"
    assert study_cfg.report.compare == view_cfg.report.compare == [[f"{m}-transformers" for m in models]]
    runs = next(o for o in view.overrides[0] if o.startswith("report.runs="))
    assert "tiny_qwen2_5_vl_lora-transformers-verify" in runs
    assert "anchor_oracle" in runs and "xgboost" in runs  # each task's own baselines join the report
    # Without passes (task.passes=[]), no second run.
    plain = sweep_plan(compose_job([*base, "task.passes=[]"]).job, [*base, "task.passes=[]"])
    assert not [j for j in plain if j.key.endswith(":verify")]


def test_a_key_of_one_task_goes_to_that_task_s_jobs_only():
    """task_overrides.<task> settings ride on every job's overrides and are taken by that task's jobs
    only: no job composes another task's config to route them."""
    from candlebench.stages.graph import compose_config, compose_job
    from candlebench.commands.sweep import sweep_plan

    base = [f"data.path={SLICE}", "tasks=[forecast,e2a]", "sweep.models=[tiny_qwen2_5_vl]",
            "task_overrides.e2a.language=zh", "task_overrides.forecast.horizon=5", "task_overrides.e2a.samples.interval=60"]
    jobs = {j.key: j for j in sweep_plan(compose_job(base).job, base)}
    e2a = compose_config(list(jobs["infer:e2a:tiny_qwen2_5_vl"].overrides[0]))
    forecast = compose_config(list(jobs["infer:forecast:tiny_qwen2_5_vl"].overrides[0]))
    assert e2a.task.language == "zh" and "你是一名专业的技术分析师" in e2a.task.prompt
    assert e2a.task.samples.interval == 60 and forecast.task.samples.interval == 30
    assert forecast.task.horizon == 5 and "language" not in forecast.task
    assert compose_config(list(jobs["report"].overrides[0])).task.name == "forecast"


def test_a_typed_task_key_wins_over_a_config_files_task_overrides():
    """The demo sets task_overrides.e2a.samples.interval=240; docs/e2a.md's `task.samples.interval=60`
    was silently replaced by it. What the user types wins over a file; typed twice, the task's own
    key (the more specific) wins."""
    from candlebench.stages.graph import compose_config

    demo = ["experiment=demo", f"data.path={SLICE}"]
    assert compose_config([*demo, "task=e2a"]).task.samples.interval == 240
    typed = compose_config([*demo, "task=e2a", "task.samples.interval=60"]).task.samples
    assert typed.interval == 60 and list(typed.codes) == ["AC", "ALI", "SM", "TEL"]  # the file's other keys stay
    both = ["task.samples.interval=60", "task_overrides.e2a.samples.interval=90"]
    assert compose_config([*demo, "task=e2a", *both]).task.samples.interval == 90
    assert compose_config([*demo, "task.samples.interval=60"]).task.samples.interval == 60  # forecast's too


def test_the_readmes_larger_grids_reach_e2a_and_caption():
    """README's "larger E2A-style and caption grids" command once changed E2A's grid only."""
    import shlex

    from candlebench.stages.graph import compose_config

    text = (ROOT / "README.md").read_text()
    at = text.index("larger E2A-style and caption grids")
    line = next(x for x in text[at:].splitlines() if x.startswith("candlebench run"))
    overrides = shlex.split(line)[2:]
    for task in ("e2a", "caption"):
        default = compose_config(["experiment=demo", f"task={task}"]).task.samples
        grid = compose_config(["experiment=demo", *overrides, f"task={task}"]).task.samples
        assert (grid.interval, list(grid.codes)) != (default.interval, list(default.codes)), task
        assert grid.interval < default.interval and len(grid.codes) > len(default.codes), task


@pytest.mark.parametrize(("override", "message"), [
    ("task_overrides.e2a.samples.intervl=5", "task_overrides.e2a.samples.intervl is not a setting of task e2a; "
                                             "nearest: samples.interval"),
    ("task_overrides.e2a.samples.interval=0", "task_overrides.e2a: task.samples.interval=0: must be an integer >= 1"),
    ("task_overrides.caption.language=zh", "task_overrides.caption.language is not a setting of task caption"),
])
def test_another_tasks_overrides_are_checked_in_a_one_task_stage(override, message):
    """A typo in E2A's override passed a forecast-only stage unnoticed."""
    from candlebench.core.rules import ConfigError
    from candlebench.stages.graph import compose_config

    compose_config([f"data.path={SLICE}", "task_overrides.e2a.samples.interval=5"])  # a good one passes
    with pytest.raises(ConfigError, match=message.replace("(", "\\(")):
        compose_config([f"data.path={SLICE}", override])


def test_run_with_a_key_of_one_task_and_a_key_of_none(tmp_path, env):
    from helpers import cli

    # A key no task has is Hydra's error, before any work; a key of another task names its task_overrides form.
    done = cli("run", "data=slice", "data.codes=[AC]", "task.language=zh", f"out_dir={tmp_path}", env=env, check=False)
    assert done.returncode != 0 and "task_overrides.e2a.language=... sets it for that task only" in done.stderr
    done = cli("run", "data=slice", "data.codes=[AC]", "task.nonsense=1", f"out_dir={tmp_path}", env=env, check=False)
    assert done.returncode != 0 and "task.nonsense" in done.stderr
    assert not (tmp_path / "forecast").exists() and not (tmp_path / "e2a").exists()
    # A bad value of the second task's key fails before the first task's work.
    done = cli("run", "data=slice", "data.codes=[AC]", "task_overrides.e2a.language=xx", f"out_dir={tmp_path}", env=env, check=False)
    assert done.returncode != 0 and "task.language='xx': must be one of ['en', 'zh']" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "forecast").exists() and not (tmp_path / "e2a").exists()


def test_the_key_renamed_task_overrides_is_refused_under_its_old_name(tmp_path, env):
    """``per_task`` is now ``task_overrides``: given in a config file or on the command line, it is a
    one-line error naming the new key, not a key ignored or Hydra's "not in struct"."""
    from candlebench.core.rules import ConfigError
    from candlebench.stages.graph import compose_job
    from helpers import cli

    with pytest.raises(ConfigError, match="per_task is now named task_overrides"):  # as a config file adds it
        compose_job([f"data.path={SLICE}", "+per_task.e2a.language=zh"])
    done = cli("run", "data=slice", "per_task.e2a.language=zh", f"out_dir={tmp_path / 'x'}", env=env, check=False)
    assert done.returncode != 0 and "per_task is now named task_overrides" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()
