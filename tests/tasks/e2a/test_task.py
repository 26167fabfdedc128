"""The E2A-style task end to end through the transformers backend (tiny fixture, decoding
constrained to the answer object), its reference responders, `candlebench import`, the Chinese
prompt, and no look-ahead in the anchors. The study is built by `candlebench run`; the stages after
it run in this process, but for the command whose exit and message a test reads."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from helpers import cli, records, score_as_made, setup_of, stage
from candlebench.tasks.e2a.anchors import ANCHORS, compute_anchors

COMMON = ["tasks=[e2a]", "data=slice", "data.codes=[AC,SM,TEL]", "task.samples.interval=120", "score.n_boot=100"]
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


def test_a_batch_holds_chart_prompts_or_ohlcv_text_prompts_not_both(run):
    """A batch is padded to its longest prompt: the runner batches prompts by length, so a chart
    prompt (about 500 characters) rarely waits on the OHLCV text of another (about 2,300). The
    samples of one batch share its latency, to the last digit."""
    got = records(run, MODEL, task="e2a").join(pd.read_parquet(run / "e2a" / "samples.parquet").set_index("sample_id"))
    batches = got.groupby("latency_s")["modality"].agg(set)
    assert len(batches) >= 3
    assert sum("chart" in kinds and len(kinds) > 1 for kinds in batches) <= 1, list(batches)


def test_reference_responders_and_the_report(run):
    m = {n: json.loads((run / "e2a" / "runs" / n / "metrics.json").read_text())["all"]
         for n in ("anchor_oracle", "always_hold", "contrarian")}
    assert m["anchor_oracle"]["ucr_all"] == 0 and m["anchor_oracle"]["rci"] == 0 and m["anchor_oracle"]["eci"] == 0
    assert m["always_hold"]["coverage"] == 0 and m["always_hold"]["ndr"] == 0
    assert m["contrarian"]["rci"] == 1
    md = (run / "report" / "report.md").read_text()
    assert "E2A-style leaderboard" in md and "| anchor_oracle (reference) | chart |" in md
    assert (run / "report" / "plots" / "e2a_frontier.png").stat().st_size > 10_000


def test_imported_answers_score_like_the_responder_that_wrote_them(run, tmp_path, env):
    oracle = records(run, "anchor_oracle", task="e2a")
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"sample_id": sid, "text": t}) + "\n" for sid, t in oracle["text"].items()))
    stage("import", *COMMON, "task=e2a", f"out_dir={run}", f"import_file={path}", "infer.run_name=imported", env=env)
    stage("score", *COMMON, "task=e2a", f"out_dir={run}", "score.run=imported", env=env)
    a = json.loads((run / "e2a" / "runs" / "anchor_oracle" / "metrics.json").read_text())
    b = json.loads((run / "e2a" / "runs" / "imported" / "metrics.json").read_text())
    assert a["all"] == b["all"] and a["modalities"] == b["modalities"]


def test_chinese_prompt(tmp_path, env):
    from candlebench.tasks.e2a.task import TASK
    from helpers import setup_of

    setup = setup_of("task=e2a", "task.language=zh")
    cfg = (setup.settings, setup.context)
    identity = TASK.prompt_identity(*cfg)
    assert "技术分析师" in identity and "观望" in identity
    spec = TASK.request(*cfg, {"modality": "text"}, {"text_ohlcv": "2024-01-02, 1, 2, 1, 2, 100"})
    assert "2024-01-02, 1, 2, 1, 2, 100" in spec.prompt and spec.charts == ()
    assert TASK.request(*cfg, {"modality": "chart"}, {}).charts == ("daily",)


def test_anchors_never_see_the_evaluation_date_or_later(slice_market):
    from candlebench.tasks.e2a.samples import build_samples

    spec = setup_of("task=e2a", "task.samples.interval=90").settings
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


def test_verify_pass_follows_the_direct_pass_and_the_report_gives_its_deltas(run):
    verify = f"{MODEL}-verify"
    root = run / "e2a" / "runs"
    info = json.loads((root / verify / "run.json").read_text())
    assert info["identity"]["method"] == "verify" and info["identity"]["revises"] == MODEL
    direct, second = records(run, MODEL, task="e2a"), records(run, verify, task="e2a")
    assert list(second.index) == list(direct.index) and (second["tier"] == "json").all()
    # The second prompt is the first plus the first-pass answer, its claims and the ten facts.
    assert (second["prompt_tokens"] > direct["prompt_tokens"] + 50).all()
    assert set(second["inputs"]).isdisjoint(direct["inputs"])  # the first-pass answer is part of its inputs
    m = {n: json.loads((root / n / "metrics.json").read_text()) for n in (MODEL, verify)}
    assert m[verify]["method"] == "verify" and m[verify]["revises"] == MODEL and m[MODEL]["revises"] is None
    pair = json.loads((run / "report" / "comparisons.json").read_text())["e2a"][f"{MODEL} → {verify}"]
    assert pair["n"] == len(direct) and set(pair["groups"]["modality"]) == {"text", "chart", "both"}
    for name in ("coverage", "ndr", "ucr_all"):
        a, b = m[MODEL]["all"][name], m[verify]["all"][name]
        assert pair[name]["diff"] == (None if a is None or b is None else pytest.approx(b - a))
        for modality, block in pair["groups"]["modality"].items():
            assert block[name]["a"] == pytest.approx(m[MODEL]["modalities"][modality][name])
    md = (run / "report" / "report.md").read_text()
    table = md[md.index("oracle-aided verification (direct → verify, same samples) per modality"):]
    assert f"| {MODEL} → {verify} | chart |" in table.split("\n\n#")[0]


def test_verify_prompt_shows_the_first_pass_answer_its_checked_claims_and_every_fact(run):
    from candlebench.stages.graph import compose_job
    from candlebench.stages.infer import build_requests
    from candlebench.tasks.e2a.claims import judge
    from candlebench.tasks.e2a.samples import anchors_of

    job = compose_job([*COMMON[1:], "task=e2a", f"out_dir={run}", "model=tiny_qwen2_5_vl",
                       "task.method=verify", "task.revises=anchor_oracle"]).job
    samples = pd.read_parquet(job.task_paths.samples)
    oracle = records(run, "anchor_oracle", task="e2a")
    prompts = {r.sample_id: r.prompt for r in build_requests(job, samples)[0]}
    for _, row in samples.iterrows():
        prompt, said = prompts[row["sample_id"]], oracle.loc[row["sample_id"], "text"]
        assert said in prompt and prompt.index("Your earlier answer was") < prompt.index(said)
        assert all(f"- {a}: {row[f'anchor_{a}']}" in prompt for a in ANCHORS)
        # The oracle states every fact truthfully: each claim the matcher reads is listed as supported.
        answer = json.loads(said)
        supported = judge(answer["analysis"], answer["rationale"], anchors_of(row))["supported"]
        assert prompt.count("): supported by the data (") == supported > 0 and "contradicted by the data" not in prompt


def test_verify_answers_go_stale_when_the_answers_they_revise_change(run, tmp_path, env):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(run, out)
    n = len(pd.read_parquet(out / "e2a" / "samples.parquet"))

    def answers(name: str):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"sample_id": s, "text": t}) + "\n"
                                for s, t in records(out, name, task="e2a")["text"].items()))
        return path

    # Which answers are asked again is the point here, not their text: a short answer budget.
    second = ["task.method=verify", "task.revises=first", "infer.run_name=second", "infer.generation.max_new_tokens=16"]
    stage("import", *COMMON[1:], "task=e2a", f"out_dir={out}", f"import_file={answers('anchor_oracle')}", "infer.run_name=first", env=env)
    assert f"{n} generated" in stage("infer", *COMMON[1:], "task=e2a", f"out_dir={out}", *second, env=env)
    assert f"0 generated, {n} already done" in stage("infer", *COMMON[1:], "task=e2a", f"out_dir={out}", *second, env=env)
    # Another file into the same run replaces it only when asked to (import_replace).
    stage("import", *COMMON[1:], "task=e2a", f"out_dir={out}", f"import_file={answers('contrarian')}", "infer.run_name=first",
          "import_replace=true", env=env)
    again = stage("infer", *COMMON[1:], "task=e2a", f"out_dir={out}", *second, env=env)
    # Exactly the answers that changed are asked again (the contrarian holds where the oracle does).
    changed = int((records(out, "anchor_oracle", task="e2a")["text"] != records(out, "contrarian", task="e2a")["text"]).sum())
    assert 0 < changed < n
    assert f"{changed} generated, {n - changed} already done" in again and f"{n} of {n} samples answered" in again
    score_as_made(out, "second", task="e2a")  # judged for the inputs of now: one answer a sample
    assert len(pd.read_parquet(out / "e2a" / "runs" / "second" / "parsed.parquet")) == n


@pytest.mark.parametrize("overrides, says", [
    (["task.method=verify", "task.revises=nowhere"], "a second pass over run nowhere (task.revises)"),
    (["task.method=refine"], "has no such pass; task.method is one of ['direct', 'verify']"),
])
def test_a_second_pass_without_its_first_fails_with_the_run_it_needs(run, env, overrides, says):
    done = cli("infer", *COMMON[1:], "task=e2a", f"out_dir={run}", *overrides, "infer.run_name=never", env=env, check=False)
    assert done.returncode != 0 and says in done.stderr and "Traceback" not in done.stderr
    assert not (run / "e2a" / "runs" / "never").exists()
