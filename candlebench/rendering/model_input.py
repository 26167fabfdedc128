"""Chart images as a model receives them (the forecast paper's Appendix B).

Load, flatten any transparency onto white, resize proportionally with LANCZOS into a pixel
budget, and optionally pass through JPEG so the model sees the compression artefacts it would
see in deployment.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from PIL import Image

Source = str | Path | bytes


@dataclass(frozen=True)
class ImagePolicy:
    max_pixels: int | None = None
    min_pixels: int | None = None
    jpeg_quality: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_pixels", "min_pixels"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive pixel count, got {value}")
        if self.max_pixels is not None and self.min_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels {self.min_pixels} exceeds max_pixels {self.max_pixels}")
        if self.jpeg_quality is not None and not 1 <= self.jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must lie in 1..100, got {self.jpeg_quality}")

    def apply(self, source: Source, name: str | None = None) -> Image.Image:
        """``name``: what an error calls ``source`` (the file that encoded bytes were read from)."""
        return prepare_image(source, self.max_pixels, self.min_pixels, self.jpeg_quality, name)


def prepare_image(
    source: Source, max_pixels: int | None, min_pixels: int | None = None, jpeg_quality: int | None = None,
    name: str | None = None,
) -> Image.Image:
    """The RGB image a model is given for ``source`` (a path or encoded image bytes)."""
    policy = ImagePolicy(max_pixels, min_pixels, jpeg_quality)  # validates the arguments
    name = name or _describe(source)
    try:
        with Image.open(io.BytesIO(source) if isinstance(source, bytes) else source) as img:
            img.load()
            rgb = _flatten(img)
            # An RGB PNG the policy leaves as it is: its own bytes encode these very pixels, so a
            # backend that sends images encoded (backend=server) need not encode them again.
            as_is = (isinstance(source, bytes) and img.format == "PNG" and img.mode == "RGB"
                     and "transparency" not in img.info)
    except OSError as err:  # missing file, not an image (UnidentifiedImageError), truncated
        raise ValueError(f"cannot read image {name}: {err}") from err
    size = fit_size(rgb.size, policy.max_pixels, policy.min_pixels)
    if size != rgb.size:
        rgb, as_is = rgb.resize(size, Image.Resampling.LANCZOS), False
    if policy.jpeg_quality is not None:
        rgb, as_is = _through_jpeg(rgb, policy.jpeg_quality), False
    if as_is:
        rgb.info[ENCODED_PNG] = source
    return rgb


# Image.info key of the PNG bytes an image was decoded from unchanged (prepare_image).
ENCODED_PNG = "candlebench_png"


def fit_size(size: tuple[int, int], max_pixels: int | None, min_pixels: int | None = None) -> tuple[int, int]:
    """``size`` scaled by one factor so that min_pixels <= width * height <= max_pixels.

    Sides are rounded towards the budget being kept, which costs the aspect ratio at most a
    pixel per side; where rounding cannot meet both budgets, max_pixels wins. A side never drops
    below one pixel, so an image thinner than that may overrun max_pixels.
    """
    if max_pixels is not None and min_pixels is not None and min_pixels > max_pixels:
        raise ValueError(f"min_pixels {min_pixels} exceeds max_pixels {max_pixels}")
    area = size[0] * size[1]
    if max_pixels is not None and area > max_pixels:
        scale = math.sqrt(max_pixels / area)
    elif min_pixels is not None and area < min_pixels:
        scale = math.sqrt(min_pixels / area)
    else:
        return size
    # Up when that still fits: an exact fit (535 x 535 into 51 x 51 = max_pixels) computes a side
    # of 50.99999... in floating point, which floor alone would cut below min_pixels.
    up = _scaled(size, scale, math.ceil)
    if max_pixels is None or up[0] * up[1] <= max_pixels:
        return up
    return _scaled(size, scale, math.floor)


def _scaled(size: tuple[int, int], scale: float, rounding: Callable[[float], int]) -> tuple[int, int]:
    return max(1, rounding(size[0] * scale)), max(1, rounding(size[1] * scale))


def _flatten(img: Image.Image) -> Image.Image:
    """RGB with any transparency (RGBA, LA, palette or greyscale with a transparent index) on white."""
    if img.mode == "P" and "transparency" in img.info:
        img = img.convert("RGBA")
    if img.mode in ("RGBA", "LA", "PA") or (img.mode in ("L", "RGB") and "transparency" in img.info):
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return img.convert("RGB")


def _through_jpeg(img: Image.Image, quality: int) -> Image.Image:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    buf.seek(0)
    decoded = Image.open(buf)
    decoded.load()
    return decoded.convert("RGB")


def _describe(source: Source) -> str:
    return f"<{len(source)} bytes>" if isinstance(source, bytes) else str(source)
