"""One attention call per vision layer (model.vision_attention=varlen) on the tiny Qwen2.5-VL: the
same hidden states and greedy tokens as transformers' per-window path, with the calls counted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch

import inference.tiny.builders as tm
from inference.backends.base import GenerationSpec, PreparedRequest
from inference.backends.hf import TransformersBackend, load_model
from inference.models import ModelSpec
from inference.vision_attention import VARLEN
from rendering.model_input import prepare_image


@pytest.fixture(scope="module")
def qwen_dir(tiny_root) -> Path:
    return tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)


@pytest.fixture(scope="module")
def charts(workspace) -> list:
    """Real daily and weekly charts of the slice, and one smaller, so images differ in windows."""
    samples = pd.read_parquet(workspace / "forecast" / "samples.parquet").head(2)
    images = [prepare_image(workspace / "forecast" / p, None) for p in [*samples["image_daily"], *samples["image_weekly"]]]
    return images[:3] + [images[3].resize((320, 240))]


# The fixture's processor caps images at 112x112 px, one 112-px attention window; charts of up to
# 448x448 px make several windows per image, as real checkpoints' budgets do.
SIZE = {"shortest_edge": 56 * 56, "longest_edge": 448 * 448}


def spec(path: Path, vision_attention: str) -> ModelSpec:
    return ModelSpec(name="tiny", path=str(path), dtype="float32", vision_attention=vision_attention,
                     processor_kwargs={"size": SIZE})


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
    (default, processor), (varlen, _) = load_model(spec(qwen_dir, "default")), load_model(spec(qwen_dir, "varlen"))
    assert default.model.visual.config._attn_implementation == "sdpa"
    assert varlen.model.visual.config._attn_implementation == VARLEN
    assert varlen.model.language_model.config._attn_implementation == "sdpa"  # the language model keeps its own
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
    for choice in ("default", "varlen"):
        backend = TransformersBackend(spec(qwen_dir, choice), generation, device_map=None)
        got[choice] = [g.token_ids for g in backend.generate(batch)]
        backend.close()
    assert got["varlen"] == got["default"] and all(len(t) > 0 for t in got["varlen"])


def test_the_choice_is_part_of_the_run_key_and_checked(qwen_dir):
    assert spec(qwen_dir, "varlen").identity()["vision_attention"] == "varlen"
    assert "vision_attention" not in spec(qwen_dir, "default").identity()
    from omegaconf import OmegaConf

    with pytest.raises(ValueError, match="model.vision_attention=flash: one of"):
        ModelSpec.from_config(OmegaConf.create({"name": "x", "path": "y", "vision_attention": "flash"}))
