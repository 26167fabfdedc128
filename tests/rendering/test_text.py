"""The text modality: same bars as the charts, compact and exact."""

from __future__ import annotations

import pandas as pd
import pytest

from candlebench.market.bars import chart_bars, history_before
from candlebench.rendering.text import bars_block, sample_text

pytestmark = pytest.mark.unit


def test_block_format_is_exact():
    bars = pd.DataFrame(
        {
            "date": pd.to_datetime(["2024-01-02", "2024-01-03"]),
            "open": [10.0, 1234.5678],
            "high": [11.0, 1300.0],
            "low": [9.5, 1200.0],
            "close": [10.5, 1250.25],
            "volume": [950.0, 1_234_567.0],
            "ma5": [float("nan"), 0.004412345],
        }
    )
    assert bars_block(bars, "HEAD", (5,)) == (
        "HEAD\n"
        "date,open,high,low,close,volume,ma5\n"
        "2024-01-02,10,11,9.5,10.5,950,\n"
        "2024-01-03,1234.6,1300,1200,1250.2,1.23M,0.0044123"
    )


def test_prices_are_written_as_a_reader_writes_them_never_in_scientific_notation():
    """Five significant digits, as %.5g wrote them where it wrote no exponent (the same bytes, so
    the inputs of the past keep their fingerprints), fixed notation beyond: a model that copies
    a price back writes the price, not its mantissa."""
    bars = pd.DataFrame({"date": pd.to_datetime(["2024-01-02", "2024-01-03", "2024-01-04"]),
                         "open": [123456.7, 2012700000000.0, 99999.6], "high": [130000.0, 2.1e12, 100000.0],
                         "low": [0.0000123456, 0.0001, 99999.0], "close": [731.5, 12.345, 0.5], "volume": [1.0, 2.0, 3.0]})
    rows = bars_block(bars, "HEAD", ()).splitlines()[2:]
    assert rows == ["2024-01-02,123457,130000,0.000012346,731.5,1",
                    "2024-01-03,2012700000000,2100000000000,0.0001,12.345,2",
                    "2024-01-04,100000,100000,99999,0.5,3"]
    assert not any("e+" in r or "e-" in r for r in rows)


def test_sample_text_holds_the_chart_bars_of_each_frame(slice_market):
    cutoff = pd.Timestamp("2018-03-14")
    history = history_before(slice_market.stock("AC"), cutoff)
    text = sample_text(history, "AC", cutoff, ("daily", "weekly"), (5, 20, 90), 50)
    daily, weekly = text.split("\n\n")
    assert daily.startswith("AC daily bars before 2018-03-14")
    assert weekly.startswith("AC weekly bars before 2018-03-14")
    for block, freq in ((daily, "daily"), (weekly, "weekly")):
        rows = block.splitlines()[2:]
        bars = chart_bars(history, freq, (5, 20, 90), 50)
        assert len(rows) == len(bars) == 50
        assert [r.split(",")[0] for r in rows] == [f"{d:%Y-%m-%d}" for d in bars["date"]]
        assert [float(r.split(",")[4]) for r in rows] == list(bars["close"])
    assert weekly.splitlines()[-1].startswith("2018-03-13,")
    assert "2018-03-14" not in daily.split("\n", 1)[1]
