import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from PIL import Image

from candlebench.rendering.chart import ChartSpec, render_chart
from candlebench.rendering.model_input import ImagePolicy, fit_size, prepare_image

pytestmark = pytest.mark.unit


def png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def chart_png() -> bytes:
    n = 30
    rng = np.random.default_rng(0)
    close = 50 * np.exp(np.cumsum(rng.normal(0, 0.02, n)))
    bars = pd.DataFrame(
        {
            "date": pd.bdate_range("2024-01-02", periods=n),
            "open": close * 0.99,
            "high": close * 1.02,
            "low": close * 0.97,
            "close": close,
            "volume": rng.uniform(1e5, 1e6, n),
            "ma5": pd.Series(close).rolling(5).mean(),
            "ma20": pd.Series(close).rolling(20).mean(),
            "ma90": np.nan,
        }
    )
    return render_chart(bars, ChartSpec(), "T · Daily · cutoff 2024-03-01")


def half_transparent(mode: str) -> Image.Image:
    """Left half opaque dark, right half fully transparent (its colour channels set to black)."""
    rgba = Image.new("RGBA", (40, 20), (0, 0, 0, 0))
    rgba.paste((30, 60, 90, 255), (0, 0, 20, 20))
    if mode == "RGBA":
        return rgba
    if mode == "LA":
        return rgba.convert("LA")
    if mode == "P":
        pal = Image.new("P", (40, 20), 0)
        pal.putpalette([0, 0, 0, 30, 60, 90])
        pal.paste(1, (0, 0, 20, 20))
        pal.info["transparency"] = 0
        return pal
    raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P"])
def test_transparency_becomes_white(mode):
    out = np.asarray(prepare_image(png_bytes(half_transparent(mode)), max_pixels=None))
    assert out.shape == (20, 40, 3)
    assert (out[:, 20:] == 255).all()
    assert (out[:, :20] != 255).all()


def test_rgb_input_is_left_alone_within_budget():
    png = chart_png()
    out = prepare_image(png, max_pixels=800 * 600)
    assert out.mode == "RGB"
    assert np.array_equal(np.asarray(out), np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))


def test_downscale_respects_max_pixels_and_aspect(tmp_path):
    path = tmp_path / "chart.png"
    path.write_bytes(chart_png())
    out = prepare_image(path, max_pixels=200_000)
    w, h = out.size
    assert w * h <= 200_000
    assert w * h > 200_000 * 0.99
    assert abs(h - w * 600 / 800) <= 1


def test_upscale_respects_min_pixels_and_aspect():
    small = Image.new("RGB", (100, 50), "white")
    out = prepare_image(png_bytes(small), max_pixels=None, min_pixels=20_000)
    w, h = out.size
    assert w * h >= 20_000
    assert abs(h - w / 2) <= 1


@given(
    width=st.integers(1, 4000),
    height=st.integers(1, 4000),
    max_pixels=st.none() | st.integers(1, 4_000_000),
    min_pixels=st.none() | st.integers(1, 4_000_000),
)
@example(width=535, height=535, max_pixels=2601, min_pixels=2501)  # an exact fit, 50.999... in floating point
def test_fit_size_keeps_budgets_and_shape(width, height, max_pixels, min_pixels):
    if max_pixels is not None and min_pixels is not None and min_pixels > max_pixels:
        with pytest.raises(ValueError):
            fit_size((width, height), max_pixels, min_pixels)
        return
    w, h = fit_size((width, height), max_pixels, min_pixels)
    if min(w, h) == 1:
        return  # a sliver: one side is pinned at a pixel and the shape cannot be kept
    if max_pixels is not None:
        assert w * h <= max_pixels
    if min_pixels is not None and (max_pixels is None or (w + 1) * (h + 1) <= max_pixels):
        assert w * h >= min_pixels
    # One scale for both sides, each rounded once: the shape moves by less than a pixel a side.
    assert abs(h - height * w / width) < max(1.0, height / width) + 1e-9


def test_jpeg_reencode_changes_pixels_slightly():
    png = chart_png()
    clean = np.asarray(prepare_image(png, max_pixels=None)).astype(int)
    lossy = np.asarray(prepare_image(png, max_pixels=None, jpeg_quality=75)).astype(int)
    assert lossy.shape == clean.shape
    diff = np.abs(lossy - clean)
    assert diff.max() > 0
    assert diff.mean() < 5


def test_policy_applies_the_same_steps():
    png = chart_png()
    policy = ImagePolicy(max_pixels=100_000, jpeg_quality=90)
    assert np.array_equal(
        np.asarray(policy.apply(png)), np.asarray(prepare_image(png, 100_000, None, 90))
    )


def test_bad_inputs_name_the_file(tmp_path):
    missing = tmp_path / "nope.png"
    with pytest.raises(ValueError, match="nope.png"):
        prepare_image(missing, max_pixels=None)
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"not an image")
    with pytest.raises(ValueError, match="garbage.png"):
        prepare_image(str(garbage), max_pixels=None)
    with pytest.raises(ValueError, match="12 bytes"):
        prepare_image(b"not an image", max_pixels=None)


@pytest.mark.parametrize(
    "kwargs", [dict(max_pixels=0), dict(max_pixels=10, min_pixels=20), dict(max_pixels=None, jpeg_quality=0)]
)
def test_bad_policies_are_refused(kwargs):
    with pytest.raises(ValueError):
        ImagePolicy(**kwargs)
