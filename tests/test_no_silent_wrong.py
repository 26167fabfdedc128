"""Paths that gave silently wrong numbers (issue: no silent wrong results), each reproduced and
closed: failures retried, stale charts / answers / baselines redone or refused, a stale score
refused, bad config values named in one line, damaged intermediate files named, and SIGTERM to a
render leaving no worker behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from fixtures.forked_cli import Started
from helpers import SLICE, cli, records, run_dir, start
from candlebench.inference.records import RecordStore
from candlebench.task_api.registry import names as task_names

BASE = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "task.samples.interval=90", "render.workers=1"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, env) -> Path:
    out = tmp_path_factory.mktemp("rendered")
    cli("samples", *BASE, f"out_dir={out}", env=env)
    cli("render", *BASE, f"out_dir={out}", env=env)
    return out


@pytest.fixture
def ws(tmp_path, rendered) -> Path:
    """A private copy of the rendered workspace, to break."""
    shutil.copytree(rendered, tmp_path / "ws")
    return tmp_path / "ws"


def _infer(ws: Path, env: dict, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    return cli("infer", *BASE, f"out_dir={ws}", "infer.run_name=r", "infer.batch_size=4", *extra, env=env, check=check)


def test_failed_samples_are_retried_and_a_lasting_failure_stays_visible(ws, env):
    samples = pd.read_parquet(ws / "forecast" / "samples.parquet")
    deleted = samples.iloc[[1, 5, 9]]
    for path in deleted["image_daily"]:
        (ws / "forecast" / path).unlink()
    first = _infer(ws, env, check=False)
    assert first.returncode != 0 and "max_error_rate" in first.stderr and "retried" in first.stderr
    status = cli("status", str(ws), env=env).stdout
    key = json.loads((run_dir(ws, "r") / "run.json").read_text())["run_key"]
    answered = len(RecordStore(run_dir(ws, "r")).answered(key))  # from the records: the run is not scored
    assert f"r: {answered}/{len(samples)} answered, 3 failed (retried on the next infer)" in status

    cli("render", *BASE, f"out_dir={ws}", env=env)  # the cause fixed: the charts are back
    again = _infer(ws, env)
    assert f"{len(samples) - answered} generated, {answered} already done, 0 errors" in again.stdout
    # Answered, not scored: infer writes records alone, `score` judges them.
    assert f"r: {len(samples)}/{len(samples)} answered, not scored" in cli("status", str(ws), env=env).stdout
    got = records(ws, "r")
    assert got["error"].isna().all() and len(got) == len(samples)

    # A sample that fails every time is retried every time, and stays a visible failure.
    broken = samples.iloc[2]
    (ws / "forecast" / broken["image_weekly"]).write_bytes(b"not a png")
    cli("infer", *BASE, f"out_dir={ws}", "infer.run_name=s", "infer.max_error_rate=0.5", env=env)
    retry = cli("infer", *BASE, f"out_dir={ws}", "infer.run_name=s", "infer.max_error_rate=0.5", env=env)
    assert "1 generated" in retry.stdout and "1 errors" in retry.stdout
    got = records(ws, "s")
    assert got.loc[broken["sample_id"], "error"] and got["error"].notna().sum() == 1 and len(got) == len(samples)


def test_rerendered_charts_are_answered_again(ws, env):
    _infer(ws, env)
    rerender = ["task.render.max_bars=20"]
    refused = _infer(ws, env, *rerender, check=False)  # the charts on disk are 50-bar charts
    assert refused.returncode != 0 and "other render settings" in refused.stderr and "Traceback" not in refused.stderr
    cli("render", *BASE, *rerender, f"out_dir={ws}", env=env)
    again = _infer(ws, env, *rerender)
    n = len(pd.read_parquet(ws / "forecast" / "samples.parquet"))
    assert f"{n} generated, 0 already done" in again.stdout
    default = _infer(ws, env, check=False)  # the default config no longer matches the charts
    assert default.returncode != 0 and "other render settings" in default.stderr


def test_a_chart_replaced_by_another_valid_png_is_never_answered_and_is_answered_once_redrawn(ws, env):
    """Another stock's chart copied over one after render: its sample fails naming the file (the
    bytes sent are checked, not the manifest's word for them); render redraws it; infer answers it."""
    samples = pd.read_parquet(ws / "forecast" / "samples.parquet")
    day = samples[samples["cutoff"] == samples["cutoff"].max()].set_index("code")
    target = ws / "forecast" / day.loc["ALI", "image_daily"]
    shutil.copy(ws / "forecast" / day.loc["AC", "image_daily"], target)
    first = _infer(ws, env, "infer.max_error_rate=0.5")
    assert "1 errors" in first.stdout
    got = records(ws, "r")
    assert got.loc[day.loc["ALI", "sample_id"], "error"].startswith(f"ChangedInput: {target} is not the chart render drew")
    assert got["error"].notna().sum() == 1
    cli("render", *BASE, f"out_dir={ws}", env=env)
    again = _infer(ws, env)
    assert "1 generated" in again.stdout and "0 errors" in again.stdout
    assert records(ws, "r")["error"].isna().all()


