"""One attention call per vision layer (model.vision_attention=varlen) on the tiny Qwen2.5-VL: the
same hidden states and greedy tokens as transformers' per-window path, with the calls counted; and
each of the tower's speed-ups (model.vision_speedups) equal to the tower without it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

import candlebench.inference.tiny.builders as tm
from candlebench.inference.backends.base import GenerationSpec, PreparedRequest
from candlebench.inference.backends.hf import TransformersBackend, load_model
from candlebench.inference.decode_attention import GROUPED
from candlebench.inference.models import ModelSpec
from candlebench.inference.vision_attention import VARLEN, _check_flash_kernel, _flash, _padded_sdpa
import candlebench.inference.vision_speedups as vs
from candlebench.inference.vision_speedups import DEFAULT_SPEEDUPS, apply_speedups
from helpers import ROOT, slice_charts


@pytest.fixture(scope="module")
def qwen_dir(tiny_root) -> Path:
    return tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)


@pytest.fixture(scope="module")
def charts(workspace) -> list:
    """Real daily and weekly charts of the slice, and one smaller, so images differ in windows."""
    images = slice_charts(workspace, 2)
    return images[:3] + [images[3].resize((320, 240))]


# The fixture's processor caps images at 112x112 px, one 112-px attention window; charts of up to
# 448x448 px make several windows per image, as real checkpoints' budgets do.
SIZE = {"shortest_edge": 56 * 56, "longest_edge": 448 * 448}


def spec(path: Path, vision_attention: str, speedups: tuple[str, ...] = DEFAULT_SPEEDUPS) -> ModelSpec:
    return ModelSpec(name="tiny", path=str(path), dtype="float32", vision_attention=vision_attention,
                     processor_kwargs={"size": SIZE}, vision_speedups=speedups)


def counted_calls(monkeypatch, model, run) -> Counter:
    """Attention calls per vision block while ``run()`` runs, counted at the attention interface."""
    from transformers import AttentionInterface

    layer = {id(block.attn): i for i, block in enumerate(model.model.visual.blocks)}
    calls: Counter = Counter()
    for name in ("sdpa", VARLEN):
        original = AttentionInterface._global_mapping[name]

        def counting(module, *args, _original=original, **kwargs):
            if id(module) in layer:
                calls[layer[id(module)]] += 1
            return _original(module, *args, **kwargs)

        monkeypatch.setitem(AttentionInterface._global_mapping, name, counting)
    run()
    monkeypatch.undo()
    return calls


def test_one_call_per_vision_layer_with_the_per_window_paths_hidden_states(monkeypatch, qwen_dir, charts):
    # varlen alone: each speed-up on top of it has its own test below
    (default, processor), (varlen, _) = load_model(spec(qwen_dir, "default")), load_model(spec(qwen_dir, "varlen", ()))
    assert default.model.visual.config._attn_implementation == "sdpa"
    assert varlen.model.visual.config._attn_implementation == VARLEN
    assert varlen.model.language_model.config._attn_implementation == GROUPED  # the language model: its own (decode)
    inputs = processor.image_processor(images=charts, return_tensors="pt")
    assert int(inputs["image_grid_thw"][:, 1:].prod(dim=1).min()) > 64  # more than one window each
    grid = inputs["image_grid_thw"]
    out = {}

    def encode(model, key):
        def run():
            with torch.inference_mode():
                out[key] = model.model.visual(inputs["pixel_values"], grid_thw=grid).last_hidden_state
        return run

    per_window = counted_calls(monkeypatch, default, encode(default, "default"))
    one_call = counted_calls(monkeypatch, varlen, encode(varlen, "varlen"))
    layers = len(varlen.model.visual.blocks)
    assert one_call == Counter({i: 1 for i in range(layers)})
    full = set(default.config.vision_config.fullatt_block_indexes)
    # The reference path really is per window: more calls than images in every windowed layer.
    assert all(per_window[i] == len(charts) for i in full)
    assert all(per_window[i] > len(charts) for i in range(layers) if i not in full)
    torch.testing.assert_close(out["varlen"], out["default"], rtol=1e-5, atol=1e-5)


def test_greedy_tokens_equal_through_the_backend(qwen_dir, charts):
    batch = [PreparedRequest("a", "Describe the chart.", tuple(charts[:2])),
             PreparedRequest("b", "Score the trend.", (charts[2], charts[3]))]
    generation = GenerationSpec(max_new_tokens=24)
    got = {}
    for choice, speedups in (("default", ()), ("varlen", ()), ("varlen+speedups", DEFAULT_SPEEDUPS)):
        backend = TransformersBackend(spec(qwen_dir, choice.split("+")[0], speedups), generation, device_map=None)
        got[choice] = [g.token_ids for g in backend.generate(batch)]
        backend.close()
    assert got["varlen"] == got["default"] and all(len(t) > 0 for t in got["varlen"])
    assert got["varlen+speedups"] == got["default"]


def test_each_vision_speedup_keeps_the_towers_outputs_and_is_a_switch(qwen_dir, charts):
    reference, processor = load_model(spec(qwen_dir, "varlen", ()))
    assert "forward" not in vars(reference.model.visual) and "forward" not in vars(reference.model.visual.patch_embed)
    inputs = processor.image_processor(images=charts, return_tensors="pt")
    smaller = processor.image_processor(images=charts[3:], return_tensors="pt")

    def tower(model, x):
        with torch.inference_mode():
            out = model.model.visual(x["pixel_values"], grid_thw=x["image_grid_thw"])
        return out.last_hidden_state, out.pooler_output

    want, want_small = tower(reference, inputs), tower(reference, smaller)
    for name in DEFAULT_SPEEDUPS:
        model, _ = load_model(spec(qwen_dir, "varlen", (name,)))
        for _ in range(2):  # the second time from whatever the speed-up keeps
            for got, expected in ((tower(model, inputs), want), (tower(model, smaller), want_small)):
                if name == "patch_matmul":  # the conv's own summation order against one matmul's
                    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5 * float(want[0].abs().max()))
                else:
                    assert all(torch.equal(g, e) for g, e in zip(got, expected)), name
    # the cache holds one entry per batch of grids, each with its rotary table, reused on the next batch
    model, _ = load_model(spec(qwen_dir, "varlen", ("grid_cache",)))
    for x in (inputs, smaller, inputs):
        tower(model, x)
    grids = model.model.visual.grid_cache
    assert len(grids.entries) == 2 and len(grids.tables) == 2
    entry = grids.entries[tuple(map(tuple, inputs["image_grid_thw"].tolist()))]
    assert entry["max_window_seqlen"] == 64 and entry["max_seqlen"] == int(inputs["image_grid_thw"][:, 1:].prod(1).max())
    # applying a set is exactly that set: the others come off again
    assert apply_speedups(model, ("patch_matmul",)) == {"patch_matmul": True}
    assert "forward" not in vars(model.model.visual) and "forward" in vars(model.model.visual.patch_embed)
    apply_speedups(model, ())
    assert all(torch.equal(g, e) for g, e in zip(tower(model, inputs), want))


def test_the_padded_mlp_and_the_compiled_blocks_keep_the_towers_outputs(monkeypatch, qwen_dir, charts):
    """mlp_pad (the tiny's width 128 is already a multiple of 128: padded here to one of 96) and
    compile_blocks (dynamo's graph run by its "eager" backend on CPU, where inductor would take
    minutes; the GPU bench times inductor's compile), each to float tolerance of the tower without
    them; past its buckets a new patch count runs eagerly; both come off again."""
    reference, processor = load_model(spec(qwen_dir, "varlen", ()))
    model, _ = load_model(spec(qwen_dir, "varlen"))
    visual = model.model.visual
    inputs = processor.image_processor(images=charts, return_tensors="pt")
    smaller = processor.image_processor(images=charts[3:], return_tensors="pt")

    def tower(m, x):
        with torch.inference_mode():
            return m.model.visual(x["pixel_values"], grid_thw=x["image_grid_thw"]).pooler_output

    want, want_small = tower(reference, inputs), tower(reference, smaller)

    def close(got, expected):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5 * float(expected.abs().max()))

    assert vs.mlp_pad(visual, multiple=96) and visual.blocks[0].mlp.down_proj.weight.shape[1] == 192
    close(tower(model, inputs), want)
    monkeypatch.setattr(vs, "COMPILE_BUCKETS", 1)
    assert vs.compile_blocks(visual, backend="eager")
    graphs = counters["stats"]["unique_graphs"]
    for _ in range(2):
        close(tower(model, inputs), want)
        close(tower(model, smaller), want_small)  # the second patch count: past the one bucket, eager
    assert visual.compiled_buckets == {int(inputs["pixel_values"].shape[0])}
    assert counters["stats"]["unique_graphs"] - graphs == 2  # windowed and full-attention blocks, one bucket
    apply_speedups(model, ())
    assert visual.blocks[0].mlp.down_proj.weight.shape[1] == 128 and "forward" not in vars(visual.blocks[0])
    assert torch.equal(tower(model, inputs), want)


def test_the_flash_kernel_layout_and_its_fallback_off_cuda(capsys):
    """The flash path's packing, run on the meta device (no CUDA here), against the padded SDPA's
    shape; off CUDA its once-per-process check fails with one line and the padded path runs."""
    q, k, v = (torch.empty(1, 2, 96, 64, device="meta", dtype=torch.bfloat16) for _ in range(3))
    cu = torch.tensor([0, 40, 96], dtype=torch.int32, device="meta")
    assert _flash(q, k, v, cu, 56, 0.5).shape == (1, 96, 2, 64)
    cpu = [torch.randn(1, 2, 96, 64) for _ in range(3)]
    assert _padded_sdpa(*cpu, torch.tensor([0, 40, 96]), 56, 0.5, 0.0).shape == (1, 96, 2, 64)
    assert _check_flash_kernel(torch.device("cpu"), torch.bfloat16) is False
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vision attention: torch's varlen flash kernel unusable here")


def test_the_choice_is_part_of_the_run_key_and_checked(qwen_dir):
    assert spec(qwen_dir, "varlen").identity()["vision_attention"] == "varlen"
    assert "vision_attention" not in spec(qwen_dir, "default").identity()
    from omegaconf import OmegaConf

    with pytest.raises(ValueError, match="model.vision_attention=flash: one of"):
        ModelSpec.from_config(OmegaConf.create({"name": "x", "path": "y", "vision_attention": "flash"}))
    # the speed-ups keep the answers: out of the run key, a switch checked by name
    assert spec(qwen_dir, "varlen", ()).identity() == spec(qwen_dir, "varlen").identity()
    assert ModelSpec.from_config(OmegaConf.create({"name": "x", "path": "y", "vision_speedups": []})).vision_speedups == ()
    # the configs' default is the code's
    defaults = OmegaConf.load(ROOT / "candlebench" / "conf" / "model" / "_defaults.yaml")
    assert tuple(defaults.vision_speedups) == DEFAULT_SPEEDUPS
    with pytest.raises(ValueError, match=r"model.vision_speedups: unknown \['cuda_graphs'\]"):
        ModelSpec.from_config(OmegaConf.create({"name": "x", "path": "y", "vision_speedups": ["grid_cache", "cuda_graphs"]}))
