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

Files without a factor column (a Yahoo download without ``Adj Close``, as yfinance writes with its
default ``auto_adjust=True``, or a canonical table) keep their prices as exported: their stocks get the
factor 1 throughout, the load report notes each such file, and a market that mixes them with
back-adjusted stocks is named as mixed (a split of an unadjusted stock shows as a jump in its charts
and labels; refusing the market would lose the stocks that are fine). A stock whose rows come from
files both with and without the column cannot be adjusted consistently: those rows are a defect.
"""

from __future__ import annotations

import pandas as pd

from candlebench.market.layouts import PRICES

ADJUST = ("auto", "none")
STEP_TOLERANCE = 1e-6
# Marks rows read from a file without a factor column, for the defect check of mixed stocks.
NO_FACTOR_COLUMN = "_no_factor_column"
NO_FACTOR_REASON = "no adjustment factor in this file (no Adj Close / adj_factor column), but other files of the stock have one"
SHOWN_CODES = 8


def fill_absent_factors(frame: pd.DataFrame, plain_files: list[str]) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """``frame`` (all files concatenated, ``_file`` naming each row's file) with factor 1 for every
    stock read only from ``plain_files`` (the files without a factor column), and a note naming the
    adjusted and the as-exported stocks when the market has both. Rows of ``plain_files`` of a stock
    that also has factor rows keep a missing factor and the :data:`NO_FACTOR_COLUMN` mark."""
    if "adj_factor" not in frame or not plain_files:
        return frame, ()
    plain = frame["_file"].isin(plain_files)
    factored = set(frame.loc[~plain, "code"])
    out = frame.copy()
    out.loc[plain & ~out["code"].isin(factored), "adj_factor"] = 1.0
    out[NO_FACTOR_COLUMN] = plain & out["code"].isin(factored)
    as_exported = sorted(set(out.loc[plain, "code"]) - factored)
    n_factored, n_plain = out.loc[~plain, "_file"].nunique(), out.loc[plain, "_file"].nunique()
    note = (f"mixed price adjustment: back-adjusted from a factor: {_codes(sorted(factored))} "
            f"({_files(n_factored)}); prices as exported, no factor: {_codes(as_exported)} "
            f"({_files(n_plain)}): a split or dividend of these shows as a jump in their charts and labels")
    return out, (note,) if factored and as_exported else ()


def _files(n: int) -> str:
    return f"{n} file" + ("s" if n != 1 else "")


def _codes(codes: list[str]) -> str:
    more = len(codes) - SHOWN_CODES
    return ", ".join(codes[:SHOWN_CODES]) + (f" and {more} more" if more > 0 else "")


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
    out = frame.drop(columns=["adj_factor", *([NO_FACTOR_COLUMN] if NO_FACTOR_COLUMN in frame else [])])
    out[list(PRICES)] = out[list(PRICES)].mul(ratio, axis=0)
    changed = int((step != 1.0).groupby(code, sort=False).any().sum())
    return out, changed
