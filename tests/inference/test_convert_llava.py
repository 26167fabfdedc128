"""``candlebench.inference.convert.llava``: an original LLaVA-repo checkpoint (``LlavaLlamaForCausalLM`` + a
separate CLIP tower) converts to transformers' LLaVA layout, which reproduces the original model's
computation (checked against a forward pass assembled by hand from the original weights), loads with
``from_pretrained``, answers a two-image chat, and runs in vLLM with the same greedy tokens."""

from __future__ import annotations

import json
import shutil

import pytest


from fixtures import tiny_models as tm  # noqa: E402  (installs the torchvision glue first)

from candlebench.inference.convert.llava import ConversionError, convert_llava  # noqa: E402

# Runs in the vLLM CPU environment (`make test` runs `pytest -m vllm` there).
needs_vllm = pytest.mark.vllm
MAX_NEW = 10


@pytest.fixture(scope="module")
def original(tiny_root):
    return tm.fixture_dir("llava_original", tm.build_original_llava_checkpoint, tiny_root)


@pytest.fixture(scope="module")
def converted(original, tmp_path_factory):
    return convert_llava(original, tmp_path_factory.mktemp("conv") / "llava-hf")


@pytest.fixture(scope="module")
def images():
    return tm.test_images(2, size=(120, 80), seed=3)  # not square: exercises the "pad" preprocessing


def _prompt(model_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(model_dir).apply_chat_template(
        tm.chat_messages(), add_generation_prompt=True, tokenize=False)


def _reference_greedy(original, converted, images, steps):
    """Greedy decoding with the ORIGINAL weights, wired by hand the way haotian-liu/LLaVA does it:
    CLIP hidden states of layer ``mm_vision_select_layer`` without CLS -> mm_projector (Linear, GELU,
    Linear) -> spliced into the Llama input embeddings at each <image> position."""
    import torch
    from transformers import AutoProcessor, CLIPVisionModel, LlamaConfig, LlamaForCausalLM

    config = json.loads((original / "config.json").read_text())
    state = {}
    index = json.loads((original / "pytorch_model.bin.index.json").read_text())
    for shard in sorted(set(index["weight_map"].values())):
        state.update(torch.load(original / shard, map_location="cpu", weights_only=True))
    keys = set(LlamaConfig().to_dict())
    llama = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in config.items() if k in keys})).eval()
    llama.load_state_dict({k: v for k, v in state.items() if not k.startswith("model.mm_projector")})
    clip = CLIPVisionModel.from_pretrained(config["mm_vision_tower"], dtype=torch.float32).eval()

    def project(x):
        x = torch.nn.functional.linear(x, state["model.mm_projector.0.weight"], state["model.mm_projector.0.bias"])
        x = torch.nn.functional.gelu(x)
        return torch.nn.functional.linear(x, state["model.mm_projector.2.weight"], state["model.mm_projector.2.bias"])

    processor = AutoProcessor.from_pretrained(converted)  # preprocessing (pad to square, CLIP norm)
    prompt = _prompt(converted)
    inputs = processor(text=[prompt], images=images, return_tensors="pt")
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    ids = inputs["input_ids"][0]
    with torch.no_grad():
        hidden = clip(inputs["pixel_values"], output_hidden_states=True).hidden_states
        feats = project(hidden[config["mm_vision_select_layer"]][:, 1:])  # (images, patches, hidden)
        feats = feats.reshape(-1, feats.shape[-1])  # the processor expanded each <image> to 64 slots
        pieces, row = [], 0
        for tok in ids.tolist():
            if tok == image_id:
                pieces.append(feats[row][None])
                row += 1
            else:
                pieces.append(llama.model.embed_tokens.weight[tok][None])
        assert row == feats.shape[0]
        embeds = torch.cat(pieces)[None]
        out = []
        for _ in range(steps):
            nxt = int(llama(inputs_embeds=embeds).logits[0, -1].argmax())
            out.append(nxt)
            embeds = torch.cat([embeds, llama.model.embed_tokens.weight[nxt][None, None]], dim=1)
    return out


def test_original_layout_is_what_llava_repo_saves(original):
    config = json.loads((original / "config.json").read_text())
    assert config["model_type"] == "llava_llama"
    assert config["architectures"] == ["LlavaLlamaForCausalLM"]
    assert config["mm_projector_type"] == "mlp2x_gelu"
    index = json.loads((original / "pytorch_model.bin.index.json").read_text())
    keys = set(index["weight_map"])
    assert {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight",
            "model.mm_projector.0.weight", "model.mm_projector.2.bias"} <= keys
    assert not any("vision" in k for k in keys)
    assert "<image>" not in (original / "tokenizer.json").read_text()


