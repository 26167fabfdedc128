"""vLLM's own engine (CPU build) behind the same job: identical greedy answers to the transformers
backend, LoRA through LoRARequest, structured output. Runs in the vLLM environment (`-m vllm`).
"""

from __future__ import annotations

import re

import pytest

from helpers import infer, records

pytestmark = pytest.mark.vllm


@pytest.mark.parametrize(
    ("model", "extra"),
    [("tiny_qwen2_5_vl", ("model.answer_regex=null",)), ("tiny_qwen2_5_vl", ()), ("tiny_llava", ())],
    ids=["qwen-free", "qwen-constrained", "llava-constrained"],
)
def test_vllm_greedy_token_ids_equal_transformers(workspace, env, model, extra):
    """Free greedy decoding, and decoding constrained to the fixtures' answer format (xgrammar in both)."""
    name = f"{model}-{'free' if extra else 'constrained'}"
    infer(workspace, env, f"hf-{name}", f"model={model}", *extra, "backend=transformers", "infer.batch_size=8")
    infer(workspace, env, f"vllm-{name}", f"model={model}", *extra, "backend=vllm", "backend.enforce_eager=true")
    hf, vllm = records(workspace, f"hf-{name}"), records(workspace, f"vllm-{name}")
    assert list(vllm.index) == list(hf.index)
    assert list(vllm["token_ids"]) == list(hf["token_ids"])
    assert list(vllm["text"]) == list(hf["text"]) and (vllm["backend"] == "vllm").all()
    assert hf["run_key"].iloc[0] != vllm["run_key"].iloc[0]  # the engine is part of what produced them


def test_vllm_lora_request_equals_transformers_adapter(workspace, env):
    free = "model.answer_regex=null"
    infer(workspace, env, "hf-lora", "model=tiny_qwen2_5_vl_lora", free, "backend=transformers", "infer.batch_size=8")
    infer(workspace, env, "vllm-lora", "model=tiny_qwen2_5_vl_lora", free, "backend=vllm", "backend.enforce_eager=true")
    hf, vllm = records(workspace, "hf-lora"), records(workspace, "vllm-lora")
    assert list(vllm["token_ids"]) == list(hf["token_ids"])


def test_structured_output_constrains_the_answer_to_the_score_format(workspace, env):
    pattern = "<score>-?0[.][0-9][0-9][0-9]</score>"
    infer(
        workspace, env, "vllm-structured", "backend=vllm", "backend.enforce_eager=true",
        f"task.answer_regex='{pattern}'", "infer.generation.max_new_tokens=24",
    )
    got = records(workspace, "vllm-structured")
    assert all(re.fullmatch(pattern, text) for text in got["text"])
    assert (got["tier"] == "tag").all() and got["answer"].between(-0.5, 1.0).all()