def test_no_stage_mixes_the_market_its_samples_came_from_with_another(ws, env, tmp_path):
    """A stage pointed at another market file than its samples' (AC restated x1.1 from a date) would
    predict, draw or label from one market and score against the other: every stage refuses."""
    _infer(ws, env)
    frame = pd.read_csv(SLICE)
    later = (frame["code"] == "AC") & (frame["date"] >= "2019-06-01")
    frame.loc[later, ["open", "high", "low", "close"]] *= 1.1
    other = tmp_path / "restated.csv"
    frame.to_csv(other, index=False)
    moved = ["data=csv", f"data.path={other}", "data.market=PSE", *BASE[1:], f"out_dir={ws}"]
    for stage in (["baseline", "task.baseline.names=[momentum]"], ["render"], ["infer", "infer.run_name=r"],
                  ["score", "score.run=r"]):
        refused = cli(*stage, *moved, env=env, check=False)
        assert refused.returncode != 0 and "Traceback" not in refused.stderr, (stage, refused.stderr)
        assert "was built from other market data" in refused.stderr and "candlebench samples" in refused.stderr, stage
    assert not (run_dir(ws, "momentum") / "responses.jsonl").exists()
    cli("score", *BASE, f"out_dir={ws}", "score.run=r", env=env)  # the samples' own market still scores
    # The same bars under another file name and timestamp are the same market.
    same = tmp_path / "same.csv"
    shutil.copy(SLICE, same)
    cli("score", "data=csv", f"data.path={same}", "data.market=PSE", *BASE[1:], f"out_dir={ws}", "score.run=r", env=env)


def test_a_run_is_never_scored_under_other_task_settings_than_it_was_answered_under(ws, env):
    """`score task.horizon=5` on answers to the 30-day prompt (and on a 30-day baseline) would label
    them with 5-day returns: refused, naming the setting; the run's own settings still score it."""
    _infer(ws, env)
    cli("baseline", *BASE, "task.baseline.names=[momentum]", f"out_dir={ws}", env=env)
    for run, said in (("r", "was asked another prompt than this config gives"),
                      ("momentum", "task.horizon=30 there, 5 here")):
        refused = cli("score", *BASE, f"out_dir={ws}", f"score.run={run}", "task.horizon=5", "score.n_boot=0",
                      env=env, check=False)
        assert refused.returncode != 0 and said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
        assert not (run_dir(ws, run) / "metrics.json").exists()
        cli("score", *BASE, f"out_dir={ws}", f"score.run={run}", "score.n_boot=0", env=env)
        assert json.loads((run_dir(ws, run) / "metrics.json").read_text())["horizon"] == 30
    # ... nor as another task's run (a run folder copied under the wrong task).
    cli("samples", *BASE, "task=e2a", f"out_dir={ws}", env=env)
    shutil.copytree(run_dir(ws, "r"), run_dir(ws, "r", "e2a"))
    refused = cli("score", *BASE, "task=e2a", f"out_dir={ws}", "score.run=r", env=env, check=False)
    assert refused.returncode != 0 and "answered task forecast, not e2a; score it with task=forecast" in refused.stderr


