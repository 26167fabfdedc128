"""The E2A-style task end to end through the transformers backend (tiny fixture, decoding
constrained to the answer object), its reference responders, `candlebench import`, the Chinese
prompt, and no look-ahead in the anchors."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from helpers import cli, records
from tasks.e2a.anchors import ANCHORS, compute_anchors

COMMON = ["tasks=[e2a]", "data=slice", "data.codes=[AC,SM,TEL]", "samples.interval=60", "score.n_boot=100"]
MODEL = "tiny_qwen2_5_vl-transformers"


@pytest.fixture(scope="module")
def run(tmp_path_factory, env):
    out = tmp_path_factory.mktemp("e2a") / "out"
    cli("run", *COMMON, f"out_dir={out}", env=env)
    return out


def test_samples_carry_the_anchors_of_their_window(run, slice_market):
    samples = pd.read_parquet(run / "e2a" / "samples.parquet")
    per_window = samples.groupby(["code", "cutoff"])["modality"].apply(sorted)
    assert (per_window.apply(tuple) == ("both", "chart", "text")).all() and samples["sample_id"].is_unique
    for _, row in samples.drop_duplicates(["code", "cutoff"]).iterrows():
        bars = slice_market.stock(row["code"])
        before = bars[bars["date"] < row["cutoff"]]
        anchors = compute_anchors({k: before[k].to_numpy() for k in ("open", "high", "low", "close", "volume")})
        assert {a: row[f"anchor_{a}"] for a in ANCHORS} == dict(anchors.labels)
        assert row["strong_signals"] == anchors.strong_signals


def test_each_modality_gets_its_inputs_and_the_tiny_model_answers_the_object(run):
    got = records(run, MODEL, task="e2a")
    samples = pd.read_parquet(run / "e2a" / "samples.parquet").set_index("sample_id")
    got = got.join(samples[["modality", "code", "cutoff"]])
    assert (got["tier"] == "json").all() and got["error"].isna().all()
    tokens = got.groupby("modality")["prompt_tokens"].mean()
    assert tokens["both"] > tokens["text"] and tokens["both"] > tokens["chart"]  # records + chart
    one = got.groupby(["code", "cutoff"])["inputs"].nunique()
    assert (one == 3).all()  # three different input sets per window
    metrics = json.loads((run / "e2a" / "runs" / MODEL / "metrics.json").read_text())
    assert set(metrics["modalities"]) == {"text", "chart", "both"}
    assert metrics["all"]["parse_failure_rate"] == 0 and "ci" in metrics["all"]
    assert set(metrics["all"]) == set(metrics["modalities"]["text"])


def test_reference_responders_and_the_report(run):
    m = {n: json.loads((run / "e2a" / "runs" / n / "metrics.json").read_text())["all"]
         for n in ("anchor_oracle", "always_hold", "contrarian")}
    assert m["anchor_oracle"]["ucr_all"] == 0 and m["anchor_oracle"]["rci"] == 0 and m["anchor_oracle"]["eci"] == 0
    assert m["always_hold"]["coverage"] == 0 and m["always_hold"]["ndr"] == 0
    assert m["contrarian"]["rci"] == 1
    md = (run / "report" / "report.md").read_text()
    assert "E2A-style leaderboard" in md and "| anchor_oracle | chart |" in md
    assert (run / "report" / "plots" / "e2a_frontier.png").stat().st_size > 10_000


def test_imported_answers_score_like_the_responder_that_wrote_them(run, tmp_path, env):
    oracle = records(run, "anchor_oracle", task="e2a")
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"sample_id": sid, "text": t}) + "\n" for sid, t in oracle["text"].items()))
    cli("import", *COMMON, "task=e2a", f"out_dir={run}", f"import_file={path}", "infer.run_name=imported", env=env)
    cli("score", *COMMON, "task=e2a", f"out_dir={run}", "score.run=imported", env=env)
    a = json.loads((run / "e2a" / "runs" / "anchor_oracle" / "metrics.json").read_text())
    b = json.loads((run / "e2a" / "runs" / "imported" / "metrics.json").read_text())
    assert a["all"] == b["all"] and a["modalities"] == b["modalities"]


def test_chinese_prompt(tmp_path, env):
    from candlebench.stages import compose_config
    from tasks.e2a.task import TASK

    cfg = compose_config(["task=e2a", "task.language=zh"])
    identity = TASK.prompt_identity(cfg)
    assert "技术分析师" in identity and "观望" in identity
    spec = TASK.request(cfg, {"modality": "text"}, {"text_ohlcv": "2024-01-02, 1, 2, 1, 2, 100"})
    assert "2024-01-02, 1, 2, 1, 2, 100" in spec.prompt and spec.charts == ()
    assert TASK.request(cfg, {"modality": "chart"}, {}).charts == ("daily",)


def test_anchors_never_see_the_evaluation_date_or_later(slice_market):
    from tasks.e2a.samples import E2ASpec, build_samples

    spec = E2ASpec(interval=90)
    frame, _ = build_samples(slice_market, spec)
    date = sorted(frame["cutoff"].unique())[3]
    bars = slice_market.bars.copy()
    later = bars["date"] >= date
    bars.loc[later, ["open", "high", "low", "close"]] *= 3.0
    bars.loc[later, "volume"] *= 10
    changed, _ = build_samples(dataclasses.replace(slice_market, bars=bars), spec)
    columns = [c for c in frame.columns if c.startswith(("anchor_", "strong"))]
    keep = frame["cutoff"] <= date
    pd.testing.assert_frame_equal(frame.loc[keep, columns].reset_index(drop=True),
                                  changed.loc[changed["cutoff"] <= date, columns].reset_index(drop=True))
