"""Model backends behind one interface; ``BACKENDS`` maps a config name to a factory.

Imports are deferred to the factories, so a CPU machine without vLLM runs the other backends.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping

from omegaconf import DictConfig

from inference.backends.base import Backend, GenerationSpec
from inference.models import ModelSpec, ensure_built, resolve_checkpoint

# (model, generation, backend config, images per prompt) -> backend
Factory = Callable[[ModelSpec, GenerationSpec, DictConfig, int], Backend]


def _transformers(model: ModelSpec, generation: GenerationSpec, backend: DictConfig, images: int) -> Backend:
    from inference.backends.hf import TransformersBackend

    return TransformersBackend(model, generation, device_map=backend.get("device_map"))


def _vllm(model: ModelSpec, generation: GenerationSpec, backend: DictConfig, images: int) -> Backend:
    from inference.backends.vllm import VLLMBackend

    return VLLMBackend(model, generation, backend, images)


BACKENDS: Mapping[str, Factory] = {
    "transformers": _transformers,
    "vllm": _vllm,
}


# Module names of the vision side (Qwen's visual tower and merger, CLIP / SigLIP towers, LLaVA's projector).
VISION_MODULES = ("visual.", "vision_tower.", "vision_model.", "multi_modal_projector.", "merger.")


def adapter_touches_vision(adapter_dir: Path) -> bool:
    from safetensors import safe_open

    for path in sorted(adapter_dir.glob("*.safetensors")):
        with safe_open(str(path), "pt") as fh:
            if any(any(m in key for m in VISION_MODULES) for key in fh.keys()):
                return True
    return False


def served_model(backend: str, spec: ModelSpec) -> ModelSpec:
    """The checkpoint as ``backend`` will really run it. vLLM applies LoRA to the language model
    only and ignores an adapter's vision-tower weights without a word; such an adapter is merged
    into a copy of the checkpoint first (``merge_adapter``, so the run key says so), with a notice."""
    if backend != "vllm" or not spec.adapter or spec.merge_adapter:
        return spec
    ensure_built(spec)
    adapter = resolve_checkpoint(spec.adapter, what="adapter")
    if not adapter_touches_vision(adapter):
        return spec
    print(f"note: adapter {adapter} also changes the vision tower, which vLLM's LoRA does not cover: "
          "merging it into a copy of the checkpoint (model.merge_adapter=true)", file=sys.stderr)
    return replace(spec, merge_adapter=True)


def backend_factory(name: str) -> Factory:
    if name not in BACKENDS:
        raise ValueError(f"backend={name}: unknown; choose from {sorted(BACKENDS)}")
    return BACKENDS[name]
