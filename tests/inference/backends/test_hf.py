"""The transformers backend's speed switches on the tiny Qwen2.5-VL: the image processor run per
request in the runner's loader threads (backend.pixels_ahead: the batch the model receives is tensor
for tensor the one the whole processor builds; switched off, nothing is computed ahead), and decoding
with a static KV cache (backend.static_cache); greedy tokens equal throughout."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import candlebench.inference.tiny.builders as tm
from candlebench.inference.backends.base import GenerationSpec, PreparedRequest
from candlebench.inference.backends.hf import TransformersBackend
from candlebench.inference.models import ModelSpec
from candlebench.rendering.model_input import prepare_image


@pytest.fixture(scope="module")
def batch(workspace) -> list[PreparedRequest]:
    samples = pd.read_parquet(workspace / "forecast" / "samples.parquet").head(3)
    charts = [tuple(prepare_image(workspace / "forecast" / row[f], None) for f in ("image_daily", "image_weekly"))
              for _, row in samples.iterrows()]
    # a text-only request among them, as E2A's OHLCV-text prompts are
    return [PreparedRequest("a", "Score the trend.", charts[0]), PreparedRequest("b", "Only text here.", ()),
            PreparedRequest("c", "Describe the charts.", charts[1]), PreparedRequest("d", "Score it.", charts[2])]


def test_pixels_ahead_and_the_static_cache_give_the_same_batch_and_tokens(monkeypatch, tiny_root, batch):
    path = tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)
    spec = ModelSpec(name="tiny", path=str(path), dtype="float32")
    backend = TransformersBackend(spec, GenerationSpec(max_new_tokens=12), device_map=None)
    prepared = [backend.prepare(r) for r in batch]
    assert [p.pixels is not None for p in prepared] == [True, False, True, True]
    assert prepared[0].pixels["image_grid_thw"].shape == (2, 3)  # the request's two charts
    calls = []
    image_processor = type(backend.processor.image_processor)
    original = image_processor.__call__
    monkeypatch.setattr(image_processor, "__call__", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    whole = backend.encode(batch)
    assert len(calls) == 1
    ahead = backend.encode(prepared)
    assert len(calls) == 1  # the batch encode did not run the image processor again
    monkeypatch.undo()
    assert sorted(whole.keys()) == sorted(ahead.keys())
    assert {"pixel_values", "image_grid_thw", "input_ids"} <= set(whole.keys())
    for key in whole:
        assert torch.equal(whole[key], ahead[key]), key
    tokens = [g.token_ids for g in backend.generate(batch)]
    assert [g.token_ids for g in backend.generate(prepared)] == tokens and all(tokens)
    off = TransformersBackend.of_loaded(backend.model, backend.processor, backend.generation, pixels_ahead=False)
    assert all(off.prepare(r).pixels is None for r in batch)
    backend.static_cache = True
    assert backend.static_cache and [g.token_ids for g in backend.generate(prepared)] == tokens


def test_pixels_ahead_cast_for_a_half_precision_tower_keep_its_input_and_tokens(tiny_root, batch):
    """A bf16 Qwen2.5-VL: the loader threads cast the pixel values as its tower's first step would;
    the batch holds the very bf16 values the tower computed from, and greedy tokens are equal."""
    path = tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)
    spec = ModelSpec(name="tiny", path=str(path), dtype="bfloat16")
    backend = TransformersBackend(spec, GenerationSpec(max_new_tokens=6), device_map=None)
    prepared = [backend.prepare(r) for r in batch]
    assert prepared[0].pixels["pixel_values"].dtype == torch.bfloat16
    whole, ahead = backend.encode(batch), backend.encode(prepared)
    assert whole["pixel_values"].dtype == torch.float32  # the whole processor's, cast by the tower
    assert torch.equal(ahead["pixel_values"], whole["pixel_values"].to(torch.bfloat16))
    assert [g.token_ids for g in backend.generate(prepared)] == [g.token_ids for g in backend.generate(batch)]


def test_the_runner_sets_the_gil_switch_interval_while_it_generates_and_restores_it(tiny_root, workspace, tmp_path):
    """infer.gil_switch_ms: in force while the loader threads work (seen from inside generate),
    Python's own again after, and the answers those of a run at Python's interval."""
    import sys

    from candlebench.inference.records import RecordStore
    from candlebench.inference.runner import Request, RunnerSettings, Shard, run_requests
    from candlebench.rendering.model_input import ImagePolicy

    path = tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)
    seen: list[float] = []

    class Seeing(TransformersBackend):  # the real backend, noting the interval each batch generates under
        def generate(self, batch, encoded=None):
            seen.append(sys.getswitchinterval())
            return super().generate(batch, encoded)

        def close(self) -> None:
            pass

    backend = Seeing(ModelSpec(name="tiny", path=str(path), dtype="float32"), GenerationSpec(max_new_tokens=4),
                     device_map=None)
    samples = pd.read_parquet(workspace / "forecast" / "samples.parquet").head(2)
    requests = [Request(r.sample_id, "Score the trend.", (workspace / "forecast" / r.image_daily,)) for r in samples.itertuples()]
    before = sys.getswitchinterval()
    tokens = {}
    for ms in (0.5, None):
        store = RecordStore(tmp_path / f"run-{ms}")
        run_requests(requests, store, "k", "tiny", "transformers", lambda: backend, ImagePolicy(), Shard(),
                     RunnerSettings(batch_size=1, gil_switch_ms=ms))
        assert sys.getswitchinterval() == before
        tokens[ms] = sorted((r.sample_id, tuple(r.token_ids)) for r in store.records())
    assert seen == [0.0005, 0.0005, before, before]
    assert tokens[0.5] == tokens[None] and len(tokens[0.5]) == 2
