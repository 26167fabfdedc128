"""Tiny Gemma 3 and Gemma 4 checkpoints: SigLIP-style towers, Gemma text on the shared sizes, and
quiet embeddings (Gemma's scaled, tied embeddings otherwise echo the prompt)."""

from __future__ import annotations

from pathlib import Path

from candlebench.inference.tiny.shared import (
    HEAD_DIM,
    IMAGE_SIZE,
    MAX_POSITIONS,
    NORM_STD,
    PATCH,
    SEED,
    VISION_HEADS,
    VISION_HIDDEN,
    nest_vision_keys,
    random_model,
    save,
    text_dims,
    torch_setup,
    vision_dims,
    vocab_size,
)


def _quiet_embeddings(model, torch) -> None:
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


def _text_config(tok, **extra) -> dict:
    """Gemma text on the shared sizes: head size 32, a 512-token sliding window, Gemma's special ids."""
    ids = tok.convert_tokens_to_ids
    return {**text_dims(tok), **extra, "head_dim": HEAD_DIM, "sliding_window": 512,
            "max_position_embeddings": MAX_POSITIONS,
            "bos_token_id": ids("<bos>"), "eos_token_id": ids("<eos>"), "pad_token_id": ids("<pad>")}


def _quiet_model(model_class, config):
    """The random model with Gemma's embeddings and text norms quietened (:func:`_quiet_embeddings`)."""
    import torch

    model = random_model(model_class, config)
    _quiet_embeddings(model, torch)
    return model


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

    torch_setup()
    tok = build_tokenizer("gemma3")
    ids = tok.convert_tokens_to_ids
    tokens_per_image = 16
    config = Gemma3Config(
        text_config=_text_config(tok, query_pre_attn_scalar=HEAD_DIM, layer_types=["sliding_attention", "full_attention"]),
        vision_config=dict(**vision_dims(), image_size=IMAGE_SIZE, patch_size=PATCH, vision_use_head=False),
        mm_tokens_per_image=tokens_per_image,
        boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"),
    )
    model = _quiet_model(Gemma3ForConditionalGeneration, config)
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
    out = save(model, processor, tok, Path(dest), family_tokens("gemma3")["stop"])
    nest_vision_keys(out)
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

    torch_setup()
    tok = build_tokenizer("gemma4")
    ids = tok.convert_tokens_to_ids
    variant_config = GEMMA4_VARIANTS[variant]
    if variant_config["hidden_size_per_layer_input"]:
        variant_config = {**variant_config, "vocab_size_per_layer_input": vocab_size(tok)}
    vision_config = dict(
        **vision_dims(),
        num_key_value_heads=VISION_HEADS,
        head_dim=VISION_HIDDEN // VISION_HEADS,
        patch_size=16,
        pooling_kernel_size=3,
        position_embedding_size=1024,
        default_output_length=70,  # real configs carry it; vLLM sizes its image budget from it
    )
    config = Gemma4Config(
        text_config=_text_config(tok, **variant_config, global_head_dim=2 * HEAD_DIM, final_logit_softcapping=30.0),
        vision_config=vision_config,
        boi_token_id=ids("<|image>"),
        eoi_token_id=ids("<image|>"),
        image_token_id=ids("<|image|>"),
        video_token_id=ids("<|video|>"),
        boa_token_id=ids("<|audio>"),
        eoa_token_index=ids("<audio|>"),
        audio_token_id=ids("<|audio|>"),
    )
    model = _quiet_model(Gemma4ForConditionalGeneration, config)
    budget = dict(patch_size=16, max_soft_tokens=70, pooling_kernel_size=3)
    processor = Gemma4Processor(
        feature_extractor=Gemma4AudioFeatureExtractor(),
        image_processor=Gemma4ImageProcessor(**budget),
        tokenizer=tok,
        video_processor=Gemma4VideoProcessor(**budget),
        chat_template=tok.chat_template,
        image_seq_length=70,
    )
    return save(model, processor, tok, Path(dest), family_tokens("gemma4")["stop"])
