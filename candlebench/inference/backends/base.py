"""The contract every backend honours: prepared requests in, generations out, same order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from PIL import Image

from candlebench.core.rules import integer, number
from candlebench.core.settings import setting


@dataclass(frozen=True)
class PreparedRequest:
    sample_id: str
    prompt: str
    images: tuple[Image.Image, ...]
    # The backend's per-request image inputs, computed in the runner's loader threads
    # (Backend.prepare; transformers: its image processor's output), None where it has none.
    pixels: Any = None


@dataclass(frozen=True)
class GenerationSpec:
    """``infer.generation``, and the answer constraint the task and model give."""

    max_new_tokens: int = setting(integer(1), default=32)
    temperature: float = setting(number(0), default=0.0)  # 0 = greedy
    top_p: float = setting(number(0, low_open=True, hi=1), default=1.0)
    seed: int = 0
    # Benchmarks fix the output length; evaluation leaves it to the model.
    min_new_tokens: int = setting(integer(0), default=0)
    # Constrain the output to this regex (the answer format; both backends, xgrammar), None = free text.
    regex: str | None = None


@dataclass(frozen=True)
class Media:
    """What each prompt carries, for a backend that sizes its memory ahead (vLLM's profiling run):
    how many images, and their size in pixels as the model receives them (None: not known ahead,
    e.g. images a dataset brings)."""

    images: int
    size: tuple[int, int] | None = None
    layout: str = "images_first"  # candlebench.inference.chat.LAYOUTS: where the images go in the user turn


@dataclass(frozen=True)
class Generation:
    text: str
    token_ids: tuple[int, ...]
    prompt_tokens: int
    # None: len(token_ids). A server that returns no token ids (not vLLM) says how many it generated.
    completion_tokens: int | None = None
    model: str | None = None  # the model the reply names (a server's); None: an engine in this process


class Backend(Protocol):
    """Everything the runner asks of a backend (candlebench.inference.runner); :class:`Batched` gives the
    defaults of a backend that generates batch by batch."""

    name: str
    continuous: bool  # fed request by request through ``stream`` instead of batches through ``generate``
    # Where the answers come from, for each record: None = this process's accelerator (the runner
    # names it); a server backend names the server.
    device: str | None
    # What an engine outside this process says it serves (a server's model), checked against the
    # run key's when the backend starts; None for an engine in this process.
    served: dict[str, Any] | None

    def prepare(self, request: PreparedRequest) -> PreparedRequest:
        """Per request, in the runner's loader threads (its charts decoded): what the backend can
        compute of its inputs ahead, or the request as it is."""
        ...

    def encode(self, batch: list[PreparedRequest]) -> Any:
        """The batch's model inputs, prepared in a thread while the previous batch generates; None:
        nothing to prepare ahead."""
        ...

    def generate(self, batch: list[PreparedRequest], encoded: Any = None) -> list[Generation]:
        """One generation per request, in order (``encoded``: :meth:`encode`'s result for this very
        batch, or None). Raises for the whole batch on failure."""
        ...

    def stream(self, requests: Iterable[PreparedRequest]) -> Iterator[list[tuple[str, Generation | Exception]]]:
        """For a ``continuous`` backend: the (sample_id, generation or error) pairs of each step, as
        they finish."""
        ...

    def close(self) -> None: ...


class Batched:
    """Defaults of a backend that generates batch by batch and prepares nothing ahead."""

    continuous = False
    device: str | None = None
    served: dict[str, Any] | None = None

    def prepare(self, request: PreparedRequest) -> PreparedRequest:
        return request

    def encode(self, batch: list[PreparedRequest]) -> Any:
        return None

    def stream(self, requests: Iterable[PreparedRequest]) -> Iterator[list[tuple[str, Generation | Exception]]]:
        raise TypeError(f"the {getattr(self, 'name', type(self).__name__)} backend is not fed continuously")
