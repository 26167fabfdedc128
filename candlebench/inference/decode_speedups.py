"""How the transformers backend decodes long answers: the static KV cache chosen by the answer
budget, its length in buckets, and the stop check without a host sync per step.

Decode through the runner cost ~40 ms a step on an H200 at batch 64 against a memory floor of
~4-6 ms (docs/inference.md): kernel launches, and the host waiting for the device twice a step
(transformers' stop check and its mask check). The levers here, each a name in
``model.decode_speedups`` (none changes a token on the tiny fixtures' tests; grouped attention sums in
another order, so a near-tie can flip, as docs/inference.md says):

* ``grouped_attention``: the language model's attention without the KV copy, and its decode mask
  built without a read back (``candlebench/inference/decode_attention.py``);
* ``deferred_stop``: transformers' own deferred stop check (``DeferredStopCheck``: the "all rows
  finished" flag copied asynchronously and read one step late, the extra step undone), which it
  enables on MPS only, enabled on CUDA too;
* ``rope_ahead``: Qwen's multimodal rope index (``get_rope_index``: a Python loop over the batch's
  samples and their images, on the GPU's tensors at the start of ``generate``, the GPU idle
  meanwhile) computed on the CPU tensors in the runner's encode thread, while the previous batch
  generates, and handed to ``generate`` for the batch it was computed for (integer arithmetic:
  the same positions);

and, chosen by the answer budget (``model.static_cache_from_tokens``, null: never), the static
cache: for answers of that many new tokens on, on CUDA, where transformers compiles the decode
step into CUDA graphs; its length rounded up to :data:`CACHE_BUCKET` tokens so that batches of
slightly different prompt lengths share one compiled graph instead of compiling their own (~48 s
each on an H200). ``backend.static_cache`` true / false overrides the choice.
"""

from __future__ import annotations

import inspect
import sys
from contextlib import contextmanager
from typing import Any, Iterator

DECODE_SPEEDUPS = ("grouped_attention", "deferred_stop", "rope_ahead")
# Static cache lengths are multiples of this: one compiled decode graph per bucket, not per prompt length.
CACHE_BUCKET = 256


def wants_static_cache(setting: bool | None, max_new_tokens: int, from_tokens: int | None, cuda: bool) -> bool:
    """``backend.static_cache`` when set; otherwise (null) on CUDA for answers of at least
    ``from_tokens`` new tokens, where the compile (tens of seconds, once per cache length) pays
    off over the steps it saves."""
    if setting is not None:
        return setting
    return cuda and from_tokens is not None and max_new_tokens >= from_tokens


def static_cache_kwargs(prompt_length: int, max_new_tokens: int) -> dict[str, Any]:
    """``generate``'s arguments for a static cache of a bucketed length (where the installed
    transformers takes ``max_cache_len``; else its own length, prompt + new tokens)."""
    from transformers import GenerationConfig

    kwargs: dict[str, Any] = {"cache_implementation": "static"}
    if hasattr(GenerationConfig(), "max_cache_len"):
        needed = prompt_length + max_new_tokens
        kwargs["max_cache_len"] = -(-needed // CACHE_BUCKET) * CACHE_BUCKET
    return kwargs


@contextmanager
def deferred_stop(device_types: tuple[str, ...] = ("cuda",)) -> Iterator[bool]:
    """Within it, ``generate`` on these device types takes transformers' deferred stop check
    (yields False, and changes nothing, where the installed transformers has none). The cache
    condition is transformers' own: a returned cache must be croppable (the extra step undone)."""
    from transformers.generation import utils

    check = getattr(utils, "DeferredStopCheck", None)
    if check is None:
        yield False
        return
    original = check.__dict__["is_supported"]

    def is_supported(device: Any, cache: Any, cache_is_returned: bool, is_assistant: bool) -> bool:
        if device.type not in device_types:
            return original.__func__(device, cache, cache_is_returned, is_assistant)
        return not is_assistant and (cache is None or cache.is_croppable or not cache_is_returned)

    check.is_supported = staticmethod(is_supported)
    try:
        yield True
    finally:
        check.is_supported = original


def rope_index(model: Any, inputs: Any) -> tuple[Any, Any] | None:
    """The model's multimodal rope index (positions, deltas) over ``inputs``, a batch with images;
    None for a model without one (or a batch without images), and, with one line, where the
    installed transformers' ``get_rope_index`` takes other inputs than the processor gives:
    ``generate`` then computes it itself, as without ``rope_ahead``."""
    inner = getattr(model, "model", None)
    # The class's method, never the instance's attribute: this runs in the encode thread while the
    # main thread's generate may hold ``rope_index_given``'s stand-in there (for its own batch), whose
    # signature would pass input_ids alone, so every batch encoded during a generate lost its index.
    found = inspect.getattr_static(type(inner), "get_rope_index", None)
    if found is None or inputs.get("image_grid_thw") is None:
        return None
    index = found.__get__(inner, type(inner))
    takes = inspect.signature(index).parameters
    try:
        return index(**{key: value for key, value in inputs.items() if key in takes})
    except Exception as err:  # noqa: BLE001 - a speed-up that does not fit leaves generate to do it
        if not ROPE_FAILED:
            ROPE_FAILED.append(err)
            print(f"decode_speedups: rope_ahead does not fit this transformers ({type(err).__name__}: "
                  f"{str(err)[:120]}); generate computes the rope index", file=sys.stderr)
        return None


ROPE_FAILED: list[Exception] = []  # said once per process


@contextmanager
def rope_index_given(model: Any, ahead: tuple[Any, Any] | None) -> Iterator[None]:
    """Within it, the model's ``get_rope_index`` returns ``ahead`` (moved to the input's device)
    for a batch of its shape; any other call computes as before."""
    if ahead is None:
        yield
        return
    positions, deltas = ahead
    inner = model.model
    computed = inner.get_rope_index

    def given(input_ids: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if tuple(input_ids.shape) != tuple(positions.shape[1:]):
            return computed(input_ids, *args, **kwargs)
        return (positions.to(input_ids.device, non_blocking=True), deltas.to(input_ids.device, non_blocking=True))

    inner.get_rope_index = given
    try:
        yield
    finally:
        del inner.get_rope_index  # the class's method again
