"""Hydra jobs of the data stage: prepare / check market data, build samples."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from candlebench.io import write_json, write_parquet
from rendering.data_source import open_market, prepare
from rendering.samples import SampleSpec, build_samples, summarize


def data_prepare(cfg: DictConfig) -> None:
    path = prepare(cfg.data)
    print(f"data={cfg.data.name}: market file ready at {path}")


def data_check(cfg: DictConfig) -> None:
    market = open_market(cfg.data)
    report = market.report.as_dict()
    print(json.dumps(report, indent=2))
    print(
        f"data={cfg.data.name}: {report['stocks']} stocks, {report['rows']} bars, "
        f"{len(market.calendar)} trading days {market.calendar[0]:%Y-%m-%d} .. {market.calendar[-1]:%Y-%m-%d}; "
        f"{len(report['dropped_stocks'])} stocks dropped"
    )


def sample_spec(cfg: DictConfig) -> SampleSpec:
    values = OmegaConf.to_container(cfg.samples, resolve=True)
    values["horizons"] = tuple(values["horizons"])
    for key in ("start", "end"):
        values[key] = None if values[key] is None else str(values[key])
    return SampleSpec(**values)


def samples(cfg: DictConfig) -> None:
    spec = sample_spec(cfg)
    market = open_market(cfg.data)
    built = build_samples(market, spec)
    out = Path(cfg.out_dir)
    table = write_parquet(built.frame, out / "samples.parquet")
    summary = summarize(built, market, spec)
    write_json(summary, out / "samples_summary.json")
    print(json.dumps({k: v for k, v in summary.items() if k != "data"}, indent=2))
    print(f"{summary['samples']} samples over {summary['cutoffs']} cutoffs -> {table}")
