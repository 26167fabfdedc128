"""The decode speed-ups (model.decode_speedups, inference/decode_speedups.py) on the tiny fixtures:
grouped-query decode attention without the KV copy (greedy tokens equal, logits within 1e-5 of
their scale in fp32, with the dynamic and the static cache, a padded batch with charts), the
deferred stop check (tokens equal, the extra step undone), and the static cache chosen by the
answer budget, its length in buckets."""

from __future__ import annotations

import functools

import pytest
import torch
from PIL import Image

import candlebench.inference.tiny.builders as tm
from candlebench.inference.backends.base import GenerationSpec, PreparedRequest
from candlebench.inference.backends.hf import TransformersBackend
from candlebench.inference.decode_attention import GROUPED
from candlebench.inference.decode_speedups import CACHE_BUCKET, deferred_stop, static_cache_kwargs, wants_static_cache
from candlebench.inference.models import ModelSpec

CHART = Image.new("RGB", (200, 150), "white")
BATCH = [PreparedRequest("a", "Score the trend of this chart.", (CHART,)),
         PreparedRequest("b", "Only text, and a good deal longer than the others, so the batch is padded.", ()),
         PreparedRequest("c", "Describe it.", (CHART.resize((120, 90)),))]


def backend(tiny_root, family: str, speedups: tuple[str, ...]) -> TransformersBackend:
    path = tm.fixture_dir(family, tm.BUILDERS[family], tiny_root)
    spec = ModelSpec(name="tiny", path=str(path), dtype="float32", decode_speedups=speedups)
    return TransformersBackend(spec, GenerationSpec(max_new_tokens=12), device_map=None)


def greedy(backend: TransformersBackend, inputs, **cache):
    with torch.inference_mode():
        return backend.model.generate(**inputs, max_new_tokens=12, min_new_tokens=12, do_sample=False, temperature=None,
                                      top_p=None, top_k=None, pad_token_id=backend.pad_id, output_logits=True,
                                      return_dict_in_generate=True, **cache)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl", "gemma3"])  # gemma3: sliding-window layers
def test_grouped_decode_attention_gives_the_same_tokens_and_logits_without_the_kv_copy(monkeypatch, tiny_root, family):
    from transformers import AttentionInterface
    from transformers.integrations import sdpa_attention

    grouped = backend(tiny_root, family, ("grouped_attention",))
    text = grouped.model.config.get_text_config()
    assert text._attn_implementation == GROUPED
    assert grouped.model.config.vision_config._attn_implementation != GROUPED  # the language model only
    inputs = grouped.encode(BATCH)
    assert not bool(inputs["attention_mask"].all())  # a padded batch: transformers' path would build a mask
    copies: list[int] = []
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: copies.append(1) or x.repeat_interleave(n, 1))

    def decoded(name: str) -> tuple[dict, list[int]]:
        """Both caches' outputs, and the KV copies of each one-token attention call."""
        per_call: list[int] = []
        original = AttentionInterface._global_mapping[name]

        def counting(module, query, *args, **kwargs):
            before = len(copies)
            out = original(module, query, *args, **kwargs)
            if query.shape[2] == 1:
                per_call.append(len(copies) - before)
            return out

        monkeypatch.setitem(AttentionInterface._global_mapping, name, counting)
        text._attn_implementation = name
        return {kind: greedy(grouped, inputs, **cache) for kind, cache in
                (("dynamic", {}), ("static", {"cache_implementation": "static"}))}, per_call

    got, per_call = decoded(GROUPED)
    assert len(per_call) == 2 * 11 * text.num_hidden_layers and sum(per_call) == 0
    want, per_call = decoded("sdpa")  # transformers' path on the same weights copies the cache under the mask
    assert len(per_call) == 2 * 11 * text.num_hidden_layers and all(n == 2 for n in per_call)
    for kind in ("dynamic", "static"):
        assert torch.equal(got[kind].sequences, want[kind].sequences), kind
        scale = max(float(x.abs().max()) for x in want[kind].logits)
        drift = max(float((a - b).abs().max()) for a, b in zip(got[kind].logits, want[kind].logits))
        assert drift <= 1e-5 * scale, (kind, drift, scale)


