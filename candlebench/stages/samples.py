"""Hydra jobs of the data stage: prepare / check market data, build samples."""

from __future__ import annotations

import json
from pathlib import Path

from candlebench.core.errors import UserError
from candlebench.core.io import write_json, write_parquet
from candlebench.core.schema import stamped
from candlebench.market.data_source import built_from, open_market, prepare
from candlebench.stages.job import JobConfig
from candlebench.stages.study import one_data_set
from candlebench.task_api.base import SAMPLE_KEYS, extent


def data_prepare(job: JobConfig) -> None:
    path = prepare(job.data)
    print(f"data={job.data.name}: market file ready at {path}")


def data_check(job: JobConfig) -> None:
    market = open_market(job.data)
    report = market.report.as_dict()
    print(json.dumps(report, indent=2))
    print(
        f"data={job.data.name}: {report['stocks']} stocks, {report['rows']} bars, "
        f"{len(market.calendar)} trading days {market.calendar[0]:%Y-%m-%d} .. {market.calendar[-1]:%Y-%m-%d}; "
        f"{len(report['dropped_stocks'])} stocks dropped"
        + (f"; prices as exported (no adjustment column) in {len(report['unadjusted_files'])} of "
           f"{len(report['files'])} files" if report["unadjusted_files"] else "")
        + ("; mixed price adjustment, see notes" if report["mixed_adjustment"] else "")
    )


def named_by_file(job: JobConfig) -> bool:
    """Whether out_dir is the folder the data's name gives (outputs/<study>, or an experiment's
    outputs/<experiment>-<study>), not one named on the command line."""
    out = job.layout.study_dir
    return out.parent == Path(job.paths.output_root) and (out.name == job.study or out.name.endswith(f"-{job.study}"))


def samples(job: JobConfig) -> None:
    task, settings = job.task, job.settings
    market = open_market(job.data) if task.uses_market(settings) else None
    built = task.build_samples(market, settings, job.context)
    paths = job.task_paths
    # Before anything is written: the folder a file's name gives by default holds one data set. An
    # out_dir named on the command line is the user's choice of folder (restated data rebuilt in place).
    if market is not None and named_by_file(job):
        content = market.fingerprint()
        one_data_set(job.layout, list(market.report.files), content, content[:8])
    if built.frame.empty:
        window = f"[{getattr(settings.samples, 'start', None)}, {getattr(settings.samples, 'end', None)})"
        runs = "" if market is None else f"; the data runs {market.calendar[0]:%Y-%m-%d} .. {market.calendar[-1]:%Y-%m-%d}"
        raise UserError(
            f"task {task.name}: no samples in the window task.samples.start/end = {window}{runs}"
            + (f"; dropped: {built.summary['dropped_samples']}" if built.summary.get("dropped_samples") else "")
        )
    missing = [k for k in SAMPLE_KEYS if k not in built.frame.columns]
    if missing:
        raise ValueError(f"task {task.name}: its samples lack the columns {missing} every stage needs")
    if built.frame["sample_id"].duplicated().any():
        dup = built.frame.loc[built.frame["sample_id"].duplicated(), "sample_id"].iloc[0]
        raise ValueError(f"task {task.name}: sample_id {dup} is not unique")
    table = write_parquet(built.frame, paths.samples)
    summary = built.summary if market is None else {**built.summary, "data": {
        **built.summary.get("data", {}), "fingerprint": market.fingerprint(),
        **built_from(market, job.data, built.frame["code"].unique() if "code" in built.frame else ())}}
    write_json(stamped("samples summary", summary), paths.summary)
    # One line on the console; the whole summary (drops by reason, regimes, groups) is in its file.
    dropped = sum((built.summary.get("dropped_samples") or {}).values())
    reach = ", ".join(filter(None, [extent(built.frame), f"{dropped:,} dropped" if dropped else ""]))
    print(f"{task.name}: {len(built.frame):,} samples -> {table} ({reach + '; ' if reach else ''}"
          f"summary in {paths.summary.name})")
