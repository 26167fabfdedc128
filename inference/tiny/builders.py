"""Tiny random-weight VLM checkpoints, built from configs in seconds (no download).

Every ``build_*`` function writes a complete checkpoint directory (weights as safetensors, config,
processor, tokenizer, chat template, generation_config) that loads with ``from_pretrained``
(``AutoModelForImageTextToText`` + ``AutoProcessor``) and with vLLM's CPU build. Builds are
deterministic: the same function gives the same weights and token ids (weights are re-drawn from a
seeded generator with std :data:`WEIGHT_STD`, so greedy generations are varied rather than runs of
newlines). They are pipeline checks: ``candlebench run`` builds one when no real checkpoint is
configured, and the tests build all of them.

Sizes: text hidden 64, 2 layers, 2 heads of size 32 (vLLM's CPU attention needs head size 32/64/...),
vision depth 2 (hidden 64). Qwen2.5-VL images are capped at 112x112 pixels (<= 16 tokens each);
CLIP/SigLIP towers run at 112 px (LLaVA: 64 tokens per image, Gemma 3: 16); Gemma 4 keeps the
chart's aspect within its smallest budget (<= 70 tokens per image).
"""

from __future__ import annotations

import re

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

WEIGHT_STD = 0.2
# Bumped whenever a builder changes what it builds, so caches rebuild instead of serving an old fixture.
FIXTURE_VERSION = "2"
NORM_STD = 0.5  # Gemma 3 text norms (scale = 1 + w): re-drawn so greedy output is varied
SEED = 1234

TEXT_HIDDEN = 64
TEXT_LAYERS = 2
TEXT_HEADS = 2
HEAD_DIM = 32
INTERMEDIATE = 128
VISION_HIDDEN = 64
VISION_DEPTH = 2
VISION_HEADS = 2
IMAGE_SIZE = 112  # CLIP / SigLIP input size
PATCH = 14
MAX_POSITIONS = 4096


def _text_dims(tokenizer) -> dict:
    """The language-model sizes every family shares (one KV head: the smallest vLLM accepts)."""
    return dict(
        vocab_size=_vocab_size(tokenizer),
        hidden_size=TEXT_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=TEXT_LAYERS,
        num_attention_heads=TEXT_HEADS,
        num_key_value_heads=1,
    )


def _llama_config(tok, vocab_size: int, pad: str | None, **extra):
    """The Llama language model of both LLaVA layouts (full multi-head attention, as LLaVA-1.5)."""
    from transformers import LlamaConfig

    ids = tok.convert_tokens_to_ids
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=TEXT_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=TEXT_LAYERS,
        num_attention_heads=TEXT_HEADS,
        num_key_value_heads=TEXT_HEADS,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=ids(tok.bos_token),
        eos_token_id=ids(tok.eos_token),
        pad_token_id=None if pad is None else ids(pad),
        **extra,
    )


