"""Grouped-query decode attention for the language model: no copy of the KV cache per step.

Qwen2.5-VL-7B has 28 query heads over 4 KV heads (7 per KV head). transformers' SDPA path hands
the kernel its grouped-query form (``enable_gqa``) only without a mask; with one (a static cache,
any left-padded batch: every real batch of mixed prompt lengths) it expands the cache with
``repeat_kv``, a copy of every layer's keys and values 7 times over, each decode step: ~119 GB a
step at batch 64 against a ~6 ms memory floor of 14 GB of weights (H200).

:data:`GROUPED` does the same attention without the copy when one token is decoded: the query
heads that share a KV head become that many query rows of one head, ``(batch, kv_heads, groups,
head_dim)``, attended in one SDPA call over the unexpanded cache. The mask ``(batch, 1, 1, keys)``
broadcasts over the rows as it did over the heads, so each row's softmax is over the same keys
with the same mask as before: the same sums (tested on the tiny fixtures: greedy tokens equal,
logits within 1e-5 in fp32). A prefill (many query positions, each with its own causal row) and
anything the plain path does that this one does not (dropout, a soft cap, a position bias) go to
transformers' own SDPA path unchanged.

Its mask function is transformers' SDPA mask, except that for one query position it always
builds the mask (a ``(batch, 1, 1, keys)`` comparison) instead of first asking whether every
padding bit is set, which reads a value back from the GPU every step, the host waiting for the
device; a prefill keeps the skip, so its kernel stays the causal flash one.

The switch is ``grouped_attention`` in ``model.decode_speedups`` (on by default; without it,
transformers' path); set on the language model's config only, not on the vision tower's (its own
switch is ``model.vision_attention``). Not in the run key: the same answers.
"""

from __future__ import annotations

from typing import Any

GROUPED = "candlebench_grouped_sdpa"


def grouped_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
                 scaling: float | None = None, is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' attention-function contract: ``query`` ``(batch, heads, q_len, dim)``,
    ``key``/``value`` ``(batch, kv_heads, k_len, dim)``; returns ``((batch, q_len, heads, dim), None)``."""
    import torch.nn.functional as F
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    plain = (q_len != 1 or heads == kv_heads or dropout or kwargs.get("softcap") is not None
             or kwargs.get("position_bias") is not None or key.shape[-1] != dim)
    if plain:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    mask = attention_mask
    if mask is not None:
        mask = mask[..., : key.shape[-2]]  # as transformers' path: a mask may run past the keys it is given
    # query head h reads KV head h // groups (repeat_kv's order): rows [kv * groups, (kv + 1) * groups)
    rows = query.reshape(batch, kv_heads, heads // kv_heads, dim)
    out = F.scaled_dot_product_attention(rows, key, value, attn_mask=mask, scale=scaling)
    return out.reshape(batch, 1, heads, dim), None


def grouped_mask(*args: Any, **kwargs: Any) -> Any:
    """transformers' SDPA mask (its arguments as it takes them); for one query position built
    without the all-padding-set check (a read back from the device each step)."""
    import inspect

    from transformers.masking_utils import sdpa_mask

    bound = inspect.signature(sdpa_mask).bind(*args, **kwargs)
    if bound.arguments["q_length"] == 1:
        bound.arguments["allow_is_causal_skip"] = False
    return sdpa_mask(*bound.args, **bound.kwargs)


def use_grouped(model: Any) -> bool:
    """Switch a loaded model's language model to :data:`GROUPED` (True) where it runs transformers'
    SDPA; any other implementation is left as it is (False). Each call decides for itself whether
    it is grouped (its query and KV head counts: Gemma 4's layers differ in them), and a model
    without grouped heads keeps the decode mask without the read back."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    text = model.config.get_text_config()
    if text._attn_implementation != "sdpa":
        return False
    AttentionInterface.register(GROUPED, grouped_sdpa)
    AttentionMaskInterface.register(GROUPED, grouped_mask)
    text._attn_implementation = GROUPED
    return True
