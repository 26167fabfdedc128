"""The tiny LLaVA-1.5 checkpoint in transformers' layout, and the Llama language model both LLaVA
layouts share (the original repo's layout: :mod:`.llava_original`)."""

from __future__ import annotations

from pathlib import Path

from candlebench.inference.tiny.clip import clip_image_processor, clip_vision_config
from candlebench.inference.tiny.shared import (
    HEAD_DIM,
    IMAGE_SIZE,
    INTERMEDIATE,
    MAX_POSITIONS,
    PATCH,
    TEXT_HEADS,
    TEXT_HIDDEN,
    TEXT_LAYERS,
    nest_vision_keys,
    random_model,
    save,
    torch_setup,
    vocab_size,
)


def llama_config(tok, vocab_size: int, pad: str | None, **extra):
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


def build_tiny_llava(dest: Path) -> Path:
    """LLaVA-1.5 style: CLIP ViT at 112 px (64 patch tokens per image, CLS dropped) + 2-layer MLP
    projector + Llama (hidden 64, 2 layers, head size 32). Vision weights are saved as
    ``model.vision_tower.vision_model.*`` (vLLM's spelling; transformers loads it too)."""
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    from candlebench.inference.tiny.tokenizer import build_tokenizer, family_tokens

    torch_setup()
    tok = build_tokenizer("llava")
    ids = tok.convert_tokens_to_ids
    tokens_per_image = (IMAGE_SIZE // PATCH) ** 2
    config = LlavaConfig(
        vision_config=clip_vision_config(),
        text_config=llama_config(tok, vocab_size(tok), pad="<pad>"),
        image_token_id=ids("<image>"),
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
        projector_hidden_act="gelu",
        image_seq_length=tokens_per_image,
        tie_word_embeddings=False,
    )
    model = random_model(LlavaForConditionalGeneration, config)
    processor = LlavaProcessor(
        image_processor=clip_image_processor(),
        tokenizer=tok,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=tok.chat_template,
        image_token="<image>",
    )
    out = save(model, processor, tok, Path(dest), family_tokens("llava")["stop"])
    nest_vision_keys(out)
    return out
