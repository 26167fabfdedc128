"""A run's identity: what its answers are answers to. The fingerprints a run key and a score are
made of (the samples', :func:`samples_fingerprint`; each request's inputs, :func:`input_fingerprint`,
:func:`current_inputs`; the task settings a baseline's answers depend on, :func:`task_settings`),
the inputs a request sends (:func:`rendered_inputs`, checked against this config's render settings)
and the first-pass answers a second pass shows (:func:`first_pass_answers`, judged from the first
pass's records). :mod:`candlebench.stages.freshness` compares them; infer builds its requests from
them; score matches records to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from candlebench.core.errors import CorruptFile, UserError
from candlebench.core.io import fingerprint
from candlebench.core.layout import RunPaths, TaskPaths
from candlebench.stages.job import JobConfig
from candlebench.stages.parsed import current_records, judged
from candlebench.inference.records import RecordStore
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import text_column
from candlebench.rendering.render import MANIFEST_COLUMNS, RenderSettings
from candlebench.task_api.base import FirstPassAnswer


def samples_fingerprint(samples: pd.DataFrame, paths: TaskPaths) -> str:
    """Of the samples and their labels (not the input files render adds), in any row order, and the
    market data they came from (samples_summary.json): what a score and a baseline's answers are of."""
    columns = sorted(c for c in samples.columns if not c.startswith(("image_", "text_")))
    table = samples[columns].sort_values("sample_id").to_json(orient="split", index=False, date_format="iso")
    summary = json.loads(paths.summary.read_text()) if paths.summary.exists() else {}
    return fingerprint({"samples": table, "data": (summary.get("data") or {}).get("fingerprint")})


class StaleInputs(UserError, FileNotFoundError):
    """The rendered inputs on disk do not belong to this config: answers would describe other charts."""


def other_render_settings(manifest: pd.DataFrame, settings: RenderSettings) -> str | None:
    """None when the render manifest's inputs were drawn under ``settings``; else which settings
    they were drawn under (a manifest from before settings were recorded: unknown ones)."""
    expected = settings.key()
    drawn = set(manifest["settings"]) if "settings" in manifest else {"(unknown)"}
    if drawn == {expected}:
        return None
    return f"drawn under other render settings ({sorted(drawn)}) than this config's ({expected}: {settings.describe()})"


def rendered_inputs(job: JobConfig, samples: pd.DataFrame) -> pd.DataFrame:
    """The render manifest (sample_id, freq -> sha256), checked against this config's settings."""
    if job.draws_nothing:  # a task whose prompts carry all it asks about: nothing was drawn, nothing to check
        return pd.DataFrame(columns=MANIFEST_COLUMNS)
    task, paths = job.task, job.task_paths
    inputs = task.inputs(job.settings)
    needed = [f"image_{freq}" for freq in inputs.charts] + ([text_column()] if inputs.text else [])
    missing = [c for c in needed if c not in samples]
    if missing or not paths.manifest.exists():
        raise FileNotFoundError(f"{paths.samples} has no {missing or 'rendered inputs'}: "
                                f"run `candlebench render task={task.name}` first")
    rerender = f"run `candlebench render task={task.name}` again"
    try:
        manifest = pd.read_parquet(paths.manifest)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise CorruptFile(f"{paths.manifest}: unreadable ({type(err).__name__}); {rerender}") from None
    lacking = sorted({"sample_id", "freq", "sha256"} - set(manifest.columns))
    if lacking:
        raise CorruptFile(f"{paths.manifest}: no column {lacking}, not a render manifest of this candlebench; {rerender}")
    other = other_render_settings(manifest, job.context.render)
    if other is not None:
        raise StaleInputs(f"{paths.images}: the inputs there were {other}; run `candlebench render` with the "
                          "same settings first, so the prompt and the charts agree")
    return manifest


# ---- each request's inputs ----

# The name under which a second pass's first-pass answer enters a sample's input fingerprint, and
# the column of run/inputs.parquet saying whether one was shown. Its value is the word the code used
# before ("earlier"): it is stored and hashed, so another would make every second pass's answers stale.
FIRST_PASS = "earlier"


def input_fingerprint(shas: Mapping[str, str], first_pass: FirstPassAnswer | None) -> str:
    """A request's inputs: the render manifest's sha256 of each file it sends, and the text of the
    first-pass answer a second pass shows (a redone first pass makes the second one's answers stale)."""
    return fingerprint(shas if first_pass is None else {**shas, FIRST_PASS: first_pass.text})


