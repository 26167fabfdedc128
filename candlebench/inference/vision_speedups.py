"""Speed-ups of the Qwen2.5-VL and Qwen3-VL vision towers that keep their outputs (``model.vision_speedups``).

Each is a switch (a name in :data:`SPEEDUPS`), on by default, tested equal to transformers' own
path on the tiny fixture in fp32 (tests/inference/test_vision_attention.py), and out of the run key since
answers do not change:

* ``flash_kernel``: the varlen vision attention (``candlebench.inference.vision_attention``) through torch's
  flash varlen kernel on CUDA instead of the padded SDPA.
* ``grid_cache``: per batch of image grids, the vision position ids, the window index, the
  ``cu_seqlens`` of windows and images with their longest lengths, and the rotary table, computed
  once and kept (every chart of a run has the same size, so a run sees one or two grids). The
  tower's own code takes them precomputed (transformers >= 5.17's ``vision_utils`` hooks); without
  the cache it recomputes them each batch in Python loops over the images, reads the longest
  length back from the GPU twice, and copies the window index from the CPU.
* ``patch_matmul``: the Conv3d patch embedding, whose stride equals its kernel, as the one matmul
  it is (a conv call pays im2col and layout changes for nothing).
* ``mlp_pad``: the blocks' gated MLP widened with zero rows and columns to a multiple of 128
  (Qwen2.5-VL's 3,420 is not one of 8: its bf16 rows are not 16-byte aligned, which keeps cuBLAS
  off its fastest tensor-core kernels, and 3,420 leaves a ragged last tile). The added units are
  silu(0) * 0 = 0, so the outputs are the same sums in another blocking order.
* ``compile_blocks`` (not in :data:`DEFAULT_SPEEDUPS`: its first batch pays the compile): each
  vision block through ``torch.compile`` (inductor fuses the RMSNorms, the rotary and the gated
  MLP's elementwise work, which at hidden 1,280 weigh on the tower as much as its matmuls). One
  compiled function serves every block (the block is an argument, its weights graph inputs), a
  graph per bucket: a total patch count of the batch (every chart of a run has one grid, so a run
  sees its batch size and a smaller last batch) and the attention kind (windows or whole images).
  Past :data:`COMPILE_BUCKETS` buckets a new patch count runs eagerly instead of compiling again.

Which apply depends on the tower (:func:`apply_speedups` says which took effect). Qwen3-VL's has
no windows and learned position embeddings interpolated per grid: ``grid_cache`` (built on
Qwen2.5-VL's window hooks) does not apply; its patch embedding has a bias (``patch_matmul`` adds
it) and its MLP is ungated (``linear_fc1`` → GELU → ``linear_fc2``, width 4,304: 16-byte aligned
but a ragged last tile of 128; gelu(0) = 0, so ``mlp_pad`` stays exact); its blocks take the same
arguments as Qwen2.5-VL's (``compile_blocks``).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, Callable

# Batches of distinct grids kept per tower: a run has one chart size, and a smaller last batch.
GRID_CACHE_SIZE = 8
# Patch counts compiled per tower (compile_blocks); any further one runs eagerly.
COMPILE_BUCKETS = 4
# The MLP width is padded to a multiple of this (mlp_pad).
MLP_MULTIPLE = 128


class GridCache:
    """The grid-dependent inputs of a Qwen2.5-VL vision tower, per batch of grids, on its device."""

    def __init__(self, visual: Any):
        self.visual = visual
        self.entries: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
        self.tables: dict[int, tuple[Any, Any]] = {}  # id(position ids) -> the rotary (cos, sin)

    def precomputed(self, grid_thw: Any) -> dict[str, Any]:
        key = tuple(tuple(int(v) for v in row) for row in grid_thw.tolist())  # the one host read per batch
        if key not in self.entries:
            self.entries[key] = self._compute(key, grid_thw.device)
            if len(self.entries) > GRID_CACHE_SIZE:
                _, old = self.entries.popitem(last=False)
                self.tables.pop(id(old["position_ids"]), None)
        self.entries.move_to_end(key)
        return dict(self.entries[key])

    def _compute(self, key: tuple, device: Any) -> dict[str, Any]:
        import torch
        from transformers.vision_utils import get_vision_cu_seqlens, get_vision_position_ids, get_vision_window_index

        v = self.visual
        grid = torch.tensor(key, dtype=torch.long)
        window_index, cu_windows = get_vision_window_index(grid, spatial_merge_size=v.spatial_merge_size,
                                                           window_size=v.window_size, patch_size=v.patch_size)
        cu = get_vision_cu_seqlens(grid)
        return {
            "position_ids": get_vision_position_ids(grid, v.spatial_merge_size).to(device),
            "cu_seqlens": cu.to(device),
            "max_seqlen": int((cu[1:] - cu[:-1]).max()),
            "window_index": window_index.to(device),
            "cu_window_seqlens": cu_windows.to(device),
            "max_window_seqlen": int((cu_windows[1:] - cu_windows[:-1]).max()),
        }

    def rotary(self, original: Callable) -> Callable:
        """The tower's rotary embedding, its table kept per cached position-id tensor."""

        def forward(x: Any, position_ids: Any) -> Any:
            key = id(position_ids)
            if key not in self.tables:
                table = original(x, position_ids)
                if not any(id(e["position_ids"]) == key for e in self.entries.values()):
                    return table  # not one of ours: nothing to key it by
                self.tables[key] = table
            return self.tables[key]

        return forward


