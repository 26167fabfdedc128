"""A study folder holds one data set and one set of sample settings: a run made for other samples
(another data file, another interval) is never scored or reported as if it answered these (the
samples a run was scored on are fingerprinted into its metrics.json: freshness's :func:`scored_on`)."""

from __future__ import annotations

import pandas as pd

from candlebench.core.errors import UserError
from candlebench.core.layout import RunPaths, TaskPaths
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo


class OtherSamples(UserError, ValueError):
    """A run whose answers are of none of the current samples."""


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
