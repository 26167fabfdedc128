"""One attention call per vision layer for vision towers that attend within windows (Qwen2.5-VL)
or within each image (Qwen3-VL).

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

On CUDA (bf16/fp16, torch >= 2.10) the packed layout goes straight to
``torch.nn.attention.varlen.varlen_attn``, the flash kernels inside torch: no padding, no mask,
no scatter. It is checked once per process against the padded SDPA on a small input; where it is
missing or disagrees, one line says so and the padded SDPA runs (``FLASH_KERNEL["on"] = False``
is the switch, ``model.vision_speedups`` without ``flash_kernel``).

Qwen3-VL's tower has no windows: transformers' path makes one call per image in each of its 27
layers (256 calls per layer for a batch of 128 forecast requests), and takes the same packed
path as Qwen2.5-VL's under a "flash" name, so the same function serves it (tested on the tiny
Qwen3-VL). Gemma 3's SigLIP runs every image at 896x896 as one dense batch, already one call per
layer: nothing to pack.

Which models get it is a table (``VISION_CONFIG``) of the model types whose vision attention
takes this packed path and was checked equal here; any other model loads as before.
"""

from __future__ import annotations

from typing import Any

VARLEN = "candlebench_flash_varlen_sdpa"

# model_type -> the sub-config of its vision tower whose attention VARLEN replaces.
VISION_CONFIG = {"qwen2_5_vl": "vision_config", "qwen3_vl": "vision_config"}


# Whether varlen_sdpa may use torch's flash varlen kernel ("on": the switch; "checked": None until
# the once-per-process check ran, then its verdict).
FLASH_KERNEL: dict[str, Any] = {"on": True, "checked": None}


def varlen_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None, scaling: float | None = None,
                dropout: float = 0.0, cu_seq_lens_q: Any = None, max_length_q: int | None = None, **kwargs: Any):
    """Attention within each chunk of the packed sequence: ``query``/``key``/``value`` are
    ``(1, heads, tokens, head_dim)``, chunk ``i`` spans ``cu_seq_lens_q[i]:cu_seq_lens_q[i+1]``.
    Returns ``((1, tokens, heads, head_dim), None)`` as transformers' attention functions do."""
    if dropout == 0.0 and flash_kernel_usable(query):
        return _flash(query, key, value, cu_seq_lens_q, max_length_q, scaling), None
    return _padded_sdpa(query, key, value, cu_seq_lens_q, max_length_q, scaling, dropout), None


def flash_kernel_usable(query: Any) -> bool:
    """True where ``varlen_attn`` runs this query: CUDA, half precision, torch >= 2.10, switched
    on, and equal to the padded SDPA on the first use in this process (else one line, and False)."""
    import torch

    if not (FLASH_KERNEL["on"] and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16)):
        return False
    if FLASH_KERNEL["checked"] is None:
        FLASH_KERNEL["checked"] = _check_flash_kernel(query.device, query.dtype)
    return FLASH_KERNEL["checked"]


def _check_flash_kernel(device: Any, dtype: Any) -> bool:
    import sys

    import torch

    try:
        seed = torch.Generator(device=device).manual_seed(0)  # not the global generator: sampling seeds it
        q, k, v = (torch.randn(1, 2, 96, 64, device=device, dtype=dtype, generator=seed) for _ in range(3))
        cu = torch.tensor([0, 40, 96], device=device, dtype=torch.int32)
        got = _flash(q, k, v, cu, 56, 64**-0.5)
        want = _padded_sdpa(q, k, v, cu, 56, 64**-0.5, 0.0)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    except Exception as err:  # missing (torch < 2.10), no kernel for this GPU, or wrong: the padded path runs
        reason = f"{type(err).__name__}: {str(err)[:120]}".splitlines()[0]
        print(f"vision attention: torch's varlen flash kernel unusable here ({reason}); the padded SDPA runs",
              file=sys.stderr)
        return False
    return True


def _flash(query: Any, key: Any, value: Any, cu_seq_lens_q: Any, max_length_q: int | None, scaling: float | None) -> Any:
    """``varlen_attn`` over the packed ``(tokens, heads, dim)`` layout. Its default scale is
    1/sqrt(dim) (torch 2.10 takes no ``scale``), applied to the query where another is asked."""
    import torch
    from torch.nn.attention.varlen import varlen_attn

    dim = query.shape[-1]
    q, k, v = (x[0].transpose(0, 1).contiguous() for x in (query, key, value))
    if scaling is not None and scaling != dim**-0.5:
        q = q * (scaling * dim**0.5)
    cu = cu_seq_lens_q.to(device=query.device, dtype=torch.int32)
    longest = int(max_length_q) if max_length_q is not None else int((cu[1:] - cu[:-1]).max())
    return varlen_attn(q, k, v, cu, cu, longest, longest).unsqueeze(0)


def _padded_sdpa(query: Any, key: Any, value: Any, cu_seq_lens_q: Any, max_length_q: int | None,
                 scaling: float | None, dropout: float) -> Any:
    """The chunks scattered into one padded batch, one SDPA call with the padding keys masked."""
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
    return out.transpose(1, 2).reshape(chunks * longest, heads, dim)[slot].unsqueeze(0)


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
