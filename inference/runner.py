"""The inference loop: shard, skip what is done, prefetch images, generate, parse, flush.

Guarantees (each has a test): records do not depend on batch size or shard count; every batch is
on disk (fsynced) before the next one starts; a re-run with any shard count or batch size does
only what is missing or failed, or whose input files changed; a failing sample is recorded with
its error instead of killing the run, which stops only when errors pass ``max_error_rate`` of the
shard's samples seen so far (earlier attempts' answers included).
"""

from __future__ import annotations

import gc
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from tqdm import tqdm

from candlebench.split import in_part
from inference.backends.base import Backend, Generation, PreparedRequest
from inference.records import RecordStore, ResponseRecord
from rendering.model_input import ImagePolicy
from tasks.base import Parsed


class RunAborted(RuntimeError):
    pass


@dataclass(frozen=True)
class Request:
    sample_id: str
    prompt: str
    image_paths: tuple[Path, ...]
    inputs: str | None = None  # fingerprint of the input files (render manifest sha256s)
    charts: tuple[str, ...] = ()  # the time frames of image_paths, recorded with the answer


@dataclass(frozen=True)
class Shard:
    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard.index={self.index} must lie in [0, shard.count={self.count})")

    def owns(self, sample_id: str) -> bool:
        return in_part(sample_id, self.index, self.count)


@dataclass(frozen=True)
class RunSettings:
    batch_size: int = 8
    prefetch_batches: int = 2
    loader_threads: int = 4
    max_error_rate: float = 0.05
    # The error rate is judged only after this many samples, so one early failure is no verdict.
    min_samples_for_error_rate: int = 20


@dataclass(frozen=True)
class RunStats:
    total: int  # samples of this shard
    skipped: int  # already recorded
    generated: int
    errors: int


def _prepare(request: Request, policy: ImagePolicy) -> PreparedRequest | Exception:
    try:
        images = tuple(policy.apply(path) for path in request.image_paths)
    except Exception as err:  # a missing or corrupt chart fails its sample, not the run
        return err
    return PreparedRequest(request.sample_id, request.prompt, images)


def _is_out_of_memory(err: Exception) -> bool:
    return "out of memory" in str(err).lower() or type(err).__name__ == "OutOfMemoryError"


def generate_isolating_failures(backend: Backend, batch: list[PreparedRequest]) -> list[Generation | Exception]:
    """Generate a batch; on failure split it in halves until the failing samples stand alone.

    Out-of-memory on a large batch thus becomes smaller batches, and one poisonous sample costs
    only its own record. Valid because outputs do not depend on the batch they ran in.
    """
    try:
        return list(backend.generate(batch))
    except Exception as err:
        if _is_out_of_memory(err):
            gc.collect()
            _empty_device_cache()
        if len(batch) == 1:
            return [err]
        half = len(batch) // 2
        return generate_isolating_failures(backend, batch[:half]) + generate_isolating_failures(backend, batch[half:])


def _empty_device_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _batches(items: Sequence[Request], size: int) -> Iterator[list[Request]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def run_requests(
    requests: Sequence[Request],
    store: RecordStore,
    run_key: str,
    model: str,
    backend_name: str,
    make_backend: Callable[[], Backend],
    policy: ImagePolicy,
    shard: Shard,
    settings: RunSettings,
    parse: Callable[[str | None], Parsed],
) -> RunStats:
    mine = sorted((r for r in requests if shard.owns(r.sample_id)), key=lambda r: r.sample_id)
    done = store.done(run_key)
    # Failed samples are not done: each resume retries them (the cause may be fixed by now).
    todo = [r for r in mine if (r.sample_id, r.inputs) not in done]
    if not todo:
        return RunStats(total=len(mine), skipped=len(mine), generated=0, errors=0)

    backend = make_backend()  # only now: a finished shard never loads a model
    device = device_name()
    processed = errors = 0
    # The error rate is over the whole run (this shard): answers kept from earlier attempts count.
    answered_before = len(mine) - len(todo)
    try:
        with (
            store.writer(f"shard{shard.index}of{shard.count}") as writer,
            ThreadPoolExecutor(settings.loader_threads) as loader,
            tqdm(total=len(todo), unit="sample", desc=f"{model} shard {shard.index}/{shard.count}") as bar,
        ):
            batches = _batches(todo, settings.batch_size)
            pending: deque[tuple[list[Request], list[Future]]] = deque()

            def submit_next() -> None:
                batch = next(batches, None)
                if batch is not None:
                    pending.append((batch, [loader.submit(_prepare, r, policy) for r in batch]))

            for _ in range(settings.prefetch_batches + 1):
                submit_next()
            while pending:
                batch, futures = pending.popleft()
                submit_next()  # decode the next batch's charts while this one generates
                prepared = [f.result() for f in futures]
                ready = [p for p in prepared if isinstance(p, PreparedRequest)]
                started = time.perf_counter()
                outputs = iter(generate_isolating_failures(backend, ready) if ready else [])
                per_sample = (time.perf_counter() - started) / len(batch)
                records = [
                    _record(
                        run_key, request, model, backend_name,
                        next(outputs) if isinstance(prep, PreparedRequest) else prep, parse,
                        latency_s=per_sample, inputs=request.inputs, prompt=request.prompt,
                        charts=request.charts, device=device,
                    )
                    for request, prep in zip(batch, prepared)
                ]
                writer.write(records)
                processed += len(records)
                errors += sum(r.error is not None for r in records)
                bar.update(len(records))
                seen = answered_before + processed
                if seen >= settings.min_samples_for_error_rate and errors / seen > settings.max_error_rate:
                    raise RunAborted(
                        f"{errors} of {seen} samples failed (> max_error_rate={settings.max_error_rate}); "
                        f"their errors are in {writer.path}; fix the cause and re-run: failed samples are retried"
                    )
    finally:
        backend.close()
    return RunStats(total=len(mine), skipped=len(mine) - len(todo), generated=processed, errors=errors)


def device_name() -> str:
    """The accelerator this process generates on, for the record (not the run key): a run's
    answers do not depend on it, but its speed does."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def _record(
    run_key: str,
    request: Request,
    model: str,
    backend: str,
    result: Generation | Exception,
    parse: Callable[[str | None], Parsed],
    **context,
) -> ResponseRecord:
    if isinstance(result, Exception):
        return ResponseRecord.failed(run_key, request.sample_id, model, backend, result, parse(None), **context)
    return ResponseRecord.answered(
        run_key, request.sample_id, model, backend, result.text, parse(result.text),
        prompt_tokens=result.prompt_tokens, completion_tokens=len(result.token_ids),
        token_ids=result.token_ids, **context,
    )
