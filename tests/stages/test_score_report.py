"""Baselines → score → report, each stage's job in this process: the numbers on disk are the
library's numbers."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from candlebench.core.jsonl import read_jsonl
from candlebench.tasks.forecast.metrics import compute_metrics

import helpers
from helpers import SLICE, stage


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    common = ["data=slice", f"out_dir={out}", "score.n_boot=200"]
    stage("samples", *common, "task.samples.interval=15")
    (out / "baseline.stdout").write_text(stage("baseline", *common))
    for name in ("xgboost", "momentum", "constant", "random"):
        stage("score", *common, f"score.run={name}")
    stage("report", *common, "report.compare=[[momentum,xgboost]]")
    return out


def test_metrics_on_disk_equal_the_library_on_the_parsed_table(scored):
    for name in ("xgboost", "momentum", "random"):
        run = scored / "forecast" / "runs" / name
        parsed = pd.read_parquet(run / "parsed.parquet")
        expected = json.loads(json.dumps(compute_metrics(parsed, horizon=30, n_boot=200, seed=0)))
        written = json.loads((run / "metrics.json").read_text())
        assert {k: written[k] for k in expected} == expected
        assert written["n_missing_records"] == 0


def test_baselines_share_the_record_contract(scored):
    samples = pd.read_parquet(scored / "forecast" / "samples.parquet")
    for name in ("xgboost", "momentum", "constant", "random"):
        judged = helpers.verdicts(scored, name)
        records = [{**r, **judged[(r["sample_id"], r["run_key"])]}  # each with its verdict
                   for r in read_jsonl(scored / "forecast" / "runs" / name / "responses.jsonl")]
        assert sorted(r["sample_id"] for r in records) == sorted(samples["sample_id"])
        for r in records:
            assert (r["answer"] is None) == (r["text"] is None)
            assert r["answer"] is not None or "no prediction" in r["reason"]
    xgb = pd.read_parquet(scored / "forecast" / "runs" / "xgboost" / "parsed.parquet")
    first = xgb["cutoff"].min()
    assert xgb.loc[xgb["cutoff"] == first, "pred"].isna().all()  # no training data yet: no answer, not 0


def test_each_run_says_in_the_headline_table_how_many_samples_it_left_unanswered_and_why(scored):
    """The baseline's reason reaches its records, metrics.json and Table 4; a run that answered
    everything says "none"."""
    why = "no prediction: fewer than min_train=100 training samples with a label realised before the cutoff"
    xgb = pd.read_parquet(scored / "forecast" / "runs" / "xgboost" / "parsed.parquet")
    missing = xgb[xgb["pred"].isna()]
    assert len(missing) > 0 and set(missing["reason"]) == {why}
    # Trained on every day, only the first three cutoffs (every 15 days from the first with 90 bars)
    # go unanswered: the fourth has 16 realised days x 11 stocks >= 100 training samples.
    assert set(missing["cutoff"]) == set(sorted(xgb["cutoff"].unique())[:3])
    metrics = json.loads((scored / "forecast" / "runs" / "xgboost" / "metrics.json").read_text())
    assert metrics["no_answer_reasons"] == {why: len(missing)}
    md = (scored / "report" / "report.md").read_text()
    table = md[md.index("### Table 4 layout"):]
    header = table.splitlines()[2].split(" | ")
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in table.splitlines()[4:9]}
    column = header.index("No answer: why")
    assert rows["xgboost"][column] == f"{len(missing)} of {len(xgb)}: {why} ({len(missing)})"
    assert rows["momentum"][column] == rows["constant"][column] == "none"
    said = (scored / "baseline.stdout").read_text()
    assert f"baseline xgboost: {len(xgb) - len(missing)} of {len(xgb)} samples answered; {len(missing)} {why} ->" in said
    assert f"baseline momentum: {len(xgb)} of {len(xgb)} samples answered ->" in said


def test_rerun_appends_nothing(scored):
    before = (scored / "forecast" / "runs" / "random" / "responses.jsonl").read_bytes()
    parts = sorted((scored / "forecast" / "runs" / "random" / "parts").iterdir())
    stage("baseline", "data=slice", f"out_dir={scored}", "task.baseline.names=[random]")
    assert sorted((scored / "forecast" / "runs" / "random" / "parts").iterdir()) == parts
    assert (scored / "forecast" / "runs" / "random" / "responses.jsonl").read_bytes() == before


def test_report_holds_every_run_the_numbers_and_the_plots(scored):
    report = scored / "report"
    md = (report / "report.md").read_text()
    for name in ("xgboost", "momentum", "constant", "random"):
        assert f"| {name} |" in md
    metrics = json.loads((scored / "forecast" / "runs" / "momentum" / "metrics.json").read_text())
    assert f"{metrics['ic_mean']:.5f}" in md and f"{metrics['accuracy'] * 100:.2f}" in md
    assert "momentum → xgboost" in md
    html = (report / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(list((report / "plots").glob("*.png"))) == 8
    comparisons = json.loads((report / "comparisons.json").read_text())
    assert comparisons["forecast"]["momentum → xgboost"]["n"] > 0


def test_table5_ranks_reproduce_the_papers_ties():
    """The paper's Table 5 (HS300), its printed values and ranks: ties share their average rank."""
    from candlebench.report.model import RunMetrics
    from candlebench.tasks.forecast.report import table5

    printed = {  # model: (IC mean, rank), (IC Sig., rank), (RankIC Sig., rank)
        "Claude-haiku-4-5": ((-0.01030, 9), (0.813, 1), (0.750, 1)),
        "Claude-sonnet-4-5(thinking)": ((0.04706, 2), (0.545, 6), (0.636, 5)),
        "Gemini2.5-flash(nothinking)": ((0.02576, 7), (0.750, 3), (0.688, 3)),
        "Gemini2.5-pro(thinking)": ((0.03047, 5), (0.625, 5), (0.625, 6)),
        "GPT4o": ((-0.01759, 10), (0.750, 3), (0.688, 3)),
        "GPT5mini": ((-0.00864, 8), (0.750, 3), (0.688, 3)),
        "Qwen": ((0.04106, 3), (0.500, 7), (0.375, 8)),
        "Gemini2.5-flash(nothinking,S&P500)": ((0.03436, 4), (0.412, 9), (0.294, 10)),
        "Gemini2.5-pro(thinking,S&P500)": ((0.08990, 1), (0.471, 8), (0.471, 7)),
        "XGBoost(30d)": ((0.03045, 6), (0.250, 10), (0.313, 9)),
    }
    runs = [RunMetrics(name, name, {"ic_mean": ic[0], "ic_sig_ratio": sig[0], "rank_ic_sig_ratio": rsig[0]})
            for name, (ic, sig, rsig) in printed.items()]
    table = table5(runs).frame.set_index("Model")
    for name, (ic, sig, rsig) in printed.items():
        assert table.loc[name, "IC Mean"].endswith(f"({ic[1]})")
        assert table.loc[name, "IC Sig."] == f"{sig[0]:.3f} ({sig[1]})"
        assert table.loc[name, "RankIC Sig."] == f"{rsig[0]:.3f} ({rsig[1]})"
    two_way = table5([RunMetrics(n, n, {"ic_mean": v}) for n, v in (("a", 0.1), ("b", 0.1), ("c", 0.0))]).frame
    assert list(two_way["IC Mean"]) == ["0.10000 (1.5)", "0.10000 (1.5)", "0.00000 (3)"]