def _vocab_size(tokenizer) -> int:
    """Embedding rows: the tokenizer's length rounded up to a multiple of 64."""
    n = len(tokenizer)
    return ((n + 63) // 64) * 64


def redraw_weights(model, seed: int = SEED, std: float = WEIGHT_STD) -> None:
    """Re-draw every matrix (ndim >= 2: linear, conv, embedding) from N(0, std) and every bias from
    N(0, 0.02) with a seeded generator, in parameter-name order. Norm scales keep their init."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if param.ndim >= 2:
                param.copy_(torch.randn(param.shape, generator=gen, dtype=torch.float32) * std)
            elif name.endswith("bias"):
                param.copy_(torch.randn(param.shape, generator=gen, dtype=torch.float32) * 0.02)


def _generation_config(tokenizer, stop_tokens: list[str]):
    from transformers import GenerationConfig

    eos = [tokenizer.convert_tokens_to_ids(t) for t in stop_tokens]
    return GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eos if len(eos) > 1 else eos[0],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )


def _rename_vision_keys(dest: Path) -> None:
    """transformers 5.x saves CLIP / SigLIP towers inside LLaVA / Gemma 3 as
    ``vision_tower.embeddings...``; vLLM expects ``vision_tower.vision_model.embeddings...``. Rewrite
    the weights file with the nested names (transformers loads both spellings)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    path = dest / "model.safetensors"
    with safe_open(str(path), "pt") as fh:
        metadata = fh.metadata()
        tensors = {}
        for key in fh.keys():
            new = key
            for prefix in ("vision_tower.", "model.vision_tower."):
                if key.startswith(prefix) and not key.startswith(prefix + "vision_model."):
                    new = prefix + "vision_model." + key[len(prefix):]
                    break
            tensors[new] = fh.get_tensor(key)
    save_file(tensors, str(path), metadata=metadata or {"format": "pt"})


def _save(model, processor, tokenizer, dest: Path, stop_tokens: list[str]) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    model.generation_config = _generation_config(tokenizer, stop_tokens)
    model.save_pretrained(dest)
    processor.save_pretrained(dest)
    return dest


def _torch_setup():
    import torch

    torch.manual_seed(SEED)
    return torch


# --- Qwen2.5-VL ------------------------------------------------------------------------------------


def _qwen_text_ids(tok) -> dict:
    ids = tok.convert_tokens_to_ids
    return dict(bos_token_id=ids("<|endoftext|>"), eos_token_id=ids("<|im_end|>"), pad_token_id=ids("<|endoftext|>"))


def _qwen_vision_ids(tok) -> dict:
    ids = tok.convert_tokens_to_ids
    return dict(image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
                vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"))


def build_tiny_qwen2_5_vl(dest: Path) -> Path:
    """Qwen2.5-VL: text hidden 64, 2 layers, head size 32, ``mrope_section`` [4, 6, 6] (sums to 16 =
    head size / 2); vision depth 2, ``out_hidden_size`` 64; images resized to <= 112x112 pixels."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    torch = _torch_setup()
    dest = Path(dest)
    tok = build_tokenizer("qwen2_5_vl")
    text_config = dict(
        **_text_dims(tok),
        max_position_embeddings=MAX_POSITIONS,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [4, 6, 6]},
        **_qwen_text_ids(tok),
        tie_word_embeddings=False,
    )
    vision_config = dict(
        depth=VISION_DEPTH,
        hidden_size=VISION_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_heads=VISION_HEADS,
        out_hidden_size=TEXT_HIDDEN,
        patch_size=PATCH,
        spatial_merge_size=2,
        temporal_patch_size=2,
        window_size=112,
        fullatt_block_indexes=[VISION_DEPTH - 1],
    )
    config = Qwen2_5_VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        **_qwen_vision_ids(tok),
        tie_word_embeddings=False,
    )
    config.dtype = torch.float32
    model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32).eval()
    redraw_weights(model, SEED)
    size = {"shortest_edge": 28 * 28, "longest_edge": 112 * 112}
    # White maps to 0 (mean 1) and the chart's strokes to large values (std 0.25): with CLIP's
    # normalisation the mostly-white 112-px charts all looked alike to a random vision tower and
    # every chart got the same answer, so IC, Rank IC and their comparisons were never exercised.
    # This way the answers depend on the chart (tests/test_run.py checks that they vary).
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=size, image_mean=[1.0, 1.0, 1.0], image_std=[0.25, 0.25, 0.25]),
        tokenizer=tok,
        video_processor=Qwen2VLVideoProcessor(size=size),
        chat_template=tok.chat_template,
    )
    return _save(model, processor, tok, dest, family_tokens("qwen2_5_vl")["stop"])


def build_tiny_qwen3_vl(dest: Path) -> Path:
    """Qwen3-VL: the Qwen2.5-VL fixture's sizes on Qwen3-VL's own classes — text head size 32 with
    interleaved ``mrope_section`` [4, 6, 6], vision patch 16 with learned position embeddings and one
    deepstack layer; images resized to <= 128x128 pixels (<= 16 tokens each). White maps to 0, as
    in the Qwen2.5-VL fixture, so answers depend on the chart."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    torch = _torch_setup()
    dest = Path(dest)
    tok = build_tokenizer("qwen3_vl")
    text_config = dict(
        **_text_dims(tok),
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POSITIONS,
        rope_parameters={"rope_type": "default", "rope_theta": 5_000_000.0, "mrope_section": [4, 6, 6],
                         "mrope_interleaved": True},
        **_qwen_text_ids(tok),
        tie_word_embeddings=False,
    )
    vision_config = dict(
        depth=VISION_DEPTH,
        hidden_size=VISION_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_heads=VISION_HEADS,
        out_hidden_size=TEXT_HIDDEN,
        patch_size=16,
        spatial_merge_size=2,
        temporal_patch_size=2,
        num_position_embeddings=64,
        deepstack_visual_indexes=[0],
    )
    config = Qwen3VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        **_qwen_vision_ids(tok),
        tie_word_embeddings=False,
    )
    config.dtype = torch.float32
    model = Qwen3VLForConditionalGeneration(config).to(torch.float32).eval()
    redraw_weights(model, SEED + 11)
    size = {"shortest_edge": 32 * 32, "longest_edge": 128 * 128}
    image = Qwen2VLImageProcessor(size=size, patch_size=16, image_mean=[1.0, 1.0, 1.0], image_std=[0.25, 0.25, 0.25])
    processor = Qwen3VLProcessor(
        image_processor=image,
        tokenizer=tok,
        video_processor=Qwen3VLVideoProcessor(size=size, patch_size=16),
        chat_template=tok.chat_template,
    )
    return _save(model, processor, tok, dest, family_tokens("qwen3_vl")["stop"])


# --- Gemma 3 / Gemma 4 ----------------------------------------------------------------------------


def _quiet_gemma_embeddings(model, torch) -> None:
    """Gemma scales input embeddings by sqrt(hidden) and ties the output head to them: with std 0.2
    the residual stream is the input token's own embedding and greedy decoding echoes the last
    prompt token ("\\n" forever). Smaller embeddings (the per-layer ones of Gemma 4 too) and re-drawn
    text norms let the layers decide."""
    gen = torch.Generator().manual_seed(SEED + 11)
    params = sorted((kv for kv in model.named_parameters() if "language_model" in kv[0]), key=lambda kv: kv[0])
    with torch.no_grad():
        for name, param in params:
            if "embed_tokens" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.02)
        for name, param in params:
            if param.ndim == 1 and "norm" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * NORM_STD)