def test_red_up_charts_are_never_answered_under_a_green_up_prompt(ws, env):
    cli("render", *BASE, "render.colors=red_up", f"out_dir={ws}", env=env)
    refused = _infer(ws, env, check=False)
    assert refused.returncode != 0 and "green-up" in refused.stderr and "Traceback" not in refused.stderr
    ok = _infer(ws, env, "render.colors=red_up")
    info = json.loads((run_dir(ws, "r") / "run.json").read_text())
    assert "RED = up, GREEN = down" in info["identity"]["prompt"] and " generated" in ok.stdout


def test_replaced_market_data_redoes_charts_answers_and_baselines(ws, env, tmp_path):
    _infer(ws, env)
    cli("baseline", *BASE, "task.baseline.names=[momentum]", f"out_dir={ws}", env=env)
    frame = pd.read_csv(SLICE)
    frame.loc[frame["code"] == "AC", ["open", "high", "low", "close"]] *= 1.5  # AC restated
    other = tmp_path / "restated.csv"
    frame.to_csv(other, index=False)
    data = ["data=csv", f"data.path={other}", "data.market=PSE"]
    moved = [*data, *BASE[1:]]
    cli("samples", *moved, f"out_dir={ws}", env=env)
    rendered = cli("render", *moved, f"out_dir={ws}", env=env)
    ac = pd.read_parquet(ws / "forecast" / "samples.parquet").query("code == 'AC'")
    assert len(ac) > 0 and "inputs" in rendered.stdout
    answered = cli("infer", *moved, f"out_dir={ws}", "infer.run_name=r", env=env)
    assert f"{len(ac)} generated" in answered.stdout  # exactly AC's charts changed
    before = sorted((run_dir(ws, "momentum") / "parts").iterdir())
    cli("baseline", *moved, "task.baseline.names=[momentum]", f"out_dir={ws}", env=env)
    assert len(sorted((run_dir(ws, "momentum") / "parts").iterdir())) == len(before) + 1


