"""The ablations the paper argues for but does not run, as experiments: one sweep runs every model
once per variant (daily only / weekly only / both charts; charts / OHLCV text / both) over the same
samples, and the report pairs the variants. Through the real tiny model and the local executor."""

from __future__ import annotations

import json

import pytest

from helpers import cli, records

COMMON = ["data=slice", "data.codes=[AC,ALI,SM]", "task.samples.interval=60", "score.n_boot=0",
          "sweep.executor=local", "sweep.baselines=false", "model=tiny_qwen2_5_vl", "infer.batch_size=8"]
MODEL = "tiny_qwen2_5_vl-transformers"


@pytest.fixture(scope="module")
def timeframes(tmp_path_factory, env):
    out = tmp_path_factory.mktemp("timeframes")
    cli("sweep", "experiment=ablation_timeframes", *COMMON, f"out_dir={out}", env=env)
    return out


def test_each_timeframe_variant_sees_its_own_charts(timeframes):
    runs = timeframes / "forecast" / "runs"
    infos = {v: json.loads((runs / f"{MODEL}-{v}" / "run.json").read_text()) for v in ("both", "daily", "weekly")}
    assert "analyze 2 charts (daily/weekly)" in infos["both"]["identity"]["prompt"]
    assert "analyze 1 chart (daily)" in infos["daily"]["identity"]["prompt"]
    assert "[inputs given: weekly]" in infos["weekly"]["identity"]["prompt"]
    assert len({i["run_key"] for i in infos.values()}) == 3
    got = {v: records(timeframes, f"{MODEL}-{v}") for v in infos}
    assert got["both"].index.equals(got["daily"].index) and got["both"].index.equals(got["weekly"].index)
    # One chart instead of two: fewer prompt tokens; the records name the charts they were about.
    assert (got["daily"]["prompt_tokens"] < got["both"]["prompt_tokens"]).all()
    assert (got["daily"]["inputs"] != got["both"]["inputs"]).all()
    comparisons = json.loads((timeframes / "report" / "comparisons.json").read_text())["forecast"]
    assert set(comparisons) == {f"{MODEL}-both → {MODEL}-daily", f"{MODEL}-both → {MODEL}-weekly"}
    assert all(c["n"] == len(got["both"]) for c in comparisons.values())


def test_modality_variants_give_the_ohlcv_text_instead_of_or_beside_the_charts(tmp_path, env):
    out = tmp_path / "modality"
    # A quarter of COMMON's dates (two a stock, one batch): the text variant's prompts run to 5,000-6,000
    # tokens of OHLCV in the tiny byte-level tokenizer, and the transformers backend's attention over
    # them was most of this test (15 dates: 26 CPU s).
    fewer = [o.replace("interval=60", "interval=240") for o in COMMON]
    cli("sweep", "experiment=ablation_modality", *fewer, f"out_dir={out}", env=env)
    runs = out / "forecast" / "runs"
    text = records(out, f"{MODEL}-text")
    charts = records(out, f"{MODEL}-charts")
    both = records(out, f"{MODEL}-both")
    info = json.loads((runs / f"{MODEL}-text" / "run.json").read_text())
    assert "OHLCV records, oldest first:\n{ohlcv}" in info["identity"]["prompt"]
    # Every variant answered: a batch of text-only prompts once failed whole in the image processor.
    assert all(frame["error"].isna().all() for frame in (text, charts, both))
    # The text variant sees no chart (no image tokens) and the daily bars as text: a longer prompt
    # than the charts' in this tiny tokenizer; both = charts + text.
    assert (text["prompt_tokens"] > 0).all() and (both["prompt_tokens"] > charts["prompt_tokens"]).all() and (both["prompt_tokens"] > text["prompt_tokens"]).all()
    assert set(map(str, text["inputs"])) != set(map(str, charts["inputs"]))
    comparisons = json.loads((out / "report" / "comparisons.json").read_text())["forecast"]
    assert set(comparisons) == {f"{MODEL}-charts → {MODEL}-text", f"{MODEL}-charts → {MODEL}-both"}


def test_feed_must_come_from_what_is_rendered(tmp_path, env):
    done = cli("run", "data=slice", "data.codes=[AC]", "task_overrides.forecast.feed=[ohlcv]", f"out_dir={tmp_path / 'x'}",
               env=env, check=False)
    assert done.returncode != 0 and "task.feed=['ohlcv']" in done.stderr and "task.text=true" in done.stderr
