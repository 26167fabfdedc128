import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageColor, ImageDraw

from candlebench.rendering import chart
from candlebench.rendering.chart import ChartSpec, encode_png, geometry, price_label, render_chart, render_image

pytestmark = pytest.mark.unit

SPEC = ChartSpec()
RED_UP = ChartSpec(up_color="red", down_color="green")
TITLE = "TEST.SH · Daily · cutoff 2024-03-01"


def make_bars(opens, highs, lows, closes, volumes=None, mas=None, start="2024-01-02") -> pd.DataFrame:
    n = len(closes)
    frame = pd.DataFrame(
        {
            "date": pd.bdate_range(start, periods=n),
            "open": np.asarray(opens, dtype=float),
            "high": np.asarray(highs, dtype=float),
            "low": np.asarray(lows, dtype=float),
            "close": np.asarray(closes, dtype=float),
            "volume": np.asarray(volumes if volumes is not None else np.full(n, 1e6), dtype=float),
        }
    )
    mas = mas or {}
    for w in SPEC.ma_windows:
        frame[f"ma{w}"] = np.asarray(mas.get(w, np.full(n, np.nan)), dtype=float)
    return frame


def alternating(n: int = 20) -> pd.DataFrame:
    """Even bars up 100 -> 110, odd bars down 110 -> 100; MA5 a gentle ramp above the bodies."""
    up = np.arange(n) % 2 == 0
    opens = np.where(up, 100.0, 110.0)
    closes = np.where(up, 110.0, 100.0)
    volumes = 1e6 * (1 + np.arange(n) % 3)
    ma5 = np.linspace(110.5, 111.5, n)
    return make_bars(opens, np.full(n, 112.0), np.full(n, 98.0), closes, volumes, {5: ma5})


