"""Model backends behind one interface; ``BACKENDS`` maps a config name to a factory.

Imports are deferred to the factories, so a CPU machine without vLLM runs the other backends.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping

from omegaconf import DictConfig

from inference.backends.base import Backend, GenerationSpec, Media
from inference.models import ModelSpec, ensure_built, resolve_checkpoint
from inference.vision_attention import VISION_CONFIG

# (model, generation, backend config, what each prompt carries) -> backend
Factory = Callable[[ModelSpec, GenerationSpec, DictConfig, Media], Backend]


def _transformers(model: ModelSpec, generation: GenerationSpec, backend: DictConfig, media: Media) -> Backend:
    from inference.backends.hf import TransformersBackend

    return TransformersBackend(model, generation, device_map=backend.get("device_map"), layout=media.layout)


def _vllm(model: ModelSpec, generation: GenerationSpec, backend: DictConfig, media: Media) -> Backend:
    from inference.backends.vllm import VLLMBackend

    return VLLMBackend(model, generation, backend, media)


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
    """The checkpoint as ``backend`` will really run it, with every choice left to the backend
    made (so the run key says what ran).

    ``merge_adapter: null`` is the backend's choice. vLLM merges a run's one adapter into a copy of
    the checkpoint: served unmerged, LoRA adds its kernels to every layer and pads to
    ``max_lora_rank``, 8-50% slower than the same weights merged. transformers applies it unmerged,
    PEFT's own forward as the adapter was trained. An unmerged adapter (``merge_adapter=false``)
    that also changes the vision tower is merged for vLLM all the same: vLLM 0.32's LoRA covers
    the tower and connector only with the experimental ``enable_tower_connector_lora`` (Qwen VL
    models), which we have not verified against transformers; a notice says so."""
    if backend == "vllm" or spec.family not in VISION_CONFIG:
        # vLLM has its own kernels, other families no such path: the switch changes nothing there.
        spec = replace(spec, vision_attention="default")
    if spec.merge_adapter is None:
        spec = replace(spec, merge_adapter=backend == "vllm" and spec.adapter is not None)
    if backend != "vllm" or not spec.adapter or spec.merge_adapter:
        return spec
    ensure_built(spec)
    adapter = resolve_checkpoint(spec.adapter, what="adapter")
    if not adapter_touches_vision(adapter):
        return spec
    print(f"note: adapter {adapter} also changes the vision tower, which vLLM's LoRA covers only experimentally: "
          "merging it into a copy of the checkpoint (model.merge_adapter=true)", file=sys.stderr)
    return replace(spec, merge_adapter=True)


def backend_factory(name: str) -> Factory:
    if name not in BACKENDS:
        raise ValueError(f"backend={name}: unknown; choose from {sorted(BACKENDS)}")
    return BACKENDS[name]
