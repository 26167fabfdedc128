"""Marked bars on the reading task's charts (rendering/marks.py): a letter over each marked candle,
chosen by a seeded draw the reading questions share; the forecast charts stay unmarked; and the
blank image of a chart's size (the image-free control)."""

from __future__ import annotations

import io
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from candlebench.core.rules import ConfigError
from candlebench.market.bars import chart_bars
from candlebench.rendering.chart import ChartSpec, blank_png, geometry, render_chart, render_image
from candlebench.rendering.marks import MARK_COLUMN, marked_bars, partial_last_week, with_marks
from helpers import setup_of

pytestmark = pytest.mark.unit
CUTOFF = pd.Timestamp("2020-06-01")


def bars(n: int = 60) -> pd.DataFrame:
    close = 100 + 10 * np.sin(np.arange(n) / 5)
    hist = pd.DataFrame({"date": pd.bdate_range("2020-01-01", periods=n), "open": close - 1, "high": close + 2,
                         "low": close - 3, "close": close, "volume": np.full(n, 1e6)})
    return chart_bars(hist, "daily", (5, 20, 90), 50)


def test_four_distinct_bars_from_a_seed_never_the_partial_week():
    first = marked_bars(50, "AC", CUTOFF, "daily", 4)
    assert first == marked_bars(50, "AC", CUTOFF, "daily", 4) != marked_bars(50, "AC", CUTOFF, "weekly", 4)
    assert len(set(first)) == 4 and list(first) == sorted(first) and max(first) < 50
    assert marked_bars(3, "AC", CUTOFF, "daily", 4) == () and marked_bars(50, "AC", CUTOFF, "daily", 0) == ()
    assert all(49 not in marked_bars(50, code, CUTOFF, "weekly", 4, partial_last=True) for code in map(str, range(60)))
    friday = pd.Timestamp("2020-05-29")
    assert partial_last_week("weekly", friday - pd.Timedelta(days=1), friday)  # cutoff Friday: Thursday's week
    assert not partial_last_week("weekly", friday, friday + pd.Timedelta(days=3))  # cutoff Monday: a whole week
    assert not partial_last_week("daily", friday - pd.Timedelta(days=1), friday)


def test_each_marked_candle_gets_its_letter_over_it_and_the_same_bytes_each_time():
    b = bars()
    plain = np.asarray(render_image(b, ChartSpec(), "t"), dtype=int)
    marked = with_marks(b, "AC", CUTOFF, "daily", 4)
    drawn = np.asarray(render_image(marked, ChartSpec(marks=4), "t"), dtype=int)
    lay = geometry(b, ChartSpec())
    changed = np.flatnonzero((plain != drawn).any(axis=(0, 2)))
    assert list(marked[MARK_COLUMN][marked[MARK_COLUMN] != ""]) == ["A", "B", "C", "D"]
    centres = [lay.x_of(i) for i in np.flatnonzero(marked[MARK_COLUMN] != "")]
    # Every changed column belongs to a letter centred on a marked candle, and each letter shows.
    assert all(min(abs(x - c) for c in centres) <= 6 for x in changed)
    assert all(any(abs(x - c) <= 6 for x in changed) for c in centres)
    spec = ChartSpec(marks=4)
    assert render_chart(marked, spec, "t") == render_chart(marked, spec, "t")


def test_a_line_through_a_letter_stops_at_its_halo():
    """An MA line across a letter (the demo's "D" sat on MA5 and MA20) is cut by a halo of the
    background around the letter's strokes: no pixel of the line shows inside the letter."""
    b = bars().assign(ma5=np.nan, ma90=np.nan)
    k = int(b["high"].iloc[10:-10].idxmin())  # a low candle: a line over it leaves the price range as it is
    marked = b.assign(**{MARK_COLUMN: ["D" if i == k else "" for i in range(len(b))]})
    spec = ChartSpec(marks=1)
    lay = geometry(b, spec)
    high = b["high"].iloc[k]
    middle = round(lay.y_of(high)) - 3 - spec.font_size // 2  # the letter's middle row (chart._draw_marks)
    level = high + (lay.y_of(high) - middle) / (lay.y_of(0.0) - lay.y_of(1.0))  # the price on that row
    through = marked.assign(ma20=level)
    assert geometry(through, spec).y_of(level) == geometry(b, spec).y_of(level)
    x = lay.x_of(k)
    inside = np.asarray(render_image(through, spec, "t"), dtype=int)[middle - 1:middle + 2, x - 2:x + 3]
    line = np.asarray(render_image(through.assign(**{MARK_COLUMN: ""}), spec, "t"), dtype=int)[middle - 1:middle + 2, x - 2:x + 3]
    blue = lambda px: (px[..., 2] > px[..., 0] + 60) & (px[..., 2] > px[..., 1] + 60)  # noqa: E731 (MA20's colour)
    assert blue(line).any() and not blue(inside).any()


