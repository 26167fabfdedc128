"""What the infer stage reads from the config, as the typed values the runner and backends take."""

from __future__ import annotations

from dataclasses import asdict

from omegaconf import DictConfig, OmegaConf

from candlebench.inference.backends import backend_kind, served_model
from candlebench.inference.backends.base import GenerationSpec
from candlebench.inference.models import ModelSpec
from candlebench.inference.run_info import RunInfo
from candlebench.inference.runner import RunSettings, Shard, default_gil_switch_ms
from candlebench.rendering.model_input import ImagePolicy
from candlebench.stages.task_setup import task_setup
from candlebench.task_api.base import Task


def generation_spec(cfg: DictConfig, task: Task, model: ModelSpec) -> GenerationSpec:
    values = OmegaConf.to_container(cfg.infer.generation, resolve=True)
    return GenerationSpec(**values, regex=task.answer_constraint(task.settings(cfg.task), model.constrain_answers))


def image_policy(cfg: DictConfig) -> ImagePolicy:
    return ImagePolicy(**OmegaConf.to_container(cfg.infer.image, resolve=True))


def batch_size(cfg: DictConfig) -> int:
    """infer.batch_size, or when null the model's GPU batch on a GPU and 8 on CPU: a GPU left at 8
    idles between Python steps; a CPU gains nothing from larger batches."""
    if cfg.infer.batch_size is not None:
        return int(cfg.infer.batch_size)
    import torch

    return int(cfg.model.get("gpu_batch_size") or 8) if torch.cuda.is_available() else 8


def gil_switch_ms(cfg: DictConfig) -> float | None:
    """infer.gil_switch_ms, or when null the runner's default (0.5 ms on a GPU, Python's elsewhere)."""
    i = cfg.infer
    return default_gil_switch_ms() if i.get("gil_switch_ms") is None else float(i.gil_switch_ms)


def run_settings(cfg: DictConfig) -> RunSettings:
    i = cfg.infer
    return RunSettings(
        batch_size=batch_size(cfg),
        prefetch_batches=int(i.prefetch_batches),
        loader_threads=int(i.loader_threads),
        gil_switch_ms=gil_switch_ms(cfg),
        max_error_rate=float(i.max_error_rate),
        min_samples_for_error_rate=int(i.min_samples_for_error_rate),
    )


def shard(cfg: DictConfig) -> Shard:
    return Shard(int(cfg.infer.shard.index), int(cfg.infer.shard.count))


def model_spec(cfg: DictConfig) -> ModelSpec:
    """The model config as the chosen backend will run it (see ``served_model``)."""
    return served_model(cfg.backend.name, ModelSpec.from_config(cfg.model))


def served_settings(model: ModelSpec) -> dict:
    """What of the model config a server backend sends with each request (the rest, the
    checkpoint, its adapter and dtype, is the server's: the run key takes it from the server)."""
    return {"processor_kwargs": model.processor_kwargs,
            **({"chat_template_kwargs": model.chat_template_kwargs} if model.chat_template_kwargs else {})}


def model_run_info(cfg: DictConfig, task: Task, model: ModelSpec) -> RunInfo:
    """Everything that changes an answer; batch size, shards and paths stay out on purpose."""
    generation = generation_spec(cfg, task, model)
    setup = task_setup(cfg)
    kind = backend_kind(str(cfg.backend.name))
    identity = {
        "model": model.identity() if kind.served is None else served_settings(model),
        "backend": cfg.backend.name,
        "prompt": task.prompt_identity(setup.settings, setup.context),
        "inputs": asdict(task.inputs(setup.settings)),
        "image_policy": asdict(image_policy(cfg)),
        "generation": asdict(generation),
    }
    if kind.served is not None:  # the server's model, asked of it now (one line when it does not answer)
        identity["served"] = kind.served(cfg.backend, generation.regex)
    if cfg.infer.prompt_layout != "images_first":  # a protocol variant: the default keeps earlier run keys
        identity["prompt_layout"] = str(cfg.infer.prompt_layout)
    first_pass = task.first_pass_run(setup.settings)
    if first_pass:  # a second pass: the report pairs it with its first pass (keys as in task:, part of the run key)
        identity |= {"method": str(setup.settings.method), "revises": first_pass}
    return RunInfo(
        task=task.name, kind="model", model_name=model.name, identity=identity,
        release_date=model.release_date, random_weights=model.random_weights,
    )