def test_score_after_an_interrupted_infer_scores_the_new_run_and_report_refuses_stale_scores(ws, env):
    _infer(ws, env)
    cli("score", *BASE, f"out_dir={ws}", "score.run=r", env=env)
    old_key = json.loads((run_dir(ws, "r") / "run.json").read_text())["run_key"]
    # The same run name with another generation setting, killed as soon as its run.json is down:
    # run.json names the new run key, hardly any of its records exist yet.
    other = ["infer.generation.max_new_tokens=20", "infer.batch_size=1"]
    proc = start("infer", *BASE, f"out_dir={ws}", "infer.run_name=r", *other, env=env)
    deadline = time.time() + 120
    while time.time() < deadline and json.loads((run_dir(ws, "r") / "run.json").read_text())["run_key"] == old_key:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    refused = cli("report", *BASE, f"out_dir={ws}", env=env, check=False)
    assert refused.returncode != 0 and "run `candlebench score score.run=r` first" in refused.stderr
    cli("score", *BASE, *other, f"out_dir={ws}", "score.run=r", env=env)
    metrics = json.loads((run_dir(ws, "r") / "metrics.json").read_text())
    assert metrics["run_key"] != old_key and metrics["n_missing_records"] > 0  # not the old run's answers


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("infer.batch_size=-1", "infer.batch_size=-1: must be null or an integer >= 1"),
        ("infer.prefetch_batches=-2", "infer.prefetch_batches=-2: must be an integer >= 0"),
        ("infer.shard.index=2", "infer.shard.index=2: must be < infer.shard.count=1"),
        ("task.samples.interval=0", "task.samples.interval=0: must be an integer >= 1"),
        ("task.render.max_bars=-1", "task.render.max_bars=-1: must be an integer >= 1"),
        ("render.workers=0", "render.workers=0: must be null or an integer >= 1"),
        ("infer.max_error_rate=2", "infer.max_error_rate=2: must be a number in [0, 1]"),
        ("task.horizon=10", "task.horizon=10: must be one of task.samples.horizons=[5, 30]"),
        ("task.samples.start=2019-06-01", "task.samples.start=2019-06-01 is not before task.samples.end=2019-01-01"),
        ("infer.generation.temperature=-1", "infer.generation.temperature=-1: must be a number >= 0"),
        ("render.colors=purple_up", "render.colors='purple_up': must be one of ['green_up', 'red_up']"),
        ("render.renderer=nosuch", "render.renderer='nosuch': must be one of ['mplfinance', 'pil']"),
        ("data.on_defect=ignore", "data.on_defect='ignore': must be one of ['drop', 'fail']"),
        ("task.render.ma_windows=[5,20]", "task.render.ma_windows=[5, 20] and task.render.ma_colors=['black', 'blue', 'purple']: must be"),
        ("task.baseline.names=[nosuch]", "task.baseline.names=['nosuch']: ['nosuch'] are not baselines of task forecast; known:"),
    ],
)
def test_bad_config_values_are_one_line_errors_before_any_work(tmp_path, env, override, message):
    extra = ["task.samples.end=2019-01-01"] if override.startswith("task.samples.start") else []
    for command in ("infer", "run"):
        done = cli(command, *BASE, f"out_dir={tmp_path}", override, *extra, env=env, check=False)
        assert done.returncode != 0 and message in done.stderr, done.stderr[-800:]
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "forecast").exists() and not (tmp_path / "e2a").exists()


def test_an_empty_out_dir_and_a_pasted_key_are_refused_before_anything_is_written(ws, env, tmp_path):
    """out_dir='' would put the study in the working folder (and Hydra's logs at /logs); a key given
    where its variable's name belongs is refused without being repeated, and no file of the study
    (configs/, Hydra's logs and .hydra/ dumps) holds it."""
    pasted, here = "sk-PASTED-secret-999", tmp_path / "here"
    here.mkdir()
    for empty in ("out_dir=''", "out_dir="):
        done = cli("samples", *BASE, empty, env=env, check=False, cwd_out=here)
        assert done.returncode != 0 and done.stderr.strip().startswith("error: out_dir: must be a folder path, not empty")
        assert len(done.stderr.strip().splitlines()) == 1 and not list(here.iterdir())
    for command in ("infer", "run"):
        done = cli(command, *BASE, f"out_dir={ws}", "backend=server", f"backend.api_key_env={pasted}", env=env, check=False)
        assert done.returncode != 0 and "backend.api_key_env: must be the NAME of an environment variable" in done.stderr
        assert pasted not in done.stderr + done.stdout and len(done.stderr.strip().splitlines()) == 1
    leaked = [p for p in ws.rglob("*") if p.is_file() and pasted.encode() in p.read_bytes()]
    assert leaked == [] and not (ws / "logs" / "infer").exists()
    with pytest.raises(Exception, match="backend.api_key_env: must be the NAME"):  # from a config file too
        from candlebench.stages.graph import compose_job
        compose_job(["backend=server", "backend.api_key_env=hf_abcdefghijklmnop"])


def test_a_window_after_the_data_says_so(tmp_path, env):
    done = cli("samples", *BASE, f"out_dir={tmp_path}", "task.samples.start=2021-01-01", env=env, check=False)
    assert done.returncode != 0 and "no samples in the window" in done.stderr and "2019-12" in done.stderr
    assert "KeyError" not in done.stderr