def grid_cache(visual: Any) -> bool:
    """Install :class:`GridCache` on a Qwen2.5-VL vision tower (False where the installed
    transformers' tower does not take these inputs precomputed)."""
    try:
        import transformers.vision_utils as hooks
    except ImportError:
        hooks = None
    if not hasattr(visual, "window_size"):  # Qwen3-VL: no windows; its grid inputs are others
        return False
    if hooks is None or not hasattr(hooks, "get_vision_window_index"):
        print("vision_speedups: grid_cache needs transformers >= 5.17 (vision_utils); the tower computes them per batch",
              file=sys.stderr)
        return False
    cache = GridCache(visual)
    tower_forward = visual.forward

    def forward(hidden_states: Any, grid_thw: Any = None, **kwargs: Any) -> Any:
        return tower_forward(hidden_states, grid_thw=grid_thw, **{**cache.precomputed(grid_thw), **kwargs})

    visual.forward = forward
    visual.rotary_pos_emb.forward = cache.rotary(visual.rotary_pos_emb.forward)
    visual.grid_cache = cache
    return True


def patch_matmul(visual: Any) -> bool:
    """The tower's Conv3d patch embedding (stride = kernel; Qwen3-VL's with a bias) as one matmul
    over the same weight."""
    import torch.nn.functional as F

    embed = visual.patch_embed
    conv = embed.proj
    if tuple(conv.stride) != tuple(conv.kernel_size):
        return False
    width = conv.weight[0].numel()

    def forward(hidden_states: Any) -> Any:
        weight = conv.weight
        return F.linear(hidden_states.reshape(-1, width).to(weight.dtype), weight.view(weight.shape[0], width),
                        conv.bias)

    embed.forward = forward
    return True


# The MLP layouts of the towers: (the layers whose outputs are the hidden units, the layer reading them).
MLP_LAYOUTS = ((("gate_proj", "up_proj"), "down_proj"),  # Qwen2.5-VL: gated, silu(0) * 0 = 0
               (("linear_fc1",), "linear_fc2"))  # Qwen3-VL: GELU, gelu(0) = 0


def _mlp_layout(mlp: Any) -> tuple[tuple[str, ...], str]:
    return next((ins, out) for ins, out in MLP_LAYOUTS if all(hasattr(mlp, n) for n in (*ins, out)))


