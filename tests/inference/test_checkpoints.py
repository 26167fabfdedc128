"""Every named checkpoint family loads as it was trained, or refuses: a user's directory is never
written, FinLLaVA-like Llama-3 / Llama-3.1 checkpoints convert with their rotary embedding (checked
against a reference transformers builds from the original files, not through the converter's
filter), the other projector types convert exactly, merged adapters save under the base's key
names, and an adapter that touches the vision tower is merged for vLLM, never dropped."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures import tiny_models as tm  # noqa: E402  (installs the torchvision glue first)
from candlebench.core.errors import UserError
from helpers import infer
from candlebench.inference.backends import AdapterMismatch, adapter_vision_modules, served_model
from candlebench.inference.convert.llava import LLAMA3_SYSTEM, ConversionError, convert_llava
from candlebench.inference.models import ModelSpec


def test_a_directory_you_name_is_never_written_or_deleted(workspace, env, tmp_path):
    mine = tmp_path / "my-checkpoint"
    mine.mkdir()
    (mine / "notes.txt").write_text("three weeks of fine-tuning")
    done = infer(workspace, env, "mine", "model=tiny_qwen2_5_vl", f"model.path={mine}", check=False)
    assert done.returncode != 0 and f"checkpoint {mine}: directory has no config.json" in done.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "three weeks of fine-tuning"


def test_a_thinking_chat_template_must_be_told_which_way_and_the_run_key_says_so(workspace, env, tmp_path):
    import shutil

    from helpers import records

    fixture = Path(env["CANDLEBENCH_CACHE"]) / "fixtures" / "tiny_qwen2_5_vl"
    infer(workspace, env, "plain", "model=tiny_qwen2_5_vl")  # builds the fixture if this worker has not
    thinking = tmp_path / "thinking"
    shutil.copytree(fixture, thinking)
    template = thinking / "chat_template.jinja"
    template.write_text(template.read_text() + "{% if add_generation_prompt and enable_thinking is defined "
                        "and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}")
    mine = ["model=tiny_qwen2_5_vl", f"model.path={thinking}"]
    undecided = infer(workspace, env, "t", *mine, check=False)
    assert undecided.returncode != 0 and "thinks unless told otherwise" in undecided.stderr
    assert "Traceback" not in undecided.stderr
    short = infer(workspace, env, "t", *mine, "+model.chat_template_kwargs.enable_thinking=true", check=False)
    assert short.returncode != 0 and "would cut the reasoning block" in short.stderr
    infer(workspace, env, "t", *mine, "+model.chat_template_kwargs.enable_thinking=false")
    info = json.loads((workspace / "forecast" / "runs" / "t" / "run.json").read_text())
    assert info["identity"]["model"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert records(workspace, "t")["run_key"].iloc[0] != records(workspace, "plain")["run_key"].iloc[0]


def test_a_template_that_opens_the_reasoning_block_itself_gets_a_budget_and_its_cuts_are_flagged(workspace, env, tmp_path):
    """Qwen3-VL-Thinking's template ends the generation prompt with ``<think>`` and has no switch: the
    model's text holds no opening tag, so a cut reasoning block used to pass for an answer."""
    import shutil

    import pandas as pd

    from helpers import cli, records, run_dir
    from candlebench.task_api.base import REASONING_CUT

    fixture = Path(env["CANDLEBENCH_CACHE"]) / "fixtures" / "tiny_qwen2_5_vl"
    infer(workspace, env, "plain", "model=tiny_qwen2_5_vl")  # builds the fixture if this worker has not
    opens = tmp_path / "opens-thinking"
    shutil.copytree(fixture, opens)
    template = opens / "chat_template.jinja"
    template.write_text(template.read_text() + "{% if add_generation_prompt %}<think>\n{% endif %}")
    mine = ["model=tiny_qwen2_5_vl", f"model.path={opens}"]
    short = infer(workspace, env, "opens", *mine, check=False)
    assert short.returncode != 0 and "opens a reasoning block in the prompt" in short.stderr
    assert "Traceback" not in short.stderr
    assert not (workspace / "forecast" / "runs" / "opens").exists()  # refused before a first answer: no empty run left
    # The tiny model's answer regex ends every answer after its <score> tag, inside the block.
    infer(workspace, env, "opens", *mine, "model.max_new_tokens=1024")
    texts = records(workspace, "opens")["text"]
    assert texts.str.startswith("<think>\n").all() and not texts.str.contains("</think>").any()
    cli("score", f"out_dir={workspace}", "data=slice", "data.codes=[AC,ALI,PHN,SM]", "score.run=opens", "score.n_boot=0",
        env=env)
    parsed = pd.read_parquet(run_dir(workspace, "opens") / "parsed.parquet")
    assert parsed["reason"].str.contains(REASONING_CUT, regex=False).all()
    metrics = json.loads((run_dir(workspace, "opens") / "metrics.json").read_text())
    assert metrics["n_reasoning_cut"] == len(parsed) > 0


def _text_logits(model, ids):
    import torch

    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0]


