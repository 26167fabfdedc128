"""The contract every backend honours: prepared requests in, generations out, same order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from PIL import Image


@dataclass(frozen=True)
class PreparedRequest:
    sample_id: str
    prompt: str
    images: tuple[Image.Image, ...]


@dataclass(frozen=True)
class GenerationSpec:
    max_new_tokens: int = 32
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    seed: int = 0
    # Benchmarks fix the output length; evaluation leaves it to the model.
    min_new_tokens: int = 0
    # Constrain the output to this regex (the answer format; both backends, xgrammar), None = free text.
    regex: str | None = None


@dataclass(frozen=True)
class Media:
    """What each prompt carries, for a backend that sizes its memory ahead (vLLM's profiling run):
    how many images, and their size in pixels as the model receives them (None: not known ahead,
    e.g. images a dataset brings)."""

    images: int
    size: tuple[int, int] | None = None
    layout: str = "images_first"  # inference.chat.LAYOUTS: where the images go in the user turn


@dataclass(frozen=True)
class Generation:
    text: str
    token_ids: tuple[int, ...]
    prompt_tokens: int


class Backend(Protocol):
    name: str

    def generate(self, batch: list[PreparedRequest]) -> list[Generation]:
        """One generation per request, in order. Raises for the whole batch on failure."""
        ...

    def close(self) -> None: ...
