"""Model backends behind one interface; ``BACKENDS`` maps a config name to a factory.

Imports are deferred to the factories, so a CPU machine without vLLM runs the other backends.
"""

from __future__ import annotations

from typing import Callable, Mapping

from omegaconf import DictConfig

from inference.backends.base import Backend, GenerationSpec
from inference.models import ModelSpec

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


def backend_factory(name: str) -> Factory:
    if name not in BACKENDS:
        raise ValueError(f"backend={name}: unknown; choose from {sorted(BACKENDS)}")
    return BACKENDS[name]