def test_damaged_intermediate_files_are_named_with_the_stage_to_rerun(ws, env):
    _infer(ws, env)
    part = next((run_dir(ws, "r") / "parts").iterdir())
    lines = part.read_text().splitlines()
    part.write_text("\n".join([lines[0], "garbage", *lines[1:]]) + "\n")
    done = cli("score", *BASE, f"out_dir={ws}", "score.run=r", env=env, check=False)
    assert done.returncode != 0 and f"{part}, line 2: not a JSON record" in done.stderr
    assert "candlebench infer" in done.stderr and "Traceback" not in done.stderr

    (ws / "forecast" / "samples.parquet").write_bytes(b"PAR1 truncated")
    done = cli("render", *BASE, f"out_dir={ws}", env=env, check=False)
    assert done.returncode != 0 and "samples.parquet: unreadable" in done.stderr
    assert "candlebench samples task=forecast" in done.stderr and "Traceback" not in done.stderr


def test_a_torn_manifest_line_is_cut_before_the_next_render_appends(ws, env):
    manifest = ws / "forecast" / "images" / "manifest.jsonl"
    text = manifest.read_text()
    manifest.write_text(text + text.splitlines()[0][:30])  # a render killed mid-line
    (ws / "forecast" / pd.read_parquet(ws / "forecast" / "samples.parquet")["image_daily"].iloc[0]).unlink()
    cli("render", *BASE, f"out_dir={ws}", env=env)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]  # every line whole
    assert len(rows) == len(text.splitlines()) + 1


def _drawing_render(out: Path, env: dict) -> tuple[Started, list[int]]:
    """A render with a pool of two, caught while its workers draw: (the process, its workers)."""
    proc = start("render", "data=slice", "render.workers=2", f"out_dir={out}", env=env)
    manifest = out / "forecast" / "images" / "manifest.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (manifest.exists() and manifest.read_text().strip()):
        time.sleep(0.05)
    workers = [int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()]
    assert workers, "the render should be drawing with its pool"
    return proc, workers


