"""Turn a ``data`` config into a validated :class:`~candlebench.market.market.Market`."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from omegaconf import DictConfig, OmegaConf


from candlebench.market.demo import prepare_demo
from candlebench.market.market import Market, MarketDataError, load_market

_TABLE_SUFFIXES = {".csv", ".parquet", ".pq", ".txt"}

# Sources that can create the market file when it is missing: kind -> (target, source cfg) -> path.
PREPARERS: Mapping[str, Callable[[Path, DictConfig], Path]] = {
    "fastquant": lambda target, src: prepare_demo(target, Path(src.wheel) if src.wheel else None),
}


def prepare(data: DictConfig) -> Path:
    """Create the market file of a prepared source (e.g. the demo market) unless it exists."""
    target = Path(data.path)
    if data.get("source") is None:
        if not target.exists():
            raise MarketDataError(f"data={data.name}: {target} does not exist and has no source to prepare it from")
        return target
    kind = data.source.kind
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


def open_market(data: DictConfig) -> Market:
    if data.get("source") is not None:
        prepare(data)
    return load_market(
        input_files(str(data.path)),
        name=str(data.market),
        layout=data.layout,
        on_defect=data.on_defect,
        code=data.get("code"),
        codes=list(data.codes) if data.get("codes") is not None else None,
        weekdays=tuple(int(d) for d in data.get("weekdays", (0, 1, 2, 3, 4))),
        date_format=data.get("date_format"),
        adjust=str(data.get("adjust", "auto")),
    )


# The data settings that change the bars a file gives (data.codes only selects stocks: not one).
_READING = ("market", "layout", "on_defect", "code", "weekdays", "date_format", "adjust")


def source_stamp(data: DictConfig) -> dict[str, Any]:
    """What the bars of ``data`` come from, cheap to take: each input file's size and modification
    time and the settings that read them. An equal stamp means equal bars without loading them."""
    if data.get("source") is not None:
        prepare(data)
    settings = {k: OmegaConf.to_container(data[k]) if OmegaConf.is_config(data.get(k)) else data.get(k) for k in _READING}
    files = {str(p.resolve()): [p.stat().st_size, p.stat().st_mtime_ns] for p in input_files(str(data.path))}
    return {"files": files, "settings": json.loads(json.dumps(settings, default=str))}


def built_from(market: Market, data: DictConfig, codes: Iterable[str]) -> dict[str, Any]:
    """What the samples stage records of its market, for freshness's :func:`market_is_unchanged` to check later stages against."""
    return {"stocks_fingerprint": market.stocks_fingerprint(codes), "stamp": source_stamp(data)}
