"""``candlebench baseline``: the task's non-VLM predictors, written as answers in the task's format
(records), judged by the task's own parser when scored, so they sit in the same tables as the models."""

from __future__ import annotations

from collections import Counter

from candlebench.core.lock import run_lock
from candlebench.market.data_source import open_market
from candlebench.stages.freshness import same_market
from candlebench.stages.job import JobConfig
from candlebench.stages.run_identity import samples_fingerprint, task_settings
from candlebench.stages.parsed import run_records
from candlebench.stages.study import of_kind
from candlebench.inference.records import RecordStore, ResponseRecord, is_answer
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import read_samples
from candlebench.task_api.base import NoAnswer

NO_ANSWER = "no prediction"


def baseline(job: JobConfig) -> None:
    task, settings = job.task, job.settings
    names = list(settings.baseline.names)  # each a baseline of the task (Task.settings checks)
    if not names:
        return
    paths = job.task_paths
    samples = read_samples(paths, task.sample_columns)
    market = same_market(job.data, paths.summary, samples["code"].unique(), open_market(job.data)) if task.uses_market(settings) else None
    task_config = task_settings(job)
    # The market and the samples are inputs too: walk-forward models train on both.
    inputs = {"data": None if market is None else market.fingerprint(), "samples": samples_fingerprint(samples, paths)}
    for name in names:
        given = job.task_block["baseline"]["params"].get(name)
        params = {} if given is None else given
        info = RunInfo(task=task.name, kind="baseline", model_name=name,
                       identity={"baseline": name, "params": params, "task_config": task_config, **inputs})
        run = paths.run(name)
        with run_lock(paths, name, instead="run the baselines again once it ends").hold():
            of_kind(run, "baseline", f"rename that run's folder, or leave {name} out of task.baseline.names")
            info.write(run.info)
            store = RecordStore(run.root)
            todo = sorted(set(samples["sample_id"]) - store.finished(info.run_key))
            if todo:
                answers = task.baselines[name](samples, market, settings, **params)
                with store.writer(name) as writer:
                    writer.write(_record(info.run_key, name, sid, answers.get(sid)) for sid in todo)
        records = run_records(run, set(samples["sample_id"]))  # `score` judges them
        answered = sum(map(is_answer, records))
        # Said where the run is made, not only in the report: the fix (history, min_train) is a config change.
        why = Counter(r.reason or NO_ANSWER for r in records if not is_answer(r))
        unanswered = "".join(f"; {n} {reason}" for reason, n in why.most_common())
        print(f"baseline {name}: {answered} of {len(samples)} samples answered{unanswered} -> {run.root}")


def _record(key: str, name: str, sample_id: str, text: str | NoAnswer | None) -> ResponseRecord:
    """A sample the baseline cannot predict is a row with no text and the baseline's reason, never a zero."""
    if text is None or isinstance(text, NoAnswer):
        reason = NO_ANSWER if text is None else f"{NO_ANSWER}: {text.reason}"
        return ResponseRecord(run_key=key, sample_id=sample_id, model=name, backend="baseline", text=None,
                              reason=reason, error=None)
    return ResponseRecord.answered(key, sample_id, name, "baseline", text)
