"""The transformers backend: the checkpoint's own class, its processor and chat template.

Left padding and greedy decoding by default, so a sample's answer does not depend on the batch it
ran in (tested at batch sizes 1 and 8). bf16 on GPU, fp32 on CPU unless the model config says
otherwise; one GPU per model when it fits (``placement``), a large model spread over the GPUs of
one node, never offloaded to CPU unless asked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from candlebench.core.errors import UserError
from candlebench.inference.backends.base import Batched, Generation, GenerationSpec, PreparedRequest
from candlebench.inference.backends.hf_pixels import PixelsAhead, pixel_dtype
from candlebench.inference.chat import chat_text, check_thinking, needs_special_tokens, reasoning_opener, strip_after_eos
from candlebench.inference.decode_speedups import (deferred_stop, rope_index, rope_index_given, static_cache_kwargs,
                                                   wants_static_cache)
from candlebench.inference.memory import batch_memory
from candlebench.inference.models import ModelSpec, resolve_checkpoint


def torch_dtype(name: str) -> Any:
    import torch

    if name == "auto":
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    return getattr(torch, name)


class DoesNotFit(UserError, RuntimeError):
    """The model would be offloaded to CPU or disk: slower by orders of magnitude, without a word."""


def placement(path: Path, device_map: str | None) -> Any:
    """``device_map`` for ``from_pretrained``: as configured, or (null) the whole model on this
    process's first GPU when its weights fit there with room for activations and the KV cache,
    else spread over the node's GPUs. One model per GPU is the fast layout: ``auto`` on a
    multi-GPU node splits even a 3B over every GPU, each waiting for the others."""
    import torch

    if not torch.cuda.is_available():
        return None
    if device_map is not None:
        return device_map
    weights = sum(f.stat().st_size for f in path.glob("*.safetensors")) or sum(f.stat().st_size for f in path.glob("*.bin"))
    return {"": 0} if weights < 0.8 * torch.cuda.get_device_properties(0).total_memory else "auto"


def check_placement(model: Any, path: Path, device_map: str | None) -> None:
    """On a GPU machine: refuse weights left on the CPU (or on disk, as meta tensors) unless a
    device_map was asked for, which gets a warning."""
    offloaded = sorted({p.device.type for p in model.parameters()} & {"cpu", "meta"})
    if not offloaded or device_map == "cpu":  # asked for (the merge of an adapter for vLLM)
        return
    if device_map is None:
        raise DoesNotFit(f"{path}: the model does not fit this node's GPUs and would run partly on {offloaded}; "
                         "use more GPUs (or a smaller dtype), or set backend.device_map=auto to accept the offload")
    print(f"warning: {path}: parts of the model run on {offloaded} (backend.device_map={device_map})", file=sys.stderr)


def load_model(spec: ModelSpec, device_map: str | None = None) -> tuple[Any, Any]:
    """(model, processor) with the adapter applied (or merged), in eval mode."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    path = resolve_checkpoint(spec.path, spec.revision)
    processor = AutoProcessor.from_pretrained(
        path, local_files_only=True, trust_remote_code=spec.trust_remote_code, **spec.processor_kwargs
    )
    processor.tokenizer.padding_side = "left"
    model = AutoModelForImageTextToText.from_pretrained(
        path,
        dtype=torch_dtype(spec.dtype),
        device_map=placement(path, device_map),
        local_files_only=True,
        trust_remote_code=spec.trust_remote_code,
    )
    if torch.cuda.is_available():
        check_placement(model, path, device_map)
    if spec.vision_attention == "varlen":
        from candlebench.inference.vision_attention import use_varlen
        from candlebench.inference.vision_speedups import apply_speedups

        use_varlen(model)
        apply_speedups(model, spec.vision_speedups)
    if "grouped_attention" in spec.decode_speedups:
        from candlebench.inference.decode_attention import use_grouped

        use_grouped(model)
    if spec.adapter:
        # transformers' own PEFT integration, not PeftModel.from_pretrained: peft silently drops
        # adapter keys saved under pre-4.52 module names (model.layers.*), which adapters trained
        # with LLaMA-Factory on older transformers (PyFi-QwenVL) use; the output would be the base's.
        conversions = getattr(model, "_weight_conversions", None)
        model.load_adapter(str(resolve_checkpoint(spec.adapter, what="adapter")))
        if spec.merge_adapter:
            merge_adapter_weights(model, conversions)
    return model.eval(), processor