def random_walk(n: int = 50, seed: int = 0, scale: float = 100.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    close = scale * np.exp(np.cumsum(rng.normal(0, 0.02, n + 90)))
    opens = np.concatenate(([scale], close[:-1]))
    high = np.maximum(opens, close) * 1.01
    low = np.minimum(opens, close) * 0.99
    series = pd.Series(close)
    mas = {w: series.rolling(w).mean().to_numpy()[-n:] for w in SPEC.ma_windows}
    return make_bars(opens[-n:], high[-n:], low[-n:], close[-n:], rng.uniform(1e5, 5e6, n), mas)


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def rgb(name: str) -> tuple[int, int, int]:
    return ImageColor.getrgb(name)


def body_centre(bars: pd.DataFrame, lay, i: int) -> tuple[int, int]:
    mid = (bars["open"].iloc[i] + bars["close"].iloc[i]) / 2
    return lay.x_of(i), round(lay.y_of(mid))


# --- determinism and format -------------------------------------------------------------------


def test_same_input_gives_identical_bytes():
    bars = random_walk()
    assert render_chart(bars, SPEC, TITLE) == render_chart(bars.copy(), SPEC, TITLE)


def test_any_change_to_the_input_changes_the_bytes():
    bars = random_walk()
    base = render_chart(bars, SPEC, TITLE)
    moved = bars.copy()
    moved.loc[10, "close"] *= 1.05
    assert render_chart(moved, SPEC, TITLE) != base
    assert render_chart(bars, SPEC, TITLE + "!") != base
    assert render_chart(bars, RED_UP, TITLE) != base


def test_output_is_an_rgb_png_of_the_spec_size_without_metadata():
    for spec in (SPEC, ChartSpec(width=640, height=480)):
        img = Image.open(io.BytesIO(render_chart(random_walk(), spec, TITLE)))
        assert img.format == "PNG"
        assert img.mode == "RGB"
        assert img.size == (spec.width, spec.height)
        img.load()
        assert img.info == {}


def test_png_decodes_to_exactly_the_drawn_pixels():
    img = render_image(random_walk(), SPEC, TITLE)
    assert np.array_equal(pixels(encode_png(img)), np.asarray(img))
    # Bands of the encoder must join up for any height, not just multiples of the band.
    odd = Image.fromarray(np.random.default_rng(1).integers(0, 256, (37, 23, 3), dtype=np.uint8))
    assert np.array_equal(pixels(encode_png(odd)), np.asarray(odd))


def test_encode_png_refuses_non_rgb():
    with pytest.raises(ValueError, match="RGBA"):
        encode_png(Image.new("RGBA", (4, 4)))


# --- pixels where the layout says ---------------------------------------------------------------


@pytest.mark.parametrize("spec", [SPEC, RED_UP])
def test_body_centres_have_the_up_or_down_colour(spec):
    bars = alternating()
    lay = geometry(bars, spec)
    img = pixels(render_chart(bars, spec, TITLE))
    for i in (0, 1, 2, 7, 18, 19):
        x, y = body_centre(bars, lay, i)
        want = spec.up_color if i % 2 == 0 else spec.down_color
        assert tuple(img[y, x]) == rgb(want), f"bar {i} at ({x}, {y})"


def test_last_candle_ends_where_the_layout_says():
    bars = alternating()
    lay = geometry(bars, SPEC)
    img = pixels(render_chart(bars, SPEC, TITLE))
    x, y = body_centre(bars, lay, lay.n - 1)
    colour = np.array(rgb(SPEC.down_color))  # bar 19 is a down bar
    hw = lay.body_half_width
    assert (img[y, x - hw : x + hw + 1] == colour).all()
    pb = lay.price_box
    right_of_candle = img[pb.top + 1 : pb.bottom, x + hw + 1 : pb.right]
    for candle in (SPEC.up_color, SPEC.down_color):
        assert not (right_of_candle == np.array(rgb(candle))).all(axis=2).any()


@pytest.mark.parametrize("n", [1, 3, 20, 50])
def test_candles_are_centred_in_the_panel(n):
    lay = geometry(random_walk(n), SPEC)
    pb = lay.price_box
    left_gap, right_gap = lay.x_of(0) - pb.left, pb.right - lay.x_of(n - 1)
    assert abs(left_gap - right_gap) <= 1
    assert left_gap > lay.body_half_width


def test_bodies_have_the_layout_width_and_gaps_between_them():
    bars = alternating()
    lay = geometry(bars, SPEC)
    img = pixels(render_chart(bars, SPEC, TITLE))
    x, y = body_centre(bars, lay, 5)
    hw = lay.body_half_width
    row = (img[y] == np.array(rgb(SPEC.down_color))).all(axis=1)
    assert row[x - hw : x + hw + 1].all()
    assert not row[x - hw - 1] and not row[x + hw + 1]


def near_ma_colour(block: np.ndarray) -> np.ndarray:
    """Pixels at least ~3/4 covered by the black MA5 line; green (0, 128, 0) candles are not."""
    return np.abs(block.astype(int) - np.array(rgb(SPEC.ma_colors[0]))).max(axis=-1) < 70


def test_ma_line_passes_through_its_values():
    bars = alternating()
    lay = geometry(bars, SPEC)
    img = pixels(render_chart(bars, SPEC, TITLE))
    for i in (1, 3, 10, 18):  # inner points: at the ends the line stops at the centre column
        x, y = lay.x_of(i), round(lay.y_of(bars["ma5"].iloc[i]))
        # Either side of the wick, where the background is white.
        beside = np.concatenate((img[y - 2 : y + 3, x - 2 : x], img[y - 2 : y + 3, x + 1 : x + 3]), axis=1)
        assert near_ma_colour(beside).any(), f"no MA5 pixel near bar {i} ({x}, {y})"
        darkest_row = y - 2 + int(np.argmin(beside.astype(int).sum(axis=(1, 2))))
        assert abs(darkest_row - y) <= 1, f"MA5 centred on row {darkest_row}, not {y}"
    # ... and it is nowhere near the rows it does not pass through.
    x, y = lay.x_of(10), round(lay.y_of(106.0))
    assert not near_ma_colour(img[y - 2 : y + 3, x - 2 : x + 3]).any()


def test_ma_tiles_join_into_the_same_line_as_one_mask(monkeypatch):
    bars = random_walk(seed=3)
    tiled = np.asarray(render_image(bars, SPEC, TITLE)).astype(int)
    monkeypatch.setattr(chart, "MA_TILE_ROWS", 10_000)
    whole = np.asarray(render_image(bars, SPEC, TITLE)).astype(int)
    diff = np.abs(tiled - whole).max(axis=2)
    # Rasterising in shifted tiles may flip a subsample at a seam: 1/16 of a pixel, a few times.
    assert diff.max() <= 256 // SPEC.ma_supersample**2
    assert (diff > 0).sum() <= 20


def test_nan_ma_points_are_skipped_and_a_line_may_start_mid_chart():
    bars = alternating()
    bars.loc[:9, "ma5"] = np.nan
    lay = geometry(bars, SPEC)
    img = pixels(render_chart(bars, SPEC, TITLE))
    pb = lay.price_box
    assert not near_ma_colour(img[pb.top + 1 : pb.bottom, pb.left + 1 : lay.x_of(10) - 2]).any()
    for i in range(11, 19):
        x, y = lay.x_of(i), round(lay.y_of(bars["ma5"].iloc[i]))
        assert near_ma_colour(img[y - 2 : y + 3, x + 1 : x + 3]).any(), f"no MA5 pixel near bar {i}"


def test_volume_bars_stand_on_the_panel_bottom_at_their_height():
    bars = alternating()
    lay = geometry(bars, SPEC)
    img = pixels(render_chart(bars, SPEC, TITLE))
    base = lay.volume_box.bottom - 1
    for i in range(lay.n):
        x = lay.x_of(i)
        colour = rgb(SPEC.up_color if i % 2 == 0 else SPEC.down_color)
        top = round(lay.y_vol_of(bars["volume"].iloc[i]))
        assert tuple(img[base, x]) == colour
        assert tuple(img[top, x]) == colour
        assert tuple(img[top - 2, x]) != colour


def test_date_labels_never_overlap_and_the_last_bar_is_labelled():
    for n in (3, 17, 50):
        lay = geometry(random_walk(n), SPEC)
        assert lay.date_ticks[-1] == n - 1
        xs = [lay.x_of(i) for i in lay.date_ticks]
        label_width = chart._font(SPEC.font_size).getlength("2024-01-01")
        assert all(b - a > label_width for a, b in zip(xs, xs[1:]))


def test_glyph_text_matches_pillow_text():
    cases = [("2024-03-01", 12, "ma"), ("1234.56", 12, "lm"), (TITLE, 16, "la"), ("2.5M", 12, "ma")]
    for text, size, anchor in cases:
        ours, theirs = Image.new("RGB", (400, 40), "white"), Image.new("RGB", (400, 40), "white")
        chart._draw_text(ImageDraw.Draw(ours), 200, 20, text, size, anchor, (34, 34, 34))
        ImageDraw.Draw(theirs).text((200, 20), text, fill=(34, 34, 34), font=chart._font(size), anchor=anchor)
        assert np.array_equal(np.asarray(ours), np.asarray(theirs)), text


# --- awkward inputs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bars",
    [
        random_walk(3),
        random_walk(1),
        random_walk(50).assign(ma5=np.nan, ma20=np.nan, ma90=np.nan),
        random_walk(50, scale=0.0044),
        random_walk(50, scale=5000.0),
        random_walk(50).assign(volume=0.0),
    ],
    ids=["3-bars", "1-bar", "all-nan-mas", "tiny-prices", "huge-prices", "zero-volume"],
)
def test_awkward_inputs_render(bars):
    img = Image.open(io.BytesIO(render_chart(bars, SPEC, TITLE)))
    assert img.size == (SPEC.width, SPEC.height)