def _alive(pids: list[int]) -> list[int]:
    """The processes still running (a zombie has ended: its parent just has not reaped it)."""
    def running(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    return [pid for pid in pids if running(pid)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_to_render_ends_every_worker_at_once(tmp_path, env, sig):
    out = tmp_path / "term"
    # Every 15th day: the render must still be drawing when the signal comes. At every 30th, one
    # run of the main suite got exit 0: the render had ended before the signal reached it.
    cli("samples", "data=slice", "task.samples.interval=15", f"out_dir={out}", env=env)
    proc, workers = _drawing_render(out, env)
    sent = time.monotonic()
    os.kill(proc.pid, sig)
    stderr = proc.wait().stderr
    took = time.monotonic() - sent
    assert proc.poll() == 130 and "Traceback" not in stderr and "run the same command again" in stderr, stderr[-3000:]
    assert took < 5, f"the render took {took:.1f} s to end"  # 0.26 s here; 7.1 s while workers kept the parent's handler
    assert not _alive(workers), "orphaned render workers"
    finished = cli("render", "data=slice", "render.workers=2", f"out_dir={out}", env=env)  # and it resumes
    assert "inputs" in finished.stdout


def test_a_killed_render_leaves_no_worker_drawing(tmp_path, env):
    """SIGKILL gives the parent no say: its workers see they were orphaned and end by themselves."""
    out = tmp_path / "kill"
    cli("samples", "data=slice", "task.samples.interval=30", f"out_dir={out}", env=env)
    proc, workers = _drawing_render(out, env)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(workers), "orphaned render workers still drawing"
    finished = cli("render", "data=slice", "render.workers=2", f"out_dir={out}", env=env)
    assert "inputs" in finished.stdout


def test_status_names_what_is_damaged_and_a_missing_folder(ws, env, tmp_path):
    """status on a garbled records line, a garbled run.json or an unreadable samples.parquet says
    which file, without a traceback; a folder that does not exist is an error, not "no samples yet"."""
    _infer(ws, env)
    part = next((run_dir(ws, "r") / "parts").iterdir())
    part.write_text(part.read_text() + "garbage\n")
    done = cli("status", str(ws), env=env)
    assert f"forecast  run      r: error: {part}, line" in done.stdout and "Traceback" not in done.stderr
    (run_dir(ws, "r") / "run.json").write_text("{not json")
    scored = cli("score", *BASE, f"out_dir={ws}", "score.run=r", env=env, check=False)
    assert scored.returncode != 0 and "run.json: not a run.json of this candlebench" in scored.stderr
    assert "Traceback" not in scored.stderr
    (ws / "forecast" / "samples.parquet").write_bytes(b"PAR1 garbage")
    done = cli("status", str(ws), env=env)
    assert "samples.parquet: unreadable" in done.stdout and "Traceback" not in done.stderr
    missing = cli("status", str(tmp_path / "nowhere"), env=env, check=False)
    assert missing.returncode != 0 and "no such directory" in missing.stderr
    unknown = cli("run", *BASE, f"out_dir={tmp_path / 'x'}", "tasks=[nosuch]", env=env, check=False)
    assert unknown.returncode != 0 and unknown.stderr.strip() == f"error: task='nosuch': unknown task; known: {task_names()}"


def test_damaged_inputs_and_foreign_files_are_one_line_errors(ws, env, tmp_path):
    """A garbage or incomplete render manifest before infer, a response file that is not UTF-8, a
    market where no stock ever traded, a column no layout knows: each named, no traceback."""
    manifest = ws / "forecast" / "images" / "manifest.parquet"
    good = manifest.read_bytes()
    manifest.write_bytes(b"PAR1 garbage")
    cases = [(["infer", *BASE, f"out_dir={ws}"], f"{manifest}: unreadable")]
    binary, latin = tmp_path / "answers.jsonl", tmp_path / "answers.csv"
    binary.write_bytes(b"\x00\x01binary\xff\xfe")
    latin.write_bytes(b"sample_id,text\nabc,caf\xe9\n")
    cases += [(["import", str(binary), *BASE, f"out_dir={ws}", "infer.run_name=b"], "answers.jsonl, line 1: not UTF-8 text"),
              (["import", str(latin), *BASE, f"out_dir={ws}", "infer.run_name=c"], "answers.csv, line 2: not UTF-8 text")]
    frame = pd.read_csv(SLICE)
    quiet, extra = tmp_path / "quiet.csv", tmp_path / "extra.csv"
    frame.assign(volume=0).to_csv(quiet, index=False)
    frame.assign(**{"adj close*": frame["close"]}).to_csv(extra, index=False)
    for path, said in ((quiet, "no bar with a volume above 0"), (extra, "match no known layout: ['adj close*'] belong(s) to none")):
        cases += [(["data", "check", "data=csv", f"data.path={path}"], said),
                  (["samples", "data=csv", f"data.path={path}", f"out_dir={tmp_path / 'q'}"], said)]
    for args, said in cases:
        done = cli(*args, env=env, check=False)
        assert done.returncode != 0 and said in done.stderr and "Traceback" not in done.stderr, (args, done.stderr[-1500:])
    manifest.write_bytes(good)
    import pyarrow.parquet as pq
    pq.write_table(pq.read_table(manifest).drop(["sha256"]), manifest)
    done = cli("infer", *BASE, f"out_dir={ws}", env=env, check=False)
    assert done.returncode != 0 and "no column ['sha256'], not a render manifest" in done.stderr


def test_a_caption_manifest_that_is_not_utf8_names_its_line(tmp_path, env):
    """The captioning dataset reads user JSONL as import does: another encoding is one line naming it."""
    manifest = tmp_path / "captions.jsonl"
    manifest.write_bytes(b'{"image": "a.png", "reference": "caf\xe9"}\n')
    done = cli("samples", "task=caption", f"task.dataset={manifest}", f"out_dir={tmp_path / 'o'}", env=env, check=False)
    assert done.returncode != 0 and "captions.jsonl, line 1: not UTF-8 text (byte 0xe9)" in done.stderr
    assert "Traceback" not in done.stderr