def test_the_reading_charts_are_marked_and_the_forecast_charts_are_not(monkeypatch):
    from candlebench.rendering import render

    reading, forecast = setup_of("task=reading").context.render, setup_of("task=forecast").context.render
    assert reading.spec.marks == 4 and forecast.spec.marks == 0
    unmarked = replace(reading, spec=replace(reading.spec, marks=0))
    assert reading.key() != unmarked.key()  # a chart drawn without its letters is drawn again
    keys = reading.key(), unmarked.key(), forecast.key()
    monkeypatch.setattr(render, "MARKS_DRAWING", render.MARKS_DRAWING + 1)
    # Letters drawn otherwise (their halo): the lettered charts are drawn again, no other chart.
    assert reading.key() != keys[0] and (unmarked.key(), forecast.key()) == keys[1:]
    with pytest.raises(ConfigError, match="task.render.marks=0: the reading charts letter 4 bars"):
        setup_of("task=reading", "task.render.marks=0")
    with_blank = setup_of("task=reading", "task.modalities=[chart,blank]").context.render
    assert with_blank.inputs == ("daily", "weekly", "blank") and with_blank.frames == ("daily", "weekly")


def test_the_blank_control_is_a_white_image_of_the_charts_size():
    spec = ChartSpec(width=320, height=200)
    image = Image.open(io.BytesIO(blank_png(spec)))
    assert image.size == (320, 200) and image.convert("RGB").getextrema() == ((255, 255), (255, 255), (255, 255))


def test_the_render_job_draws_the_reading_charts_lettered_and_a_blank_beside_them(tmp_path):
    from candlebench.market.market import load_market
    from candlebench.rendering.render import StockJob, render_stock
    from helpers import SLICE

    market = load_market([SLICE], name="PSE")
    reading = setup_of("task=reading", "task.modalities=[chart,blank]").context.render
    forecast = setup_of("task=forecast").context.render
    job = StockJob("AC", market.stock("AC"), (pd.Timestamp("2019-06-26"),), {})
    rows = {r["freq"]: r for r in render_stock(job, reading, tmp_path / "reading")}
    again = {r["freq"]: r for r in render_stock(job, reading, tmp_path / "again")}
    plain = {r["freq"]: r for r in render_stock(job, forecast, tmp_path / "forecast")}
    assert set(rows) == {"daily", "weekly", "blank"} and {f: r["sha256"] for f, r in rows.items()} == {
        f: r["sha256"] for f, r in again.items()}  # the same config, the same bytes
    assert rows["daily"]["sha256"] != plain["daily"]["sha256"]  # the letters, on the reading charts only
    unmarked = replace(reading, spec=replace(reading.spec, marks=0), freqs=forecast.freqs)
    assert render_stock(job, unmarked, tmp_path / "unmarked")[0]["sha256"] == plain["daily"]["sha256"]
    blank = Image.open(tmp_path / "reading" / rows["blank"]["path"])
    assert blank.size == (reading.spec.width, reading.spec.height) and blank.getextrema() == ((255, 255),) * 3


def test_a_letter_over_the_highest_candle_goes_under_it_and_mplfinance_refuses_marks():
    from candlebench.rendering.chart_mpl import render_chart_mpl

    b = bars()
    top = int(b["high"].idxmax())
    marked = b.assign(**{MARK_COLUMN: ["A" if i == top else "" for i in range(len(b))]})
    small = ChartSpec(height=300)  # the padding over the highest candle is ~7 px: no room for a letter
    drawn = np.asarray(render_image(marked, replace(small, marks=1), "t"), dtype=int)
    plain = np.asarray(render_image(b, small, "t"), dtype=int)
    rows = np.flatnonzero((drawn != plain).any(axis=(1, 2)))
    lay = geometry(b, small)
    assert rows.min() > lay.y_of(b["low"].iloc[top]) and rows.max() < lay.price_box.bottom  # under the candle, in the panel
    with pytest.raises(ValueError, match="mplfinance renderer draws no marked bars"):
        render_chart_mpl(marked, ChartSpec(marks=1), "t")