def test_flat_series_draws_its_candles_mid_panel():
    n = 10
    bars = make_bars([42.0] * n, [42.0] * n, [42.0] * n, [42.0] * n)
    lay = geometry(bars, SPEC)
    assert lay.price_lo < 42.0 < lay.price_hi
    img = pixels(render_chart(bars, SPEC, TITLE))
    for i in range(n):  # a doji of zero range is still a visible one-pixel bar
        assert tuple(img[round(lay.y_of(42.0)), lay.x_of(i)]) == rgb(SPEC.up_color)


@pytest.mark.parametrize("scale", [1.3e-7, 0.0044, 1.0, 5000.0, 2e6, 4.2e13])
def test_price_labels_are_distinct_short_and_inside_the_panel(scale):
    lay = geometry(random_walk(50, seed=2, scale=scale), SPEC)
    labels = [price_label(t, lay.price_step) for t in lay.price_ticks]
    assert 3 <= len(labels) <= 8
    assert len(set(labels)) == len(labels)
    assert all(len(label) <= 9 for label in labels), labels  # fits the axis margin
    assert all(lay.price_lo <= t <= lay.price_hi for t in lay.price_ticks)


def test_volume_labels():
    labels = [chart.format_volume(v) for v in (350e3, 1.2e6, 2.5e9, 950.0, 0.0)]
    assert labels == ["350K", "1.2M", "2.5B", "950", "0"]


