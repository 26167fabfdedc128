"""vLLM's own engine (CPU build) behind the same job: identical greedy answers to the transformers
backend, LoRA through LoRARequest, structured output. Runs in the vLLM environment (`-m vllm`).
"""

from __future__ import annotations

import json
import re

import pytest

from helpers import ROOT, VLLM_CPU, infer, records, run_dir, script, start

pytestmark = pytest.mark.vllm


@pytest.mark.parametrize(
    ("model", "extra"),
    [("tiny_qwen2_5_vl", ("model.constrain_answers=false",)), ("tiny_qwen2_5_vl", ()), ("tiny_llava", ()),
     ("tiny_qwen3_vl", ("model.constrain_answers=false",)), ("tiny_gemma3", ()),
     ("tiny_gemma4_e4b", ("model.constrain_answers=false",)), ("tiny_gemma4_31b", ())],
    ids=["qwen-free", "qwen-constrained", "llava-constrained", "qwen3-free", "gemma3-constrained",
         "gemma4-e4b-free", "gemma4-31b-constrained"],
)
def test_vllm_greedy_token_ids_equal_transformers(workspace, env, model, extra):
    """Free greedy decoding, and decoding constrained to the fixtures' answer format (xgrammar in both)."""
    name = f"{model}-{'free' if extra else 'constrained'}"
    infer(workspace, env, f"hf-{name}", f"model={model}", *extra, "backend=transformers", "infer.batch_size=8")
    infer(workspace, env, f"vllm-{name}", f"model={model}", *extra, *VLLM_CPU)
    hf, vllm = records(workspace, f"hf-{name}"), records(workspace, f"vllm-{name}")
    assert list(vllm.index) == list(hf.index)
    assert list(vllm["token_ids"]) == list(hf["token_ids"])
    assert list(vllm["text"]) == list(hf["text"]) and (vllm["backend"] == "vllm").all()
    assert hf["run_key"].iloc[0] != vllm["run_key"].iloc[0]  # the engine is part of what produced them


def test_vllm_lora_request_equals_transformers_adapter(workspace, env):
    free = "model.constrain_answers=false"
    infer(workspace, env, "hf-lora", "model=tiny_qwen2_5_vl_lora", free, "backend=transformers", "infer.batch_size=8")
    infer(workspace, env, "vllm-lora", "model=tiny_qwen2_5_vl_lora", free, *VLLM_CPU,
          "model.merge_adapter=false")  # served unmerged, through LoRARequest
    hf, vllm = records(workspace, "hf-lora"), records(workspace, "vllm-lora")
    assert list(vllm["token_ids"]) == list(hf["token_ids"])


def test_structured_output_constrains_the_answer_to_the_score_format(workspace, env):
    pattern = "<score>-?0[.][0-9][0-9][0-9]</score>"
    done = infer(
        workspace, env, "vllm-structured", *VLLM_CPU,
        f"task.answer_regex='{pattern}'", "infer.generation.max_new_tokens=24",
    )
    got = records(workspace, "vllm-structured")
    assert all(re.fullmatch(pattern, text) for text in got["text"])
    assert (got["tier"] == "tag").all() and got["answer"].between(-0.5, 1.0).all()
    # backend.cpu_kvcache_space_gb=0.125 reached the engine in bytes (VLLM_CPU_KVCACHE_SPACE: whole GiB).
    assert "Explicitly set (0.12/" in done.stdout + done.stderr


def test_vllm_merged_adapter_equals_transformers(workspace, env):
    """vLLM merges a run's adapter by default: the merged copy (saved under the base's key names)
    answers as the adapter does, unmerged, in transformers; both run keys say which ran."""
    free = "model.constrain_answers=false"
    infer(workspace, env, "hf-lora-m", "model=tiny_qwen2_5_vl_lora", free, "backend=transformers", "infer.batch_size=8")
    infer(workspace, env, "vllm-merged", "model=tiny_qwen2_5_vl_lora", free, *VLLM_CPU)
    hf, vllm = records(workspace, "hf-lora-m"), records(workspace, "vllm-merged")
    assert list(vllm["token_ids"]) == list(hf["token_ids"])
    merged = {r: json.loads((run_dir(workspace, r) / "run.json").read_text())["identity"]["model"]["merge_adapter"]
              for r in ("hf-lora-m", "vllm-merged")}
    assert merged == {"hf-lora-m": False, "vllm-merged": True}


def test_vllm_merges_an_adapter_that_touches_the_vision_tower(workspace, env):
    """vLLM's LoRA leaves the vision tower out; such an adapter is merged (and says so), never dropped."""
    free = "model.constrain_answers=false"
    infer(workspace, env, "hf-vis", "model=tiny_qwen2_5_vl_lora_vision", free, "backend=transformers", "infer.batch_size=8")
    done = infer(workspace, env, "vllm-vis", "model=tiny_qwen2_5_vl_lora_vision", free, *VLLM_CPU,
                 "model.merge_adapter=false")  # asked unmerged: merged all the same
    assert "also changes the vision tower" in done.stderr and "merge_adapter=true" in done.stderr
    infer(workspace, env, "hf-text-lora", "model=tiny_qwen2_5_vl_lora", free, "backend=transformers", "infer.batch_size=8")
    hf, vllm, text_only = (records(workspace, r) for r in ("hf-vis", "vllm-vis", "hf-text-lora"))
    assert list(vllm["token_ids"]) == list(hf["token_ids"])
    assert list(hf["token_ids"]) != list(text_only["token_ids"])  # the vision part of the adapter matters