@pytest.mark.parametrize("text_model", ["llama3", "llama3.1"])
def test_finllava_like_llama3_checkpoints_keep_their_rotary_embedding(tmp_path, text_model):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor, LlamaForCausalLM

    src = tm.build_original_llava_checkpoint(tmp_path / "orig", text_model=text_model)
    original = json.loads((src / "config.json").read_text())
    assert original["rope_theta"] == 500000.0 and "rope_parameters" not in original  # as 4.x wrote it
    out = convert_llava(src, tmp_path / "hf")
    converted = AutoModelForImageTextToText.from_pretrained(out, dtype=torch.float32).eval()
    # The reference: transformers' own Llama, straight from the original folder (its config.json,
    # its weights; the projector keys are ignored) — no converter code on this side.
    reference = LlamaForCausalLM.from_pretrained(src, dtype=torch.float32).eval()
    assert reference.config.rope_parameters["rope_theta"] == 500000.0
    ids = list(range(5, 205))
    want = _text_logits(reference, ids)
    got = _text_logits(converted, ids)[:, : want.shape[1]]
    assert torch.allclose(got, want, atol=1e-4), float((got - want).abs().max())
    assert (got.argmax(-1) == want.argmax(-1)).all()

    # The Llama-3 conversation: a system turn, the images first, and <|eot_id|> ends the answer.
    processor = AutoProcessor.from_pretrained(out)
    text = processor.apply_chat_template(tm.chat_messages(), add_generation_prompt=True, tokenize=False)
    assert text.startswith(f"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n{LLAMA3_SYSTEM}<|eot_id|>")
    assert "<|start_header_id|>user<|end_header_id|>\n\n<image>\n<image>\n" in text
    assert text.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    eos = json.loads((out / "generation_config.json").read_text())["eos_token_id"]
    assert processor.tokenizer.convert_tokens_to_ids("<|eot_id|>") in eos


@pytest.mark.parametrize("projector", ["linear", "mlp1x_gelu", "identity"])
def test_other_projector_types_convert_to_the_same_computation(tmp_path, projector):
    import torch
    from transformers import AutoModelForImageTextToText

    src = tm.build_original_llava_checkpoint(tmp_path / "orig", weights_format="safetensors")
    from safetensors.torch import load_file, save_file

    config = json.loads((src / "config.json").read_text())
    files = sorted(src.glob("model-*.safetensors"))
    state = {}
    for f in files:
        state.update(load_file(str(f)))
    hidden = config["hidden_size"]
    for key in [k for k in state if k.startswith("model.mm_projector.")]:
        del state[key]
    gen = torch.Generator().manual_seed(1)
    if projector == "linear":
        w, b = torch.randn(hidden, config["mm_hidden_size"], generator=gen) * 0.2, torch.randn(hidden, generator=gen) * 0.02
        state["model.mm_projector.weight"], state["model.mm_projector.bias"] = w, b
    elif projector == "mlp1x_gelu":
        w, b = torch.randn(hidden, config["mm_hidden_size"], generator=gen) * 0.2, torch.randn(hidden, generator=gen) * 0.02
        state["model.mm_projector.0.weight"], state["model.mm_projector.0.bias"] = w, b
    assert config["mm_hidden_size"] == hidden  # the tiny CLIP is as wide as the tiny Llama: identity fits
    config["mm_projector_type"] = projector
    (src / "config.json").write_text(json.dumps(config))
    for f in files:
        f.unlink()
    (src / "model.safetensors.index.json").unlink()
    save_file(state, str(src / "model.safetensors"), metadata={"format": "pt"})
    out = convert_llava(src, tmp_path / "hf")
    model = AutoModelForImageTextToText.from_pretrained(out, dtype=torch.float32).eval()
    x = torch.randn(3, 7, config["mm_hidden_size"], generator=gen)
    with torch.no_grad():
        got = model.model.multi_modal_projector(x)
    want = x if projector == "identity" else torch.nn.functional.linear(x, w, b)
    assert torch.allclose(got, want, atol=1e-6)

    config["mm_projector_type"] = "mlp3x_gelu"
    (src / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="at most two linear layers"):
        convert_llava(src, tmp_path / "hf3")


@pytest.fixture(scope="module")
def adapters(env, tiny_root):
    from candlebench.inference.tiny.builders import ADAPTER_BUILDERS, build_tiny_qwen2_5_vl, fixture_dir

    base = fixture_dir("tiny_qwen2_5_vl", build_tiny_qwen2_5_vl, tiny_root)
    return base, {name: fixture_dir(f"a-{name}", lambda d, n=name: ADAPTER_BUILDERS[n](base, d), tiny_root)
                  for name in ("lora", "lora_vision")}


