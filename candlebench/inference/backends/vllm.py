"""The vLLM backend: requests fed to the engine continuously (``stream``), or ``LLM.generate``
over whole chunks (``backend.feed=chunks``).

The prompt string comes from the checkpoint's chat template (as in the transformers backend) and
the task's charts go in ``multi_modal_data``, matched to the template's image placeholders in order.
A run's adapter is merged into a copy of the checkpoint by default (``served_model``: a merged
model runs at the base model's speed); with ``merge_adapter=false`` it is served through
``LoRARequest`` with ``max_lora_rank`` the smallest rank vLLM offers that holds it (a larger one
only pads). Memory is profiled for the prompts the task really sends: its image count at its
image size, and no video (vLLM's default profiles 999 items at the processor's largest image,
12.8 MP for Qwen2.5-VL, and takes that from the KV cache). Written against vLLM 0.32 (CPU build) /
0.33 (CUDA).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Iterator


from candlebench.core.errors import UserError
from candlebench.core.io import fingerprint
from candlebench.inference.backends.base import Batched, Generation, GenerationSpec, Media, PreparedRequest
from candlebench.inference.backends.settings import VLLMSettings
from candlebench.inference.chat import chat_text, check_thinking, needs_special_tokens, reasoning_opener, strip_after_eos
from candlebench.inference.models import ModelSpec, resolve_checkpoint


def merged_checkpoint(spec: ModelSpec, cache_root: Path) -> Path:
    """A merged copy of base + adapter, built once with transformers and reused while sound."""
    from candlebench.inference.backends.hf import load_model

    target = cache_root / f"{spec.name}-merged-{fingerprint(spec.identity())}"
    if (target / "config.json").exists() and _plain_keys(target):
        return target
    # merge_adapter: plain layers with the LoRA folded in. On the CPU: on a GPU the merge would hold
    # the model's memory in this process just before vLLM's start-up check wants it free.
    # Without the vision speed-ups: mlp_pad widens weights the saved config does not describe.
    model, processor = load_model(replace(spec, vision_speedups=()), device_map="cpu")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    processor.save_pretrained(partial)
    if not _plain_keys(partial):
        raise RuntimeError(f"{partial}: the merged checkpoint still has adapter-wrapped keys; not using it")
    shutil.rmtree(target, ignore_errors=True)  # a copy of earlier, broken merges (base_model.* keys)
    os.replace(partial, target)
    return target


def _plain_keys(directory: Path) -> bool:
    """Weights saved under the base checkpoint's names: no ``base_model.`` prefix, no LoRA tensors."""
    from safetensors import safe_open

    files = sorted(directory.glob("*.safetensors"))
    for path in files:
        with safe_open(str(path), "pt") as fh:
            if any(k.startswith("base_model.") or "lora_" in k for k in fh.keys()):
                return False
    return bool(files)


class UnsupportedAttention(UserError, ValueError):
    pass


def check_attention_supported(checkpoint: Path, on_gpu: bool) -> None:
    """Gemma 4 can attend bidirectionally among an image's tokens (``use_bidirectional_attention:
    "vision"``). vLLM's CPU attention backend runs such a model causally without a word (14 of 20
    answers differed from transformers); refuse there, and warn on GPU, where it is unverified here."""
    config = json.loads((checkpoint / "config.json").read_text())
    text = config.get("text_config") or config
    mode = text.get("use_bidirectional_attention")
    if not mode:
        return
    message = (f"{checkpoint}: use_bidirectional_attention={mode!r} (bidirectional attention over image tokens)")
    if not on_gpu:
        raise UnsupportedAttention(
            f"{message}: vLLM's CPU attention backend runs it causally, so answers would differ from the "
            "model as trained; use backend=transformers on this machine"
        )
    print(f"warning: {message}: check that your vLLM attention backend honours it (compare a few "
          "answers with backend=transformers)", file=sys.stderr)


# vLLM's LoRAConfig.max_lora_rank choices (vllm/config/lora.py, MaxLoRARanks).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def lora_rank(adapter_rank: int) -> int:
    """The smallest max_lora_rank vLLM accepts that holds the adapter."""
    fits = [r for r in LORA_RANKS if r >= adapter_rank]
    if not fits:
        raise UserError(f"adapter rank {adapter_rank} exceeds vLLM's largest max_lora_rank {LORA_RANKS[-1]}; "
                        "merge it (model.merge_adapter=true)")
    return fits[0]


def gib_bytes(gib: float) -> int:
    """``backend.cpu_kvcache_space_gb`` as vLLM's ``kv_cache_memory_bytes``."""
    return round(float(gib) * 2**30)


def mm_limits(media: Media) -> dict[str, Any]:
    """limit_mm_per_prompt: the task's images at their size, no video."""
    image: Any = media.images
    if media.size is not None:
        image = {"count": media.images, "width": media.size[0], "height": media.size[1]}
    return {"image": image, "video": 0}


