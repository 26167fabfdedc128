"""Real exports as they come: yfinance's two-row header, pandas' index column, any column order,
US and day-first dates, adjustment factors (TuShare adj_factor, Yahoo Adj Close), a folder of Yahoo
files of which only some have Adj Close, and a defect summary of one line per kind. Every variant is built from the committed slice's real rows and must
load to the same bars as the slice itself (or to the hand-adjusted prices)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import SLICE, setup_of
from candlebench.market.adjustment import NO_FACTOR_REASON
from candlebench.market.data_source import input_files
from candlebench.market.market import MarketDataError, load_market
from candlebench.stages.graph import compose_job
from candlebench.stages.samples import data_check

pytestmark = pytest.mark.unit

CODES = ["AC", "SM", "TEL"]


@pytest.fixture(scope="module")
def clean() -> pd.DataFrame:
    frame = pd.read_csv(SLICE)
    return frame[frame["code"].isin(CODES)].reset_index(drop=True)


def bars(path, **kw) -> pd.DataFrame:
    return load_market([path], name="PSE", **kw).bars


@pytest.fixture(scope="module")
def expected(clean, tmp_path_factory) -> pd.DataFrame:
    path = tmp_path_factory.mktemp("clean") / "clean.csv"
    clean.to_csv(path, index=False)
    return bars(path)


def _yahoo_frame(clean: pd.DataFrame, adj: pd.Series | None = None) -> pd.DataFrame:
    """The slice under Yahoo's column names, indexed by date and ticker."""
    frame = clean.rename(columns={"date": "Date", "open": "Open", "high": "High", "low": "Low",
                                  "close": "Close", "volume": "Volume", "code": "Ticker"}).drop(columns="amount")
    frame["Adj Close"] = frame["Close"] if adj is None else frame["Close"] * adj
    return frame


def test_yfinance_multi_ticker_export_loads_like_the_slice(clean, expected, tmp_path):
    """``yf.download([...]).to_csv()``: a Price row, a Ticker row, a Date row, tickers side by side
    (pandas writes the column MultiIndex so); TEL's first days are empty, as for a later listing."""
    wide = _yahoo_frame(clean).set_index(["Date", "Ticker"]).unstack("Ticker")
    wide.columns.names = ["Price", "Ticker"]
    wide = wide[["Adj Close", "Close", "High", "Low", "Open", "Volume"]]
    late = wide.index[:10]
    wide.loc[late, pd.IndexSlice[:, "TEL"]] = np.nan
    path = tmp_path / "yf.csv"
    wide.to_csv(path)
    head = path.read_text().splitlines()[:3]
    assert head[0].startswith("Price,Adj Close,Adj Close") and head[1].startswith("Ticker,") and head[2].startswith("Date,")
    market = load_market([path], name="PSE")
    listed = ~((expected["code"] == "TEL") & expected["date"].isin(pd.to_datetime(late)))
    pd.testing.assert_frame_equal(market.bars, expected.loc[listed].drop(columns="amount").reset_index(drop=True))
    assert any("yfinance export" in n for n in market.report.notes)

    # A defect names the file's own line (the fourth line is the first day).
    text = path.read_text().splitlines()
    cells = text[3].split(",")
    cells[wide.columns.get_loc(("High", "SM")) + 1] = "-5"
    text[3] = ",".join(cells)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(MarketDataError) as err:
        load_market([path], name="PSE")
    hit = next(d for d in err.value.defects if d.reason == "non-positive high")
    assert (hit.row, hit.code) == (4, "SM")


def test_pandas_index_column_and_any_column_order(clean, expected, tmp_path):
    shuffled = clean[["volume", "close", "date", "code", "low", "amount", "open", "high"]]
    path = tmp_path / "pandas.csv"
    shuffled.to_csv(path)  # index=True: an unnamed first column 0, 1, 2, ...
    assert path.read_text().startswith(",volume,close,date")
    market = load_market([path], name="PSE")
    pd.testing.assert_frame_equal(market.bars, expected)
    assert any("unnamed index" in n for n in market.report.notes)
    single = _yahoo_frame(clean[clean["code"] == "AC"]).drop(columns="Ticker").reset_index(drop=True)
    single.to_csv(tmp_path / "AC.csv")  # a one-stock Yahoo download saved through pandas
    ac = expected[expected["code"] == "AC"].drop(columns="amount").reset_index(drop=True)
    pd.testing.assert_frame_equal(bars(tmp_path / "AC.csv"), ac)