def test_the_deferred_stop_check_stops_where_the_per_step_check_does(monkeypatch, tiny_root):
    """transformers' deferred check, enabled here on CPU with a stand-in for the device event
    (a CPU has none): answers that stop at an end token keep their lengths and tokens."""
    eager = backend(tiny_root, "qwen2_5_vl", ())
    inputs = eager.encode(BATCH[:1])

    def answers(stop: int | None) -> torch.Tensor:
        with torch.inference_mode():
            return eager.model.generate(**inputs, max_new_tokens=30, do_sample=False, temperature=None, top_p=None,
                                        top_k=None, pad_token_id=eager.pad_id, eos_token_id=stop)

    free = answers(None)[:, inputs["input_ids"].shape[1]:]
    stop = int(free[0, 3])  # an end token the answer meets early: the deferred check sees it a step late
    want = answers(stop)
    assert want.shape[1] - inputs["input_ids"].shape[1] <= 4

    class Event:
        def __init__(self, *args, **kwargs):
            pass

        def record(self):
            pass

        def synchronize(self):
            pass

    from transformers.generation import utils

    taken = []
    monkeypatch.setattr(torch, "Event", Event)
    monkeypatch.setattr(utils.DeferredStopCheck, "finish",
                        lambda self, _f=utils.DeferredStopCheck.finish: taken.append(1) or _f(self))
    with deferred_stop(("cpu",)) as on:
        got = answers(stop)
    assert on and taken and torch.equal(got, want)
    assert utils.DeferredStopCheck.is_supported(torch.device("cpu"), None, False, False) is False  # put back


@pytest.mark.unit
def test_the_static_cache_is_chosen_by_the_answer_budget_and_bucketed():
    assert wants_static_cache(None, 128, 64, cuda=True) and wants_static_cache(None, 64, 64, cuda=True)
    assert not wants_static_cache(None, 32, 64, cuda=True)  # short answers: the compile would not pay off
    assert not wants_static_cache(None, 128, 64, cuda=False)  # no compiled step on CPU
    assert not wants_static_cache(None, 4096, None, cuda=True)  # switched off
    assert wants_static_cache(True, 8, None, cuda=False) and not wants_static_cache(False, 512, 64, cuda=True)
    kwargs = static_cache_kwargs(1531, 128)
    assert kwargs["cache_implementation"] == "static"
    from transformers import GenerationConfig

    assert ("max_cache_len" in kwargs) is hasattr(GenerationConfig(), "max_cache_len")  # 5.19 takes it
    if "max_cache_len" in kwargs:
        assert kwargs["max_cache_len"] == 1792 == 7 * CACHE_BUCKET
        assert static_cache_kwargs(1600, 128)["max_cache_len"] == 1792  # the same graph for both prompts
        assert static_cache_kwargs(1664, 128)["max_cache_len"] == 1792
        assert static_cache_kwargs(1665, 128)["max_cache_len"] == 2048