def test_pooled_report_of_two_markets(tmp_path):
    """Two markets' out_dirs in one report (report.pool): Table 4 rows carry their Market and Total,
    Tables 1 and 2 a row per market (Table 2 a Total row too), comparisons stay within a market."""
    runs = {}
    for market, codes in (("PSE-A", "[AC,ALI,BPI,JFC]"), ("PSE-B", "[SM,TEL,URC,MER]")):
        out = tmp_path / market
        common = ["data=slice", f"data.codes={codes}", f"data.market={market}", f"out_dir={out}", "score.n_boot=0"]
        stage("samples", *common, "task.samples.interval=20")
        stage("baseline", *common, "task.baseline.names=[momentum,constant]")
        for name in ("momentum", "constant"):
            stage("score", *common, f"score.run={name}")
        runs[market] = out
    a, b = runs["PSE-A"], runs["PSE-B"]
    stage("report", "data=slice", f"out_dir={a}", f"report.pool=[{b}]", "report.compare=[[constant,momentum]]",
          f"report.dir={tmp_path / 'pooled'}")
    md = (tmp_path / "pooled" / "report.md").read_text()
    for market, out in runs.items():
        m = json.loads((out / "forecast" / "runs" / "momentum" / "metrics.json").read_text())
        assert f"| momentum · {market} | {market} | {m['tp']} | {m['tn']} | {m['fp']} | {m['fn']} | {m['n']} |" in md
        summary = json.loads((out / "forecast" / "samples_summary.json").read_text())
        days = summary["regime_days"]
        assert f"| {market} | {days['bull']} |" in md
        assert sum(days.values()) == len(pd.read_csv(SLICE)["date"].unique()) - 1
        assert f"| {market} | 4 | {summary['cutoffs']} | {summary['samples']} |" in md
    total = sum(json.loads((o / "forecast" / "samples_summary.json").read_text())["samples"] for o in runs.values())
    assert "| Total | 8 |" in md and f"| {total} |" in md
    comparisons = json.loads((tmp_path / "pooled" / "comparisons.json").read_text())["forecast"]
    assert set(comparisons) == {"PSE-A: constant → momentum", "PSE-B: constant → momentum"}
    assert {"rank_ic_mean_median.png", "continuous.png"} <= {p.name for p in (tmp_path / "pooled" / "plots").iterdir()}


def test_samples_of_an_older_task_version_are_refused_in_one_line_naming_the_file_and_the_fix(tmp_path):
    """Reading samples built before issue #50's questions have no mark_color or margins: score and
    baseline refuse them with the command that rebuilds them, not a KeyError mid-stage."""
    from candlebench.core.errors import OutdatedFile

    common = ["task=reading", "data=slice", "data.codes=[AC]", f"out_dir={tmp_path}", "task.samples.start=2019-01-01",
              "task.samples.end=2019-06-30", "task.frames=[daily]", "task.modalities=[text]"]
    stage("samples", *common)
    path = tmp_path / "reading" / "samples.parquet"
    pd.read_parquet(path).drop(columns=["mark_color", "margins"]).to_parquet(path)
    for job in ("score", "baseline"):
        with pytest.raises(OutdatedFile) as refused:
            stage(job, *common)
        said = str(refused.value)
        assert str(path) in said and "mark_color, margins" in said and "candlebench samples task=reading" in said
        assert "\n" not in said
