"""The captioning task end to end on the tiny fixture, offline: generated references that describe
only what the chart shows, the three reference captioners, `candlebench import` of captions, the
per-sample scores in parsed.parquet and the report's Table 2 / Table 3 layouts. The study is built
by `candlebench run`; import and report run in this process. Scoring stays a command: a process
keeps its caption scorer (METEOR's Java process, the encoders) until it ends, which a test worker
would for the rest of its tests."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from helpers import cli, records, setup_of, stage

COMMON = ["tasks=[caption]", "data=slice", "data.codes=[AC,SM,TEL]", "task.samples.interval=120", "score.n_boot=100",
          "infer.generation.max_new_tokens=48"]
MODEL = "tiny_qwen2_5_vl-transformers"


@pytest.fixture(scope="module")
def run(tmp_path_factory, env):
    out = tmp_path_factory.mktemp("caption") / "out"
    cli("run", *COMMON, f"out_dir={out}", env={**env, "HF_HUB_OFFLINE": "1"})
    return out


def test_references_describe_the_chart_they_come_with(run, slice_market):
    from candlebench.market.bars import chart_bars, history_before
    from candlebench.rendering.chart import ChartSpec, geometry, price_label

    samples = pd.read_parquet(run / "caption" / "samples.parquet")
    assert len(samples) >= 12 and samples["sample_id"].is_unique
    assert samples["reference_words"].between(100, 400).all()
    spec = ChartSpec(ma_windows=(5, 10, 20), ma_colors=("black", "orange", "blue"))
    for _, row in samples.iterrows():
        bars = chart_bars(history_before(slice_market.stock(row["code"]), row["cutoff"]), "daily", (5, 10, 20), 60)
        lay = geometry(bars, spec)
        meta = json.loads(row["metadata"])
        assert meta["time"] == [f"{bars['date'][i]:%Y-%m-%d}" for i in lay.date_ticks]
        assert meta["price"] == [price_label(p, lay.price_step) for p in lay.price_ticks]
        assert meta["degree"][0] == "daily" and meta["degree"][1] in ("short-term", "intermediate-term")  # the trend scale
        assert f"{bars['date'].iloc[-1]:%Y-%m-%d}" in row["reference"]  # the last bar the chart shows ...
        assert f"{row['cutoff']:%Y-%m-%d}" not in row["reference"]  # ... never the evaluation date
    # Seeded phrasings: references of different samples do not share one skeleton.
    openings = samples["reference"].str.split(" ").str[:3].str.join(" ")
    assert openings.nunique() >= 2


def test_references_are_reproducible_and_never_see_the_evaluation_date(slice_market):
    from candlebench.rendering.chart import ChartSpec
    from candlebench.tasks.caption.samples import build_samples

    spec, chart = setup_of("task=caption", "task.samples.interval=120").settings, ChartSpec(ma_windows=(5, 10, 20), ma_colors=("black", "orange", "blue"))
    frame, _ = build_samples(slice_market, spec, chart)
    again, _ = build_samples(slice_market, spec, chart)
    pd.testing.assert_frame_equal(frame, again)
    other, _ = build_samples(slice_market, dataclasses.replace(spec, seed=1), chart)
    assert (other["reference"] != frame["reference"]).any() and (other["metadata"] == frame["metadata"]).all()
    date = sorted(frame["cutoff"].unique())[1]
    bars = slice_market.bars.copy()
    bars.loc[bars["date"] >= date, ["open", "high", "low", "close"]] *= 2.0
    changed, _ = build_samples(dataclasses.replace(slice_market, bars=bars), spec, chart)
    keep = frame["cutoff"] <= date
    pd.testing.assert_frame_equal(frame[keep].reset_index(drop=True), changed[changed["cutoff"] <= date].reset_index(drop=True))


def test_reference_captioners_and_the_tiny_model_are_scored_offline(run):
    root = run / "caption" / "runs"
    m = {n: json.loads((root / n / "metrics.json").read_text()) for n in ("describer", "template", "shuffled", MODEL)}
    ceiling = m["describer"]
    for k in ("bleu4", "meteor", "rouge_l", "bertscore_f1", "cos", "sa_f1"):
        assert ceiling[k] == pytest.approx(1.0, abs=1e-4), k
        assert m["template"][k] < ceiling[k] and m["shuffled"][k] < ceiling[k], k
    assert m["template"]["iou"] == 0 and m["template"]["coverage_time"] == 0  # names no date, no price
    assert ceiling["coverage_time"] == ceiling["reference_coverage_time"] == 1.0
    assert m["shuffled"]["bleu4"] > m["template"]["bleu4"]  # same describer, other chart: shared phrasing
    tiny = m[MODEL]
    assert tiny["n"] == ceiling["n"] and tiny["n_missing_records"] == 0 and tiny["bleu4"] is not None
    parsed = pd.read_parquet(root / MODEL / "parsed.parquet")
    assert {"score_bleu4", "score_cos", "score_iou_time", "score_sa_candidate"} <= set(parsed.columns)
    assert parsed["reason"].str.contains("outside 100-400").all()  # 48 tokens: flagged, still scored
    md = (run / "report" / "report.md").read_text()
    assert "Table 2 layout: caption metrics" in md and "| Reference |" in md and "| describer (reference) |" in md


def test_imported_captions_score_like_the_run_that_wrote_them(run, tmp_path, env):
    """The shuffled captions imported score as the run that wrote them. Scored in the same command,
    the same captions with one of them 10 MB long (it once kept METEOR busy for over 7 minutes): that
    one is no answer, with its reason, every other one scores as before, and the whole import and
    scoring take seconds (METEOR's start included)."""
    import shutil
    import time

    shuffled = records(run, "shuffled", task="caption")
    path = tmp_path / "captions.jsonl"
    path.write_text("".join(json.dumps({"sample_id": s, "text": t}) + "\n" for s, t in shuffled["text"].items()))
    giant = shuffled.index[0]
    texts = {s: ("rally " * 1_750_000 if s == giant else t) for s, t in shuffled["text"].items()}
    giant_path = tmp_path / "giant.jsonl"
    giant_path.write_text("".join(json.dumps({"sample_id": s, "text": t}) + "\n" for s, t in texts.items()))
    common = [*COMMON[1:], "task=caption", f"out_dir={run}"]
    started = time.monotonic()
    stage("import", *common, f"import_file={path}", "infer.run_name=imported", env=env)
    stage("import", *common, f"import_file={giant_path}", "infer.run_name=giant", env=env)
    cli("score", *common, "score.run=[imported,giant]", env={**env, "HF_HUB_OFFLINE": "1"})
    assert time.monotonic() - started < 120  # a hang guard, not a speed test: it ran past 7 minutes
    a = json.loads((run / "caption" / "runs" / "shuffled" / "metrics.json").read_text())
    b = json.loads((run / "caption" / "runs" / "imported" / "metrics.json").read_text())
    for k in ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "sa_f1", "iou"):
        assert b[k] == pytest.approx(a[k], rel=1e-6), k

    parsed = pd.read_parquet(run / "caption" / "runs" / "giant" / "parsed.parquet").set_index("sample_id")
    before = pd.read_parquet(run / "caption" / "runs" / "imported" / "parsed.parquet").set_index("sample_id")
    shutil.rmtree(run / "caption" / "runs" / "giant")  # the module's other tests report this study
    assert pd.isna(parsed.loc[giant, "answer"]) and parsed.loc[giant, "score_meteor"] == 0
    assert parsed.loc[giant, "reason"] == "answer of 10,500,000 characters, over the 100,000 a parser reads: scored as no answer"
    others = parsed.index.drop(giant)
    for metric in ("score_bleu4", "score_meteor", "score_rouge_l", "score_cos"):
        assert parsed.loc[others, metric].tolist() == pytest.approx(before.loc[others, metric].tolist(), rel=1e-6), metric


def test_a_run_that_cannot_be_scored_is_named_and_listed_in_the_report(run, tmp_path, env):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(run, out)
    common = [*COMMON[1:], "task=caption", f"out_dir={out}"]
    broken = cli("score", *common, "score.run=[template,shuffled]", f"task.metrics.encoder={tmp_path / 'no-such-encoder'}",
                 env={**env, "HF_HUB_OFFLINE": "1"}, check=False)
    assert broken.returncode != 0
    assert "2 run(s) not scored: caption/template:" in broken.stderr and "caption/shuffled:" in broken.stderr
    error = json.loads((out / "caption" / "runs" / "template" / "score_error.json").read_text())
    assert "no-such-encoder" in error["error"] and "Traceback" in error["traceback"]
    stage("report", *common, env=env)
    md = (out / "report" / "report.md").read_text()
    assert "runs not scored" in md and "no-such-encoder" in md
    cli("score", *common, "score.run=template", env={**env, "HF_HUB_OFFLINE": "1"})  # scored again: the record goes
    assert not (out / "caption" / "runs" / "template" / "score_error.json").exists()