def test_pandas_export_of_an_unnamed_date_index_reads_it_as_the_dates(clean, expected, tmp_path):
    """``df.to_csv()`` of a Yahoo frame whose date index lost its name: the dates stand first under an
    empty header. They are the Date column, not an index to drop (which left no dates at all)."""
    one = _yahoo_download(clean, "TEL", None).set_index("Date").rename_axis(None)
    one.to_csv(tmp_path / "TSLA.csv")
    assert (tmp_path / "TSLA.csv").read_text().startswith(",Open,High,Low,Close,Volume\n2017-01-03,")
    market = load_market([tmp_path / "TSLA.csv"], name="PSE")
    tel = expected[expected["code"] == "TEL"].drop(columns="amount").assign(code="TSLA").reset_index(drop=True)
    pd.testing.assert_frame_equal(market.bars, tel)
    assert any("holds the dates" in n and "'Date'" in n for n in market.report.notes)


@pytest.mark.parametrize("fmt", ["%m/%d/%Y", "%d.%m.%Y", "%d/%m/%Y", "%Y%m%d"])
def test_us_and_day_first_dates_load_like_iso(clean, expected, tmp_path, fmt):
    dated = clean.assign(date=pd.to_datetime(clean["date"]).dt.strftime(fmt))
    path = tmp_path / "dates.csv"
    dated.to_csv(path, index=False)
    pd.testing.assert_frame_equal(bars(path), expected)


def test_dates_that_read_both_ways_are_refused_unless_told(clean, expected, tmp_path):
    early = clean[pd.to_datetime(clean["date"]).dt.day <= 12]
    dated = early.assign(date=pd.to_datetime(early["date"]).dt.strftime("%m/%d/%Y"))
    path = tmp_path / "ambiguous.csv"
    dated.to_csv(path, index=False)
    with pytest.raises(MarketDataError, match="data.date_format") as err:
        bars(path)
    assert str(path) in str(err.value)
    got = bars(path, date_format="%m/%d/%Y")
    want = expected[expected["date"].dt.day <= 12].reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)


def _split(clean: pd.DataFrame, code: str, day: str, ratio: float) -> tuple[pd.DataFrame, pd.Series]:
    """Raw prices as a split would leave them (divided by ``ratio`` from ``day``) and the cumulative
    factor a provider publishes with them (x ``ratio`` from ``day``)."""
    hit = (clean["code"] == code) & (pd.to_datetime(clean["date"]) >= pd.Timestamp(day))
    raw = clean.copy()
    raw.loc[hit, ["open", "high", "low", "close"]] /= ratio
    factor = pd.Series(np.where(hit, ratio, 1.0), index=clean.index)
    return raw, factor


def test_tushare_adj_factor_undoes_a_split_in_bars_and_labels(clean, expected, tmp_path):
    """A 2-for-1 split of SM in mid-2018, as TuShare `daily` exports it (prices halve) with its
    `adj_factor` merged in: back-adjusted, bars and 30-day labels are those of the clean slice;
    with data.adjust=none the split is a -50% day, as in the raw export."""
    from candlebench.tasks.forecast.samples import build_samples

    raw, factor = _split(clean, "SM", "2018-06-01", 2.0)
    tushare = pd.DataFrame({
        "ts_code": raw["code"], "trade_date": pd.to_datetime(raw["date"]).dt.strftime("%Y%m%d"),
        "open": raw["open"], "high": raw["high"], "low": raw["low"], "close": raw["close"],
        "vol": raw["volume"], "amount": raw["amount"], "adj_factor": factor,
    }).iloc[::-1]  # newest first, as TuShare returns it
    path = tmp_path / "daily.csv"
    tushare.to_csv(path, index=False)
    market = load_market([path], name="PSE")
    pd.testing.assert_frame_equal(market.bars, expected, check_exact=False, rtol=1e-12)
    assert any("back-adjusted" in n and "1 stocks" in n for n in market.report.notes)
    spec = setup_of("task=forecast", "task.samples.interval=20").settings.samples
    clean_market = load_market([SLICE], name="PSE", codes=CODES)
    pd.testing.assert_frame_equal(build_samples(market, spec).frame, build_samples(clean_market, spec).frame,
                                  check_exact=False, rtol=1e-9)

    unadjusted = load_market([path], name="PSE", adjust="none").bars
    sm = unadjusted[unadjusted["code"] == "SM"].set_index("date")["close"]
    jump = sm / sm.shift()
    assert jump.min() < 0.55 and jump.idxmin() >= pd.Timestamp("2018-06-01")


