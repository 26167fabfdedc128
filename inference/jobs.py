"""``candlebench infer``: samples.parquet → prompts → backend → responses.jsonl → parsed.parquet."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from candlebench.io import write_json, write_parquet
from inference.backends.base import Backend, GenerationSpec
from inference.baselines import BASELINES
from inference.parse import ParsedScore, parse_score
from inference.models import ModelSpec, check_available, ensure_built
from inference.records import RecordStore, ResponseRecord
from inference.runner import Request, RunSettings, Shard, run_requests
from rendering.data_source import open_market
from rendering.model_input import ImagePolicy
from rendering.render_job import COLOR_CONVENTIONS


def _transformers(model: ModelSpec, generation: GenerationSpec, backend: DictConfig) -> Backend:
    from inference.backends.hf import TransformersBackend

    return TransformersBackend(model, generation, device_map=backend.get("device_map"))


def _vllm(model: ModelSpec, generation: GenerationSpec, backend: DictConfig) -> Backend:
    from inference.backends.vllm import VLLMBackend

    return VLLMBackend(model, generation, backend)


# name -> factory; imports are deferred so a CPU machine without vLLM can run the other backends.
BACKENDS: Mapping[str, Callable[[ModelSpec, GenerationSpec, DictConfig], Backend]] = {
    "transformers": _transformers,
    "vllm": _vllm,
}


def task_prompt(cfg: DictConfig) -> str:
    up, down = COLOR_CONVENTIONS[cfg.render.colors]
    return cfg.task.prompt.format(up=up.upper(), down=down.upper(), horizon=cfg.task.horizon)


def generation_spec(cfg: DictConfig) -> GenerationSpec:
    values = OmegaConf.to_container(cfg.infer.generation, resolve=True)
    return GenerationSpec(**values, regex=cfg.task.get("answer_regex") or cfg.model.get("answer_regex"))


def image_policy(cfg: DictConfig) -> ImagePolicy:
    return ImagePolicy(**OmegaConf.to_container(cfg.infer.image, resolve=True))


def run_identity(cfg: DictConfig, model: ModelSpec) -> dict:
    """Everything that changes an answer; batch size, shards and paths stay out on purpose."""
    return {
        "task": cfg.task.name,
        "model": model.identity(),
        "backend": cfg.backend.name,
        "prompt": task_prompt(cfg),
        "images": list(cfg.task.images),
        "image_policy": asdict(image_policy(cfg)),
        "generation": asdict(generation_spec(cfg)),
    }


def run_key(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def build_requests(samples: pd.DataFrame, out_dir: Path, images: list[str], prompt: str) -> list[Request]:
    missing = [f"image_{freq}" for freq in images if f"image_{freq}" not in samples]
    if missing:
        raise ValueError(f"{out_dir / 'samples.parquet'} has no {missing}: run `candlebench render` first")
    return [
        Request(row["sample_id"], prompt, tuple(out_dir / row[f"image_{freq}"] for freq in images))
        for _, row in samples.iterrows()
    ]


def parsed_table(samples: pd.DataFrame, records: list[ResponseRecord], key: str) -> pd.DataFrame:
    """Samples with their answer: ``pred`` is NaN where nothing parsed (the reason says why)."""
    rows = pd.DataFrame(
        [
            {
                "sample_id": r.sample_id,
                "pred": r.value,
                "pred_in_range": r.in_range,
                "tier": r.tier,
                "reason": r.reason,
                "error": r.error,
                "text": r.text,
            }
            for r in records
            if r.run_key == key
        ],
        columns=["sample_id", "pred", "pred_in_range", "tier", "reason", "error", "text"],
    )
    table = samples.merge(rows, on="sample_id", how="inner")
    return table.astype({"pred": "float64"}).sort_values("sample_id").reset_index(drop=True)


def run_dir_of(cfg: DictConfig) -> Path:
    return Path(cfg.out_dir) / "runs" / cfg.infer.run_name


def finalize_run(cfg: DictConfig) -> pd.DataFrame:
    """Merge every shard's records into responses.jsonl and write parsed.parquet for this run key."""
    samples = pd.read_parquet(Path(cfg.out_dir) / "samples.parquet")
    key = run_key(run_identity(cfg, ModelSpec.from_config(cfg.model)))
    store = RecordStore(run_dir_of(cfg))
    table = parsed_table(samples, store.merge(), key)
    write_parquet(table, store.run_dir / "parsed.parquet")
    return table