def input_shas(manifest: pd.DataFrame) -> dict[tuple[str, str], str]:
    return dict(zip(zip(manifest["sample_id"], manifest["freq"]), manifest["sha256"]))


def current_inputs(job: JobConfig, samples: pd.DataFrame, run: RunPaths) -> dict[str, str] | None:
    """Each sample's input fingerprint as its request would send it now: the inputs infer sent, by
    name (run/inputs.parquet), under the render manifest's sha256s and the first-pass run's answers of
    now, so answers about charts redrawn since (or a redone first pass) are not current. No prompt is
    built and no text input read. None: infer has not written the run's inputs."""
    if not run.inputs.exists():
        return None
    try:
        sent = pd.read_parquet(run.inputs, columns=["sample_id", "names", FIRST_PASS])
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise CorruptFile(f"{run.inputs}: unreadable ({type(err).__name__}); run `candlebench infer "
                          f"infer.run_name={run.name}` again, which writes it (and answers only what is missing)") from None
    sha = input_shas(rendered_inputs(job, samples))
    first_pass = first_pass_answers(job, samples) if sent[FIRST_PASS].any() else {}
    wanted = set(samples["sample_id"])
    return {
        row["sample_id"]: input_fingerprint({name: sha[(row["sample_id"], name)] for name in filter(None, row["names"].split(","))},
                                            first_pass.get(row["sample_id"]) if row[FIRST_PASS] else None)
        for row in sent.to_dict("records") if row["sample_id"] in wanted
    }


# ---- second passes ----

class FirstPassMissing(UserError, FileNotFoundError):
    """A second pass names a first-pass run that is absent, unfinished or stale."""


def answered_under(settings: Any, info: RunInfo) -> Any:
    """``settings`` as the run of ``info`` was asked under: its pass (task.method, task.revises)
    from its run.json, a first pass where it names none."""
    which_pass = {k: info.identity[k] for k in ("method", "revises") if k in info.identity}
    return replace(settings, **(which_pass or {"method": "direct", "revises": None}))


def first_pass_answers(job: JobConfig, samples: pd.DataFrame) -> dict[str, FirstPassAnswer]:
    """Every sample's answer in the first-pass run a second pass shows it (none for a first pass),
    judged here by the task's judge from that run's records under its run.json's key, for the
    inputs its samples have now. Read, never written: that run's parsed.parquet is `score`'s, and
    may be of older records."""
    task, settings, paths = job.task, job.settings, job.task_paths
    name = task.first_pass_run(settings)
    if name is None:
        return {}
    run = paths.run(name)
    first = f"finish the first pass first (`candlebench infer task={paths.task}` with the model that wrote {name})"
    if not run.info.exists():
        raise FirstPassMissing(f"task.method={settings.method} is a second pass over run {name} (task.revises), "
                               f"which {run.root} does not hold; {first}")
    info = RunInfo.read(run.info)
    if info.identity.get("revises"):  # its inputs hold its own first pass's answers: no chains of passes
        raise FirstPassMissing(f"{run.root} is itself a second pass (over {info.identity['revises']}); "
                               "task.revises names a first pass")
    inputs = current_inputs(job, samples, run) if info.kind == "model" else None
    ids = set(samples["sample_id"])
    records = [r for r in current_records(RecordStore(run.root).merged(), info.run_key, inputs) if r.sample_id in ids]
    missing = sorted(ids - {r.sample_id for r in records})
    if missing:
        raise FirstPassMissing(f"run {name} has no answer under its run key {info.run_key} for the inputs of now for "
                               f"{len(missing)} of {len(samples)} samples (first: {missing[:3]}); {first}")
    verdicts = judged(records, task.judge(answered_under(settings, info)))
    return {
        r.sample_id: FirstPassAnswer(name, r.text, None if answer is None else json.loads(answer), r.error or reason)
        for r, (answer, _, reason) in zip(records, verdicts)
    }


# ---- baselines ----

# Keys of the task's config that say nothing of a baseline's answers: which pass a run is, the
# chart design (baselines read bars, not charts), and the baselines' own list (its params are kept apart).
NOT_ITS_SETTINGS = ("method", "revises", "passes", "render", "baseline")


def task_settings(job: JobConfig) -> dict:
    """The task settings a baseline's answers depend on: part of its run key, checked by score."""
    return {k: v for k, v in job.task_block.items() if k not in NOT_ITS_SETTINGS}
