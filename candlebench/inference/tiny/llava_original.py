"""A tiny checkpoint in the original haotian-liu/LLaVA layout (what ``LlavaLlamaForCausalLM`` saves;
FinLLaVA ships this way), with its CLIP tower in a directory of its own."""

from __future__ import annotations

import json
from pathlib import Path

from candlebench.inference.tiny.clip import build_tiny_clip
from candlebench.inference.tiny.llava import llama_config
from candlebench.inference.tiny.shared import SEED, TEXT_HIDDEN, VISION_HIDDEN, WEIGHT_STD, generation_config, redraw_weights

# Language models FinLLaVA-like checkpoints are built on, as their config.json (written by
# transformers 4.x) spells the rotary embedding: legacy rope_theta / rope_scaling keys.
ORIGINAL_TEXT_MODELS = {
    "llama2": {"tokenizer": "llama", "pad": "<unk>", "rope": {}},
    "llama3": {"tokenizer": "llama3", "pad": None, "rope": {"rope_theta": 500000.0, "rope_scaling": None}},
    "llama3.1": {"tokenizer": "llama3", "pad": None, "rope": {"rope_theta": 500000.0, "rope_scaling": {
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}}},
}

def build_original_llava_checkpoint(dest: Path, weights_format: str = "bin", text_model: str = "llama2") -> Path:
    """A tiny checkpoint in the original haotian-liu/LLaVA layout (what ``LlavaLlamaForCausalLM``
    saves; FinLLaVA ships this way), plus its CLIP vision tower in a separate directory.

    Layout written::

        dest/
          clip/                      full CLIPModel + preprocessor_config.json
          llava/                     config.json (model_type "llava_llama", mm_* keys,
                                     mm_vision_tower = absolute path of dest/clip),
                                     weights (2 shards + index; "bin" = pytorch_model-*.bin,
                                     "safetensors" = model-*.safetensors), Llama tokenizer without
                                     an <image> token, generation_config.json

    Keys: ``model.embed_tokens``, ``model.layers.*``, ``model.norm``, ``lm_head``,
    ``model.mm_projector.{0,2}.{weight,bias}``. ``text_model`` (:data:`ORIGINAL_TEXT_MODELS`) picks
    a Llama-2 (Vicuna, LLaVA-1.5), Llama-3 (theta 500,000, header tokens; FinLLaVA) or Llama-3.1
    (plus llama3 rope scaling) language model. Returns ``dest/llava``.
    """
    import torch
    from transformers import LlamaForCausalLM

    from candlebench.inference.tiny.tokenizer import build_tokenizer

    if weights_format not in ("bin", "safetensors"):
        raise ValueError(f"weights_format must be 'bin' or 'safetensors', got {weights_format!r}")
    torch.manual_seed(SEED)
    dest = Path(dest)
    clip_dir = build_tiny_clip(dest / "clip")
    out = dest / "llava"
    out.mkdir(parents=True, exist_ok=True)

    text = ORIGINAL_TEXT_MODELS[text_model]
    tok = build_tokenizer(text["tokenizer"])
    # The original LLaVA repo keeps the tokenizer's own vocabulary size.
    lm_config = llama_config(tok, len(tok), pad=text["pad"], tie_word_embeddings=False, **text["rope"])
    lm = LlamaForCausalLM(lm_config).to(torch.float32).eval()
    redraw_weights(lm, SEED + 3)
    state = {k: v.contiguous() for k, v in lm.state_dict().items()}
    gen = torch.Generator().manual_seed(SEED + 5)
    state["model.mm_projector.0.weight"] = torch.randn(TEXT_HIDDEN, VISION_HIDDEN, generator=gen) * WEIGHT_STD
    state["model.mm_projector.0.bias"] = torch.randn(TEXT_HIDDEN, generator=gen) * 0.02
    state["model.mm_projector.2.weight"] = torch.randn(TEXT_HIDDEN, TEXT_HIDDEN, generator=gen) * WEIGHT_STD
    state["model.mm_projector.2.bias"] = torch.randn(TEXT_HIDDEN, generator=gen) * 0.02

    _write_shards(state, out, weights_format)

    config = lm_config.to_dict()
    for drop in ("transformers_version", "dtype", "torch_dtype", "architectures", "model_type", "rope_parameters"):
        config.pop(drop, None)
    config.update(rope_theta=10000.0, rope_scaling=None)
    config.update(text["rope"])
    config.update(
        {
            "_name_or_path": "tiny-llava-v1.5-original",
            "architectures": ["LlavaLlamaForCausalLM"],
            "model_type": "llava_llama",
            "torch_dtype": "float32",
            "mm_vision_tower": str(clip_dir.resolve()),
            "mm_hidden_size": VISION_HIDDEN,
            "mm_projector_type": "mlp2x_gelu",
            "mm_vision_select_layer": -2,
            "mm_vision_select_feature": "patch",
            "mm_use_im_start_end": False,
            "mm_use_im_patch_token": False,
            "mm_patch_merge_type": "flat",
            "image_aspect_ratio": "pad",
            "freeze_mm_mlp_adapter": False,
            "tune_mm_mlp_adapter": False,
            "use_mm_proj": True,
            "tokenizer_model_max_length": 2048,
            "tokenizer_padding_side": "right",
            "transformers_version": "4.31.0",
        }
    )
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    tok.save_pretrained(out)
    generation_config(tok, [tok.eos_token]).save_pretrained(out)
    return out


def _write_shards(state: dict, out: Path, weights_format: str) -> None:
    """``state`` in two shards and their index, as ``.bin`` or ``.safetensors`` files."""
    import torch
    from safetensors.torch import save_file

    keys = sorted(state)
    half = len(keys) // 2
    shards = [keys[:half], keys[half:]]
    weight_map = {}
    total = 0
    for i, shard_keys in enumerate(shards, start=1):
        if weights_format == "bin":
            name = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
            torch.save({k: state[k] for k in shard_keys}, out / name)
        else:
            name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
            save_file({k: state[k] for k in shard_keys}, str(out / name), metadata={"format": "pt"})
        for k in shard_keys:
            weight_map[k] = name
            total += state[k].numel() * state[k].element_size()
    index_name = "pytorch_model.bin.index.json" if weights_format == "bin" else "model.safetensors.index.json"
    (out / index_name).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