def test_e2a_answers_equal_between_the_backends(tmp_path, env):
    """The E2A-style task's three modalities (text only: no image) under vLLM's engine, decoding
    constrained to the answer object, and its verify pass: the same greedy tokens as transformers."""
    from helpers import cli

    common = ["task=e2a", "data=slice", f"out_dir={tmp_path}", "data.codes=[AC,SM]", "task.samples.interval=120"]
    cli("samples", *common, env=env)
    cli("render", *common, "render.workers=1", env=env)
    # transformers' own SDPA path, which vLLM's CPU attention matches token for token on this fixture:
    # the grouped decode path (model.decode_speedups) sums in another order (logits within 1e-5),
    # enough to flip a near-tie of the random-weight fixture in a long verify answer.
    hf_path = ("backend=transformers", "model.decode_speedups=[]")
    cli("infer", *common, "infer.run_name=hf", *hf_path, "infer.batch_size=8", env=env)
    cli("infer", *common, "infer.run_name=vllm", *VLLM_CPU, env=env)
    hf, vllm = records(tmp_path, "hf", task="e2a"), records(tmp_path, "vllm", task="e2a")
    assert list(vllm.index) == list(hf.index) and len(hf) >= 9
    assert list(vllm["token_ids"]) == list(hf["token_ids"])
    assert (hf["tier"] == "json").all()
    # The verify pass, each backend revising its own direct run: equal answers, so equal prompts
    # (direct prompt + answer + checked claims + facts), and again the same tokens.
    for name, backend in (("hf", hf_path), ("vllm", VLLM_CPU)):
        cli("infer", *common, "task.method=verify", f"task.revises={name}", f"infer.run_name={name}-verify", *backend,
            env=env)
    hf2, vllm2 = records(tmp_path, "hf-verify", task="e2a"), records(tmp_path, "vllm-verify", task="e2a")
    assert list(vllm2.index) == list(hf.index) and (hf2["prompt_tokens"] > hf["prompt_tokens"]).all()
    assert list(vllm2["token_ids"]) == list(hf2["token_ids"])


def test_continuous_feeding_equals_chunks_and_resumes_after_sigkill(workspace, env):
    """backend.feed=continuous (a request in whenever one comes out, each answer fsynced as it
    finishes) gives the chunked run's records; killed mid-run, it resumes with nothing lost or
    answered twice."""
    import os
    import signal
    import time

    infer(workspace, env, "vllm-chunks", *VLLM_CPU, "backend.feed=chunks", "infer.batch_size=5")
    chunks = records(workspace, "vllm-chunks")
    parts = run_dir(workspace, "vllm-fed") / "parts"

    def lines() -> list[dict]:
        return [json.loads(x) for p in sorted(parts.glob("*.jsonl")) for x in p.read_text().splitlines() if x.strip()]

    # One request in the engine at a time: the kill lands between answers, not after the last. Here
    # the engine runs in its own process, as vLLM runs it by default (conftest's env: in-process).
    proc = start("infer", "data=slice", f"out_dir={workspace}", "infer.run_name=vllm-fed", *VLLM_CPU,
                 "backend.feed=continuous", "backend.in_flight=1", env=env, environ={"VLLM_ENABLE_V1_MULTIPROCESSING": "1"})
    deadline = time.time() + 600
    while proc.poll() is None and (not parts.exists() or len(lines()) < 3) and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(lines())
    assert 3 <= before < len(chunks)
    infer(workspace, env, "vllm-fed", *VLLM_CPU, "backend.in_flight=4")  # continuous is the default
    fed = records(workspace, "vllm-fed")
    assert list(fed.index) == list(chunks.index) and fed.index.is_unique
    assert list(fed["token_ids"]) == list(chunks["token_ids"]) and list(fed["text"]) == list(chunks["text"])
    answered = [r["sample_id"] for r in lines() if r["error"] is None]
    assert sorted(answered) == sorted(fed.index)  # each sample answered exactly once across both attempts


def test_the_vllm_benchmark_runs_on_the_cpu_build(env):
    """bench/infer_vllm.py, bench/infer_gpu.py's twin: dummy weights at the configured size, every row,
    the server row (vLLM's OpenAI server, fed by backend=server) included."""
    bench = ROOT / "bench" / "infer_vllm.py"
    done = script(bench, "--models", "tiny", "--batch-sizes", "4", "--serial", "2", "--requests", "8",
                  "--server-concurrency", "1", "4", "--cpu-kvcache-gb", "0.125", env=env)
    assert done.rc == 0, done.stderr[-3000:]
    for row in ("(b) one request at a time", "(c) LLM.generate chunks", "(d) continuous feeding",
                "(e) (d) through the runner", "(f) server, concurrency            1", "(f) server, concurrency            4"):
        assert f"tiny  {row}" in done.stdout, row
    assert re.search(r"best \(c\)/\(b\) [0-9.]+x, \(d\)/\(c\) [0-9.]+x, \(e\)/\(d\) [0-9.]+x, best \(f\)/\(d\) [0-9.]+x",
                     done.stdout)