class VLLMBackend(Batched):
    """``encode``: nothing ahead (the engine's own processor runs in ``generate``)."""

    name = "vllm"

    def __init__(self, model: ModelSpec, generation: GenerationSpec, backend: VLLMSettings, media: Media):
        import torch

        path = resolve_checkpoint(model.path, model.revision)
        check_attention_supported(path, on_gpu=torch.cuda.is_available())

        from transformers import AutoProcessor, GenerationConfig
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
        from vllm.sampling_params import StructuredOutputsParams

        # vLLM's CPU build reserves its KV cache up front, and its default is sized for servers. It
        # zeroes every byte at each engine start: 1-10 CPU s per GiB measured on a 2-core VM, so the
        # size is given in bytes (a fraction of a GiB for small models), not through
        # VLLM_CPU_KVCACHE_SPACE (whole GiB), which still wins where a user sets it.
        cpu_kv = {} if torch.cuda.is_available() else {"kv_cache_memory_bytes": gib_bytes(backend.cpu_kvcache_space_gb)}
        # Continuous feeding (``stream``, backend.feed=continuous) keeps this many requests in the engine.
        self.continuous = backend.feed == "continuous"
        self.in_flight = int(backend.in_flight)
        self.lora = None
        lora_kwargs: dict[str, Any] = {}
        if model.adapter and model.merge_adapter:
            path = merged_checkpoint(model, Path(backend.merged_dir))
        elif model.adapter:
            adapter = resolve_checkpoint(model.adapter, what="adapter")
            rank = json.loads((adapter / "adapter_config.json").read_text())["r"]
            lora_kwargs = {"enable_lora": True, "max_lora_rank": lora_rank(int(rank)), "max_loras": 1}
            self.lora = LoRARequest(model.name, 1, str(adapter))

        self.processor = AutoProcessor.from_pretrained(path, local_files_only=True, trust_remote_code=model.trust_remote_code)
        self.template_kwargs, self.layout = dict(model.chat_template_kwargs), media.layout
        check_thinking(self.processor, model.name, self.template_kwargs, generation.max_new_tokens)
        self.opener = reasoning_opener(self.processor, self.template_kwargs)
        dtype = model.dtype if model.dtype != "auto" else ("bfloat16" if torch.cuda.is_available() else "float32")
        self.llm = LLM(
            model=str(path),
            tokenizer=str(path),
            trust_remote_code=model.trust_remote_code,
            max_model_len=model.max_model_len,
            limit_mm_per_prompt=mm_limits(media),
            mm_processor_kwargs=dict(model.processor_kwargs) or None,
            tensor_parallel_size=model.tensor_parallel_size,
            dtype=dtype,
            seed=generation.seed,
            enforce_eager=bool(backend.enforce_eager),
            # bench/infer_vllm.py only: random ("dummy") weights at a real checkpoint's size.
            **({"load_format": str(backend.load_format)} if backend.load_format else {}),
            **({"gpu_memory_utilization": float(backend.gpu_memory_utilization)} if torch.cuda.is_available() else {}),
            **cpu_kv,
            **lora_kwargs,
        )
        structured = StructuredOutputsParams(regex=generation.regex) if generation.regex else None
        self.params = SamplingParams(
            max_tokens=generation.max_new_tokens,
            min_tokens=generation.min_new_tokens,
            temperature=generation.temperature,
            top_p=generation.top_p,
            seed=generation.seed,
            structured_outputs=structured,
        )
        tokenizer = self.processor.tokenizer
        eos = GenerationConfig.from_pretrained(path).eos_token_id
        ids = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id, tokenizer.pad_token_id}
        self.stop_ids = ids - {None}

    def _prompt(self, request: PreparedRequest) -> tuple[dict, dict]:
        text = chat_text(self.processor, request.prompt, len(request.images), self.template_kwargs, self.layout)
        return ({"prompt": text, "multi_modal_data": {"image": list(request.images)}},
                {"add_special_tokens": needs_special_tokens(self.processor, text)})

    def _generation(self, out: Any) -> Generation:
        ids = strip_after_eos(list(out.outputs[0].token_ids), self.stop_ids)
        return Generation(text=self.opener + self.processor.tokenizer.decode(list(ids), skip_special_tokens=True),
                          token_ids=ids, prompt_tokens=len(out.prompt_token_ids))

    def generate(self, batch: list[PreparedRequest], encoded: Any = None) -> list[Generation]:
        prompts = [self._prompt(r)[0] for r in batch]
        outputs = self.llm.generate(
            prompts,
            self.params,
            lora_request=self.lora,
            use_tqdm=False,
            tokenization_kwargs=self._prompt(batch[0])[1],
        )
        return [self._generation(out) for out in outputs]

    def stream(self, requests: Iterable[PreparedRequest]) -> Iterator[list[tuple[str, Generation | Exception]]]:
        """(sample_id, generation) of the requests each engine step finished, keeping the engine fed:
        a new request goes in whenever one comes out, at most ``in_flight`` at once, so no chunk
        waits on its longest answer (2-4% of the time for 32-token answers, 1.3-2x for thinking
        models with 2-4k). A request the engine refuses (too long, bad image) comes out at once as
        its exception. One list per step, so its answers are written with one fsync. Greedy
        answers do not depend on which requests share a step (tested against ``generate``)."""
        from vllm.sampling_params import RequestOutputKind

        engine = self.llm.llm_engine
        params = self.params.clone()
        params.output_kind = RequestOutputKind.FINAL_ONLY  # as LLM.generate asks: no partial outputs
        pending, active, counter = iter(requests), {}, 0
        while True:
            while len(active) < self.in_flight:
                request = next(pending, None)
                if request is None:
                    break
                counter += 1
                try:
                    prompt, tokenization = self._prompt(request)
                    engine.add_request(str(counter), prompt, params, lora_request=self.lora,
                                       tokenization_kwargs=tokenization)
                except Exception as err:  # refused before it ran: that sample's failure, not the run's
                    yield [(request.sample_id, err)]
                    continue
                active[str(counter)] = request.sample_id
            if not active:
                return
            finished = [(active.pop(out.request_id), self._generation(out)) for out in engine.step() if out.finished]
            if finished:
                yield finished

    def close(self) -> None:
        import gc

        del self.llm
        gc.collect()