def test_yahoo_adj_close_is_rebased_to_the_first_bar(clean, tmp_path):
    """Yahoo's Adj Close folds in every *later* dividend; prices are rescaled by Adj Close / Close
    relative to the stock's first bar, so a chart never depends on actions after its cutoff."""
    one = clean[clean["code"] == "AC"].reset_index(drop=True)
    dividend = pd.to_datetime(one["date"]) >= pd.Timestamp("2018-03-01")
    adj = pd.Series(np.where(dividend, 1.0, 0.97), index=one.index)  # a 3% dividend paid in March 2018
    frame = _yahoo_frame(one, adj).drop(columns="Ticker")
    frame.to_csv(tmp_path / "AC.csv", index=False)
    got = bars(tmp_path / "AC.csv").set_index("date")
    scale = np.where(dividend, 1 / 0.97, 1.0)
    for col in ("open", "high", "low", "close"):
        np.testing.assert_allclose(got[col].to_numpy(), one[col].to_numpy() * scale, rtol=1e-12)
    before = got.index < pd.Timestamp("2018-03-01")
    np.testing.assert_array_equal(got.loc[before, "close"].to_numpy(), one.loc[~dividend, "close"].to_numpy())


YAHOO = ["Date", "Open", "High", "Low", "Close", "Adj Close", "Volume"]


def _yahoo_download(clean: pd.DataFrame, code: str, adj: pd.Series | None) -> pd.DataFrame:
    """One stock as Yahoo's CSV download has it; without ``adj`` the Adj Close column is absent."""
    one = clean[clean["code"] == code].reset_index(drop=True)
    frame = _yahoo_frame(one, adj).drop(columns="Ticker")[YAHOO]
    return frame if adj is not None else frame.drop(columns="Adj Close")


def _dividend(clean: pd.DataFrame, code: str) -> tuple[pd.Series, np.ndarray]:
    """Adj Close / Close for a 3% dividend paid in March 2018, and the scale back-adjusting gives."""
    paid = pd.to_datetime(clean.loc[clean["code"] == code, "date"]).reset_index(drop=True) >= pd.Timestamp("2018-03-01")
    return pd.Series(np.where(paid, 1.0, 0.97)), np.where(paid, 1 / 0.97, 1.0)


def test_yahoo_folder_with_and_without_adj_close_loads_with_a_note_per_file(clean, expected, tmp_path, capsys):
    """A glob of Yahoo downloads: AC with Adj Close, SM without, and TEL saved through pandas
    (``reset_index().to_csv()``: an unnamed counter first) without it, under the name TSLA. The
    files without Adj Close load as exported, each noted once; AC is back-adjusted; the market is
    reported as mixed, naming both sides, and `data check` says so in its summary."""
    folder = tmp_path / "exports"
    folder.mkdir()
    adj, scale = _dividend(clean, "AC")
    _yahoo_download(clean, "AC", adj).to_csv(folder / "AC.csv", index=False)
    _yahoo_download(clean, "SM", None).to_csv(folder / "SM.csv", index=False)
    _yahoo_download(clean, "TEL", None).to_csv(folder / "TSLA.csv")
    assert (folder / "TSLA.csv").read_text().startswith(",Date,Open,High,Low,Close,Volume\n0,")
    assert (folder / "AC.csv").read_text().startswith(",".join(YAHOO))

    files = input_files(str(folder / "*.csv"))
    market = load_market(files, name="PSE")
    got = market.bars.set_index(["code", "date"])
    want = expected.drop(columns="amount").set_index(["code", "date"])
    pd.testing.assert_frame_equal(got.loc["SM"], want.loc["SM"])
    pd.testing.assert_frame_equal(got.loc["TSLA"], want.loc["TEL"])
    for col in ("open", "high", "low", "close"):
        np.testing.assert_allclose(got.loc["AC", col].to_numpy(), want.loc["AC", col].to_numpy() * scale, rtol=1e-12)

    notes = market.report.notes
    for name in ("SM.csv", "TSLA.csv"):
        assert sum(str(folder / name) in n and "no adjustment column" in n for n in notes) == 1
    assert not any(str(folder / "AC.csv") in n and "no adjustment column" in n for n in notes)
    (mixed,) = [n for n in notes if n.startswith("mixed price adjustment")]
    assert "from a factor: AC (1 file)" in mixed and "no factor: SM, TSLA (2 files)" in mixed
    assert market.report.mixed_adjustment
    assert market.report.unadjusted_files == (str(folder / "SM.csv"), str(folder / "TSLA.csv"))

    data_check(compose_job(["data=csv", f"data.path='{folder / '*.csv'}'"]).job)
    out = capsys.readouterr().out
    assert "3 stocks" in out and "0 stocks dropped" in out
    assert "prices as exported (no adjustment column) in 2 of 3 files; mixed price adjustment" in out

    # data.adjust=none: every file as exported by choice, nothing to note per file, nothing mixed.
    plain = load_market(files, name="PSE", adjust="none")
    assert not any("no adjustment column" in n or "mixed" in n for n in plain.report.notes)
    assert not plain.report.mixed_adjustment and plain.report.unadjusted_files == ()
    np.testing.assert_array_equal(plain.bars.loc[plain.bars["code"] == "AC", "close"], want.loc["AC", "close"])