def build_tiny_gemma3(dest: Path) -> Path:
    """Gemma 3: SigLIP at 112 px (8x8 patches pooled to 16 tokens per image) + Gemma 3 text (hidden
    64, 2 layers: one sliding-window, one global; head size 32)."""
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
    )

    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    torch = _torch_setup()
    dest = Path(dest)
    tok = build_tokenizer("gemma3")
    ids = tok.convert_tokens_to_ids
    text_config = dict(
        **_text_dims(tok),
        head_dim=HEAD_DIM,
        query_pre_attn_scalar=HEAD_DIM,
        sliding_window=512,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=ids("<bos>"),
        eos_token_id=ids("<eos>"),
        pad_token_id=ids("<pad>"),
    )
    vision_config = dict(
        hidden_size=VISION_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=VISION_DEPTH,
        num_attention_heads=VISION_HEADS,
        image_size=IMAGE_SIZE,
        patch_size=PATCH,
        vision_use_head=False,
    )
    tokens_per_image = 16
    config = Gemma3Config(
        text_config=text_config,
        vision_config=vision_config,
        mm_tokens_per_image=tokens_per_image,
        boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"),
    )
    config.dtype = torch.float32
    model = Gemma3ForConditionalGeneration(config).to(torch.float32).eval()
    redraw_weights(model, SEED)
    _quiet_gemma_embeddings(model, torch)
    image_processor = Gemma3ImageProcessor(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        do_pan_and_scan=False,
    )
    processor = Gemma3Processor(
        image_processor=image_processor,
        tokenizer=tok,
        chat_template=tok.chat_template,
        image_seq_length=tokens_per_image,
    )
    out = _save(model, processor, tok, dest, family_tokens("gemma3")["stop"])
    _rename_vision_keys(out)
    return out


GEMMA4_VARIANTS = {
    # E4B: per-layer input embeddings (PLE) and the last layers reading the KV cache of earlier ones.
    "e4b": dict(num_hidden_layers=4, layer_types=["sliding_attention", "full_attention"] * 2,
                num_kv_shared_layers=2, hidden_size_per_layer_input=16),
    # 31B: keys reused as values on global layers, which have fewer KV heads of a larger size.
    "31b": dict(layer_types=["sliding_attention", "full_attention"], num_key_value_heads=2,
                attention_k_eq_v=True, num_global_key_value_heads=1, hidden_size_per_layer_input=0),
}


