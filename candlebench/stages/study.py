"""A study folder holds one data set and one set of sample settings: a run made for other samples
(another data file, another interval) is never scored or reported as if it answered these (the
samples a run was scored on are fingerprinted into its metrics.json: freshness's :func:`scored_on_these_samples`).

A study is its data's content, not its file's name: ``data2/JFC.csv`` gets the default out_dir of
``data/JFC.csv`` (outputs/JFC), so the samples stage refuses to build into that default folder
samples of other bars from another file (:func:`one_data_set`), naming both; the report shows the
tasks of one data set (:func:`data_of`)."""

from __future__ import annotations

import pandas as pd

from candlebench.core.errors import UserError
from candlebench.core.layout import StudyLayout, RunPaths, TaskPaths
from candlebench.core.schema import read_versioned
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo
from candlebench.task_api.registry import names as task_names


class OtherDataSet(UserError, ValueError):
    """Samples about to be built into a study folder of another data set."""


def data_of(paths: TaskPaths) -> dict:
    """What the task's samples were built from (samples_summary.json's data: files, fingerprint,
    notes); empty for a task that reads no market, or samples from before it was recorded."""
    return (read_versioned("samples summary", paths.summary) if paths.summary.exists() else {}).get("data") or {}


def report_tasks(asked: list[str], present: set[str]) -> list[str]:
    """Every task of the study, the command's own first: ``run 'tasks=[e2a]'`` after a three-task
    run rewrites the E2A section and keeps the other two (the report is the study's, not the last
    command's); the rest in the registry's order."""
    rest = [t for t in task_names() if t in present] + sorted(present - set(task_names()))
    return [*asked, *(t for t in rest if t not in asked)]


def other_data(layout: StudyLayout, tasks: list[str]) -> tuple[dict, dict[str, dict]]:
    """The data the first of ``tasks`` with market data was built from, and the data of each task
    built from other bars ({} where all agree): the study is the first's (the report's order), the
    others are left out of its report."""
    built = {t: data_of(layout.task(t)) for t in tasks}
    ours = next((b for b in built.values() if b.get("fingerprint")), {})
    return ours, {t: b for t, b in built.items() if b.get("fingerprint") not in (None, ours.get("fingerprint"))}


def one_data_set(layout: StudyLayout, files: list[str], content: str, short: str) -> None:
    """Refuses building samples from ``files`` (bars of fingerprint ``content``) into
    ``layout``'s folder where a task's samples came from other bars of other files (a file of the
    same name elsewhere). The same files with other bars (a day appended, other data.codes) rebuild
    the task's samples: its runs of the old ones are then "not shown", and the report shows the
    tasks of one data set (:func:`data_of`)."""
    for name in layout.tasks_present():
        built = data_of(layout.task(name))
        if not built.get("fingerprint") or built["fingerprint"] == content or set(built.get("files") or ()) == set(files):
            continue
        raise OtherDataSet(
            f"{layout.study_dir} is the study of {', '.join(built.get('files') or ['other data'])} ({name}'s samples), "
            f"whose bars differ from those of {', '.join(files)}: give this data its own folder "
            f"(out_dir={layout.study_dir}-{short}), or rebuild that study's every task with it in a fresh out_dir")


class OtherKind(UserError, ValueError):
    """A stage about to write its runs' answers over a run of another kind (an infer over an import)."""


def of_kind(run: RunPaths, kind: str, instead: str) -> RunInfo | None:
    """The run.json already in ``run``'s folder (None: a new run), refused when it is a run of
    another kind than ``kind``: its answers would be replaced, or mixed with this stage's, silently."""
    if not run.info.exists():
        return None
    before = RunInfo.read(run.info)
    if before.kind != kind:
        raise OtherKind(f"{run.root} holds the {before.kind} run of {before.model_name}: writing a {kind} run's "
                        f"answers there would replace its own; {instead}")
    return before


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
