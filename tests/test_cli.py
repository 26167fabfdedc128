"""The console command runs real Hydra jobs: overrides, outputs, reproducibility, clear errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest

from candlebench.task_api.registry import names as task_names
from candlebench.tasks.forecast.samples import build_samples

from helpers import CANDLEBENCH, SLICE, cli, setup_of


def console(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed console script itself, a fresh interpreter."""
    return subprocess.run([CANDLEBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command as every test runs it (forked from a warm interpreter: fixtures/forked_cli.py)."""
    return cli(*args, check=False, cwd_out=cwd)


def test_samples_job_writes_what_the_library_builds(tmp_path, slice_market):
    done = console("samples", "data=slice", f"out_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = pd.read_parquet(tmp_path / "run" / "forecast" / "samples.parquet")
    pd.testing.assert_frame_equal(written, build_samples(slice_market, setup_of("task=forecast").settings.samples).frame, check_dtype=False)
    assert (tmp_path / "run" / "forecast" / "samples_summary.json").exists()
    assert "forecast: " in done.stdout and " samples -> " in done.stdout
    # one line, not the summary's JSON (it stays in samples_summary.json)
    assert len(done.stdout.strip().splitlines()) == 1 and "{" not in done.stdout, done.stdout
    assert list((tmp_path / "run" / "logs" / "samples").glob("*/.hydra/config.yaml"))


def test_overrides_reach_the_job_and_output_is_byte_identical(tmp_path):
    args = ["samples", "data=slice", "task.samples.interval=20", "task.samples.horizons=[5,10]", "task.horizon=10",
            "task.samples.start=2018-01-01"]
    first = run(*args, f"out_dir={tmp_path / 'a'}", cwd=tmp_path)
    second = run(*args, f"out_dir={tmp_path / 'b'}", cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr
    frame = pd.read_parquet(tmp_path / "a" / "forecast" / "samples.parquet")
    assert {"r_5", "r_10"} <= set(frame.columns) and "r_30" not in frame.columns
    assert frame["cutoff"].min() >= pd.Timestamp("2018-01-01")
    assert (tmp_path / "a" / "forecast" / "samples.parquet").read_bytes() == (tmp_path / "b" / "forecast" / "samples.parquet").read_bytes()


def test_data_check_reports_defects_with_file_and_row(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("code,date,open,high,low,close,volume\nAAA,2024-01-02,10,9,11,10,5\n")
    done = run("data", "check", "data=csv", f"data.path={bad}", cwd=tmp_path)
    assert done.returncode != 0
    assert f"{bad}:2: code=AAA date=2024-01-02: high < low" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_mandatory_path_is_named(tmp_path):
    done = run("samples", "data=csv", cwd=tmp_path)
    assert done.returncode != 0 and "data.path has no value" in done.stderr


def test_unknown_command_prints_usage(tmp_path):
    done = console("fly", cwd=tmp_path)
    assert done.returncode != 0 and "usage: candlebench" in done.stderr


def test_cfg_job_prints_the_resolved_config_wherever_the_flag_stands(tmp_path):
    """README: Hydra's flags go after the overrides; `--cfg job` shows the values a stage runs with
    (the sweep's list-valued settings included), also for `run` with one task's settings (task_overrides)."""
    import yaml

    for args in (["samples", "--cfg", "job"], ["run", "tasks=[e2a]", f"out_dir={tmp_path}", "--cfg", "job"],
                 ["run", "--cfg", "job", f"out_dir={tmp_path}", "task_overrides.e2a.language=zh"]):
        done = run(*args, cwd=tmp_path)
        assert done.returncode == 0 and "${" not in done.stdout, (args, done.stderr[-2000:])
        shown = yaml.safe_load(done.stdout)
        assert shown["sweep"]["setup"] == [] and shown["paths"]["cache_dir"], args
        if "run" in args:
            assert shown["out_dir"] == str(tmp_path)


def test_setting_and_naming_keys(tmp_path):
    """A chat template argument is set as the README writes it (no Hydra "+"); an unknown key is one
    line naming the nearest settings; an unknown config of a group names the ones there are."""
    import yaml

    done = run("samples", "model.chat_template_kwargs.enable_thinking=false", "--cfg", "job", cwd=tmp_path)
    assert done.returncode == 0 and yaml.safe_load(done.stdout)["model"]["chat_template_kwargs"] == {"enable_thinking": False}
    done = run("samples", "+model.chat_template_kwargs.enable_thinking=true", "--cfg", "job", cwd=tmp_path)  # "+" still adds there
    assert done.returncode == 0 and yaml.safe_load(done.stdout)["model"]["chat_template_kwargs"] == {"enable_thinking": True}
    for args, said in ((["samples", "task.render.max_bar=5"], "task.render.max_bar is not a setting; nearest: task.render.max_bars"),
                       (["run", "task.horizn=5"], "task.horizn is not a setting; nearest: task.horizon"),
                       (["samples", "task=nosuch"], f"task=nosuch: no such task in tasks/; choose from {sorted(task_names())}"),
                       # the "+" form of a typo: a key Hydra would add and a stage meet as an unexpected argument
                       (["samples", "+task.samples.intervl=5"], "+task.samples.intervl: task.samples.intervl is not a "
                        "setting; nearest: task.samples.interval")):
        done = run(*args, cwd=tmp_path)
        assert done.returncode != 0 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_every_command_finds_the_study_run_made(tmp_path):
    """One rule for where a study lives: with no data= named, every command works on the demo study
    that `run` (make demo) builds; naming your data moves every command to that data's folder."""
    import yaml

    def out_dir(*args: str) -> str:
        done = run(*args, "--cfg", "job", cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-1000:]
        return yaml.safe_load(done.stdout)["out_dir"]

    demo = {out_dir(*c) for c in (["run"], ["samples"], ["infer", "task=e2a", "task.method=verify"], ["import", "a.jsonl"],
                                  ["score"], ["report"], ["sweep"])}
    assert len(demo) == 1 and demo.pop().endswith("outputs/demo-run")
    mine = {out_dir(*c, "data=slice") for c in (["run"], ["samples"], ["report"])}
    assert len(mine) == 1 and mine.pop().endswith("outputs/slice")


def test_a_missing_extra_or_checkpoint_is_one_line_before_any_work(tmp_path):
    """The caption metrics' packages, vLLM for backend=vllm, a model's weights: named, with what to
    install, before samples, charts or baselines are made."""
    import os

    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(  # this interpreter as a user's without the [caption] extra
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'pycocoevalcap':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n")
    out = tmp_path / "out"
    common = ["data=slice", "data.codes=[AC,ALI]", f"out_dir={out}"]
    cases = [
        (["run", *common], {"PYTHONPATH": str(hide)}, "error: task caption needs pycocoevalcap, not installed here: pip install -e '.[caption]'"),
        (["infer", *common, "backend=vllm"], {}, "error: backend=vllm needs vllm, not installed here: pip install -e '.[gpu]'"),
        (["run", *common, "model.path=/no/such/checkpoint"], {}, "error: model checkpoint /no/such/checkpoint: no such directory"),
    ]
    for args, env, said in cases:
        done = subprocess.run([CANDLEBENCH, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, **env})
        assert done.returncode != 0 and done.stderr.strip().startswith(said), (args, done.stderr[-1500:])
        assert len(done.stderr.strip().splitlines()) == 1
        assert not any(out.glob("*/samples.parquet"))


def test_an_out_dir_that_cannot_be_made_is_one_line(tmp_path):
    """Hydra makes its log folder under out_dir before any stage; /proc takes no new folder, even as root."""
    done = run("samples", "data=slice", "out_dir=/proc/candlebench-test", cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.strip() == (
        "error: cannot write /proc/candlebench-test: No such file or directory; out_dir must be a folder you can create and write")


def test_a_failed_command_leaves_no_study_folder_and_status_names_it_missing(tmp_path):
    """A typo'd data file once left outputs/nosuch/{logs,configs}, and `status` then said "no
    samples yet"; a study with work in it keeps everything after a failed command."""
    done = run("samples", "data=csv", f"data.path={tmp_path / 'nosuch.csv'}", cwd=tmp_path)
    assert done.returncode != 0 and "nosuch.csv" in done.stderr
    assert not (tmp_path / "outputs" / "nosuch").exists(), list((tmp_path / "outputs").rglob("*"))
    status = run("status", "outputs/nosuch", cwd=tmp_path)
    assert status.returncode != 0 and "outputs/nosuch: no such directory" in status.stderr
    kept = tmp_path / "kept"
    (kept / "forecast").mkdir(parents=True)
    done = run("samples", "data=csv", f"data.path={tmp_path / 'nosuch.csv'}", f"out_dir={kept}", cwd=tmp_path)
    assert done.returncode != 0 and (kept / "forecast").is_dir() and (kept / "logs").is_dir()


@pytest.mark.unit
def test_a_users_data_file_is_a_study_folder_of_its_own():
    """Two files no longer share outputs/csv (#39): the default out_dir is named after the file (a
    folder or a glob's folder by its name); the demo and the slice keep theirs."""
    from candlebench.stages.graph import compose_config
    from helpers import DATA_DIR

    def out_dir(*overrides: str) -> str:
        return str(compose_config(list(overrides)).out_dir)

    assert out_dir("data=csv", "data.path=/data/A.csv").endswith("outputs/A")
    assert out_dir("data=csv", "data.path=/data/B.csv").endswith("outputs/B")
    assert out_dir("data=csv", "data.path=/data/exports/*.csv").endswith("outputs/exports")
    assert out_dir("data=csv", f"data.path={DATA_DIR}").endswith("outputs/data")
    assert out_dir("data=csv", "data.path=/data/A.csv", "experiment=peeping").endswith("outputs/peeping-A")
    assert out_dir("experiment=demo").endswith("outputs/demo-run") and out_dir("data=slice").endswith("outputs/slice")


def test_a_multirun_that_changes_the_samples_needs_an_out_dir_per_job(tmp_path):
    """Both jobs wrote one folder, the second overwriting the first (#39): refused before any work."""
    for mode in ("--multirun", "hydra.mode=MULTIRUN"):
        done = run("samples", "data=csv", f"data.path={SLICE}", "task.samples.interval=30,90", mode, cwd=tmp_path)
        assert done.returncode != 0 and "--multirun over task.samples.interval would write every job into one out_dir" \
            in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.unit
def test_no_config_sets_hydra_mode():
    """The CLI skips Hydra's composition that only reads hydra.mode (cli.mode_from_flags): true only
    while no config of ours sets it."""
    import yaml

    from candlebench.core.paths import CONF_DIR

    for path in CONF_DIR.rglob("*.yaml"):
        config = yaml.safe_load(path.read_text()) or {}
        assert "mode" not in (config.get("hydra") or {}), path


def test_hydra_mode_set_on_the_command_line_still_sweeps(tmp_path):
    done = run("samples", "data=slice", "data.codes=[AC]", f"out_dir={tmp_path}/a,{tmp_path}/b", "hydra.mode=MULTIRUN",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all((tmp_path / d / "forecast" / "samples.parquet").exists() for d in "ab")
