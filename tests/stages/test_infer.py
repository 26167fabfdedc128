"""The inference job end to end through the real transformers backend on tiny random-weight models:
every fixture family answers from samples.parquet, answers do not depend on batch size or shard
count, killed runs resume to exactly the uninterrupted result, LoRA works, failures are data.
The job runs in this process (infer_here) where its output is what is tested; as a command where
the command is: its exit and what it says, a run killed while it works.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from fixtures.forked_cli import Started
from helpers import cli, infer, infer_here, records, start

ANSWER = ["text", "token_ids", "answer", "tier", "reason", "error", "run_key"]


@pytest.mark.parametrize("model", ["tiny_qwen2_5_vl", "tiny_qwen3_vl", "tiny_gemma3", "tiny_gemma4_e4b", "tiny_gemma4_31b", "tiny_llava"])
def test_each_fixture_answers_end_to_end(workspace, env, model):
    infer_here(workspace, env, model, f"model={model}", "infer.batch_size=4")
    samples = pd.read_parquet(workspace / "forecast" / "samples.parquet")
    got = records(workspace, model)
    assert sorted(got.index) == sorted(samples["sample_id"]) and got.index.is_unique
    assert (got["completion_tokens"] > 0).all() and (got["prompt_tokens"] > 100).all()
    assert got["error"].isna().all()
    # The random fixtures answer through their answer_regex constraint (xgrammar): always a score.
    assert (got["tier"] == "tag").all() and got["answer"].between(-0.5, 1.0).all() and got["reason"].isna().all()
    assert got["text"].str.fullmatch(r"<score>-?0\.\d{3}</score>").all()
    parsed = pd.read_parquet(workspace / "forecast" / "runs" / model / "parsed.parquet")
    assert len(parsed) == len(samples) and {"pred", "cutoff", "r_30", "regime"} <= set(parsed.columns)
    info = json.loads((workspace / "forecast" / "runs" / model / "run.json").read_text())
    assert info["random_weights"] is True and info["identity"]["backend"] == "transformers"
    assert "GREEN = up, RED = down" in info["identity"]["prompt"] and "30-day Future Return" in info["identity"]["prompt"]


def test_unconstrained_answers_are_kept_with_their_reason(workspace, env):
    infer_here(workspace, env, "free", "model.constrain_answers=false", "infer.batch_size=8")
    got = records(workspace, "free")
    assert set(got["tier"]) <= {"tag", "interval", "scan", "none"}
    assert (got["answer"].isna() == (got["tier"] == "none")).all()
    assert got["reason"][got["tier"] == "none"].notna().all()  # no silent failures
    assert got["text"].notna().all()
    assert json.loads((workspace / "forecast" / "runs" / "free" / "run.json").read_text())["identity"]["generation"]["regex"] is None


def test_answers_do_not_depend_on_batch_size(workspace, env):
    # Free decoding: its longer, varied outputs are what padding would corrupt first.
    infer_here(workspace, env, "batch1", "infer.batch_size=1", "model.constrain_answers=false")
    infer_here(workspace, env, "batch8", "infer.batch_size=8", "model.constrain_answers=false")
    one, eight = records(workspace, "batch1"), records(workspace, "batch8")
    pd.testing.assert_frame_equal(one[ANSWER], eight[ANSWER])
    assert one["text"].nunique() > 1  # answers depend on the charts, so the comparison has teeth


def _lines(run_dir: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (run_dir / "parts").glob("*.jsonl")) if (run_dir / "parts").exists() else 0


def _start(workspace: Path, env: dict, run: str, *overrides: str) -> Started:
    return start("infer", "data=slice", f"out_dir={workspace}", f"infer.run_name={run}", *overrides, env=env)


def test_killed_runs_resume_to_the_uninterrupted_result(workspace, env):
    """SIGKILL at random points, resume with other batch sizes and shard counts: no duplicates, no gaps."""
    infer_here(workspace, env, "reference", "infer.batch_size=3")
    reference = records(workspace, "reference")
    run_dir = workspace / "forecast" / "runs" / "crashy"
    rng = random.Random(7)
    kills = 0
    attempts = [("infer.batch_size=2", "infer.shard.count=1"), ("infer.batch_size=5", "infer.shard.count=2"),
                ("infer.batch_size=1", "infer.shard.count=3")]
    for batch, shards in attempts:
        count = int(shards.split("=")[1])
        for index in range(count):
            target = _lines(run_dir) + rng.randint(1, 6)
            proc = _start(workspace, env, "crashy", batch, shards, f"infer.shard.index={index}")
            deadline = time.time() + 300
            while proc.poll() is None and _lines(run_dir) < target and time.time() < deadline:
                time.sleep(0.05)
            if proc.poll() is None:  # a small shard may finish before its kill point
                os.killpg(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
    assert kills >= 3 and _lines(run_dir) < len(reference), "the kills should have interrupted the run"
    infer_here(workspace, env, "crashy", "infer.batch_size=4", "infer.shard.count=2", "infer.shard.index=0")
    infer_here(workspace, env, "crashy", "infer.batch_size=7", "infer.shard.count=2", "infer.shard.index=1")
    final = records(workspace, "crashy")
    assert final.index.is_unique and list(final.index) == list(reference.index)
    pd.testing.assert_frame_equal(final[ANSWER], reference[ANSWER])
    parsed = pd.read_parquet(run_dir / "parsed.parquet")
    assert parsed["sample_id"].is_unique and len(parsed) == len(reference)


def test_a_finished_run_is_skipped_without_loading_the_model(workspace, env):
    said = infer_here(workspace, env, "again", "infer.batch_size=8")
    n = len(pd.read_parquet(workspace / "forecast" / "samples.parquet"))
    assert f"{n} of {n} samples answered so far" in said  # counted from the records: infer judges nothing
    assert not any((workspace / "forecast" / "runs" / "again" / f).exists() for f in ("parsed.parquet", "metrics.json"))
    parts = sorted((workspace / "forecast" / "runs" / "again" / "parts").iterdir())
    done = infer_here(workspace, env, "again", "infer.batch_size=2", "infer.shard.count=3", "infer.shard.index=1")
    assert "0 generated" in done
    assert sorted((workspace / "forecast" / "runs" / "again" / "parts").iterdir()) == parts


def test_lora_unmerged_equals_merged_and_differs_from_base(workspace, env):
    free = "model.constrain_answers=false"
    infer_here(workspace, env, "base", "model=tiny_qwen2_5_vl", free, "infer.batch_size=8")
    infer_here(workspace, env, "lora", "model=tiny_qwen2_5_vl_lora", free, "infer.batch_size=8")
    infer_here(workspace, env, "merged", "model=tiny_qwen2_5_vl_lora", free, "model.merge_adapter=true", "infer.batch_size=8")
    base, lora, merged = (records(workspace, r) for r in ("base", "lora", "merged"))
    assert list(lora["token_ids"]) == list(merged["token_ids"])
    assert list(lora["token_ids"]) != list(base["token_ids"])
    assert lora["run_key"].iloc[0] != merged["run_key"].iloc[0] != base["run_key"].iloc[0]


def test_a_broken_chart_fails_its_sample_not_the_run(tmp_path, workspace, env):
    copy = tmp_path / "ws"
    shutil.copytree(workspace / "forecast" / "images", copy / "forecast" / "images")
    shutil.copy(workspace / "forecast" / "samples.parquet", copy / "forecast" / "samples.parquet")
    samples = pd.read_parquet(copy / "forecast" / "samples.parquet")
    broken = samples.iloc[3]
    (copy / "forecast" / broken["image_weekly"]).write_bytes(b"not a png")
    ok = infer_here(copy, env, "r", "infer.max_error_rate=0.5")
    got = records(copy, "r")
    assert got.loc[broken["sample_id"], "error"] and str(copy / "forecast" / broken["image_weekly"]) in got.loc[broken["sample_id"], "error"]
    assert got.loc[broken["sample_id"], "tier"] == "none"
    assert got.drop(index=broken["sample_id"])["error"].isna().all()
    assert "1 errors" in ok

    for _, row in samples.iloc[:8].iterrows():
        (copy / "forecast" / row["image_daily"]).write_bytes(b"")
    stopped = cli(
        "infer", "data=slice", f"out_dir={copy}", "infer.run_name=s", "infer.batch_size=2",
        "infer.min_samples_for_error_rate=4", env=env, check=False,
    )
    assert stopped.returncode != 0 and "max_error_rate" in stopped.stderr and "Traceback" not in stopped.stderr
    kept = records_from_parts(copy / "forecast" / "runs" / "s")
    assert len(kept) >= 4  # what was generated before the stop is on disk


def records_from_parts(run_dir: Path) -> list[dict]:
    return [json.loads(line) for p in (run_dir / "parts").glob("*.jsonl") for line in p.read_text().splitlines()]


def test_missing_checkpoint_is_named_before_any_work(workspace, env):
    done = infer(workspace, env, "missing", "model=qwen2_5_vl_7b", "model.path=/nowhere/Qwen2.5-VL-7B", check=False)
    assert done.returncode != 0 and "/nowhere/Qwen2.5-VL-7B" in done.stderr and "Traceback" not in done.stderr
    cached = infer(workspace, env, "missing", "model=qwen2_5_vl_7b", check=False)
    assert cached.returncode != 0 and "Qwen/Qwen2.5-VL-7B-Instruct" in cached.stderr and "local Hugging Face cache" in cached.stderr
    assert not (workspace / "forecast" / "runs" / "missing" / "parts").exists()


def test_a_failing_sample_is_isolated_by_splitting_its_batch(workspace, env, monkeypatch):
    """A batch whose generation raises is halved until the culprit stands alone; the others'
    answers equal their answers in a batch of their own (the path a CUDA out-of-memory takes)."""
    from PIL import Image

    from candlebench.inference.backends.base import GenerationSpec, PreparedRequest
    from candlebench.inference.backends.hf import TransformersBackend
    from candlebench.inference.models import ModelSpec, ensure_built
    from candlebench.inference.runner import generate_isolating_failures
    from candlebench.rendering.model_input import ImagePolicy

    monkeypatch.setenv("CANDLEBENCH_CACHE", env["CANDLEBENCH_CACHE"])
    path = str(Path(env["CANDLEBENCH_CACHE"]) / "fixtures" / "tiny_qwen2_5_vl")
    spec = ModelSpec(name="tiny", path=path, dtype="float32", build="qwen2_5_vl", fixture=path)
    ensure_built(spec)
    backend = TransformersBackend(spec, GenerationSpec(max_new_tokens=8))
    samples = pd.read_parquet(workspace / "forecast" / "samples.parquet").head(4)
    policy = ImagePolicy()
    batch = [
        PreparedRequest(r.sample_id, "score?", (policy.apply(workspace / "forecast" / r.image_daily), policy.apply(workspace / "forecast" / r.image_weekly)))
        for r in samples.itertuples()
    ]
    # An empty (0x0) chart: the processor raises for the whole batch.
    batch[2] = PreparedRequest(batch[2].sample_id, "score?", (Image.new("RGB", (0, 0)), Image.new("RGB", (0, 0))))
    results = generate_isolating_failures(backend, batch)
    assert isinstance(results[2], Exception)
    alone = [backend.generate([r])[0] for i, r in enumerate(batch) if i != 2]
    assert [r.token_ids for i, r in enumerate(results) if i != 2] == [a.token_ids for a in alone]