def mlp_pad(visual: Any, multiple: int | None = None) -> bool:
    """Every block's MLP widened with zeros to a multiple of ``multiple`` (default
    :data:`MLP_MULTIPLE`; False where it already is one)."""
    multiple = multiple or MLP_MULTIPLE
    mlp = visual.blocks[0].mlp
    width = getattr(mlp, _mlp_layout(mlp)[0][0]).out_features
    wide = -(-width // multiple) * multiple
    if wide == width:
        return False
    for block in visual.blocks:
        _resize_mlp(block.mlp, wide)
    visual.mlp_width = width
    return True


def _resize_mlp(mlp: Any, width: int) -> None:
    """The hidden units' rows (gate/up, fc1, with their biases) and the reading layer's columns
    (down, fc2) cut or zero-padded to ``width`` (the units past the original width are zero: silu(0)
    * 0 and gelu(0) add nothing)."""
    import torch

    ins, out = _mlp_layout(mlp)

    def rows(t: Any) -> Any:
        kept = t[:width]
        return torch.cat([kept, kept.new_zeros(width - kept.shape[0], *kept.shape[1:])]) if width > t.shape[0] else kept

    with torch.no_grad():
        for linear in (getattr(mlp, name) for name in ins):
            linear.weight = torch.nn.Parameter(rows(linear.weight).contiguous(), requires_grad=False)
            if linear.bias is not None:
                linear.bias = torch.nn.Parameter(rows(linear.bias).contiguous(), requires_grad=False)
            linear.out_features = width
        down = getattr(mlp, out)
        down.weight = torch.nn.Parameter(rows(down.weight.t()).t().contiguous(), requires_grad=False)
        down.in_features = width


def _block_step(block: Any, hidden_states: Any, cu_seqlens: Any, position_embeddings: Any, max_seqlen: Any) -> Any:
    return type(block).forward(block, hidden_states, cu_seqlens=cu_seqlens, position_embeddings=position_embeddings,
                               max_seqlen=max_seqlen)


def compile_blocks(visual: Any, backend: str = "inductor") -> bool:
    """Each vision block through one compiled step, bucketed by patch count (see the
    module docstring). ``backend``: torch.compile's (the CPU test traces with "eager"). The
    precomputed grid inputs the tower passes its blocks (grid_cache) are not the blocks' to use
    and stay out of the graph."""
    import torch

    step = torch.compile(_block_step, dynamic=False, backend=backend)
    buckets: set[int] = set()
    for block in visual.blocks:
        eager = block.forward

        def forward(hidden_states: Any, cu_seqlens: Any, position_embeddings: Any = None, max_seqlen: Any = None,
                    _block: Any = block, _eager: Any = eager, **kwargs: Any) -> Any:
            patches = int(hidden_states.shape[0])
            if patches not in buckets and len(buckets) >= COMPILE_BUCKETS:
                return _eager(hidden_states, cu_seqlens=cu_seqlens, position_embeddings=position_embeddings,
                              max_seqlen=max_seqlen, **kwargs)
            buckets.add(patches)
            return step(_block, hidden_states, cu_seqlens, position_embeddings, max_seqlen)

        block.forward = forward
    visual.compiled_buckets = buckets
    return True


def flash_kernel(visual: Any) -> bool:
    """Let the varlen vision attention use torch's flash kernel (CUDA, where it checks out)."""
    from candlebench.inference.vision_attention import FLASH_KERNEL

    FLASH_KERNEL["on"] = True
    return True


SPEEDUPS: dict[str, Callable[[Any], bool]] = {
    "flash_kernel": flash_kernel,
    "grid_cache": grid_cache,
    "patch_matmul": patch_matmul,
    "mlp_pad": mlp_pad,
    "compile_blocks": compile_blocks,
}
# model.vision_speedups' default: all but the compile, whose first batch is slow (on CPU, minutes).
DEFAULT_SPEEDUPS = ("flash_kernel", "grid_cache", "patch_matmul", "mlp_pad")


def apply_speedups(model: Any, names: tuple[str, ...]) -> dict[str, bool]:
    """Exactly ``names`` on a loaded Qwen2.5-VL or Qwen3-VL model's vision tower, the others off (a
    model of another type is left as it is); which took effect. ``flash_kernel`` is a process-wide switch."""
    from candlebench.inference.vision_attention import FLASH_KERNEL, VISION_CONFIG

    FLASH_KERNEL["on"] = False
    if getattr(model.config, "model_type", "") not in VISION_CONFIG:
        return {}
    visual = model.model.visual
    # what the speed-ups install are instance attributes over the classes' own methods
    for module, attribute in ((visual, "forward"), (visual, "grid_cache"), (visual.rotary_pos_emb, "forward"),
                              (visual.patch_embed, "forward"), (visual, "compiled_buckets"),
                              *((block, "forward") for block in visual.blocks)):
        vars(module).pop(attribute, None)
    if "mlp_width" in vars(visual):
        for block in visual.blocks:
            _resize_mlp(block.mlp, visual.mlp_width)
        del visual.mlp_width
    return {name: SPEEDUPS[name](visual) for name in names}
