"""The report's figure helpers: a plot drawn into PNG bytes, titles and tick labels fitted, panels
that say why they are empty, legends beside the axes, text that reads on a coloured cell.

The backend, in this one place: every figure is a :class:`matplotlib.figure.Figure` on its own Agg
canvas (:func:`canvas`), never a pyplot figure. No global backend is selected, none is needed, and
the order of imports does not matter: a process whose backend is another (a notebook's inline one,
a user's ``MPLBACKEND``) keeps it, and the report still renders. Nothing here imports pyplot, whose
figures would also stay registered until closed.
"""

from __future__ import annotations

import io
import textwrap
from typing import Any, Callable

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from candlebench.report.model import RunMetrics


def canvas(size=(8, 4), panels: int | tuple[int, int] = 1, squeeze: bool = True) -> tuple[Figure, Any]:
    """A figure on an Agg canvas of its own and its axes: one, a row (``panels`` = n) or a grid
    (rows, columns); ``squeeze`` False: always a 2-D array of them, one panel included."""
    rows, columns = panels if isinstance(panels, tuple) else (1, panels)
    fig = Figure(figsize=size, dpi=100)
    FigureCanvasAgg(fig)  # attaches itself as fig.canvas: drawing and PNG output need no backend
    return fig, fig.subplots(rows, columns, squeeze=squeeze)


def png(fig: Figure) -> bytes:
    fig.tight_layout()
    _fit(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version stamp: stable bytes
    return buf.getvalue()


def _fit(fig: Figure) -> None:
    """Titles wider than their axes (a long run name over a small panel, a title pushed past the
    figure's edge by long tick labels) are wrapped, and run names under bars that would overlap
    are turned upright; then the layout is made again."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        title, room = ax.title, ax.get_window_extent(renderer).width
        box = title.get_window_extent(renderer)
        if title.get_text() and (box.width > room * 1.1 or box.x0 < 0 or box.x1 > fig.bbox.x1):
            chars = max(12, int(len(title.get_text()) * min(room, fig.bbox.width * 0.9) / box.width))
            title.set_text(textwrap.fill(title.get_text(), chars))
            changed = True
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        if any(a.overlaps(b) for a, b in zip(boxes, boxes[1:])):
            for label in labels:
                label.set(rotation=90, ha="center")
            changed = True
    if changed:
        fig.tight_layout()


def run_labels(runs: list[RunMetrics], width: int = 22) -> list[str]:
    """Run names as tick labels: wrapped onto lines of ``width`` characters, not rotated across their
    neighbours."""
    return [textwrap.fill(r.label, width) for r in runs]


def reference_line(ax, at: float = 0.0, vertical: bool = False, **style) -> None:
    """A zero or threshold line: drawn, but not data (a plot of nothing else says why it is empty)."""
    style = {"color": "grey", "lw": 0.8, **style}
    (ax.axvline if vertical else ax.axhline)(at, gid="reference", **style)


def say_why(ax, why: str) -> None:
    """A panel with nothing to show says so in its middle, instead of bare axes."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, textwrap.fill(why, 48), transform=ax.transAxes, ha="center", va="center", fontsize=8,
            color="#333")


def nothing_to_draw(values) -> bool:
    """Every value missing or 0: bars of no height, a panel that would look empty."""
    return all(v is None or (isinstance(v, float) and np.isnan(v)) or v == 0 for v in values)


def _luminance(rgba) -> float:
    channel = np.asarray(rgba[:3], dtype=float)
    linear = np.where(channel <= 0.03928, channel / 12.92, ((channel + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def on_cell(rgba) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba`` (WCAG's contrast: one of
    the two always reaches 4.5 : 1)."""
    light = _luminance(rgba)
    return "black" if (light + 0.05) / 0.05 >= 1.05 / (light + 0.05) else "white"


def legend(ax) -> None:
    """The legend of what is labelled on ``ax``, beside the axes: inside them, wherever matplotlib
    finds room, it covered lines of the IC-per-date plot and a CI whisker of the mean-and-median
    bars. None where nothing is labelled (a study whose runs have no IC per date or no horizon),
    where matplotlib's would only warn "No artists with labels"."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)


def figure(draw: Callable[[Any], None], size=(8, 4), panels: int | tuple[int, int] = 1, squeeze: bool = True) -> bytes:
    """A plot of ``draw(ax)``, or of ``draw(axes)`` for a row (``panels`` = n) or grid (rows,
    columns); ``squeeze`` as :func:`canvas`."""
    fig, ax = canvas(size, panels, squeeze)
    draw(ax)
    return png(fig)
