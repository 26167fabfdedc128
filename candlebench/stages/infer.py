"""``candlebench infer``: the task's samples → its prompts → a backend → records (``score`` judges them)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pandas as pd

from candlebench.core.errors import UserError
from candlebench.core.io import write_parquet
from candlebench.core.layout import RunPaths
from candlebench.core.lock import WriterLock, one_writer, run_lock
from candlebench.stages.freshness import same_market
from candlebench.stages.job import JobConfig
from candlebench.stages.run_identity import (FIRST_PASS, first_pass_answers, input_fingerprint, input_shas,
                                             rendered_inputs)
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.stages.parsed import run_records
from candlebench.stages.study import of_kind
from candlebench.inference.backends import backend_kind, check_weights
from candlebench.inference.backends.server_http import ServerChanged
from candlebench.inference.backends.base import Backend, Media
from candlebench.inference.models import ensure_built
from candlebench.inference.records import RecordStore, is_answer
from candlebench.inference.run_info import RunInfo
from candlebench.inference.runner import Request, run_requests
from candlebench.rendering.inputs import TEXT_INPUT, read_samples, text_column
from candlebench.rendering.model_input import fit_size


def build_requests(job: JobConfig, samples: pd.DataFrame) -> tuple[list[Request], pd.DataFrame]:
    """One request per sample, each with the fingerprint of the input files it sends (and, in a
    second pass, of the first-pass answer it shows); and what run_identity's :func:`current_inputs` reads
    back of them: per sample the names of the inputs sent (run/inputs.parquet)."""
    task, paths = job.task, job.task_paths
    sha = input_shas(rendered_inputs(job, samples))
    with_text = task.inputs(job.settings).text
    first_pass = first_pass_answers(job, samples)
    requests, sent = [], []
    for row in samples.to_dict("records"):
        texts = {text_column(): (paths.root / row[text_column()]).read_text(encoding="utf-8")} if with_text else {}
        shown = first_pass.get(row["sample_id"])
        # A first pass calls the four-argument form: a task without second passes need not take `first_pass`.
        asked = (job.settings, job.context, row, texts)
        spec = task.request(*asked) if shown is None else task.request(*asked, shown)
        names = [*spec.charts, *(TEXT_INPUT for _ in spec.texts)]
        inputs = input_fingerprint({name: sha[(row["sample_id"], name)] for name in names}, shown)
        requests.append(
            Request(row["sample_id"], spec.prompt, tuple(paths.root / row[f"image_{f}"] for f in spec.charts), inputs,
                    spec.charts, tuple(sha[(row["sample_id"], f)] for f in spec.charts))
        )
        sent.append({"sample_id": row["sample_id"], "names": ",".join(names), FIRST_PASS: shown is not None,
                     "inputs": inputs})
    return requests, pd.DataFrame(sent, columns=["sample_id", "names", FIRST_PASS, "inputs"])


def media(job: JobConfig) -> Media:
    """What each prompt carries: the task's image count and, for drawn charts, their size after
    the image policy (``render.width`` x ``render.height`` through its pixel budget); images a
    dataset brings have no size known ahead."""
    size = None
    task, settings = job.task, job.settings
    if task.uses_market(settings) and task.images_per_prompt(settings):
        policy = job.infer.image
        size = fit_size((job.drawing.width, job.drawing.height), policy.max_pixels, policy.min_pixels)
    return Media(task.images_per_prompt(settings), size, job.infer.prompt_layout)


def same_server(before: RunInfo, now: RunInfo, where: Path) -> None:
    """A run answered by a server resumes only against the same served model: its answers would
    otherwise mix two models under one run name."""
    old, new = before.identity.get("served"), now.identity.get("served")
    if old is not None and new is not None and old != new:
        raise ServerChanged(
            f"{where}: its answers so far came from the server's model {old['model']} "
            f"({old['dialect']} dialect), the server now serves {new['model']} ({new['dialect']}); serve that model "
            "again to resume this run, or give this one a new infer.run_name"
        )


def writing(job: JobConfig) -> WriterLock:
    """One infer per run and shard at a time (shards of one count side by side; any other writer of the
    run refused): two would both generate every sample."""
    part = job.infer.shard
    return run_lock(job.task_paths, job.run_paths.name, (part.index, part.count))


@one_writer(writing)
def infer(job: JobConfig) -> None:
    task, settings, paths = job.task, job.settings, job.task_paths
    samples = read_samples(paths, task.sample_columns)
    if task.uses_market(settings):
        same_market(job.data, paths.summary, samples["code"].unique())
    kind = backend_kind(job.backend.name)
    check_weights(job.backend.name, job.model)
    model = model_spec(job)
    info = model_run_info(job, model)
    requests, sent = build_requests(job, samples)  # first: a missing input fails before the run exists
    run = job.run_paths
    fresh = not run.root.exists()
    before = of_kind(run, "model", "give this one another infer.run_name")
    if before is not None:
        same_server(before, info, run.root)
    info.write(run.info)
    write_parquet(sent, run.inputs)

    def make_backend() -> Backend:
        if kind.local_weights:
            ensure_built(model)
        backend = kind.factory(model, job.generation(model), job.backend, media(job))
        if backend.served != info.identity.get("served"):  # the server swapped models since the run key was made
            backend.close()
            raise ServerChanged(f"the server now serves {backend.served}, not {info.identity.get('served')}; "
                                "run the same command again")
        return backend

    part = job.infer.shard
    refused = False
    try:
        stats = run_requests(
            requests, RecordStore(run.root), info.run_key, model.name, job.backend.name, make_backend,
            job.infer.image, part, job.infer.run_settings(job.batch_size()),
        )
    except UserError:
        refused = fresh and next(RecordStore(run.root).records(), None) is None
        if refused:  # the backend refused before a first answer (e.g. a thinking budget): no empty run left behind
            shutil.rmtree(run.root)
        raise
    # Counted from the records for the inputs sent now; `score` alone judges them into parsed.parquet.
    # A sample whose every attempt failed has a record (its error) but no answer: counted apart, as
    # score and status count it.
    progress = infer_progress(run, set(samples["sample_id"]), dict(zip(sent["sample_id"], sent["inputs"])))
    failed = len(progress.failed)
    print(
        f"{model.name} via {job.backend.name} on {task.name} (run key {info.run_key}): shard {part.index}/{part.count} "
        f"{stats.generated} generated, {stats.skipped} already done, {stats.errors} errors; "
        f"{len(progress.answered)} of {len(samples)} samples answered so far"
        + (f" ({failed} failed: asked again by the next infer)" if failed else "") + f" -> {run.root}"
    )


@dataclass(frozen=True)
class InferProgress:
    answered: frozenset[str]  # samples with an answer under the run's own key
    failed: frozenset[str]  # samples whose every attempt failed (retried on the next infer)
    no_answer: frozenset[str]  # samples recorded without an answer (a baseline's no-prediction, an empty import)


def infer_progress(run: RunPaths, ids: set[str], inputs: Mapping[str, str | None] | None = None) -> InferProgress:
    """Which of ``ids`` the run in this folder has answered under its run.json's key (``inputs``
    given: for those input files), whatever config it ran under (`candlebench status` reads a
    folder); freshness's :func:`answers_are_complete` asks whether the run is complete under a
    config, for the inputs the samples have now."""
    records = run_records(run, ids, inputs)
    answered = frozenset(r.sample_id for r in records if is_answer(r))
    return InferProgress(answered, frozenset(r.sample_id for r in records if r.error is not None) - answered,
                         frozenset(r.sample_id for r in records if r.error is None and r.text is None) - answered)
