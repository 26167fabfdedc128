"""What of a job makes a model run: the model as its backend runs it, and the run's identity."""

from __future__ import annotations

from dataclasses import asdict

from candlebench.inference.backends import backend_kind, served_model
from candlebench.inference.models import ModelSpec
from candlebench.inference.run_info import RunInfo
from candlebench.stages.job import JobConfig


def model_spec(job: JobConfig) -> ModelSpec:
    """The model config as the chosen backend will run it (see ``served_model``)."""
    return served_model(job.backend.name, job.model)


def served_settings(model: ModelSpec) -> dict:
    """What of the model config a server backend sends with each request (the rest, the
    checkpoint, its adapter and dtype, is the server's: the run key takes it from the server)."""
    return {"processor_kwargs": model.processor_kwargs,
            **({"chat_template_kwargs": model.chat_template_kwargs} if model.chat_template_kwargs else {})}


def model_run_info(job: JobConfig, model: ModelSpec) -> RunInfo:
    """Everything that changes an answer; batch size, shards and paths stay out on purpose."""
    task, settings = job.task, job.settings
    generation = job.generation(model)
    kind = backend_kind(job.backend.name)
    identity = {
        "model": model.identity() if kind.served is None else served_settings(model),
        "backend": job.backend.name,
        "prompt": task.prompt_identity(settings, job.context),
        "inputs": asdict(task.inputs(settings)),
        "image_policy": asdict(job.infer.image),
        "generation": asdict(generation),
    }
    if kind.served is not None:  # the server's model, asked of it now (one line when it does not answer)
        identity["served"] = kind.served(job.backend, generation.regex)
    if job.infer.prompt_layout != "images_first":  # a protocol variant: the default keeps earlier run keys
        identity["prompt_layout"] = str(job.infer.prompt_layout)
    first_pass = task.first_pass_run(settings)
    if first_pass:  # a second pass: the report pairs it with its first pass (keys as in task:, part of the run key)
        identity |= {"method": str(settings.method), "revises": first_pass}
    return RunInfo(
        task=task.name, kind="model", model_name=model.name, identity=identity,
        release_date=model.release_date, random_weights=model.random_weights,
    )