def merge_adapter_weights(model: Any, conversions: Any = None) -> None:
    """Fold LoRA into the base weights and put the plain layers back in place.

    peft's merge_and_unload, for a model whose adapter came through transformers' integration;
    afterwards the model saves (and runs) as an ordinary checkpoint. ``load_adapter`` swaps the
    model's key conversions for the adapter's (``base_model.model.*``); ``conversions`` are the
    model's own, put back so ``save_pretrained`` writes the base checkpoint's key names — without
    it vLLM finds no module named ``base_model`` in the merged copy.
    """
    from peft.tuners.tuners_utils import BaseTunerLayer

    for name, module in list(model.named_modules()):
        if isinstance(module, BaseTunerLayer):
            module.merge()
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent), child, module.get_base_layer())
    # The integration's own markers: without them save_pretrained would write only the adapter.
    model._hf_peft_config_loaded = False
    model.peft_config = {}
    if conversions is not None:
        model._weight_conversions = conversions


def compile_answer_regex(tokenizer: Any, model: Any, eos_ids: list[int], regex: str | None) -> Any:
    """The answer format as a token-level grammar (xgrammar, the engine vLLM's structured output
    uses too), so ``answer_regex`` means the same in both backends; None when unconstrained."""
    if regex is None:
        return None
    import xgrammar

    vocab_size = model.config.get_text_config().vocab_size  # embedding rows, often > len(tokenizer)
    info = xgrammar.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=eos_ids)
    return xgrammar.GrammarCompiler(info).compile_regex(regex)


