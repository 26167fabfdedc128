"""What a reader of a report's plot trips over, checked on the matplotlib figure itself: text cut off
by the figure's edge or spilling out of its axes, labels drawn over each other (their rendered
bounding boxes), a legend over the data (a line, a bar, an error whisker), numbers on coloured
cells below WCAG's 4.5 : 1 contrast, and a panel with nothing to show that does not say why."""

from __future__ import annotations

import itertools

import numpy as np
from matplotlib import colors
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from matplotlib.text import Text

SLACK_PX = 1.0  # anti-aliasing: a glyph's box may touch an edge by a pixel


def _shown(text: Text) -> bool:
    return text.get_visible() and bool(text.get_text().strip())


def _ticklabels(axis, lo: float, hi: float) -> list[Text]:
    """The tick labels matplotlib draws: those of ticks inside the view."""
    low, high = sorted((lo, hi))
    return [t for t, at in zip(axis.get_ticklabels(), axis.get_ticklocs()) if low - 1e-9 <= at <= high + 1e-9]


def texts(fig) -> list[tuple[str, Text]]:
    """(where, text) of every piece of text drawn."""
    found = [("figure", t) for t in fig.texts]
    for legend in fig.legends:
        found += [("legend", t) for t in legend.get_texts()]
    for n, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        found += [(f"axes {n} title", ax.title), (f"axes {n} xlabel", ax.xaxis.label), (f"axes {n} ylabel", ax.yaxis.label)]
        if ax.axison:
            found += [(f"axes {n} x tick", t) for t in _ticklabels(ax.xaxis, *ax.get_xlim())]
            found += [(f"axes {n} y tick", t) for t in _ticklabels(ax.yaxis, *ax.get_ylim())]
        found += [(f"axes {n} text", t) for t in ax.texts]
        if ax.get_legend():
            found += [(f"axes {n} legend", t) for t in ax.get_legend().get_texts()]
    return [(w, t) for w, t in found if _shown(t)]


def _inside(inner, outer) -> bool:
    return (inner.x0 >= outer.x0 - SLACK_PX and inner.y0 >= outer.y0 - SLACK_PX
            and inner.x1 <= outer.x1 + SLACK_PX and inner.y1 <= outer.y1 + SLACK_PX)


def _luminance(rgb) -> float:
    channel = np.array(rgb[:3], dtype=float)
    linear = np.where(channel <= 0.03928, channel / 12.92, ((channel + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast(a, b) -> float:
    """WCAG 2 contrast ratio of two colours."""
    la, lb = sorted((_luminance(colors.to_rgba(a)), _luminance(colors.to_rgba(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _cell_colour(ax, image: AxesImage, x: float, y: float):
    """The colour an image paints under data point (x, y), over the axes' background."""
    data = np.ma.masked_invalid(np.ma.asarray(image.get_array(), float))
    left, right, bottom, top = image.get_extent()
    rows, cols = data.shape[:2]
    col = int(np.floor((x - left) / (right - left) * cols))
    row = int(np.floor((y - top) / (bottom - top) * rows))
    if not (0 <= row < rows and 0 <= col < cols):
        return None
    rgba = np.array(image.to_rgba(data[row:row + 1, col:col + 1])[0, 0], dtype=float)
    if rgba.max() > 1:
        rgba = rgba / 255
    back = np.array(colors.to_rgba(ax.get_facecolor()))
    return tuple(rgba[:3] * rgba[3] + back[:3] * (1 - rgba[3]))


def _has_data(ax) -> bool:
    lines = [ln for ln in ax.lines if ln.get_gid() != "reference" and np.isfinite(np.asarray(ln.get_ydata(), float)).any()]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and np.isfinite([p.get_width(), p.get_height()]).all()
            and abs(p.get_width() * p.get_height()) > 0]
    points = [c for c in ax.collections if len(c.get_offsets()) and np.isfinite(np.asarray(c.get_offsets(), float)).any()
              and type(c).__name__ == "PathCollection"]
    images = [im for im in ax.images if np.isfinite(np.ma.filled(np.ma.asarray(im.get_array(), float), np.nan)).any()]
    return bool(lines or bars or points or images)


def _covered(ax, box) -> list[str]:
    """What of the data a legend's box ``box`` lies over: a line (its path, not only its points), a
    bar, an error whisker (a LineCollection)."""
    hit = []
    for line in ax.lines:
        path = line.get_path().transformed(line.get_transform())
        if line.get_linestyle() in ("None", "none", "", " "):  # markers only (a whisker's caps): their points
            over = any(box.contains(x, y) for x, y in path.vertices if np.isfinite([x, y]).all())
        else:
            over = path.intersects_bbox(box, filled=False)
        if line.get_gid() != "reference" and over:
            hit.append(f"line {line.get_label()!r}")
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_window_extent().overlaps(box) and abs(patch.get_height() * patch.get_width()) > 0:
            hit.append(f"bar {patch.get_label()!r}")
    for coll in ax.collections:
        if type(coll).__name__ == "LineCollection" and any(
                p.transformed(coll.get_transform()).intersects_bbox(box, filled=False) for p in coll.get_paths()):
            hit.append("error whisker")
    return sorted(set(hit))


def problems(fig) -> list[str]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    shown = texts(fig)
    boxes = {id(t): t.get_window_extent(renderer) for _, t in shown}
    for where, t in shown:
        if not _inside(boxes[id(t)], fig.bbox):
            found.append(f"{where} {t.get_text()!r} is cut by the figure's edge")
    for n, ax in enumerate(fig.axes):
        frame = ax.get_window_extent(renderer)
        for t in ax.texts:
            if _shown(t) and not _inside(boxes[id(t)], frame):
                found.append(f"axes {n} text {t.get_text()!r} runs outside its axes")
            if _shown(t) and ax.images and t.get_transform() == ax.transData:
                under = _cell_colour(ax, ax.images[-1], *t.get_position())
                if under is not None and contrast(t.get_color(), under) < 4.5:
                    found.append(f"axes {n} text {t.get_text()!r}: contrast {contrast(t.get_color(), under):.2f} : 1 "
                                 "on its cell, under 4.5")
        if ax.get_visible() and not _has_data(ax) and not [t for t in ax.texts if _shown(t)]:
            found.append(f"axes {n} ({ax.get_title()!r}) has nothing to show and does not say why")
    for n, ax in enumerate(fig.axes):
        if ax.get_legend() is not None and ax.get_visible():
            found += [f"axes {n} legend covers its {what}" for what in _covered(ax, ax.get_legend().get_window_extent(renderer))]
    for (wa, a), (wb, b) in itertools.combinations(shown, 2):
        overlap = boxes[id(a)].intersection(boxes[id(a)], boxes[id(b)])
        if overlap is not None and overlap.width > SLACK_PX and overlap.height > SLACK_PX:
            found.append(f"{wa} {a.get_text()!r} overlaps {wb} {b.get_text()!r}")
    return found
