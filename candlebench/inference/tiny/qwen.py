"""Tiny Qwen2.5-VL and Qwen3-VL checkpoints: the same sizes on each family's own classes.

White maps to 0 (mean 1) and the chart's strokes to large values (std 0.25): with CLIP's
normalisation the mostly-white small charts all looked alike to a random vision tower and every
chart got the same answer, so IC, Rank IC and their comparisons were never exercised. This way the
answers depend on the chart (tests/test_run.py checks that they vary).
"""

from __future__ import annotations

from pathlib import Path

from candlebench.inference.tiny.shared import (
    HEAD_DIM,
    INTERMEDIATE,
    MAX_POSITIONS,
    PATCH,
    SEED,
    TEXT_HIDDEN,
    VISION_DEPTH,
    VISION_HEADS,
    VISION_HIDDEN,
    random_model,
    save,
    text_dims,
    torch_setup,
)

_WHITE_IS_ZERO = dict(image_mean=[1.0, 1.0, 1.0], image_std=[0.25, 0.25, 0.25])


def _text_config(tok, rope: dict, **extra) -> dict:
    ids = tok.convert_tokens_to_ids
    return dict(**text_dims(tok), **extra, max_position_embeddings=MAX_POSITIONS,
                rope_parameters={"rope_type": "default", **rope},
                bos_token_id=ids("<|endoftext|>"), eos_token_id=ids("<|im_end|>"), pad_token_id=ids("<|endoftext|>"),
                tie_word_embeddings=False)


def _vision_config(**extra) -> dict:
    return dict(depth=VISION_DEPTH, hidden_size=VISION_HIDDEN, intermediate_size=INTERMEDIATE, num_heads=VISION_HEADS,
                out_hidden_size=TEXT_HIDDEN, spatial_merge_size=2, temporal_patch_size=2, **extra)


def _checkpoint(family: str, dest: Path, config_class, model_class, text_config: dict, vision_config: dict,
                seed: int, processor) -> Path:
    """Build and save one Qwen checkpoint; ``processor(tok)`` makes its processor."""
    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    tok = build_tokenizer(family)
    ids = tok.convert_tokens_to_ids
    config = config_class(
        text_config=_text_config(tok, **text_config),
        vision_config=vision_config,
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )
    model = random_model(model_class, config, seed)
    return save(model, processor(tok), tok, Path(dest), family_tokens(family)["stop"])


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

    torch_setup()
    size = {"shortest_edge": 28 * 28, "longest_edge": 112 * 112}
    return _checkpoint(
        "qwen2_5_vl", dest, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration,
        dict(rope={"rope_theta": 1_000_000.0, "mrope_section": [4, 6, 6]}),
        _vision_config(patch_size=PATCH, window_size=112, fullatt_block_indexes=[VISION_DEPTH - 1]),
        SEED,
        lambda tok: Qwen2_5_VLProcessor(
            image_processor=Qwen2VLImageProcessor(size=size, **_WHITE_IS_ZERO),
            tokenizer=tok,
            video_processor=Qwen2VLVideoProcessor(size=size),
            chat_template=tok.chat_template,
        ))


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

    torch_setup()
    size = {"shortest_edge": 32 * 32, "longest_edge": 128 * 128}
    return _checkpoint(
        "qwen3_vl", dest, Qwen3VLConfig, Qwen3VLForConditionalGeneration,
        dict(rope={"rope_theta": 5_000_000.0, "mrope_section": [4, 6, 6], "mrope_interleaved": True},
             head_dim=HEAD_DIM),
        _vision_config(patch_size=16, num_position_embeddings=64, deepstack_visual_indexes=[0]),
        SEED + 11,
        lambda tok: Qwen3VLProcessor(
            image_processor=Qwen2VLImageProcessor(size=size, patch_size=16, **_WHITE_IS_ZERO),
            tokenizer=tok,
            video_processor=Qwen3VLVideoProcessor(size=size, patch_size=16),
            chat_template=tok.chat_template,
        ))