class TransformersBackend(Batched):
    name = "transformers"

    def __init__(self, model: ModelSpec, generation: GenerationSpec, device_map: str | None = None,
                 layout: str = "images_first", pixels_ahead: bool = True, static_cache: bool | None = None):
        """``static_cache`` None: chosen by the answer budget (:func:`wants_static_cache`)."""
        import torch

        loaded, processor = load_model(model, device_map)
        check_thinking(processor, model.name, dict(model.chat_template_kwargs), generation.max_new_tokens)
        self._serve(loaded, processor, generation, dict(model.chat_template_kwargs), layout, pixels_ahead)
        self.deferred_stop = "deferred_stop" in model.decode_speedups
        self.rope_ahead = "rope_ahead" in model.decode_speedups
        self.static_cache = wants_static_cache(static_cache, generation.max_new_tokens, model.static_cache_from_tokens,
                                               torch.cuda.is_available())

    @classmethod
    def of_loaded(cls, model: Any, processor: Any, generation: GenerationSpec, layout: str = "images_first",
                  pixels_ahead: bool = True) -> "TransformersBackend":
        """A backend over a model already in memory (bench/infer_gpu.py's random-weight real-size
        models, which are never written to disk)."""
        backend = cls.__new__(cls)
        backend._serve(model, processor, generation, {}, layout, pixels_ahead)
        return backend

    @property
    def static_cache(self) -> bool:
        """Decode with a static KV cache (``backend.static_cache``): on CUDA transformers then
        compiles the decode step (CUDA graphs); the tokens are the dynamic cache's. Only for a
        model class that declares its forward compilable; another gets one line and the default."""
        return self._static_cache

    @static_cache.setter
    def static_cache(self, on: bool) -> None:
        compilable = bool(getattr(self.model, "_can_compile_fullgraph", False))
        if on and not compilable:
            print(f"backend.static_cache: {type(self.model).__name__} does not declare a compilable forward; "
                  "decoding with the dynamic cache", file=sys.stderr)
        self._static_cache = on and compilable

    def _serve(self, model: Any, processor: Any, generation: GenerationSpec, template_kwargs: dict, layout: str,
               pixels_ahead: bool) -> None:
        self.generation, self.layout, self.pixels_ahead = generation, layout, pixels_ahead
        self._static_cache = self.deferred_stop = self.rope_ahead = self.memory_told = False
        self.model, self.processor, self.template_kwargs = model, processor, template_kwargs
        self.opener = reasoning_opener(processor, template_kwargs)
        tokenizer = self.processor.tokenizer
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)
        self.stop_ids = eos_ids | {self.pad_id}
        self.grammar = compile_answer_regex(tokenizer, self.model, sorted(eos_ids), generation.regex)
        self.pixels = PixelsAhead(processor, pixel_dtype(model))

    def prepare(self, request: PreparedRequest) -> PreparedRequest:
        """The request's pixel values and grids, computed in the runner's loader thread."""
        return self.pixels.prepare(request) if self.pixels_ahead else request

    def encode(self, batch: list[PreparedRequest]) -> Any:
        """The processor's tensors for a batch (7-12 ms of CPU per image, unless :meth:`prepare`
        computed the pixels in the loader threads), in page-locked memory on a GPU machine. The
        runner calls this for the next batch in a thread while the current one generates, so the
        GPU does not wait for it; the copy to the GPU is then asynchronous."""
        import torch

        texts = [chat_text(self.processor, r.prompt, len(r.images), self.template_kwargs, self.layout) for r in batch]
        with self.pixels.encoding(self.pixels.batch(batch)):
            inputs = self.processor(
                text=texts,
                # None for a batch without one chart (E2A's and the ablations' OHLCV-text prompts): the
                # image processors index the first image of [[], ...] and raise.
                images=[list(r.images) for r in batch] if any(r.images for r in batch) else None,
                padding=True,
                return_tensors="pt",
                add_special_tokens=needs_special_tokens(self.processor, texts[0]),
            )
        # read by generate (rope_index_given): computed here, in the runner's encode thread, on the CPU
        inputs.rope_index = rope_index(self.model, inputs) if self.rope_ahead else None
        if torch.cuda.is_available():
            for key, value in inputs.items():
                if isinstance(value, torch.Tensor) and not value.is_pinned():
                    inputs[key] = value.pin_memory()
        return inputs

    def generate(self, batch: list[PreparedRequest], encoded: Any = None) -> list[Generation]:
        """``encoded``: :meth:`encode` of this very batch, done ahead; None encodes it here."""
        import torch

        inputs = (self.encode(batch) if encoded is None else encoded).to(self.model.device, non_blocking=True)
        g = self.generation
        sampling = {"do_sample": True, "temperature": g.temperature, "top_p": g.top_p} if g.temperature > 0 else {
            "do_sample": False, "temperature": None, "top_p": None, "top_k": None,
        }
        if g.temperature > 0:
            torch.manual_seed(g.seed)
        if self.grammar is not None:
            from xgrammar.contrib.hf import LogitsProcessor

            # One matcher per row, fresh per call: the processor keeps each row's parse state.
            sampling["logits_processor"] = [LogitsProcessor([self.grammar] * len(batch))]
        prompt_len = inputs["input_ids"].shape[1]
        if not self.memory_told and inputs["input_ids"].is_cuda:  # what the batch size asks of the GPU, once
            self.memory_told = True
            need = batch_memory(self.model, prompt_len + g.max_new_tokens, len(batch))
            print(need.line(torch.cuda.get_device_properties(inputs["input_ids"].device).total_memory), file=sys.stderr)
        with (torch.inference_mode(), deferred_stop(("cuda",) if self.deferred_stop else ()),
              rope_index_given(self.model, getattr(inputs, "rope_index", None))):
            out = self.model.generate(
                **inputs,
                max_new_tokens=g.max_new_tokens,
                min_new_tokens=g.min_new_tokens or None,
                pad_token_id=self.pad_id,
                **(static_cache_kwargs(prompt_len, g.max_new_tokens) if self.static_cache else {}),
                **sampling,
            )
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        results = []
        for row, n_prompt in zip(out[:, prompt_len:].tolist(), prompt_tokens):
            ids = strip_after_eos(row, self.stop_ids)
            text = self.opener + self.processor.tokenizer.decode(list(ids), skip_special_tokens=True)
            results.append(Generation(text=text, token_ids=ids, prompt_tokens=int(n_prompt)))
        return results

    def close(self) -> None:
        del self.model
