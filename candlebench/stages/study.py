"""A study folder holds one data set and one set of sample settings: the samples a run was scored
on are fingerprinted into its metrics.json, and a run made for other samples (another data file,
another interval) is never scored or reported as if it answered these."""

from __future__ import annotations

import json

import pandas as pd

from candlebench.core.errors import UserError
from candlebench.core.io import fingerprint
from candlebench.core.layout import RunPaths, TaskPaths
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo


class OtherSamples(UserError, ValueError):
    """A run whose answers are of none of the current samples."""


def samples_fingerprint(samples: pd.DataFrame, paths: TaskPaths) -> str:
    """Of the samples and their labels (not the input files render adds) and the market data
    they came from (samples_summary.json)."""
    columns = sorted(c for c in samples.columns if not c.startswith(("image_", "text_")))
    table = samples[columns].sort_values("sample_id").to_json(orient="split", index=False, date_format="iso")
    summary = json.loads(paths.summary.read_text()) if paths.summary.exists() else {}
    return fingerprint({"samples": table, "data": (summary.get("data") or {}).get("fingerprint")})


def scored_on_these(metrics: dict, now: str, n_samples: int) -> bool:
    """metrics.json was scored on the samples of fingerprint ``now``; one written before the
    fingerprint was recorded, on as many samples."""
    recorded = metrics.get("samples_fingerprint")
    return recorded == now if recorded else metrics.get("n_samples", n_samples) == n_samples


def check_answers_these(run: RunPaths, info: RunInfo, samples: pd.DataFrame, paths: TaskPaths) -> None:
    """Refuses a run with answers, none of them to a sample of ``samples``: it was made for another
    data file or other sample settings (its scores would be of no sample, as if unanswered)."""
    answered = RecordStore(run.root).answered(info.run_key)
    if answered and answered.isdisjoint(samples["sample_id"]):
        again = {"model": f"infer infer.run_name={run.name}", "baseline": f"baseline task.baseline.names=[{run.name}]",
                 "import": f"import FILE infer.run_name={run.name}"}[info.kind]
        raise OtherSamples(
            f"{run.root}: run {run.name} answered {len(answered)} samples, none of them in {paths.samples}: it was made "
            f"for other data or sample settings. Rebuild the samples it answered (`candlebench samples` with that "
            f"data.path and those task.samples settings; a data file's default out_dir is outputs/<file name>), "
            f"or answer these samples: `candlebench {again}` with this data"
        )
