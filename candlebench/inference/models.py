"""Checkpoints as configs: what to load, from where, offline.

``path`` is a local directory or a Hugging Face repo id that must already be in the local cache
(``HF_HUB_OFFLINE=1``: nothing is downloaded at run time). ``adapter`` is a PEFT LoRA adapter
(directory or cached repo id) applied on top; ``merge_adapter`` folds it into the weights first,
which the vLLM backend needs when the adapter also touches the vision tower.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from candlebench.inference.decode_speedups import DECODE_SPEEDUPS
from candlebench.inference.vision_speedups import DEFAULT_SPEEDUPS


class CheckpointNotFound(FileNotFoundError):
    pass


VISION_ATTENTION = ("varlen", "default")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    path: str
    family: str = ""
    revision: str | None = None
    adapter: str | None = None
    merge_adapter: bool | None = None  # None: the backend's choice (candlebench.inference.backends.served_model)
    trust_remote_code: bool = False
    release_date: str | None = None  # for the contamination split of the scores
    dtype: str = "auto"  # auto: bfloat16 on GPU, float32 on CPU
    tensor_parallel_size: int = 1
    max_model_len: int = 8192
    processor_kwargs: dict[str, Any] = field(default_factory=dict)
    # Passed to the chat template (e.g. {enable_thinking: false}); part of the run key.
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    random_weights: bool = False  # a pipeline check, not a model: reports say so
    # The budget infer.generation.max_new_tokens defaults to (thousands for reasoning models).
    max_new_tokens: int = 32
    gpu_batch_size: int = 8  # transformers backend on a GPU, when infer.batch_size is null (not in the run key)
    # transformers backend: "varlen" = one attention call per vision layer where the model type has
    # it (candlebench.inference.vision_attention), "default" = transformers' own path. Part of the run key.
    vision_attention: str = "varlen"
    # With vision_attention=varlen: the vision tower's speed-ups that keep its outputs
    # (candlebench.inference.vision_speedups.SPEEDUPS, by default DEFAULT_SPEEDUPS); not in the run key.
    vision_speedups: tuple[str, ...] = DEFAULT_SPEEDUPS
    # transformers backend: the decode speed-ups that keep the tokens (inference/decode_speedups.py); not in
    # the run key. From this answer budget on (new tokens), a static KV cache on CUDA (None: never).
    decode_speedups: tuple[str, ...] = DECODE_SPEEDUPS
    static_cache_from_tokens: int | None = 64
    # Held to the task's answer format when task.answer_regex is unset (the random fixtures: so their answers parse).
    constrain_answers: bool = False
    # Tiny fixtures only: builder names (candlebench.inference.tiny.builders.BUILDERS) and the one path in the
    # project's cache each may write. A fixture is built only when `path` / `adapter` is that path:
    # a directory you name instead is loaded as it is, never written or deleted.
    build: str | None = None
    build_adapter: str | None = None
    fixture: str | None = None
    adapter_fixture: str | None = None

    def builds_base(self) -> bool:
        return self.build is not None and _same_path(self.path, self.fixture)

    def builds_adapter(self) -> bool:
        return self.build_adapter is not None and self.builds_base() and _same_path(self.adapter, self.adapter_fixture)

    @classmethod
    def from_config(cls, block: Mapping[str, Any]) -> "ModelSpec":
        """The ``model:`` block (its values resolved), checked."""
        values = dict(block)
        values["processor_kwargs"] = dict(values.get("processor_kwargs") or {})
        values["chat_template_kwargs"] = dict(values.get("chat_template_kwargs") or {})
        if values.get("release_date") is not None:
            values["release_date"] = str(values["release_date"])
        if values.get("vision_attention", "varlen") not in VISION_ATTENTION:
            raise ValueError(f"model.vision_attention={values['vision_attention']}: one of {list(VISION_ATTENTION)}")
        from candlebench.inference.vision_speedups import SPEEDUPS

        for key, known in (("vision_speedups", SPEEDUPS), ("decode_speedups", DECODE_SPEEDUPS)):
            if key in values:
                values[key] = tuple(values[key] or ())
                unknown = sorted(set(values[key]) - set(known))
                if unknown:
                    raise ValueError(f"model.{key}: unknown {unknown}; each one of {sorted(known)}")
        return cls(**values)

    def identity(self) -> dict[str, Any]:
        """What of the checkpoint changes outputs: goes into the run key."""
        return {
            "path": self.path,
            "revision": self.revision,
            "adapter": self.adapter,
            "merge_adapter": self.merge_adapter,
            "dtype": self.dtype,
            "processor_kwargs": self.processor_kwargs,
            **({"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}),
            **({"vision_attention": self.vision_attention} if self.vision_attention != "default" else {}),
        }


def resolve_checkpoint(ref: str, revision: str | None = None, what: str = "model") -> Path:
    """A local directory, or the snapshot of a repo id in the local Hugging Face cache."""
    path = Path(ref).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists() and not (path / "adapter_config.json").exists():
            raise CheckpointNotFound(f"{what} checkpoint {path}: directory has no config.json / adapter_config.json")
        return path
    if path.is_absolute() or ref.startswith((".", "~")) or ref.count("/") != 1:
        raise CheckpointNotFound(f"{what} checkpoint {ref}: no such directory")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(ref, revision=revision, local_files_only=True))
    except (LocalEntryNotFoundError, FileNotFoundError, ValueError) as err:
        cache = os.environ.get("HF_HUB_CACHE") or os.environ.get("HF_HOME") or "~/.cache/huggingface"
        raise CheckpointNotFound(
            f"{what} checkpoint {ref}: not a local directory and not in the local Hugging Face cache "
            f"({cache}). Fetch it where there is internet (`hf download {ref}`) and copy the cache, "
            f"or set the path to a local directory. ({err.__class__.__name__})"
        ) from None


def _same_path(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def ensure_built(spec: ModelSpec) -> None:
    """Tiny fixtures only: build the checkpoint (and adapter) at their fixture paths on first use."""
    if not spec.builds_base():
        return
    from candlebench.inference.tiny.builders import ADAPTER_BUILDERS, BUILDERS, fixture_dir

    base = Path(spec.path)
    fixture_dir(base.name, BUILDERS[spec.build], base.parent)
    if spec.builds_adapter():
        adapter = Path(spec.adapter)
        fixture_dir(adapter.name, lambda dest: ADAPTER_BUILDERS[spec.build_adapter](base, dest), adapter.parent)


def check_available(spec: ModelSpec) -> None:
    """Fail now, naming the path, rather than after samples were queued for a model that is not there."""
    if not spec.builds_base():
        resolve_checkpoint(spec.path, spec.revision)
    if spec.adapter and not spec.builds_adapter():
        resolve_checkpoint(spec.adapter, what="adapter")
