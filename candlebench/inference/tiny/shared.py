"""What every tiny checkpoint family shares: the sizes, the seeded weight re-draw, the generation
config and the save, and the rewrite of a safetensors file's keys.

Sizes: text hidden 64, 2 layers, 2 heads of size 32 (vLLM's CPU attention needs head size 32/64/...),
vision depth 2 (hidden 64). Weights are re-drawn from a seeded generator with std :data:`WEIGHT_STD`,
so builds are deterministic and greedy generations are varied rather than runs of newlines.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

WEIGHT_STD = 0.2
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


def text_dims(tokenizer) -> dict:
    """The language-model sizes every family shares (one KV head: the smallest vLLM accepts)."""
    return dict(
        vocab_size=vocab_size(tokenizer),
        hidden_size=TEXT_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=TEXT_LAYERS,
        num_attention_heads=TEXT_HEADS,
        num_key_value_heads=1,
    )


def vision_dims() -> dict:
    """The vision-tower sizes of the CLIP / SigLIP-style towers (Gemma 3 and 4, LLaVA, CLIP)."""
    return dict(
        hidden_size=VISION_HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=VISION_DEPTH,
        num_attention_heads=VISION_HEADS,
    )


def vocab_size(tokenizer) -> int:
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


def torch_setup():
    import torch

    torch.manual_seed(SEED)
    return torch


def random_model(model_class, config, seed: int = SEED):
    """``model_class(config)`` in float32, in eval mode, its weights re-drawn from ``seed``."""
    import torch

    config.dtype = torch.float32
    model = model_class(config).to(torch.float32).eval()
    redraw_weights(model, seed)
    return model


def generation_config(tokenizer, stop_tokens: list[str]):
    from transformers import GenerationConfig

    eos = [tokenizer.convert_tokens_to_ids(t) for t in stop_tokens]
    return GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eos if len(eos) > 1 else eos[0],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )


def save(model, processor, tokenizer, dest: Path, stop_tokens: list[str]) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    model.generation_config = generation_config(tokenizer, stop_tokens)
    model.save_pretrained(dest)
    processor.save_pretrained(dest)
    return dest


def rename_keys(path: Path, rename: Callable[[str], str]) -> None:
    """Rewrite the safetensors file ``path`` with each key renamed by ``rename`` (metadata kept)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), "pt") as fh:
        metadata = fh.metadata()
        tensors = {rename(key): fh.get_tensor(key) for key in fh.keys()}
    save_file(tensors, str(path), metadata=metadata or {"format": "pt"})


def nest_vision_keys(dest: Path) -> None:
    """transformers 5.x saves CLIP / SigLIP towers inside LLaVA / Gemma 3 as
    ``vision_tower.embeddings...``; vLLM expects ``vision_tower.vision_model.embeddings...``. Rewrite
    the weights file with the nested names (transformers loads both spellings)."""
    def nested(key: str) -> str:
        for prefix in ("vision_tower.", "model.vision_tower."):
            if key.startswith(prefix) and not key.startswith(prefix + "vision_model."):
                return prefix + "vision_model." + key[len(prefix):]
        return key

    rename_keys(dest / "model.safetensors", nested)