def infer(cfg: DictConfig) -> None:
    out_dir = Path(cfg.out_dir)
    samples = pd.read_parquet(out_dir / "samples.parquet")
    model = ModelSpec.from_config(cfg.model)
    identity = run_identity(cfg, model)
    key = run_key(identity)
    run_dir = run_dir_of(cfg)
    write_json(
        {
            "run_key": key,
            "model_name": model.name,
            "release_date": model.release_date,
            "random_weights": model.random_weights,
            **identity,
        },
        run_dir / "run.json",
    )

    requests = build_requests(samples, out_dir, list(cfg.task.images), task_prompt(cfg))
    settings = RunSettings(
        batch_size=int(cfg.infer.batch_size),
        prefetch_batches=int(cfg.infer.prefetch_batches),
        loader_threads=int(cfg.infer.loader_threads),
        max_error_rate=float(cfg.infer.max_error_rate),
        min_samples_for_error_rate=int(cfg.infer.min_samples_for_error_rate),
    )
    store = RecordStore(run_dir)
    if cfg.backend.name not in BACKENDS:
        raise ValueError(f"backend={cfg.backend.name}: unknown; choose from {sorted(BACKENDS)}")
    check_available(model)

    def make_backend() -> Backend:
        ensure_built(model)
        return BACKENDS[cfg.backend.name](model, generation_spec(cfg), cfg.backend)

    stats = run_requests(
        requests,
        store,
        key,
        model.name,
        cfg.backend.name,
        make_backend,
        image_policy(cfg),
        Shard(int(cfg.infer.shard.index), int(cfg.infer.shard.count)),
        settings,
        tuple(cfg.task.score_range),
    )
    table = finalize_run(cfg)
    print(
        f"{model.name} via {cfg.backend.name} (run key {key}): shard {cfg.infer.shard.index}/{cfg.infer.shard.count} "
        f"{stats.generated} generated, {stats.skipped} already done, {stats.errors} errors; "
        f"{len(table)} of {len(samples)} samples answered so far -> {run_dir}"
    )


def baseline_records(run_key_: str, name: str, sample_ids: list[str], predictions: pd.Series) -> list[ResponseRecord]:
    """Baseline predictions as answers in the task's format, through the same parser as a VLM's.

    A sample the baseline cannot predict (too little history, no training data yet) is a row with
    no value and a reason, never a zero.
    """
    records = []
    for sid in sample_ids:
        value = predictions.get(sid)
        if value is None or pd.isna(value):
            parsed = ParsedScore(None, "none", "no prediction: the baseline lacks history or training data", False)
            text = None
        else:
            text = f"<score>{value:.3f}</score>"
            parsed = parse_score(text)
        records.append(
            ResponseRecord(
                run_key=run_key_, sample_id=sid, model=name, backend="baseline", text=text, value=parsed.value,
                tier=parsed.tier, reason=parsed.reason, in_range=parsed.in_range, error=None,
                prompt_tokens=0, completion_tokens=0, token_ids=(), latency_s=0.0,
            )
        )
    return records


def baseline(cfg: DictConfig) -> None:
    """Non-VLM predictors with the VLM output contract, so they sit in the same tables."""
    out_dir = Path(cfg.out_dir)
    samples = pd.read_parquet(out_dir / "samples.parquet")
    market = open_market(cfg.data)
    horizon = int(cfg.task.horizon)
    for name in cfg.baseline.names:
        if name not in BASELINES:
            raise ValueError(f"baseline.names: unknown baseline {name!r}; known: {sorted(BASELINES)}")
        params = OmegaConf.to_container(cfg.baseline.params.get(name) or {}, resolve=True)
        identity = {"task": cfg.task.name, "baseline": name, "params": params, "horizon": horizon}
        key = run_key(identity)
        run_dir = out_dir / "runs" / name
        write_json({"run_key": key, "model_name": name, "release_date": None, "random_weights": False, **identity},
                   run_dir / "run.json")
        store = RecordStore(run_dir)
        todo = sorted(set(samples["sample_id"]) - store.done(key))
        if todo:
            predictions = BASELINES[name](samples, market, horizon, **params)
            with store.writer(name) as writer:
                writer.write(baseline_records(key, name, todo, predictions))
        table = parsed_table(samples, store.merge(), key)
        write_parquet(table, run_dir / "parsed.parquet")
        print(f"baseline {name}: {table['pred'].notna().sum()} of {len(samples)} samples predicted -> {run_dir}")