@pytest.mark.unit
def test_the_switches_are_in_the_model_config_and_an_unknown_speedup_is_refused():
    from omegaconf import OmegaConf

    from candlebench.stages.graph import compose_config

    cfg = compose_config(["model=qwen2_5_vl_7b", "model.decode_speedups=[deferred_stop]"])
    spec = ModelSpec.from_config(cfg.model)
    assert spec.decode_speedups == ("deferred_stop",) and spec.static_cache_from_tokens == 64
    assert cfg.backend.static_cache is None  # chosen by the answer budget

    cfg = OmegaConf.create({"name": "m", "path": "p", "decode_speedups": ["grouped_attention", "warp"]})
    with pytest.raises(ValueError, match=r"model.decode_speedups: unknown \['warp'\]"):
        ModelSpec.from_config(cfg)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_the_rope_index_computed_in_the_encode_is_the_one_generate_would_compute(monkeypatch, tiny_root, family):
    ahead = backend(tiny_root, family, ("rope_ahead",))
    inner = type(ahead.model.model)
    calls = []
    original = inner.get_rope_index

    @functools.wraps(original)  # its signature: what the backend passes it
    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(inner, "get_rope_index", counted)
    inputs = ahead.encode(BATCH)
    assert len(calls) == 1 and inputs.rope_index is not None  # in the encode (the runner's thread)
    got = [g.token_ids for g in ahead.generate(BATCH, inputs)]
    assert len(calls) == 1  # generate took it as given
    ahead.rope_ahead = False
    want = [g.token_ids for g in ahead.generate(BATCH)]
    assert len(calls) == 2 and got == want  # computed by generate itself: the same answers


def test_a_batch_encoded_while_another_generates_gets_its_own_rope_index(monkeypatch, capsys, tiny_root):
    """The runner encodes the next batch in a thread while the current one generates, i.e. inside
    ``rope_index_given`` for another batch's shape: the index is still computed, as alone, with no
    "does not fit" line (found by a user run: every batch encoded during a generate lost it)."""
    import candlebench.inference.decode_speedups as ds

    monkeypatch.setattr(ds, "ROPE_FAILED", [])
    ahead = backend(tiny_root, "qwen2_5_vl", ("rope_ahead",))
    alone = ahead.encode(BATCH)
    other = ahead.encode(BATCH[:1])
    with ds.rope_index_given(ahead.model, other.rope_index):  # the current batch, generating
        during = ahead.encode(BATCH)
    assert during.rope_index is not None and "does not fit" not in capsys.readouterr().err
    assert all(torch.equal(a, b) for a, b in zip(during.rope_index, alone.rope_index))


def test_the_static_decode_step_with_the_grouped_attention_compiles_as_one_graph(tiny_root):
    """What transformers compiles on CUDA (fullgraph), traced here by dynamo on CPU with its eager
    backend: one graph, no break, the tokens of the uncompiled dynamic cache."""
    from torch._dynamo.utils import counters
    from transformers import CompileConfig

    grouped = backend(tiny_root, "qwen2_5_vl", ("grouped_attention",))
    inputs = grouped.encode(BATCH)
    want = greedy(grouped, inputs).sequences
    everywhere = CompileConfig(backend="eager", fullgraph=True, mode=None)
    everywhere._compile_all_devices = True  # transformers compiles the step on accelerators only
    torch._dynamo.reset()
    counters.clear()
    got = greedy(grouped, inputs, cache_implementation="static", compile_config=everywhere).sequences
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    assert torch.equal(got, want)
    torch._dynamo.reset()


@pytest.mark.unit
def test_a_rope_index_that_does_not_fit_leaves_generate_to_compute_it(monkeypatch, capsys):
    """rope_ahead under a transformers whose get_rope_index wants other inputs: no rope index
    ahead (generate computes it, as without the speed-up), one line said once, no failed sample."""
    import candlebench.inference.decode_speedups as ds

    def get_rope_index(input_ids, image_grid_thw, needs_this):
        raise AssertionError("not called: a required input is missing")

    model = type("M", (), {"model": type("Inner", (), {"get_rope_index": staticmethod(get_rope_index)})()})()
    monkeypatch.setattr(ds, "ROPE_FAILED", [])
    batch = {"input_ids": torch.ones(1, 3), "image_grid_thw": torch.ones(1, 3)}
    assert ds.rope_index(model, batch) is None and ds.rope_index(model, batch) is None
    assert capsys.readouterr().err.count("rope_ahead does not fit this transformers (TypeError") == 1
    assert ds.rope_index(model, {"input_ids": torch.ones(1, 3)}) is None  # no images: nothing to compute