def test_vision_touching_adapters_are_merged_for_vllm_and_left_alone_otherwise(adapters):
    base, built = adapters
    assert adapter_vision_modules(base, built["lora_vision"]) and not adapter_vision_modules(base, built["lora"])
    vision = ModelSpec(name="v", path=str(base), adapter=str(built["lora_vision"]))
    assert served_model("vllm", vision).merge_adapter is True
    assert served_model("transformers", vision).merge_adapter is False  # transformers runs it as trained
    plain = ModelSpec(name="l", path=str(base), adapter=str(built["lora"]))
    assert served_model("vllm", plain).merge_adapter is True  # the backend's choice: merged, at base speed
    assert served_model("vllm", replace(plain, merge_adapter=False)).merge_adapter is False  # asked unmerged
    assert served_model("vllm", ModelSpec(name="b", path=str(base))).merge_adapter is False  # nothing to merge


def test_a_connector_adapter_is_vision_side_by_the_models_own_module_tree(env, tiny_root):
    """Gemma 4's projector is ``embed_vision``, a name no pattern of vision modules knew: vLLM logged
    "embed_vision.embedding_projection will be ignored" and ran the adapter without it. Decided
    from the module tree, it is outside the language model, and the adapter is merged for vLLM."""
    import shutil

    from safetensors import safe_open
    from safetensors.torch import save_file

    from candlebench.inference.tiny.builders import ADAPTER_BUILDERS, BUILDERS, fixture_dir

    base = fixture_dir("tiny_gemma4_e4b", BUILDERS["gemma4_e4b"], tiny_root)
    adapter = fixture_dir("a-gemma4-connector", lambda d: ADAPTER_BUILDERS["lora_connector"](base, d), tiny_root)
    assert adapter_vision_modules(base, adapter) == ["model.embed_vision.embedding_projection"]
    spec = ModelSpec(name="g", path=str(base), adapter=str(adapter), merge_adapter=False)
    assert served_model("vllm", spec).merge_adapter is True
    assert served_model("transformers", spec).merge_adapter is False
    # Weights that name no module of the model would be dropped by any backend: refused.
    stray = tiny_root / "a-gemma4-stray"
    shutil.copytree(adapter, stray, dirs_exist_ok=True)
    path = stray / "adapter_model.safetensors"
    with safe_open(str(path), "pt") as fh:
        tensors = {k.replace("embed_vision.embedding_projection", "embed_vision.no_such_projection"): fh.get_tensor(k)
                   for k in fh.keys()}
    save_file(tensors, str(path), metadata={"format": "pt"})
    with pytest.raises(AdapterMismatch, match="do not fit"):
        adapter_vision_modules(base, stray)


def test_unmerged_lora_is_padded_only_to_the_rank_vllm_needs():
    from candlebench.inference.backends.vllm import lora_rank

    assert [lora_rank(r) for r in (1, 2, 8, 9, 64, 65, 300, 512)] == [1, 8, 8, 16, 64, 128, 320, 512]
    with pytest.raises(UserError, match="exceeds vLLM's largest max_lora_rank 512"):
        lora_rank(513)


def test_merged_adapters_save_under_the_base_checkpoints_key_names(adapters, tmp_path, monkeypatch):
    from safetensors import safe_open

    import candlebench.inference.vision_speedups as vs
    from candlebench.inference.backends.vllm import merged_checkpoint

    # the vision speed-ups stay out of the saved copy: the tiny's MLP width 128 padded as 3,420 would be
    monkeypatch.setattr(vs, "MLP_MULTIPLE", 96)
    base, built = adapters
    spec = ModelSpec(name="m", path=str(base), adapter=str(built["lora"]), merge_adapter=True, dtype="float32")
    merged = merged_checkpoint(spec, tmp_path)
    with safe_open(str(merged / "model.safetensors"), "pt") as fh:
        merged_keys = set(fh.keys())
        shapes = {k: fh.get_slice(k).get_shape() for k in merged_keys}
    with safe_open(str(Path(base) / "model.safetensors"), "pt") as fh:
        assert merged_keys == set(fh.keys())
        assert shapes == {k: fh.get_slice(k).get_shape() for k in merged_keys}
    # A broken copy cached by an earlier version (adapter-wrapped keys) is rebuilt, not served.
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(merged / "model.safetensors"))
    save_file({f"base_model.model.{k}": v for k, v in tensors.items()}, str(merged / "model.safetensors"))
    again = merged_checkpoint(spec, tmp_path)
    with safe_open(str(again / "model.safetensors"), "pt") as fh:
        assert set(fh.keys()) == merged_keys


def test_gemma4_bidirectional_vision_attention_is_refused_on_vllm_cpu_and_warned_on_gpu(tmp_path, capsys):
    from transformers import Gemma4Config

    from candlebench.inference.backends.vllm import UnsupportedAttention, check_attention_supported

    for mode, folder in ((None, "causal"), ("vision", "bidirectional")):
        config = Gemma4Config()
        config.text_config.use_bidirectional_attention = mode
        config.save_pretrained(tmp_path / folder)
    check_attention_supported(tmp_path / "causal", on_gpu=False)  # nothing to refuse
    with pytest.raises(UnsupportedAttention, match="runs it causally"):
        check_attention_supported(tmp_path / "bidirectional", on_gpu=False)
    check_attention_supported(tmp_path / "bidirectional", on_gpu=True)
    assert "use_bidirectional_attention='vision'" in capsys.readouterr().err
