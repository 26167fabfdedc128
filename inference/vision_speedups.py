"""Speed-ups of the Qwen2.5-VL vision tower that keep its outputs (``model.vision_speedups``).

Each is a switch (a name in :data:`SPEEDUPS`), on by default, tested equal to transformers' own
path on the tiny fixture in fp32 (tests/test_vision_speedups.py), and out of the run key since
answers do not change:

* ``flash_kernel``: the varlen vision attention (``inference.vision_attention``) through torch's
  flash varlen kernel on CUDA instead of the padded SDPA.
* ``grid_cache``: per batch of image grids, the vision position ids, the window index, the
  ``cu_seqlens`` of windows and images with their longest lengths, and the rotary table, computed
  once and kept (every chart of a run has the same size, so a run sees one or two grids). The
  tower's own code takes them precomputed (transformers >= 5.17's ``vision_utils`` hooks); without
  the cache it recomputes them each batch in Python loops over the images, reads the longest
  length back from the GPU twice, and copies the window index from the CPU.
* ``patch_matmul``: the Conv3d patch embedding, whose stride equals its kernel, as the one matmul
  it is (a conv call pays im2col and layout changes for nothing).
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, Callable

# Batches of distinct grids kept per tower: a run has one chart size, and a smaller last batch.
GRID_CACHE_SIZE = 8


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
    """The tower's Conv3d patch embedding (stride = kernel, no bias) as one matmul over the same weight."""
    import torch.nn.functional as F

    embed = visual.patch_embed
    conv = embed.proj
    if conv.bias is not None or tuple(conv.stride) != tuple(conv.kernel_size):
        return False
    width = conv.weight[0].numel()

    def forward(hidden_states: Any) -> Any:
        weight = conv.weight
        return F.linear(hidden_states.reshape(-1, width).to(weight.dtype), weight.view(weight.shape[0], width))

    embed.forward = forward
    return True


def flash_kernel(visual: Any) -> bool:
    """Let the varlen vision attention use torch's flash kernel (CUDA, where it checks out)."""
    from inference.vision_attention import FLASH_KERNEL

    FLASH_KERNEL["on"] = True
    return True


SPEEDUPS: dict[str, Callable[[Any], bool]] = {
    "flash_kernel": flash_kernel,
    "grid_cache": grid_cache,
    "patch_matmul": patch_matmul,
}


def apply_speedups(model: Any, names: tuple[str, ...]) -> dict[str, bool]:
    """Exactly ``names`` on a loaded Qwen2.5-VL model's vision tower, the others off (a model of
    another type is left as it is); which took effect. ``flash_kernel`` is a process-wide switch."""
    from inference.vision_attention import FLASH_KERNEL, VISION_CONFIG

    FLASH_KERNEL["on"] = False
    if getattr(model.config, "model_type", "") not in VISION_CONFIG:
        return {}
    visual = model.model.visual
    # what the speed-ups install are instance attributes over the classes' own methods
    for module, attribute in ((visual, "forward"), (visual, "grid_cache"), (visual.rotary_pos_emb, "forward"),
                              (visual.patch_embed, "forward")):
        vars(module).pop(attribute, None)
    return {name: SPEEDUPS[name](visual) for name in names}
