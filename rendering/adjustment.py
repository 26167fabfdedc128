"""Price adjustment: splits and dividends taken out of the price path when the export says how.

TuShare's ``daily`` prices are unadjusted, so an ex-rights day (a 10-for-10 bonus share, a large
dividend) looks like a crash in the chart and in the label. When an export carries the provider's
cumulative adjustment factor — TuShare's ``adj_factor`` endpoint merged on (ts_code, trade_date),
or Yahoo's ``Adj Close`` (the factor is Adj Close / Close) — open, high, low and close are
back-adjusted (``data.adjust=auto``, the default; ``none`` keeps the prices as exported).

The rule: ``price × factor(d) / factor(first bar of the stock)``, taken as the product of the
day-to-day steps of the factor where a step of less than 1e-6 counts as none (Yahoo rounds Adj
Close, so its ratio to Close jitters in the last digits on days without any corporate action). Each bar keeps the share of the
stock's first bar in the file as its unit, so only corporate actions between that first bar and
``d`` change it: nothing after a chart's cutoff reaches its prices (adjusting to the *latest*
factor, TuShare's 前复权 or Yahoo's own Adj Close, would rescale every past chart by actions that
happen later). Returns, and so labels, equal those of the total-return series. Volume stays as
exported (Yahoo's is split-adjusted already; TuShare's is not, and charts only use volume relative
to the same stock's recent bars). The paper does not say whether its prices were adjusted.
"""

from __future__ import annotations

import pandas as pd

from rendering.layouts import PRICES

ADJUST = ("auto", "none")
STEP_TOLERANCE = 1e-6


def back_adjust(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``frame`` (sorted by code and date) with adjusted prices and no ``adj_factor`` column, and how
    many stocks changed. Without the column it is returned as it is."""
    if "adj_factor" not in frame:
        return frame, 0
    factor = frame["adj_factor"]
    code = frame["code"]
    step = (factor / factor.groupby(code, sort=False).shift()).fillna(1.0)
    step = step.where((step - 1.0).abs() >= STEP_TOLERANCE, 1.0)
    ratio = step.groupby(code, sort=False).cumprod()
    out = frame.drop(columns="adj_factor")
    out[list(PRICES)] = out[list(PRICES)].mul(ratio, axis=0)
    changed = int((step != 1.0).groupby(code, sort=False).any().sum())
    return out, changed