def build_tiny_gemma4(dest: Path, variant: str) -> Path:
    """Gemma 4, one of :data:`GEMMA4_VARIANTS` on the shared text sizes (sliding layers head size 32,
    global layers 64 with proportional RoPE, final logit soft-cap 30); vision: patch 16 with 2-D
    learned positions, 3x3 pooling to 70 soft tokens per image (the smallest budget the processor
    accepts). The 31B's ``use_bidirectional_attention="vision"`` is left off: vLLM's CPU build cannot
    honour it and refuses it (``inference/backends``), so the fixture could not run in both engines."""
    from transformers import (
        Gemma4AudioFeatureExtractor,
        Gemma4Config,
        Gemma4ForConditionalGeneration,
        Gemma4ImageProcessor,
        Gemma4Processor,
        Gemma4VideoProcessor,
    )

    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    torch = _torch_setup()
    dest = Path(dest)
    tok = build_tokenizer("gemma4")
    ids = tok.convert_tokens_to_ids
    text_config = {**_text_dims(tok), **GEMMA4_VARIANTS[variant]}
    if text_config["hidden_size_per_layer_input"]:
        text_config["vocab_size_per_layer_input"] = text_config["vocab_size"]
    text_config.update(
        head_dim=HEAD_DIM,
        global_head_dim=2 * HEAD_DIM,
        sliding_window=512,
        max_position_embeddings=MAX_POSITIONS,
        final_logit_softcapping=30.0,
        bos_token_id=ids("<bos>"),
        eos_token_id=ids("<eos>"),
        pad_token_id=ids("<pad>"),
    )
    vision_config = dict(
        hidden_size=VISION_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=VISION_DEPTH,
        num_attention_heads=VISION_HEADS,
        num_key_value_heads=VISION_HEADS,
        head_dim=VISION_HIDDEN // VISION_HEADS,
        patch_size=16,
        pooling_kernel_size=3,
        position_embedding_size=1024,
        default_output_length=70,  # real configs carry it; vLLM sizes its image budget from it
    )
    config = Gemma4Config(
        text_config=text_config,
        vision_config=vision_config,
        boi_token_id=ids("<|image>"),
        eoi_token_id=ids("<image|>"),
        image_token_id=ids("<|image|>"),
        video_token_id=ids("<|video|>"),
        boa_token_id=ids("<|audio>"),
        eoa_token_index=ids("<audio|>"),
        audio_token_id=ids("<|audio|>"),
    )
    config.dtype = torch.float32
    model = Gemma4ForConditionalGeneration(config).to(torch.float32).eval()
    redraw_weights(model, SEED)
    _quiet_gemma_embeddings(model, torch)
    budget = dict(patch_size=16, max_soft_tokens=70, pooling_kernel_size=3)
    processor = Gemma4Processor(
        feature_extractor=Gemma4AudioFeatureExtractor(),
        image_processor=Gemma4ImageProcessor(**budget),
        tokenizer=tok,
        video_processor=Gemma4VideoProcessor(**budget),
        chat_template=tok.chat_template,
        image_seq_length=70,
    )
    return _save(model, processor, tok, dest, family_tokens("gemma4")["stop"])


# --- LLaVA -----------------------------------------------------------------------------------------


def _clip_vision_config(**extra):
    from transformers import CLIPVisionConfig

    return CLIPVisionConfig(
        hidden_size=VISION_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=VISION_DEPTH,
        num_attention_heads=VISION_HEADS,
        image_size=IMAGE_SIZE,
        patch_size=PATCH,
        projection_dim=VISION_HIDDEN,
        **extra,
    )


def _clip_image_processor():
    from transformers import CLIPImageProcessor

    return CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
    )


