"""Tiny random-weight VLM checkpoints, built from configs in seconds (no download): the registry of
builders by name, and the cache that builds each once.

Every builder writes a complete checkpoint directory (weights as safetensors, config, processor,
tokenizer, chat template, generation_config) that loads with ``from_pretrained``
(``AutoModelForImageTextToText`` + ``AutoProcessor``) and with vLLM's CPU build. Builds are
deterministic: the same function gives the same weights and token ids. They are pipeline checks:
``candlebench run`` builds one when no real checkpoint is configured, and the tests build all of them.

One module a family: :mod:`.qwen` (Qwen2.5-VL, Qwen3-VL), :mod:`.gemma` (Gemma 3, Gemma 4),
:mod:`.llava` (LLaVA-1.5), :mod:`.llava_original` (the original LLaVA repo's layout, on the tower of
:mod:`.clip`), :mod:`.lora` (adapters); what they share (sizes, the seeded re-draw, the save) in
:mod:`.shared`. Qwen2.5-VL images are capped at 112x112 pixels (<= 16 tokens each); CLIP/SigLIP
towers run at 112 px (LLaVA: 64 tokens per image, Gemma 3: 16); Gemma 4 keeps the chart's aspect
within its smallest budget (<= 70 tokens per image).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from candlebench.inference.tiny.gemma import build_tiny_gemma3, build_tiny_gemma4
from candlebench.inference.tiny.llava import build_tiny_llava
from candlebench.inference.tiny.llava_original import build_original_llava_checkpoint
from candlebench.inference.tiny.lora import build_tiny_lora
from candlebench.inference.tiny.qwen import build_tiny_qwen2_5_vl, build_tiny_qwen3_vl
from candlebench.inference.tiny.shared import SEED

# Bumped whenever a builder changes what it builds, so caches rebuild instead of serving an old fixture.
FIXTURE_VERSION = "2"

BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_5_vl": build_tiny_qwen2_5_vl,
    "qwen3_vl": build_tiny_qwen3_vl,
    "gemma3": build_tiny_gemma3,
    "gemma4_e4b": lambda dest: build_tiny_gemma4(dest, "e4b"),
    "gemma4_31b": lambda dest: build_tiny_gemma4(dest, "31b"),
    "llava": build_tiny_llava,
    "llava_original": build_original_llava_checkpoint,
}


def fixture_dir(name: str, builder: Callable[[Path], Path], root: Path) -> Path:
    """Build ``builder`` once into ``root/name`` and return the directory the builder returned.

    A finished build is marked by ``root/name/.built`` (the returned path relative to ``root/name``,
    then :data:`FIXTURE_VERSION`); an unfinished or outdated one is removed and rebuilt. Builds go to a temporary sibling first
    and are renamed into place, so concurrent sessions (pytest-xdist workers) never see half a
    checkpoint."""
    root = Path(root)
    final = root / name
    marker = final / ".built"
    if marker.is_file() and marker.read_text().split("\n")[1:2] == [FIXTURE_VERSION]:
        return final / marker.read_text().split("\n")[0]
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        built = Path(builder(tmp / "out")).resolve()
        rel = built.relative_to((tmp / "out").resolve())
        _rewrite_paths(tmp / "out", str((tmp / "out").resolve()), str(final.resolve()))
        (tmp / "out" / ".built").write_text(f"{rel}\n{FIXTURE_VERSION}\n")
        try:
            os.rename(tmp / "out", final)
        except OSError:
            if not marker.is_file() or marker.read_text().split("\n")[1:2] != [FIXTURE_VERSION]:
                shutil.rmtree(final, ignore_errors=True)  # an unfinished or outdated build in the cache
                os.rename(tmp / "out", final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / marker.read_text().split("\n")[0]


def _rewrite_paths(directory: Path, old: str, new: str) -> None:
    """Absolute paths written into JSON files during a build (``mm_vision_tower``,
    ``base_model_name_or_path``) point into the temporary build folder: point them at the final one."""
    for path in directory.rglob("*.json"):
        text = path.read_text()
        if old in text:
            path.write_text(text.replace(old, new))


# Adapters are built on top of a base checkpoint: name -> builder(base, dest).
ADAPTER_BUILDERS: dict[str, Callable[[Path, Path], Path]] = {
    "lora": build_tiny_lora,
    "lora_vision": lambda base, dest: build_tiny_lora(base, dest, seed=SEED + 2, vision=True),
    # Gemma 4 fixtures only: the multimodal projector too.
    "lora_connector": lambda base, dest: build_tiny_lora(base, dest, seed=SEED + 3,
                                                         connector="embed_vision.embedding_projection"),
}