def test_converted_model_reproduces_the_original_computation(original, converted, images):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(converted)
    model = AutoModelForImageTextToText.from_pretrained(converted, dtype=torch.float32).eval()
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    inputs = processor(text=[_prompt(converted)], images=images, return_tensors="pt")
    n = inputs["input_ids"].shape[1]
    with torch.no_grad():
        got = model.generate(**inputs, max_new_tokens=MAX_NEW, min_new_tokens=MAX_NEW, do_sample=False)[0, n:].tolist()
    assert got == _reference_greedy(original, converted, images, MAX_NEW)
    assert len(set(got)) >= 3


def test_converted_checkpoint_answers_a_two_image_chat(converted, images):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(converted)
    model = AutoModelForImageTextToText.from_pretrained(converted, dtype=torch.float32).eval()
    inputs = processor.apply_chat_template(tm.chat_messages(images=images), add_generation_prompt=True,
                                           tokenize=True, return_dict=True, return_tensors="pt")
    assert inputs["input_ids"][0].tolist().count(model.config.image_token_id) == 2 * 64
    text = processor.apply_chat_template(tm.chat_messages(), add_generation_prompt=True, tokenize=False)
    assert text.startswith("A chat between a curious human") and text.endswith("ASSISTANT:")
    assert "USER: <image>\n<image>\n" in text
    n = inputs["input_ids"].shape[1]
    out = model.generate(**inputs, max_new_tokens=MAX_NEW, do_sample=False)
    assert out.shape[1] > n
    info = json.loads((converted / "conversion.json").read_text())
    assert info["added_tokens"] == ["<image>", "<pad>"]


def test_safetensors_source_and_explicit_vision_tower(tmp_path):
    src = tm.build_original_llava_checkpoint(tmp_path / "orig", weights_format="safetensors")
    clip = tmp_path / "orig" / "clip"
    config = json.loads((src / "config.json").read_text())
    config["mm_vision_tower"] = "openai/clip-vit-large-patch14-336"  # a hub id, as real checkpoints say
    (src / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="openai/clip-vit-large-patch14-336"):
        convert_llava(src, tmp_path / "out")
    out = convert_llava(src, tmp_path / "out", vision_tower=clip)
    assert (out / "model.safetensors").is_file()
    with pytest.raises(ConversionError, match="not empty"):
        convert_llava(src, out, vision_tower=clip)
    convert_llava(src, out, vision_tower=clip, overwrite=True)


def test_clear_errors_name_the_path(tmp_path, original):
    with pytest.raises(ConversionError, match=str(tmp_path / "missing")):
        convert_llava(tmp_path / "missing", tmp_path / "out")
    bad = tmp_path / "anyres"
    shutil.copytree(original, bad)
    config = json.loads((bad / "config.json").read_text())
    config.update(image_aspect_ratio="anyres", mm_patch_merge_type="spatial_unpad")
    (bad / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="anyres"):
        convert_llava(bad, tmp_path / "out")
    config.update(image_aspect_ratio="pad", mm_patch_merge_type="flat")
    (bad / "config.json").write_text(json.dumps(config))
    for shard in bad.glob("pytorch_model-00002*"):
        shard.unlink()
    with pytest.raises(ConversionError, match="pytorch_model-00002-of-00002.bin"):
        convert_llava(bad, tmp_path / "out")
    with pytest.raises(ConversionError, match="vision tower directory not found"):
        convert_llava(original, tmp_path / "out", vision_tower=tmp_path / "no-clip")


@needs_vllm
def test_converted_checkpoint_runs_in_vllm(converted, images, tmp_path, env):
    prompt = _prompt(converted)
    paths = tm.save_images(images, tmp_path / "images")
    spec = {"model": str(converted), "max_tokens": MAX_NEW, "ignore_eos": False,
            "requests": [{"prompt": prompt, "images": paths}]}
    result = tm.run_vllm_generate(spec, tmp_path / "vllm", env)
    expected = tm.hf_generate(converted, [prompt], [images], MAX_NEW)
    assert result["outputs"][0]["token_ids"] == expected[0]
