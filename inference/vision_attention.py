"""One attention call per vision layer for vision towers that attend within windows (Qwen2.5-VL).

transformers 5.17–5.19 run Qwen2.5-VL's vision blocks under ``sdpa`` as one attention call per
window: an 812×588 chart has ~42 windows in each of 28 windowed layers plus the whole image in 4
full-attention layers, ≈ 1,350 calls per image at ~35 µs of Python and kernel dispatch each, about
50 ms of CPU per image whatever the batch size or GPU. Only the flash-attention path hands the
attention function the packed layout (``cu_seq_lens_q``) in one call; flash-attn itself does not
install here, and the transformers backend must run without it.

``VARLEN`` is therefore a variable-length attention over that packed layout built from PyTorch's
own SDPA: the windows (or images) are scattered into one padded ``(chunks, heads, longest, dim)``
batch, attended in a single ``scaled_dot_product_attention`` call with the padding keys masked,
and gathered back. Each chunk's softmax is over its own keys exactly as in the per-window path, so
the outputs agree to floating-point reassociation (tested on the tiny Qwen2.5-VL: hidden states
and greedy tokens). The name holds "flash" because transformers picks the packed call by that
word (``is_flash_attention_requested``); it is set on the vision sub-config only, the language
model keeps ``sdpa``.

Which models get it is a table (``VISION_CONFIG``) of the model types whose vision attention
takes this packed path and was checked equal here; any other model loads as before.
"""

from __future__ import annotations

from typing import Any

VARLEN = "candlebench_flash_varlen_sdpa"

# model_type -> the sub-config of its vision tower whose attention VARLEN replaces.
VISION_CONFIG = {"qwen2_5_vl": "vision_config"}


def varlen_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None, scaling: float | None = None,
                dropout: float = 0.0, cu_seq_lens_q: Any = None, max_length_q: int | None = None, **kwargs: Any):
    """Attention within each chunk of the packed sequence: ``query``/``key``/``value`` are
    ``(1, heads, tokens, head_dim)``, chunk ``i`` spans ``cu_seq_lens_q[i]:cu_seq_lens_q[i+1]``.
    Returns ``((1, tokens, heads, head_dim), None)`` as transformers' attention functions do."""
    import torch
    import torch.nn.functional as F

    cu = cu_seq_lens_q.to(device=query.device, dtype=torch.long)
    lengths = cu[1:] - cu[:-1]
    chunks, longest = int(lengths.numel()), int(max_length_q if max_length_q is not None else lengths.max())
    _, heads, tokens, dim = query.shape
    chunk = torch.repeat_interleave(torch.arange(chunks, device=query.device), lengths, output_size=tokens)
    slot = chunk * longest + (torch.arange(tokens, device=query.device) - cu[:-1][chunk])

    def padded(x: Any) -> Any:
        out = x.new_zeros(chunks * longest, heads, dim)
        out[slot] = x[0].transpose(0, 1)
        return out.view(chunks, longest, heads, dim).transpose(1, 2)

    keep = (torch.arange(longest, device=query.device)[None, :] < lengths[:, None])[:, None, None, :]
    out = F.scaled_dot_product_attention(padded(query), padded(key), padded(value), attn_mask=keep,
                                         dropout_p=dropout, scale=scaling)
    return out.transpose(1, 2).reshape(chunks * longest, heads, dim)[slot].unsqueeze(0), None


def register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(VARLEN, varlen_sdpa)


def use_varlen(model: Any) -> bool:
    """Switch a loaded model's vision tower to :data:`VARLEN` where its type has it (True), after
    loading: at load time transformers would try to import a flash-attn kernel for any name with
    "flash" in it. The tower's modules hold the vision sub-config itself, so they see the switch;
    the language model's config is another object and keeps its implementation."""
    sub = VISION_CONFIG.get(getattr(model.config, "model_type", ""))
    vision = getattr(model.config, sub, None) if sub else None
    if vision is None or vision._attn_implementation != "sdpa":  # eager / a real flash-attn: leave it
        return False
    from transformers import AttentionInterface

    AttentionInterface.register(VARLEN, varlen_sdpa)
    vision._attn_implementation = VARLEN
    return True
