"""Loading and validating market data: layouts, row order, every defect, drop-or-fail."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from helpers import setup_of, write_csv
from candlebench.market.market import MarketDataError, OnDefect, load_market

pytestmark = pytest.mark.unit

HEADER = ["code", "date", "open", "high", "low", "close", "volume"]
GOOD = [
    ["AAA", "2024-01-02", 10, 11, 9, 10.5, 1000],
    ["AAA", "2024-01-03", 10.5, 12, 10, 11.5, 1200],
    ["AAA", "2024-01-04", 11.5, 11.5, 10.5, 11, 900],
    ["BBB", "2024-01-02", 5, 5.5, 4.5, 5.2, 300],
    ["BBB", "2024-01-03", 5.2, 5.4, 5.0, 5.1, 250],
    ["BBB", "2024-01-04", 5.1, 5.3, 4.9, 5.0, 200],
]


def load(path: Path, **kw) -> pd.DataFrame:
    return load_market([path], name="T", **kw).bars


def test_rows_in_any_order_load_the_same(tmp_path):
    sorted_bars = load(write_csv(tmp_path / "a.csv", HEADER, GOOD))
    shuffled = [GOOD[i] for i in (5, 2, 0, 4, 1, 3)]
    pd.testing.assert_frame_equal(sorted_bars, load(write_csv(tmp_path / "b.csv", HEADER, shuffled)))
    assert list(sorted_bars["code"]) == ["AAA"] * 3 + ["BBB"] * 3
    assert sorted_bars.groupby("code")["date"].apply(lambda d: d.is_monotonic_increasing).all()


def test_tushare_export_newest_first_loads_like_canonical(tmp_path):
    header = ["ts_code", "trade_date", "open", "high", "low", "close", "pre_close", "change", "pct_chg", "vol", "amount"]
    rows = [
        [c, d.replace("-", ""), o, h, low, cl, 0, 0, 0, v, v * cl] for c, d, o, h, low, cl, v in reversed(GOOD)
    ]
    tushare = load(write_csv(tmp_path / "ts.csv", header, rows))
    canonical = load(write_csv(tmp_path / "c.csv", HEADER, GOOD))
    pd.testing.assert_frame_equal(tushare.drop(columns="amount"), canonical)
    assert "amount" in tushare


def test_yahoo_export_takes_code_from_config_or_file_name(tmp_path):
    header = ["Date", "Open", "High", "Low", "Close", "Adj Close", "Volume"]
    rows = [[d, o, h, low, cl, cl * 0.9, v] for c, d, o, h, low, cl, v in GOOD if c == "AAA"]
    path = write_csv(tmp_path / "MSFT.csv", header, rows)
    assert set(load(path)["code"]) == {"MSFT"}
    assert set(load(path, code="AAA")["code"]) == {"AAA"}
    expected = load(write_csv(tmp_path / "c.csv", HEADER, GOOD[:3]))
    pd.testing.assert_frame_equal(load(path, code="AAA"), expected)


def test_parquet_loads_like_csv(tmp_path):
    csv_bars = load(write_csv(tmp_path / "c.csv", HEADER, GOOD))
    csv_bars.to_parquet(tmp_path / "c.parquet", index=False)
    pd.testing.assert_frame_equal(load(tmp_path / "c.parquet"), csv_bars)


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (["AAA", "2024-01-05", "", 11, 9, 10, 100], "missing or non-numeric open"),
        (["AAA", "2024-01-05", "nan", 11, 9, 10, 100], "missing or non-numeric open"),
        (["AAA", "2024-01-05", 10, 11, 9, 10, "abc"], "missing or non-numeric volume"),
        (["AAA", "2024-01-05", 0, 11, 9, 10, 100], "non-positive open"),
        (["AAA", "2024-01-05", 10, 11, -9, 10, 100], "non-positive low"),
        (["AAA", "2024-01-05", 10, 9, 11, 10, 100], "high < low"),
        (["AAA", "2024-01-05", 12, 11, 9, 10, 100], "open outside [low, high]"),
        (["AAA", "2024-01-05", 10, 11, 9, 8.5, 100], "close outside [low, high]"),
        (["AAA", "2024-01-04", 11, 11.5, 10.5, 11, 900], "duplicate date"),
        (["AAA", "2024-13-45", 10, 11, 9, 10, 100], "unparseable date"),
        (["AAA", "2024-01-05", 10, 11, 9, 10, -1], "negative volume"),
        (["../x", "2024-01-05", 10, 11, 9, 10, 100], "unsafe code"),
        (["a/b", "2024-01-05", 10, 11, 9, 10, 100], "unsafe code"),
        (["AAA", "2024-01-05", 10, "inf", 9, 10, 100], "infinite high"),
        (["AAA", "2024-01-05", 10, 11, 9, 10, "inf"], "infinite volume"),
        (["AAA", "2099-01-05", 10, 11, 9, 10, 100], "dated in the future"),
        # 2026-06-01 is not in the future, but no market pauses for two years: a typo in the year.
        (["AAA", "2026-06-01", 10, 11, 9, 10, 100], "days after the market's previous day"),
    ],
)
def test_each_defect_names_file_row_code_date_and_reason(tmp_path, row, reason):
    path = write_csv(tmp_path / "bad.csv", HEADER, GOOD + [row])
    with pytest.raises(MarketDataError) as err:
        load(path)
    defects = err.value.defects
    assert any(reason in d.reason for d in defects)
    hit = next(d for d in defects if reason in d.reason)
    assert hit.file == str(path) and hit.code == row[0]
    # the bad row is the last line of the file: header + 6 good rows + 1
    assert hit.row == len(GOOD) + 2 or reason == "duplicate date"
    message = str(err.value)
    assert str(path) in message and reason in message and row[0] in message

    # drop: the defective stock goes, the others stay, and the drop is counted with its reason
    market = load_market([path], name="T", on_defect=OnDefect.DROP)
    assert row[0] not in set(market.bars["code"])
    assert set(market.bars["code"]) == {"AAA", "BBB"} - {row[0]}
    assert any(reason in r for r in market.report.as_dict()["dropped_stocks"][row[0]])


def test_duplicate_date_reports_both_rows(tmp_path):
    path = write_csv(tmp_path / "dup.csv", HEADER, GOOD + [["BBB", "2024-01-02", 5, 5.5, 4.5, 5.2, 300]])
    with pytest.raises(MarketDataError) as err:
        load(path)
    assert sorted(d.row for d in err.value.defects) == [5, 8]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file"),
        (",".join(HEADER) + "\n", "empty file"),
        ("code,date,open,high,low,close,volume,mood\nAAA,2024-01-02,1,1,1,1,1,happy\n", "match no known layout"),
        ("code,date,open,high,low,close\nAAA,2024-01-02,1,1,1,1\n", "match no known layout"),
    ],
)
def test_file_level_errors(tmp_path, content, message):
    path = tmp_path / "f.csv"
    path.write_text(content)
    with pytest.raises(MarketDataError, match=message) as err:
        load(path, on_defect="drop")  # never droppable: nothing in the file can be trusted
    assert str(path) in str(err.value)


def test_a_missing_column_is_named_as_missing_apart_from_the_optional_ones(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("code,date,open,high,low,volume\nAAA,2024-01-02,1,1,1,1\n")
    with pytest.raises(MarketDataError) as err:
        load(path)
    said = str(err.value)
    assert "missing ['close'] of the canonical layout" in said and "\n" not in said
    assert "optional ['adj_factor', 'amount']" in said and "'amount', 'close'" not in said


def test_explicit_layout_names_missing_and_unknown_columns(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("code,date,open,high,low,close,mood\nAAA,2024-01-02,1,1,1,1,x\n")
    with pytest.raises(MarketDataError, match=r"needs columns \['volume'\].*unknown columns \['mood'\]"):
        load(path, layout="canonical")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(MarketDataError, match="nope.csv: no such file"):
        load(tmp_path / "nope.csv")


def test_zero_volume_days_are_suspensions_like_missing_rows(tmp_path):
    """A zero-volume row and an omitted row give the same bars and the same trading calendar."""
    with_zero = GOOD[:1] + [["AAA", "2024-01-03", 10.5, 10.5, 10.5, 10.5, 0]] + GOOD[2:]
    omitted = GOOD[:1] + GOOD[2:]
    a = load_market([write_csv(tmp_path / "z.csv", HEADER, with_zero)], name="T")
    b = load_market([write_csv(tmp_path / "o.csv", HEADER, omitted)], name="T")
    pd.testing.assert_frame_equal(a.bars, b.bars)
    assert list(a.calendar) == list(b.calendar) == list(pd.to_datetime(["2024-01-02", "2024-01-03", "2024-01-04"]))
    assert a.report.suspended_rows == 1 and b.report.suspended_rows == 0


def test_all_stocks_defective_fails_even_when_dropping(tmp_path):
    path = write_csv(tmp_path / "bad.csv", HEADER, [["AAA", "2024-01-02", 10, 9, 11, 10, 1]])
    with pytest.raises(MarketDataError, match="every stock is defective"):
        load(path, on_defect="drop")


def test_codes_filter(tmp_path):
    path = write_csv(tmp_path / "c.csv", HEADER, GOOD)
    assert set(load_market([path], name="T", codes=["BBB"]).bars["code"]) == {"BBB"}
    with pytest.raises(MarketDataError, match="none of the codes"):
        load_market([path], name="T", codes=["ZZZ"])


def test_committed_slice_is_clean_real_data(slice_market):
    assert slice_market.report.stocks == 11
    assert slice_market.report.dropped == {}
    assert slice_market.calendar[0] == pd.Timestamp("2017-01-03")
    assert slice_market.calendar[-1] == pd.Timestamp("2019-12-27")


def test_empty_code_is_reported_as_empty(tmp_path):
    path = write_csv(tmp_path / "bad.csv", HEADER, GOOD + [["", "2024-01-05", 10, 11, 9, 10, 100]])
    with pytest.raises(MarketDataError) as err:
        load(path)
    (hit,) = [d for d in err.value.defects if d.reason == "empty code"]
    assert hit.code == "" and hit.row == len(GOOD) + 2
    assert "code=(empty)" in str(err.value) and "nan" not in str(err.value)
    assert set(load_market([path], name="T", on_defect="drop").bars["code"]) == {"AAA", "BBB"}


def _market(path: Path):
    return load_market([path], name="T")


def test_forward_filled_weekends_and_holidays_never_become_trading_days(tmp_path, slice_path):
    """One export forward-fills Saturdays, Sundays and a holiday (rows that copy the previous bar):
    they are counted and dropped, and the calendar and the labels are those of the clean file."""
    from candlebench.tasks.forecast.samples import build_samples

    clean = pd.read_csv(slice_path)
    clean = clean[clean["code"].isin(["AC", "SM", "TEL"])]
    days = pd.to_datetime(clean["date"])
    filled = []
    for code, group in clean.assign(date=days).groupby("code"):
        every_day = group.set_index("date").reindex(pd.date_range(group["date"].min(), group["date"].max()))
        filled.append(every_day.ffill().assign(code=code).rename_axis("date").reset_index())
    filled = pd.concat(filled)
    filled["date"] = filled["date"].dt.strftime("%Y-%m-%d")
    a = _market(write_csv(tmp_path / "clean.csv", list(clean.columns), clean.values.tolist()))
    b = _market(write_csv(tmp_path / "filled.csv", list(filled[clean.columns].columns), filled[clean.columns].values.tolist()))
    assert len(filled) > len(clean) + 500
    assert b.calendar.equals(a.calendar) and (b.calendar.day_of_week < 5).all()
    pd.testing.assert_frame_equal(b.bars, a.bars)
    reasons = b.report.as_dict()["filler_rows"]
    assert reasons["not a trading weekday (data.weekdays)"] > 0 and any("filled holiday" in r for r in reasons)
    spec = setup_of("task=forecast", "task.samples.interval=20", "task.samples.min_bars=30").settings.samples
    pd.testing.assert_frame_equal(build_samples(b, spec).frame, build_samples(a, spec).frame)


def test_time_zone_aware_parquet_with_date_only_csv_counts_each_day_once(tmp_path):
    csv_path = write_csv(tmp_path / "a.csv", HEADER, [r for r in GOOD if r[0] == "AAA"])
    zoned = pd.DataFrame([r for r in GOOD if r[0] == "BBB"], columns=HEADER)
    zoned["date"] = pd.to_datetime(zoned["date"]).dt.tz_localize("Asia/Shanghai") + pd.Timedelta(hours=15)
    zoned.to_parquet(tmp_path / "b.parquet", index=False)
    market = load_market([csv_path, tmp_path / "b.parquet"], name="T")
    assert list(market.calendar.strftime("%Y-%m-%d")) == ["2024-01-02", "2024-01-03", "2024-01-04"]
    notes = market.report.as_dict()["notes"]
    assert any("time zone Asia/Shanghai" in n for n in notes) and any("time of day" in n for n in notes)


def test_csv_dates_with_a_time_of_day_say_that_only_the_day_is_kept(tmp_path):
    """As for datetime columns: a text date with a time after the day is cut to the day, and the load
    report says so; midnight alone is no time of day."""
    timed = [[r[0], f"{r[1]} 15:30:00", *r[2:]] for r in GOOD if r[0] == "AAA"]
    midnight = [[r[0], f"{r[1]} 00:00:00", *r[2:]] for r in GOOD if r[0] == "AAA"]
    a = load_market([write_csv(tmp_path / "t.csv", HEADER, timed)], name="T")
    b = load_market([write_csv(tmp_path / "m.csv", HEADER, midnight)], name="T")
    pd.testing.assert_frame_equal(a.bars, b.bars)
    assert any("dates carry a time of day on 3 rows (e.g. '2024-01-02 15:30:00')" in n for n in a.report.notes)
    assert not any("time of day" in n for n in b.report.notes)