def test_missing_columns_and_bad_values_are_refused():
    bars = random_walk(10)
    with pytest.raises(ValueError, match="ma20"):
        render_chart(bars.drop(columns=["ma20"]), SPEC, TITLE)
    with pytest.raises(ValueError, match="empty"):
        render_chart(bars.iloc[:0], SPEC, TITLE)
    broken = bars.copy()
    broken.loc[3, "high"] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        render_chart(broken, SPEC, TITLE)


def test_spec_checks_ma_colours():
    with pytest.raises(ValueError, match="differ in length"):
        ChartSpec(ma_windows=(5, 20), ma_colors=("black",))


def test_without_volume_panel():
    spec = ChartSpec(volume_panel=False)
    lay = geometry(random_walk(), spec)
    assert lay.volume_box is None
    with pytest.raises(ValueError):
        lay.y_vol_of(1.0)
    assert Image.open(io.BytesIO(render_chart(random_walk(), spec, TITLE))).size == (800, 600)


def test_mplfinance_reference_renders_the_same_spec():
    from candlebench.rendering.chart_mpl import render_chart_mpl

    bars = random_walk(30).assign(ma90=np.nan)  # an all-NaN MA must not trip mplfinance
    png = render_chart_mpl(bars, RED_UP, TITLE)
    img = Image.open(io.BytesIO(png))
    assert img.format == "PNG"
    assert img.size == (RED_UP.width, RED_UP.height)
    assert "Software" not in img.info
    assert render_chart_mpl(bars, RED_UP, TITLE) == png


# In a fresh process whose backend is SVG (a user's MPLBACKEND, a notebook's own): the mplfinance
# chart of the bars pickled at argv[1], written to argv[2]; what the process's backend is after.
MPL_PROBE = """
import sys, matplotlib, pandas as pd
from candlebench.rendering.chart import ChartSpec
from candlebench.rendering.chart_mpl import render_chart_mpl
png = render_chart_mpl(pd.read_pickle(sys.argv[1]), ChartSpec(up_color="red", down_color="green"), sys.argv[3])
open(sys.argv[2], "wb").write(png)
print(matplotlib.rcParams["backend"])
"""


def test_the_mplfinance_chart_leaves_the_processs_backend_alone_and_is_the_same_bytes_on_it(tmp_path):
    """render_chart_mpl once ran matplotlib.use("Agg"), switching a process on another backend; it
    selects none now, and its PNG is Agg's (savefig's own backend) whatever the process's is."""
    from candlebench.rendering.chart_mpl import render_chart_mpl

    bars = random_walk(30)
    bars.to_pickle(tmp_path / "bars.pkl")
    env = {**os.environ, "MPLBACKEND": "svg", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", MPL_PROBE, str(tmp_path / "bars.pkl"), str(tmp_path / "chart.png"), TITLE],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["svg"]
    assert (tmp_path / "chart.png").read_bytes() == render_chart_mpl(bars, RED_UP, TITLE)
