"""Reference renderer: the same chart spec drawn by mplfinance.

Used by the speed benchmark and for visual comparison with :mod:`candlebench.rendering.chart`, never by the
evaluation itself (it is ~20-50x slower and its output depends on the installed matplotlib).
"""

from __future__ import annotations

import io

import pandas as pd

from candlebench.rendering.chart import ChartSpec

DPI = 100


def render_chart_mpl(bars: pd.DataFrame, spec: ChartSpec, title: str) -> bytes:
    """PNG bytes (RGBA, as matplotlib writes them) of ``spec.width`` x ``spec.height`` pixels."""
    if spec.marks:
        raise ValueError("the mplfinance renderer draws no marked bars (task.render.marks): use render.renderer=pil")
    # mplfinance makes its figure with pyplot (plt.figure) outside its external-axes mode, whose
    # layout (panels, title) is another chart, so pyplot it is. No backend is selected for the
    # process (matplotlib.use would switch a notebook's or a user's MPLBACKEND): the one explicit
    # choice is savefig's backend="agg" below, for this file alone, so the bytes are Agg's on any.
    import matplotlib.pyplot as plt
    import mplfinance as mpf

    frame = bars.set_index(pd.DatetimeIndex(bars["date"]))
    colors = mpf.make_marketcolors(
        up=spec.up_color, down=spec.down_color, edge="inherit", wick="inherit", volume="inherit"
    )
    style = mpf.make_mpf_style(
        base_mpf_style="default",
        marketcolors=colors,
        facecolor="white",
        figcolor="white",
        gridcolor=spec.grid_color,
        gridstyle="-",
        y_on_right=True,
        rc={"font.size": spec.font_size * 0.75},  # Pillow sizes are pixels, matplotlib's points
    )
    # An MA undefined on the whole window would give mplfinance an all-NaN series to scale.
    addplots = [
        mpf.make_addplot(frame[f"ma{w}"], color=c, width=spec.ma_line_width, label=f"MA{w}")
        for w, c in zip(spec.ma_windows, spec.ma_colors)
        if frame[f"ma{w}"].notna().any()
    ]
    fig, _ = mpf.plot(
        frame,
        type="candle",
        style=style,
        addplot=addplots,
        volume=spec.volume_panel,
        panel_ratios=(1 - spec.volume_fraction, spec.volume_fraction) if spec.volume_panel else None,
        figsize=(spec.width / DPI, spec.height / DPI),
        title=title,
        ylabel="",
        ylabel_lower="",
        datetime_format="%Y-%m-%d",
        returnfig=True,
    )
    buf = io.BytesIO()
    # Matplotlib stamps its version into "Software"; without it the bytes depend on pixels only.
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None}, backend="agg")
    plt.close(fig)
    return buf.getvalue()
