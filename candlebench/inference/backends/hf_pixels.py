"""The transformers image processor run ahead, per request, in the runner's loader threads.

The processor's image half (resize, normalise, patchify: ~10 ms of CPU per 800x600 chart for
Qwen2.5-VL) was done for a whole batch in the one thread that encodes the next batch; at a GPU
batch of 128 that is ~2.5 s per batch in one thread. :class:`PixelsAhead` does it per request
in the loader threads (several, each while the GPU works on earlier batches); the batch encode
then only concatenates the pixel tensors and tokenizes the text.

The processor's own ``__call__`` still builds the text (the image tokens each image expands to):
only its ``_process_images`` step takes the pixels computed ahead, through a per-thread slot (the
runner may encode in two threads at once: the next batch ahead, a failed batch's halves inline).
Processors that override ``__call__`` or ``_process_images`` (Gemma 3's pan-and-scan) keep the
whole processor in the batch encode. Tested: the batch's tensors are equal either way.

For a model in half precision whose tower casts the pixel values to its weights' dtype before
anything else (:data:`CASTS_PIXELS`, checked in its code), the loader thread casts them already:
the same rounding as on the GPU, and half the bytes for the batch's concatenation, its copy into
page-locked memory and its transfer (a batch of 64 forecast requests holds 1.5 GB of fp32
pixels). On a GPU machine the concatenation writes straight into page-locked memory.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Iterator

from candlebench.inference.backends.base import PreparedRequest

# Model types whose vision tower's first step is ``pixel_values.to(<its weights' dtype>)``.
CASTS_PIXELS = {"qwen2_5_vl"}


def pixel_dtype(model: Any) -> Any:
    """The dtype the loader threads may cast pixel values to for ``model`` (None: keep them)."""
    import torch

    dtype = getattr(model, "dtype", None)
    if getattr(model.config, "model_type", "") in CASTS_PIXELS and dtype in (torch.bfloat16, torch.float16):
        return dtype
    return None


class PixelsAhead:
    def __init__(self, processor: Any, dtype: Any = None):
        from transformers import ProcessorMixin

        cls = type(processor)
        self.processor, self.dtype = processor, dtype
        self.usable = (cls.__call__ is ProcessorMixin.__call__
                       and cls._process_images is ProcessorMixin._process_images
                       and cls.replace_image_token is not ProcessorMixin.replace_image_token)
        self.slot = threading.local()
        if self.usable:
            processor._process_images = self._process_images

    def prepare(self, request: PreparedRequest) -> PreparedRequest:
        """``request`` with its images' processor outputs (``pixels``); unchanged where the
        processor rejects them (the batch encode then meets the error and isolates the sample)."""
        if not (self.usable and request.images):
            return request
        try:
            pixels = self.processor.image_processor(images=list(request.images), return_tensors="pt")
        except Exception:
            return request
        if self.dtype is not None:
            pixels["pixel_values"] = pixels["pixel_values"].to(self.dtype)
        return replace(request, pixels=pixels)

    def batch(self, batch: list[PreparedRequest]) -> dict[str, Any] | None:
        """The batch's image inputs concatenated from its requests' ``pixels``; None unless every
        request with images has them."""
        parts = [r.pixels for r in batch if r.images]
        if not self.usable or not parts or any(p is None for p in parts):
            return None
        return {key: _cat([p[key] for p in parts]) for key in parts[0].keys()}

    @contextmanager
    def encoding(self, pixels: dict[str, Any] | None) -> Iterator[None]:
        """Within it, the processor takes ``pixels`` as its image step's output (this thread only)."""
        self.slot.pixels = pixels
        try:
            yield
        finally:
            self.slot.pixels = None

    def _process_images(self, images: Any, **kwargs: Any) -> tuple[Any, list[str]]:
        from transformers import ProcessorMixin
        from transformers.image_utils import make_flat_list_of_images

        pixels = getattr(self.slot, "pixels", None)
        if pixels is None:
            return ProcessorMixin._process_images(self.processor, images, **kwargs)
        count = len(make_flat_list_of_images(images))  # as ProcessorMixin._process_images counts them
        return pixels, [self.processor.replace_image_token(pixels, image_idx=i, **kwargs) for i in range(count)]


def _cat(tensors: list[Any]) -> Any:
    """``torch.cat``, into page-locked memory on a GPU machine (the batch encode would copy it there)."""
    import torch

    if not torch.cuda.is_available():
        return torch.cat(tensors)
    shape = (sum(t.shape[0] for t in tensors), *tensors[0].shape[1:])
    return torch.cat(tensors, out=torch.empty(shape, dtype=tensors[0].dtype, pin_memory=True))
