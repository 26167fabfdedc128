"""``candlebench infer``: the task's samples → its prompts → a backend → records → parsed.parquet."""

from __future__ import annotations

import pandas as pd
from omegaconf import DictConfig

from candlebench.errors import UserError
from candlebench.io import fingerprint
from candlebench.layout import TaskPaths, run_paths, task_paths
from inference.backends import backend_factory
from inference.backends.base import Backend
from inference.models import ModelSpec, check_available, ensure_built
from inference.parsed import finalize_run
from inference.records import RecordStore
from inference.runner import Request, run_requests
from inference.settings import generation_spec, image_policy, model_run_info, model_spec, run_settings, shard
from rendering.inputs import TEXT_INPUT, read_samples, text_column
from rendering.render_job import settings_from
from tasks import get_task
from tasks.base import Task


class StaleInputs(UserError, FileNotFoundError):
    """The rendered inputs on disk do not belong to this config: answers would describe other charts."""


def rendered_inputs(cfg: DictConfig, task: Task, samples: pd.DataFrame, paths: TaskPaths) -> pd.DataFrame:
    """The render manifest (sample_id, freq -> sha256), checked against this config's settings."""
    inputs = task.inputs(cfg)
    needed = [f"image_{freq}" for freq in inputs.charts] + ([text_column()] if inputs.text else [])
    missing = [c for c in needed if c not in samples]
    if missing or not paths.manifest.exists():
        raise FileNotFoundError(f"{paths.samples} has no {missing or 'rendered inputs'}: "
                                f"run `candlebench render task={task.name}` first")
    manifest = pd.read_parquet(paths.manifest)
    settings = settings_from(cfg)
    expected = settings.key()
    drawn = set(manifest["settings"]) if "settings" in manifest else {"(unknown)"}
    if drawn != {expected}:
        raise StaleInputs(
            f"{paths.images}: the inputs there were drawn under other render settings ({sorted(drawn)}) than "
            f"this config's ({expected}: {settings.describe()}); run `candlebench render` with the same "
            "settings first, so the prompt and the charts agree"
        )
    return manifest


def build_requests(cfg: DictConfig, task: Task, samples: pd.DataFrame, paths: TaskPaths) -> list[Request]:
    """One request per sample, each with the fingerprint of the input files it sends."""
    manifest = rendered_inputs(cfg, task, samples, paths)
    sha = dict(zip(zip(manifest["sample_id"], manifest["freq"]), manifest["sha256"]))
    with_text = task.inputs(cfg).text
    requests = []
    for row in samples.to_dict("records"):
        texts = {text_column(): (paths.root / row[text_column()]).read_text(encoding="utf-8")} if with_text else {}
        spec = task.request(cfg, row, texts)
        used = [*spec.charts, *(TEXT_INPUT for _ in spec.texts)]
        inputs = fingerprint({name: sha[(row["sample_id"], name)] for name in used})
        requests.append(
            Request(row["sample_id"], spec.prompt, tuple(paths.root / row[f"image_{f}"] for f in spec.charts), inputs)
        )
    return requests


def current_inputs(requests: list[Request]) -> dict[str, str | None]:
    return {r.sample_id: r.inputs for r in requests}


def infer(cfg: DictConfig) -> None:
    task = get_task(cfg.task.name)
    paths = task_paths(cfg)
    samples = read_samples(paths)
    factory = backend_factory(cfg.backend.name)
    check_available(ModelSpec.from_config(cfg.model))
    model = model_spec(cfg)
    info = model_run_info(cfg, task, model)
    run = run_paths(cfg)
    info.write(run.info)
    requests = build_requests(cfg, task, samples, paths)

    def make_backend() -> Backend:
        ensure_built(model)
        return factory(model, generation_spec(cfg, task, model), cfg.backend, task.images_per_prompt(cfg))

    part = shard(cfg)
    try:
        stats = run_requests(
            requests, RecordStore(run.root), info.run_key, model.name, cfg.backend.name, make_backend,
            image_policy(cfg), part, run_settings(cfg), task.parser(cfg),
        )
    finally:  # stopped or not, responses.jsonl and parsed.parquet show what is on disk
        table = finalize_run(run, samples, task, current_inputs(requests))
    print(
        f"{model.name} via {cfg.backend.name} on {task.name} (run key {info.run_key}): shard {part.index}/{part.count} "
        f"{stats.generated} generated, {stats.skipped} already done, {stats.errors} errors; "
        f"{len(table)} of {len(samples)} samples answered so far -> {run.root}"
    )
