"""Tiny PEFT LoRA adapters on a tiny checkpoint, with seeded non-zero weights so they change outputs."""

from __future__ import annotations

import re
from pathlib import Path

from candlebench.inference.tiny.shared import SEED, WEIGHT_STD, rename_keys

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
        rename_keys(dest / "adapter_model.safetensors", lambda k: k.replace(".model.language_model.", ".model.", 1))
    # adapter_config.json records the absolute base path (base_model_name_or_path).
    return dest
