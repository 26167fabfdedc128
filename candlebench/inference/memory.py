"""The GPU memory a transformers batch holds: the weights, and the KV cache of every request's
prompt and answer.

``model.gpu_batch_size`` is sized with it (a batch of 128 forecast requests for the 7-8B models
on an 80 GB GPU; docs/inference.md has the table), and the backend prints it for its first batch
on a GPU. Activations (the prefill's MLP, the vision tower's patches) come on top and pass; the
runner splits a batch that runs out of memory in halves.

KV bytes per token and layer = 2 (keys and values) x KV heads x head size x the dtype's bytes; a
sliding-window layer (Gemma 3's five of six) holds at most its window of tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GB = 1e9


@dataclass(frozen=True)
class BatchMemory:
    weights: int  # bytes
    kv_per_request: int  # bytes: every layer's keys and values over one request's tokens
    tokens: int  # per request: prompt + new tokens
    batch: int

    @property
    def kv(self) -> int:
        return self.kv_per_request * self.batch

    @property
    def total(self) -> int:
        return self.weights + self.kv

    def line(self, capacity: int | None = None) -> str:
        have = f" of the GPU's {capacity / GB:.1f} GB" if capacity else ""
        return (f"memory at batch {self.batch} x {self.tokens} tokens: weights {self.weights / GB:.1f} GB + KV cache "
                f"{self.kv / GB:.1f} GB ({self.kv_per_request / self.tokens / 1024:.0f} KiB a token) = "
                f"{self.total / GB:.1f} GB{have}, activations on top")


def kv_bytes(text: Any, tokens: int, dtype_bytes: int) -> int:
    """Keys and values of ``tokens`` tokens in every layer of the language model ``text`` (a text config)."""
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    per_token = 2 * text.num_key_value_heads * head_dim * dtype_bytes
    window = getattr(text, "sliding_window", None)
    kinds = getattr(text, "layer_types", None) or ["full_attention"] * text.num_hidden_layers
    return sum(per_token * (min(tokens, window) if kind == "sliding_attention" and window else tokens)
               for kind in kinds)


def batch_memory(model: Any, tokens: int, batch: int) -> BatchMemory:
    """What ``model`` (loaded) holds for ``batch`` requests of ``tokens`` tokens each."""
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    dtype_bytes = next(model.parameters()).element_size()
    return BatchMemory(weights, kv_bytes(model.config.get_text_config(), tokens, dtype_bytes), tokens, batch)
