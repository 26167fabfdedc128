"""Fast candlestick charts drawn with Pillow: candles, moving averages, volume, axes and a header.

Everything is drawn at 1x straight into an RGB image except the moving-average lines, the only
anti-aliased element (see :func:`_draw_ma_line`). Text uses Pillow's bundled Aileron font with the
basic layout engine, so no system font or shaping library can change a pixel. PNGs come from a
small writer of our own (:func:`encode_png`): one fixed filter, no metadata, fixed zlib level.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from PIL import Image, ImageColor, ImageDraw, ImageFilter, ImageFont

from candlebench.rendering.marks import MARK_COLUMN

OHLCV = ("open", "high", "low", "close", "volume")
RGB = tuple[int, int, int]
BACKGROUND: RGB = (255, 255, 255)

# PNG encoding: every row uses the "Up" filter, then zlib at PNG_COMPRESS_LEVEL. Measured per
# 800x600 chart of bench/render.py on one core: Pillow's own writer spends ~5 ms choosing a filter
# for each row (7.9 ms at level 1); a fixed Up filter in numpy takes ~0.1 ms and beats no filter
# (50 KB) and Sub (51 KB) on size. With it, zlib dominates: level 1 3.0 ms / 36.3 KB, level 3
# 3.1 ms / 34.7 KB, level 4 5.5 ms / 29.1 KB, level 6 6.4 ms / 28.1 KB, level 9 30 ms / 26.7 KB.
# Level 3 is the knee: 4% smaller than level 1 for 4% more time, where level 4 would cost 80%
# more time, and encoding is already half of a chart's cost.
PNG_COMPRESS_LEVEL = 3
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_FILTER_UP = 2
_PNG_BAND_ROWS = 32

# MA lines are painted in tiles at most this many rows tall (see _draw_ma_line). Measured for the
# three MAs of an 800x600 chart at 4x: one tile per line ~5 ms (big masks, mostly empty, filtered
# and blended in full); six segments a tile ~1.7 ms; tiles capped at 30-40 rows ~1.3 ms; capped at
# 10 rows ~2.1 ms, when per-tile overhead (~30 us) takes over.
MA_TILE_ROWS = 32


@dataclass(frozen=True)
class ChartSpec:
    width: int = 800
    height: int = 600
    # Colour convention is a setting: green-up is the paper's default, A-share charts use red-up.
    up_color: str = "green"
    down_color: str = "red"
    ma_windows: tuple[int, ...] = (5, 20, 90)
    ma_colors: tuple[str, ...] = ("black", "blue", "purple")
    volume_panel: bool = True
    volume_fraction: float = 0.2  # share of the plotting height given to the volume panel
    margin: int = 10  # blank border left of the panels and above the title
    axis_width: int = 66  # strip right of the panels that holds the tick labels
    header_height: int = 46  # title row and legend row, above the price panel
    date_axis_height: int = 24
    panel_gap: int = 10
    font_size: int = 12
    title_font_size: int = 16
    ma_line_width: float = 1.5
    # MA lines are drawn at this scale and box-filtered down. 4x costs ~0.3 ms a chart more than
    # 2x, whose coverage steps show as a beaded line where an MA runs nearly flat.
    ma_supersample: int = 4
    body_fraction: float = 0.7  # candle body width as a share of its slot
    max_body_width: int = 25  # with few bars, bodies would otherwise become slabs
    price_ticks: int = 5  # aimed-at number of price labels
    volume_ticks: int = 2  # aimed-at number of volume labels
    grid_color: str = "#e8e8e8"
    frame_color: str = "#888888"
    text_color: str = "#222222"
    # Bars lettered A, B, ... over their candle (rendering/marks.py): the reading task's charts only.
    marks: int = 0

    def __post_init__(self) -> None:
        if len(self.ma_windows) != len(self.ma_colors):
            raise ValueError(f"ma_windows {self.ma_windows} and ma_colors {self.ma_colors} differ in length")
        if not 0.0 < self.volume_fraction < 1.0:
            raise ValueError(f"volume_fraction must lie in (0, 1), got {self.volume_fraction}")
        if self.ma_supersample < 1:
            raise ValueError(f"ma_supersample must be >= 1, got {self.ma_supersample}")

    @property
    def ma_columns(self) -> tuple[str, ...]:
        return tuple(f"ma{w}" for w in self.ma_windows)


@dataclass(frozen=True)
class Box:
    """A panel's frame; its edges are the frame's own pixels, data goes strictly inside."""

    left: int
    top: int
    right: int
    bottom: int


@dataclass(frozen=True)
class ChartGeometry:
    """Where every bar, price and volume lands in the image for one set of bars."""

    n: int
    price_box: Box
    volume_box: Box | None
    price_lo: float  # price at the bottom of the price panel's inside
    price_hi: float  # price at its top
    volume_top: float  # volume at the top of the volume panel's inside
    slot: float  # horizontal pixels per bar
    body_half_width: int  # a body spans x_of(i) +- this, so it is 2*h+1 pixels wide
    price_ticks: tuple[float, ...]
    price_step: float  # between neighbouring price ticks: how precise a label must be
    volume_ticks: tuple[float, ...]
    date_ticks: tuple[int, ...]  # indices of the bars that get a date label

    def x_of(self, i: int) -> int:
        """Pixel column of bar ``i``'s wick, the centre of its candle."""
        return self.price_box.left + 1 + math.floor((i + 0.5) * self.slot)

    def y_of(self, price: float | np.ndarray) -> float | np.ndarray:
        """Continuous row of ``price``; the pixel drawn for it is row ``round(y_of(price))``."""
        top, bottom = self.price_box.top + 1, self.price_box.bottom - 1
        return top + (self.price_hi - price) * (bottom - top) / (self.price_hi - self.price_lo)

    def y_vol_of(self, volume: float | np.ndarray) -> float | np.ndarray:
        """Continuous row of the top of a volume bar; bars stand on the panel's bottom."""
        if self.volume_box is None:
            raise ValueError("this spec has no volume panel")
        top, bottom = self.volume_box.top + 1, self.volume_box.bottom - 1
        return bottom - volume * (bottom - top) / self.volume_top