def test_a_stock_with_and_without_a_factor_in_two_files_is_a_defect_named_by_file(clean, tmp_path):
    """AC's 2017-2018 in a file with adj_factor, its 2019 beside SM in a file without: no consistent
    adjustment of AC exists, so its rows of the file without are the defect (file and line), and
    data.on_defect=drop keeps SM, as exported."""
    ac_early = (clean["code"] == "AC") & (clean["date"] < "2019-01-01")
    later = clean[~ac_early & clean["code"].isin(["AC", "SM"])]
    clean[ac_early].assign(adj_factor=_dividend(clean, "AC")[0][: ac_early.sum()].to_numpy()).to_csv(
        tmp_path / "early.csv", index=False)
    later.to_csv(tmp_path / "later.csv", index=False)
    files = [tmp_path / "early.csv", tmp_path / "later.csv"]
    with pytest.raises(MarketDataError) as err:
        load_market(files, name="PSE")
    assert {d.reason for d in err.value.defects} == {NO_FACTOR_REASON}
    ac_late = later.index[later["code"] == "AC"]
    assert [d.row for d in err.value.defects] == [later.index.get_loc(i) + 2 for i in ac_late]
    assert {(d.file, d.code) for d in err.value.defects} == {(str(tmp_path / "later.csv"), "AC")}
    assert f"later.csv: {NO_FACTOR_REASON}: {len(ac_late)} rows" in str(err.value)
    kept = load_market(files, name="PSE", on_defect="drop")
    assert set(kept.bars["code"]) == {"SM"} and list(kept.report.dropped) == ["AC"]


def test_bad_adjustment_factor_is_a_defect(clean, tmp_path):
    raw, factor = _split(clean, "SM", "2018-06-01", 2.0)
    factor.iloc[5] = 0.0
    frame = raw.assign(adj_factor=factor)
    frame.to_csv(tmp_path / "f.csv", index=False)
    with pytest.raises(MarketDataError, match="non-positive adjustment factor"):
        bars(tmp_path / "f.csv")


def test_data_check_summarises_one_line_per_defect_kind(clean, tmp_path, capsys):
    """1,500 rows with the same defect read as one line with its count and first lines."""
    bad = clean.copy()
    many = bad.index[bad["code"] == "TEL"][:1500]
    bad.loc[many, "close"] = bad.loc[many, "high"] * 1.5
    bad.loc[bad.index[bad["code"] == "AC"][:2], "volume"] = -1
    path = tmp_path / "bad.csv"
    bad.to_csv(path, index=False)
    with pytest.raises(MarketDataError) as err:
        bars(path)
    lines = str(err.value).splitlines()[1:]
    assert len(lines) == 2 and len(err.value.defects) == len(many) + 2
    tel = next(line for line in lines if "close outside" in line)
    first_line = many[0] + 2
    assert f"{len(many)} rows" in tel and f"line {first_line}" in tel and "TEL" in tel and str(path) in tel
    # The job `candlebench data check` runs, in process: the unit tier starts no command.
    data_check(compose_job(["data=csv", f"data.path='{path}'", "data.on_defect=drop"]).job)
    out = capsys.readouterr().out
    assert f"close outside [low, high]: {len(many)} rows" in out and "negative volume: 2 rows" in out