def build_tiny_llava(dest: Path) -> Path:
    """LLaVA-1.5 style: CLIP ViT at 112 px (64 patch tokens per image, CLS dropped) + 2-layer MLP
    projector + Llama (hidden 64, 2 layers, head size 32). Vision weights are saved as
    ``model.vision_tower.vision_model.*`` (vLLM's spelling; transformers loads it too)."""
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    torch = _torch_setup()
    dest = Path(dest)
    tok = build_tokenizer("llava")
    ids = tok.convert_tokens_to_ids
    text_config = _llama_config(tok, _vocab_size(tok), pad="<pad>")
    tokens_per_image = (IMAGE_SIZE // PATCH) ** 2
    config = LlavaConfig(
        vision_config=_clip_vision_config(),
        text_config=text_config,
        image_token_id=ids("<image>"),
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        projector_hidden_act="gelu",
        image_seq_length=tokens_per_image,
        tie_word_embeddings=False,
    )
    config.dtype = torch.float32
    model = LlavaForConditionalGeneration(config).to(torch.float32).eval()
    redraw_weights(model, SEED)
    processor = LlavaProcessor(
        image_processor=_clip_image_processor(),
        tokenizer=tok,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=tok.chat_template,
        image_token="<image>",
    )
    out = _save(model, processor, tok, dest, family_tokens("llava")["stop"])
    _rename_vision_keys(out)
    return out


# --- LoRA ------------------------------------------------------------------------------------------

LORA_RANK = 8
LORA_ALPHA = 16
LORA_TARGETS = ["q_proj", "v_proj"]  # only the language model has these names (vision: qkv / proj)


def build_tiny_lora(base: Path, dest: Path, seed: int = SEED + 1, legacy_keys: bool = False,
                    vision: bool = False, connector: str | None = None) -> Path:
    """A PEFT LoRA adapter (rank 8, alpha 16) on the language model's q/v projections of the model
    in ``base`` (the Qwen2.5-VL fixture), with seeded non-zero A and B (std 0.2), so the adapter
    changes greedy outputs. Writes ``adapter_config.json`` + ``adapter_model.safetensors``.

    Keys are ``base_model.model.model.language_model.layers.N...`` (transformers >= 4.52 naming);
    ``legacy_keys=True`` writes ``base_model.model.model.layers.N...`` instead, as adapters trained
    with older transformers (e.g. the PyFi-QwenVL ones) ship. ``vision=True`` also targets the vision
    tower's attention (``qkv``), as an adapter trained with the vision tower unfrozen is. ``connector``
    also targets that module (e.g. Gemma 4's ``embed_vision.embedding_projection``), as an adapter
    trained with the projector unfrozen is; the q/v targets are then the language model's alone
    (Gemma 4's vision tower has q_proj too, in a layer type PEFT cannot wrap)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    base, dest = Path(base), Path(dest)
    model = AutoModelForImageTextToText.from_pretrained(base, dtype=torch.float32)
    config = LoraConfig(
        r=LORA_RANK,
        lora_alpha=LORA_ALPHA,
        lora_dropout=0.0,
        target_modules=(rf".*language_model.*\.({'|'.join(LORA_TARGETS)})|.*\.{re.escape(connector)}" if connector
                        else list(LORA_TARGETS) + (["qkv"] if vision else [])),
        bias="none",
    )
    peft_model = get_peft_model(model, config)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(peft_model.named_parameters(), key=lambda kv: kv[0]):
            if "lora_A" in name or "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * WEIGHT_STD)
    dest.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(dest)
    if legacy_keys:
        from safetensors import safe_open
        from safetensors.torch import save_file

        path = dest / "adapter_model.safetensors"
        with safe_open(str(path), "pt") as fh:
            meta = fh.metadata()
            tensors = {k.replace(".model.language_model.", ".model.", 1): fh.get_tensor(k) for k in fh.keys()}
        save_file(tensors, str(path), metadata=meta or {"format": "pt"})
    # adapter_config.json records the absolute base path (base_model_name_or_path).
    return dest


# --- original LLaVA-repo layout ----------------------------------------------------------------------


def build_tiny_clip(dest: Path) -> Path:
    """A full tiny CLIP checkpoint (text + vision towers, ``CLIPModel``), laid out like
    ``openai/clip-vit-large-patch14-336`` (the tower original LLaVA checkpoints reference)."""
    from transformers import CLIPConfig, CLIPModel

    torch = _torch_setup()
    dest = Path(dest)
    vision = _clip_vision_config().to_dict()
    text = dict(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=32, projection_dim=VISION_HIDDEN,
                bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=VISION_HIDDEN)
    model = CLIPModel(config).to(torch.float32).eval()
    redraw_weights(model, SEED + 7)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    _clip_image_processor().save_pretrained(dest)
    return dest


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
    from safetensors.torch import save_file
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
    llama_config = _llama_config(tok, len(tok), pad=text["pad"], tie_word_embeddings=False, **text["rope"])
    lm = LlamaForCausalLM(llama_config).to(torch.float32).eval()
    redraw_weights(lm, SEED + 3)
    state = {k: v.contiguous() for k, v in lm.state_dict().items()}
    gen = torch.Generator().manual_seed(SEED + 5)
    state["model.mm_projector.0.weight"] = torch.randn(TEXT_HIDDEN, VISION_HIDDEN, generator=gen) * WEIGHT_STD
    state["model.mm_projector.0.bias"] = torch.randn(TEXT_HIDDEN, generator=gen) * 0.02
    state["model.mm_projector.2.weight"] = torch.randn(TEXT_HIDDEN, TEXT_HIDDEN, generator=gen) * WEIGHT_STD
    state["model.mm_projector.2.bias"] = torch.randn(TEXT_HIDDEN, generator=gen) * 0.02

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

    config = llama_config.to_dict()
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
    _generation_config(tok, [tok.eos_token]).save_pretrained(out)
    return out


# --- session cache ---------------------------------------------------------------------------------

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_5_vl": build_tiny_qwen2_5_vl,
    "qwen3_vl": build_tiny_qwen3_vl,
    "gemma3": build_tiny_gemma3,
    "gemma4_e4b": lambda dest: build_tiny_gemma4(dest, "e4b"),
    "gemma4_31b": lambda dest: build_tiny_gemma4(dest, "31b"),
    "llava": build_tiny_llava,
    "llava_original": build_original_llava_checkpoint,
}


def fixture_dir(name: str, builder: Callable[[Path], Path], root: Path) -> Path:
    """Build ``builder`` once into ``root/name`` and return the directory the builder returned.

    A finished build is marked by ``root/name/.built`` (the returned path relative to ``root/name``,
    then :data:`FIXTURE_VERSION`); an unfinished or outdated one is removed and rebuilt. Builds go to a temporary sibling first
    and are renamed into place, so concurrent sessions (pytest-xdist workers) never see half a
    checkpoint."""
    root = Path(root)
    final = root / name
    marker = final / ".built"
    if marker.is_file() and marker.read_text().split("\n")[1:2] == [FIXTURE_VERSION]:
        return final / marker.read_text().split("\n")[0]
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        built = Path(builder(tmp / "out")).resolve()
        rel = built.relative_to((tmp / "out").resolve())
        _rewrite_paths(tmp / "out", str((tmp / "out").resolve()), str(final.resolve()))
        (tmp / "out" / ".built").write_text(f"{rel}\n{FIXTURE_VERSION}\n")
        try:
            os.rename(tmp / "out", final)
        except OSError:
            if not marker.is_file() or marker.read_text().split("\n")[1:2] != [FIXTURE_VERSION]:
                shutil.rmtree(final, ignore_errors=True)  # an unfinished or outdated build in the cache
                os.rename(tmp / "out", final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / marker.read_text().split("\n")[0]


def _rewrite_paths(directory: Path, old: str, new: str) -> None:
    """Absolute paths written into JSON files during a build (``mm_vision_tower``,
    ``base_model_name_or_path``) point into the temporary build folder: point them at the final one."""
    for path in directory.rglob("*.json"):
        text = path.read_text()
        if old in text:
            path.write_text(text.replace(old, new))


# Adapters are built on top of a base checkpoint: name -> builder(base, dest).
ADAPTER_BUILDERS: dict[str, Callable[[Path, Path], Path]] = {
    "lora": build_tiny_lora,
    "lora_vision": lambda base, dest: build_tiny_lora(base, dest, seed=SEED + 2, vision=True),
    # Gemma 4 fixtures only: the multimodal projector too.
    "lora_connector": lambda base, dest: build_tiny_lora(base, dest, seed=SEED + 3,
                                                         connector="embed_vision.embedding_projection"),
}