@dataclass(frozen=True)
class _Bars:
    """The columns a chart draws, read out of the frame once."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    dates: np.ndarray  # datetime64[D]
    mas: tuple[np.ndarray, ...]  # in spec.ma_windows order
    marks: tuple[str, ...]  # each bar's letter (rendering/marks.py), "" for an unmarked bar

    @property
    def up(self) -> np.ndarray:
        return self.close >= self.open


def geometry(bars: pd.DataFrame, spec: ChartSpec) -> ChartGeometry:
    """Pure geometry of the chart of ``bars``; :func:`render_chart` draws exactly this."""
    return _geometry(_read_bars(bars, spec), spec)


def render_chart(bars: pd.DataFrame, spec: ChartSpec, title: str) -> bytes:
    """PNG bytes of the chart of ``bars`` under ``title``; the same input gives the same bytes."""
    return encode_png(render_image(bars, spec, title))


def render_image(bars: pd.DataFrame, spec: ChartSpec, title: str) -> Image.Image:
    """The chart as an RGB image, before PNG encoding."""
    b = _read_bars(bars, spec)
    lay = _geometry(b, spec)
    colors = _palette(spec)
    img = _static_layer(spec).copy()
    draw = ImageDraw.Draw(img)
    xs = [lay.x_of(i) for i in range(lay.n)]

    _draw_grid(draw, lay, xs, colors.grid)
    if lay.volume_box is not None:
        _draw_volume(draw, lay, xs, b, colors)
    _draw_candles(draw, lay, xs, b, colors)
    for ma, color in zip(b.mas, colors.ma):
        _draw_ma_line(img, lay, xs, ma, color, spec)
    _draw_marks(draw, lay, xs, b, spec, colors.text)
    _draw_axes(draw, lay, xs, b, spec, colors)
    _draw_text(draw, spec.margin, spec.margin, title, spec.title_font_size, "la", colors.text)
    return img


def blank_png(spec: ChartSpec) -> bytes:
    """A white PNG of the chart's size: what a model is shown in place of a chart, as a control."""
    return encode_png(Image.new("RGB", (spec.width, spec.height), BACKGROUND))


