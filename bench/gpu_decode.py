"""The decode rows of bench/infer_gpu.py: what a long answer costs through the runner and outside it.

* :class:`Tracked` is the backend as the runner sees it, left loaded when the runner closes it,
  recording when each batch's ``generate`` returned (the steady state is the batches after the
  first: start-up, the first encode and any compile excluded), how long each batch encode took
  (in the runner's encode thread, timed on its own), and with ``stamp`` each decode step;
* :class:`Steps` stamps decode steps without a host sync (CUDA events on the stream, read after
  ``generate``), so the stamping does not add the very wait the decode speed-ups remove;
* :func:`memory_delta`: ``torch.cuda.memory_stats()`` around a row (peaks, cudaMalloc calls,
  allocator retries), and :func:`expandable_segments` for its A/B.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

GB = 1e9


class Steps:
    """A logits processor stamping each step of ``generate``: CUDA events on the device's stream
    (no host sync; read when ``generate`` returned), the clock on a CPU."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        self.marks: list[Any] = []

    def start(self) -> None:
        self.marks = [self.mark()]

    def mark(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.marks.append(self.mark())
        return scores

    def times(self) -> list[float]:
        """Seconds from the start to each step's logits."""
        if not self.cuda:
            return [m - self.marks[0] for m in self.marks[1:]]
        torch.cuda.synchronize()
        return [self.marks[0].elapsed_time(m) / 1000 for m in self.marks[1:]]

    def summary(self) -> tuple[float, float]:
        """(time to the first token, the median time of the steps after it)."""
        times = self.times()
        steps = sorted(b - a for a, b in zip(times, times[1:]))
        return times[0], steps[len(steps) // 2] if steps else float("nan")


class Tracked:
    """The backend as the runner sees it (generate, encode, stream: all its own), left loaded when
    the runner closes it; each generate's return and each encode's duration recorded, and with
    ``stamp`` the decode steps of every batch (:class:`Steps`)."""

    def __init__(self, backend: Any, device: str, stamp: bool = False):
        self.backend, self.device = backend, device
        self.returned: list[float] = []
        self.encodes: list[float] = []
        self.steps: list[tuple[float, float]] = []
        self.stamp = stamp

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backend, name)

    def encode(self, batch: list) -> Any:
        start = time.perf_counter()
        try:
            return self.backend.encode(batch)
        finally:
            self.encodes.append(time.perf_counter() - start)

    def generate(self, batch: list, encoded: Any = None) -> list:
        if not self.stamp:
            out = self.backend.generate(batch, encoded)
        else:
            steps = Steps(self.device)
            with stamping(self.backend.model, steps):
                steps.start()
                out = self.backend.generate(batch, encoded)
            self.steps.append(steps.summary())
        self.returned.append(time.perf_counter())
        return out

    def steady(self, batch: int) -> float:
        """Samples a second over the batches after the first (nan with fewer than two)."""
        if len(self.returned) < 2:
            return float("nan")
        return batch * (len(self.returned) - 1) / (self.returned[-1] - self.returned[0])

    def close(self) -> None:
        pass


@contextmanager
def stamping(model: Any, steps: Steps) -> Iterator[None]:
    """``model.generate`` with ``steps`` after its own logits processors (the backend's call unchanged)."""
    plain = model.generate

    def generate(*args: Any, **kwargs: Any) -> Any:
        kwargs["logits_processor"] = [*(kwargs.get("logits_processor") or []), steps]
        return plain(*args, **kwargs)

    model.generate = generate
    try:
        yield
    finally:
        del model.generate  # the class's method again


COUNTERS = (("cudaMalloc calls", "segment.all.allocated"), ("cudaFree calls", "segment.all.freed"),
            ("allocator retries", "num_alloc_retries"), ("OOMs", "num_ooms"))


def memory_delta(fn: Callable[[], Any], device: str) -> tuple[Any, str]:
    """``fn()`` and a line of ``torch.cuda.memory_stats()`` around it: the peaks it reached and
    the allocator's counters it moved (cudaMalloc / cudaFree calls, retries: allocator churn as the
    dynamic cache grows shows there)."""
    if device != "cuda":
        return fn(), "memory stats: none on CPU"
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_stats()
    value = fn()
    after = torch.cuda.memory_stats()
    moved = ", ".join(f"{label} +{after.get(key, 0) - before.get(key, 0)}" for label, key in COUNTERS)
    return value, (f"memory: peak allocated {after['allocated_bytes.all.peak'] / GB:.1f} GB, peak reserved "
                   f"{after['reserved_bytes.all.peak'] / GB:.1f} GB; {moved}")


@contextmanager
def expandable_segments(device: str) -> Iterator[bool]:
    """The caching allocator with ``expandable_segments`` inside (on CUDA; yields False on a CPU),
    the cache emptied on the way in and out so each side starts from the same state."""
    if device != "cuda":
        yield False
        return
    torch.cuda.empty_cache()
    torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    try:
        yield True
    finally:
        torch.cuda.empty_cache()
        torch.cuda.memory._set_allocator_settings("expandable_segments:False")
