"""The varlen vision attention and the vision speed-ups on the tiny Qwen3-VL (no windows: one
attention call per image and layer on transformers' path, a biased patch embedding, an ungated
GELU MLP, deepstack features taken from inner blocks): one call per layer, the tower's outputs
(deepstack features included) equal to transformers' path, each speed-up a switch that keeps them,
and greedy tokens equal through the backend."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch

import candlebench.inference.tiny.builders as tm
import candlebench.inference.vision_speedups as vs
from candlebench.inference.backends.base import GenerationSpec, PreparedRequest
from candlebench.inference.backends.hf import TransformersBackend, load_model
from candlebench.inference.decode_attention import GROUPED
from candlebench.inference.models import ModelSpec
from candlebench.inference.vision_attention import VARLEN
from candlebench.inference.vision_speedups import DEFAULT_SPEEDUPS, apply_speedups
from helpers import slice_charts

# Larger than the fixture's 128x128 cap: images of several hundred patches, two sizes.
SIZE = {"shortest_edge": 64 * 64, "longest_edge": 320 * 320}


@pytest.fixture(scope="module")
def qwen3_dir(tiny_root) -> Path:
    return tm.fixture_dir("qwen3_vl", tm.build_tiny_qwen3_vl, tiny_root)


@pytest.fixture(scope="module")
def charts(workspace) -> list:
    images = slice_charts(workspace, 1)
    return images + [images[1].resize((320, 240))]


def spec(path: Path, vision_attention: str, speedups: tuple[str, ...] = DEFAULT_SPEEDUPS) -> ModelSpec:
    return ModelSpec(name="tiny", path=str(path), dtype="float32", vision_attention=vision_attention,
                     processor_kwargs={"size": SIZE}, vision_speedups=speedups)


def tower(model, inputs) -> list[torch.Tensor]:
    with torch.inference_mode():
        out = model.model.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"])
    return [out.last_hidden_state, out.pooler_output, *out.deepstack_features]


def close(got: list, want: list) -> None:
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5 * float(w.abs().max()))


def test_varlen_is_one_call_per_layer_and_each_speedup_keeps_the_towers_outputs(monkeypatch, qwen3_dir, charts):
    from transformers import AttentionInterface

    (default, processor), (varlen, _) = load_model(spec(qwen3_dir, "default")), load_model(spec(qwen3_dir, "varlen", ()))
    assert varlen.model.visual.config._attn_implementation == VARLEN
    assert varlen.model.language_model.config._attn_implementation == GROUPED  # the language model: its own (decode)
    inputs = processor.image_processor(images=charts, return_tensors="pt")
    assert len(set(map(tuple, inputs["image_grid_thw"].tolist()))) == 2
    layer = {id(b.attn): i for i, b in enumerate(varlen.model.visual.blocks)}
    layer.update({id(b.attn): i for i, b in enumerate(default.model.visual.blocks)})
    calls: dict[str, Counter] = {"sdpa": Counter(), VARLEN: Counter()}
    for name in calls:
        original = AttentionInterface._global_mapping[name]

        def counting(module, *a, _original=original, _name=name, **k):
            calls[_name][layer[id(module)]] += 1
            return _original(module, *a, **k)

        monkeypatch.setitem(AttentionInterface._global_mapping, name, counting)
    want, got = tower(default, inputs), tower(varlen, inputs)
    monkeypatch.undo()
    depth = len(varlen.model.visual.blocks)
    assert calls["sdpa"] == Counter({i: len(charts) for i in range(depth)})  # transformers': one per image
    assert calls[VARLEN] == Counter({i: 1 for i in range(depth)})
    close(got, want)

    # which speed-ups apply to this tower: all but the window-based grid cache
    model, _ = load_model(spec(qwen3_dir, "varlen", ()))
    assert apply_speedups(model, DEFAULT_SPEEDUPS) == {"flash_kernel": True, "grid_cache": False,
                                                      "patch_matmul": True, "mlp_pad": False}  # width 128 already
    for name in ("patch_matmul", "mlp_pad", "compile_blocks"):
        apply_speedups(model, ())
        assert "forward" not in vars(model.model.visual.patch_embed)
        if name == "mlp_pad":  # the tiny's 128 padded to a multiple of 96, as a real 4,304 to one of 128
            assert vs.mlp_pad(model.model.visual, multiple=96)
            assert model.model.visual.blocks[0].mlp.linear_fc1.bias.shape == (192,)
        elif name == "compile_blocks":
            assert vs.compile_blocks(model.model.visual, backend="eager")
        else:
            assert apply_speedups(model, (name,)) == {name: True}
        close(tower(model, inputs), want)
    apply_speedups(model, ())
    assert model.model.visual.blocks[0].mlp.linear_fc2.weight.shape[1] == 128
    assert all(torch.equal(g, w) for g, w in zip(tower(model, inputs), got))


def test_greedy_tokens_equal_with_varlen_and_the_speedups(qwen3_dir, charts):
    batch = [PreparedRequest("a", "Describe the chart.", tuple(charts[:2])),
             PreparedRequest("b", "Score the trend.", (charts[2],))]
    got = {}
    for choice, speedups in (("default", ()), ("varlen", DEFAULT_SPEEDUPS)):
        backend = TransformersBackend(spec(qwen3_dir, choice, speedups), GenerationSpec(max_new_tokens=16), device_map=None)
        got[choice] = [g.token_ids for g in backend.generate(batch)]
        backend.close()
    assert got["varlen"] == got["default"] and all(got["default"])