def encode_png(img: Image.Image) -> bytes:
    """Metadata-free RGB PNG of ``img`` with a fixed filter and zlib level (see PNG_COMPRESS_LEVEL)."""
    if img.mode != "RGB":
        raise ValueError(f"encode_png takes RGB images, got {img.mode}")
    width, height = img.size
    stride = width * 3
    z = zlib.compressobj(PNG_COMPRESS_LEVEL)
    idat = []
    above = np.zeros(stride, dtype=np.uint8)  # the row above the first is zeros by definition
    # Bands of rows keep every buffer small and warm: one pass over the whole 800x600 image took
    # 4.7 ms against 3.0 ms in bands, the difference being page faults on fresh 1.4 MB buffers.
    for top in range(0, height, _PNG_BAND_ROWS):
        band = img.crop((0, top, width, min(top + _PNG_BAND_ROWS, height)))
        pixels = np.frombuffer(band.tobytes(), dtype=np.uint8).reshape(-1, stride)
        rows = np.empty((len(pixels), stride + 1), dtype=np.uint8)
        rows[:, 0] = _PNG_FILTER_UP
        np.subtract(pixels[0], above, out=rows[0, 1:])  # uint8 wraps, as the filter wants
        np.subtract(pixels[1:], pixels[:-1], out=rows[1:, 1:])
        idat.append(z.compress(rows))
        above = pixels[-1]
    idat.append(z.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour, no interlace
    return b"".join(
        (
            _PNG_SIGNATURE,
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", b"".join(idat)),
            _png_chunk(b"IEND", b""),
        )
    )


def format_price(price: float, decimals: int) -> str:
    return f"{price:.{decimals}f}"


def price_label(price: float, step: float) -> str:
    """A price axis label as precise as the tick step needs and no longer than about 8 characters:
    plain decimals in the usual range; an M/B/T suffix from a million up (a 1e13 price would
    otherwise run off the image); scientific notation for steps below 1e-6 (a 1e-7 price would
    need 9 decimals)."""
    magnitude = max(abs(price), step)
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if magnitude >= scale:
            return f"{price / scale:.{_decimals(step / scale)}f}{suffix}"
    if step < 1e-6:
        digits = max(0, math.floor(math.log10(magnitude)) - math.floor(math.log10(step)))
        return f"{price:.{digits}e}"
    return format_price(price, _decimals(step))


def format_volume(volume: float) -> str:
    """Compact volume label: 350K, 1.2M, 3B."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(volume) >= scale:
            return f"{volume / scale:.3g}{suffix}"
    return f"{volume:.3g}"


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def _read_bars(bars: pd.DataFrame, spec: ChartSpec) -> _Bars:
    missing = [c for c in ("date", *OHLCV, *spec.ma_columns) if c not in bars.columns]
    if missing:
        raise ValueError(f"bars lack columns {missing}")
    if bars.empty:
        raise ValueError("bars are empty: nothing to chart")
    o, h, l, c, v = (bars[col].to_numpy(dtype=float) for col in OHLCV)
    if not all(np.isfinite(a).all() for a in (o, h, l, c, v)):
        raise ValueError("bars hold NaN or infinite OHLCV values")
    return _Bars(
        open=o,
        high=h,
        low=l,
        close=c,
        volume=v,
        dates=bars["date"].to_numpy().astype("datetime64[D]"),
        mas=tuple(bars[col].to_numpy(dtype=float) for col in spec.ma_columns),
        marks=tuple(bars[MARK_COLUMN].astype(str)) if MARK_COLUMN in bars else ("",) * len(c),
    )


def _geometry(b: _Bars, spec: ChartSpec) -> ChartGeometry:
    n = len(b.close)
    price_box, volume_box = _panels(spec)
    slot = (price_box.right - price_box.left - 1) / n

    # MAs share the price scale, so they must fit in it too.
    with_mas = np.concatenate((b.low, b.high, *b.mas))
    lo, hi = float(np.nanmin(with_mas)), float(np.nanmax(with_mas))
    # Padding keeps wicks off the frame; a flat series still needs a non-empty range.
    pad = (hi - lo) * 0.04 or (abs(hi) * 0.01 or 1.0)
    lo, hi = lo - pad, hi + pad
    step, price_ticks = _nice_ticks(lo, hi, spec.price_ticks)

    vmax = float(b.volume.max())
    volume_top = vmax * 1.1 if vmax > 0 else 1.0
    # No label at or just above zero: it says nothing and would crowd the date axis; and no
    # scale at all for a panel with nothing in it.
    volume_ticks = _nice_ticks(volume_top * 0.05, volume_top, spec.volume_ticks)[1] if vmax > 0 else ()

    body = min(slot * spec.body_fraction, spec.max_body_width)
    return ChartGeometry(
        n=n,
        price_box=price_box,
        volume_box=volume_box,
        price_lo=lo,
        price_hi=hi,
        volume_top=volume_top,
        slot=slot,
        body_half_width=int(body / 2),
        price_ticks=price_ticks,
        price_step=step,
        volume_ticks=volume_ticks,
        date_ticks=_date_ticks(n, slot, price_box.left, spec),
    )


@lru_cache(maxsize=None)
def _font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


@dataclass(frozen=True)
class _Glyph:
    mask: Image.Image  # coverage, 0-255
    left: int  # offset of the mask from the pen position on the baseline
    top: int
    advance: int


@lru_cache(maxsize=4096)
def _glyph(char: str, size: int) -> _Glyph:
    font = _font(size)
    left, top, right, bottom = font.getbbox(char, anchor="ls")
    mask = Image.new("L", (max(right - left, 1), max(bottom - top, 1)), 0)
    ImageDraw.Draw(mask).text((-left, -top), char, fill=255, font=font, anchor="ls")
    # Hinted advances of this font are whole pixels and the basic layout applies no kerning, so
    # pens at these advances put glyphs where draw.text would.
    return _Glyph(mask, left, top, round(font.getlength(char)))


@lru_cache(maxsize=None)
def _baseline_below(size: int, vertical_anchor: str) -> int:
    """How far below an "a"scender or "m"iddle anchor point Pillow puts the baseline.

    Both come from the font's metrics, not from the text, unlike Pillow's "t"op anchor.
    """
    font = _font(size)
    return font.getbbox("0", anchor="l" + vertical_anchor)[1] - font.getbbox("0", anchor="ls")[1]


@lru_cache(maxsize=256)
def _halo(char: str, size: int) -> Image.Image:
    """The glyph's mask grown by HALO_PX on every side (its own offset less HALO_PX)."""
    mask = _glyph(char, size).mask
    grown = Image.new("L", (mask.width + 2 * HALO_PX, mask.height + 2 * HALO_PX), 0)
    grown.paste(mask, (HALO_PX, HALO_PX))
    return grown.filter(ImageFilter.MaxFilter(2 * HALO_PX + 1))


def _draw_text(
    draw: ImageDraw.ImageDraw, x: int, y: int, text: str, size: int, anchor: str, fill: RGB,
    halo: RGB | None = None,
) -> None:
    """``text`` drawn as draw.text would with anchor "la", "lm" or "ma", from cached glyphs; with a
    ``halo``, over its glyphs grown by HALO_PX in that colour first.

    FreeType renders every glyph afresh on each draw.text call (~10 us a glyph, ~1 ms a chart);
    a label set from a handful of cached glyph masks costs a fraction of that.
    """
    glyphs = [_glyph(char, size) for char in text]
    if anchor[0] == "m":
        x -= (sum(g.advance for g in glyphs) + 1) // 2  # Pillow rounds a half pixel leftwards
    baseline = y + _baseline_below(size, anchor[1])
    pens = np.cumsum([x] + [g.advance for g in glyphs[:-1]]).tolist()
    if halo is not None:
        for char, g, pen in zip(text, glyphs, pens):
            draw.bitmap((pen + g.left - HALO_PX, baseline + g.top - HALO_PX), _halo(char, size), fill=halo)
    for g, pen in zip(glyphs, pens):
        draw.bitmap((pen + g.left, baseline + g.top), g.mask, fill=fill)


@dataclass(frozen=True)
class _Palette:
    up: RGB
    down: RGB
    ma: tuple[RGB, ...]
    grid: RGB
    frame: RGB
    text: RGB

    def candle(self, is_up: bool) -> RGB:
        return self.up if is_up else self.down


@lru_cache(maxsize=None)
def _palette(spec: ChartSpec) -> _Palette:
    rgb = ImageColor.getrgb
    return _Palette(
        up=rgb(spec.up_color),
        down=rgb(spec.down_color),
        ma=tuple(rgb(c) for c in spec.ma_colors),
        grid=rgb(spec.grid_color),
        frame=rgb(spec.frame_color),
        text=rgb(spec.text_color),
    )


@lru_cache(maxsize=None)
def _panels(spec: ChartSpec) -> tuple[Box, Box | None]:
    left, right = spec.margin, spec.width - spec.axis_width
    top, bottom = spec.header_height, spec.height - spec.date_axis_height
    if right - left < 20 or bottom - top < 40:
        raise ValueError(f"a {spec.width}x{spec.height} chart leaves no room for the panels")
    if not spec.volume_panel:
        return Box(left, top, right, bottom), None
    volume_h = round((bottom - top - spec.panel_gap) * spec.volume_fraction)
    price_bottom = bottom - volume_h - spec.panel_gap
    return Box(left, top, right, price_bottom), Box(left, price_bottom + spec.panel_gap, right, bottom)


@lru_cache(maxsize=None)
def _static_layer(spec: ChartSpec) -> Image.Image:
    """Background, panel frames and the MA legend: the same for every chart of a spec."""
    img = Image.new("RGB", (spec.width, spec.height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    colors = _palette(spec)
    for box in _panels(spec):
        if box is not None:
            draw.rectangle((box.left, box.top, box.right, box.bottom), outline=colors.frame)
    x = spec.margin
    y = spec.margin + spec.title_font_size + 12  # middle of the legend row, under the title
    for window, color in zip(spec.ma_windows, colors.ma):
        draw.rectangle((x, y - 1, x + 17, y), fill=color)
        x += 22
        label = f"MA{window}"
        _draw_text(draw, x, y, label, spec.font_size, "lm", colors.text)
        x += round(_font(spec.font_size).getlength(label)) + 16
    return img


def _nice_ticks(lo: float, hi: float, target: int) -> tuple[float, tuple[float, ...]]:
    """A 1-2-2.5-5 x 10^k step and its multiples in [lo, hi], as near ``target`` ticks as any.

    On a tie the finer step wins: one label too many reads better than one too few.
    """
    magnitude = 10.0 ** math.floor(math.log10((hi - lo) / max(target, 1)))
    steps = [m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0)]
    step = min(steps, key=lambda st: (abs(len(_ticks_between(lo, hi, st)) - target), st))
    return step, _ticks_between(lo, hi, step)


def _ticks_between(lo: float, hi: float, step: float) -> tuple[float, ...]:
    # Integer multiples of the step, so 0.1 + 0.2 style drift never reaches a label.
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return tuple(k * step for k in range(first, last + 1))


def _decimals(step: float) -> int:
    """Fewest decimals that print every multiple of ``step`` exactly (0.25 -> 2, 50 -> 0)."""
    return next((d for d in range(12) if abs(round(step * 10**d) - step * 10**d) < 1e-6), 12)


def _date_ticks(n: int, slot: float, left: int, spec: ChartSpec) -> tuple[int, ...]:
    """Every k-th bar counted back from the last, k chosen so that labels never touch."""
    label_w = _font(spec.font_size).getlength("0000-00-00")
    every = max(1, math.ceil((label_w + 14) / slot))
    # The last bar always gets a label; a first one that would run off the image is dropped.
    keep = [i for i in range(n - 1, -1, -every) if left + 1 + math.floor((i + 0.5) * slot) >= label_w / 2]
    return tuple(reversed(keep))


def _draw_grid(draw: ImageDraw.ImageDraw, lay: ChartGeometry, xs: list[int], grid: RGB) -> None:
    pb = lay.price_box
    for tick in lay.price_ticks:
        y = round(lay.y_of(tick))
        draw.line((pb.left + 1, y, pb.right - 1, y), fill=grid)
    for box in (pb, lay.volume_box):
        if box is not None:
            for i in lay.date_ticks:
                draw.line((xs[i], box.top + 1, xs[i], box.bottom - 1), fill=grid)


def _draw_volume(draw: ImageDraw.ImageDraw, lay: ChartGeometry, xs: list[int], b: _Bars, colors: _Palette) -> None:
    base = lay.volume_box.bottom - 1
    tops = np.minimum(np.rint(lay.y_vol_of(b.volume)), base).astype(int)  # any volume shows
    hw = lay.body_half_width
    for x, top, v, up in zip(xs, tops.tolist(), b.volume.tolist(), b.up.tolist()):
        if v > 0:
            draw.rectangle((x - hw, top, x + hw, base), fill=colors.candle(up))


def _draw_candles(draw: ImageDraw.ImageDraw, lay: ChartGeometry, xs: list[int], b: _Bars, colors: _Palette) -> None:
    def rows(prices: np.ndarray) -> list[int]:
        return np.rint(lay.y_of(prices)).astype(int).tolist()

    hw = lay.body_half_width
    for x, o, h, l, c, up in zip(xs, rows(b.open), rows(b.high), rows(b.low), rows(b.close), b.up.tolist()):
        color = colors.candle(up)
        draw.rectangle((x, h, x, l), fill=color)
        # A doji has o == c: the rectangle collapses to a one-pixel bar and stays visible.
        draw.rectangle((x - hw, min(o, c), x + hw, max(o, c)), fill=color)


def _draw_ma_line(
    img: Image.Image, lay: ChartGeometry, xs: list[int], ma: np.ndarray, color: RGB, spec: ChartSpec
) -> None:
    """Anti-aliased polyline through the finite MA points.

    ImageDraw lines are aliased, so the line is drawn as a coverage mask at ``ma_supersample``
    times the size, box-filtered back down and used to paint the colour, one tile at a time so
    that each mask is only as tall as its stretch of the line (see MA_TILE_ROWS). Tiles own
    disjoint pixel columns, so no pixel is blended twice, and each also draws its neighbours'
    segments, so joints come out whole.
    """
    ys = lay.y_of(ma)
    s = spec.ma_supersample
    width = max(1, round(spec.ma_line_width * s))
    reach = math.ceil(spec.ma_line_width / 2) + 1  # rows or columns the line's edge passes its points
    pb = lay.price_box
    for run in _finite_runs(np.isfinite(ys)):
        rx, ry = xs[run], ys[run].tolist()
        last = len(rx) - 1
        for a, b in _tiles(ry):
            # Between its end points a tile holds only its own segments, and its neighbours' reach
            # it no further than a joint's thickness; so its own points bound its rows.
            box = (
                max(pb.left + 1, rx[a] if a > 0 else rx[0] - reach),
                max(pb.top + 1, math.floor(min(ry[a : b + 1])) - reach),
                min(pb.right, rx[b] if b < last else rx[last] + reach + 1),
                min(pb.bottom, math.ceil(max(ry[a : b + 1])) + reach + 1),
            )
            lo, hi = max(a - 1, 0), min(b + 1, last) + 1
            _paint_polyline(img, box, rx[lo:hi], ry[lo:hi], color, width, s)


def _tiles(ys: list[float]) -> list[tuple[int, int]]:
    """Point ranges [a, b], each starting where the last ended, spanning at most MA_TILE_ROWS rows."""
    last = len(ys) - 1
    tiles = []
    a = 0
    while not tiles or a < last:
        lo = hi = ys[a]
        b = a
        while b < last and (b == a or max(hi, ys[b + 1]) - min(lo, ys[b + 1]) <= MA_TILE_ROWS):
            b += 1
            lo, hi = min(lo, ys[b]), max(hi, ys[b])
        tiles.append((a, b))
        a = b
    return tiles


def _paint_polyline(
    img: Image.Image,
    box: tuple[int, int, int, int],
    xs: list[int],
    ys: list[float],
    color: RGB,
    width: int,
    s: int,
) -> None:
    x0, y0, x1, y1 = box
    mask = Image.new("L", ((x1 - x0) * s, (y1 - y0) * s), 0)
    draw = ImageDraw.Draw(mask)
    # 1x pixel k spans [k, k+1) of continuous space, which is pixel (k + 0.5) * s - 0.5 at the
    # supersampled scale; xs are pixel columns and round(ys) pixel rows.
    points = [((x - x0 + 0.5) * s - 0.5, (y - y0 + 0.5) * s - 0.5) for x, y in zip(xs, ys)]
    if len(points) == 1:
        (cx, cy), r = points[0], width / 2
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
    else:
        draw.line(points, fill=255, width=width)
    img.paste(color, box, mask.reduce(s) if s > 1 else mask)


def _finite_runs(finite: np.ndarray) -> list[slice]:
    """Slices of consecutive True values: a NaN gap breaks the line rather than bridging it."""
    edges = np.diff(np.concatenate(([0], finite.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [slice(a, b) for a, b in zip(starts.tolist(), stops.tolist())]


# The lettered bars' drawing, part of a marked chart's render key (rendering/render.py), which
# covers settings, not code: raise it whenever _draw_marks draws otherwise, so lettered charts are
# drawn again. 1: the letters alone; 2: each on a halo of the background, as an MA line under a
# letter ran through it.
MARKS_DRAWING = 2
HALO_PX = 2  # under the gap (3 px) between a letter and its candle: the halo never covers the candle


def _draw_marks(draw: ImageDraw.ImageDraw, lay: ChartGeometry, xs: list[int], b: _Bars, spec: ChartSpec, fill: RGB) -> None:
    """Each marked bar's letter centred over its candle, a gap above its high; below its low where
    the panel has no room above (the highest candles). A halo of the background keeps a line that
    passes the letter (an MA) from running through it."""
    size, gap = spec.font_size, 3
    for i, letter in enumerate(b.marks):
        if not letter:
            continue
        top = round(lay.y_of(b.high[i])) - gap - size
        if top <= lay.price_box.top:
            top = round(lay.y_of(b.low[i])) + gap
        _draw_text(draw, xs[i], top, letter, size, "ma", fill, halo=BACKGROUND)


def _draw_axes(
    draw: ImageDraw.ImageDraw, lay: ChartGeometry, xs: list[int], b: _Bars, spec: ChartSpec, colors: _Palette
) -> None:
    pb, vb = lay.price_box, lay.volume_box
    size = spec.font_size
    label_x = pb.right + 7
    for tick in lay.price_ticks:
        y = round(lay.y_of(tick))
        draw.line((pb.right + 1, y, pb.right + 4, y), fill=colors.frame)
        _draw_text(draw, label_x, y, price_label(tick, lay.price_step), size, "lm", colors.text)
    if vb is not None:
        for tick in lay.volume_ticks:
            y = round(lay.y_vol_of(tick))
            draw.line((vb.right + 1, y, vb.right + 4, y), fill=colors.frame)
            _draw_text(draw, label_x, y, format_volume(tick), size, "lm", colors.text)
    bottom = (vb or pb).bottom
    labels = np.datetime_as_string(b.dates[list(lay.date_ticks)], unit="D").tolist()  # YYYY-MM-DD
    for i, label in zip(lay.date_ticks, labels):
        draw.line((xs[i], bottom + 1, xs[i], bottom + 4), fill=colors.frame)
        _draw_text(draw, xs[i], bottom + 4, label, size, "ma", colors.text)
