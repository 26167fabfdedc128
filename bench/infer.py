"""Runner throughput on the tiny Qwen2.5-VL fixture, against a one-request-at-a-time loop.

    .venv/bin/python bench/infer.py [--samples 96]          # transformers backend
    .venv-vllm/bin/python bench/infer.py --backend vllm     # vLLM's CPU build

The reference is what a notebook (or VLMEvalKit) does: open both charts, apply the chat template,
call ``generate`` for one sample, repeat. Ours is the runner: prefetching loader threads, batches,
parsing and fsynced records. Both answer the same samples with the same greedy settings in the same
process, after one warm-up call each; the model is loaded outside the timing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from candlebench.market.market import load_market  # noqa: E402
from candlebench.inference.backends.base import Batched, GenerationSpec, Media, PreparedRequest  # noqa: E402
from candlebench.inference.backends.settings import VLLMSettings  # noqa: E402
from candlebench.inference.models import ModelSpec, ensure_built  # noqa: E402
from candlebench.inference.records import RecordStore  # noqa: E402
from candlebench.inference.runner import Request, RunnerSettings, Shard, run_requests  # noqa: E402
from candlebench.rendering.chart import ChartSpec  # noqa: E402
from candlebench.rendering.model_input import ImagePolicy  # noqa: E402
from candlebench.rendering.render import RenderSettings, collect_manifest, render_samples  # noqa: E402
from candlebench.stages.graph import compose_config  # noqa: E402
from candlebench.tasks.forecast.samples import build_samples  # noqa: E402
from candlebench.tasks.forecast.task import TASK  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Predict the 30-day return from the daily and the weekly chart. Output ONLY <score>NUM</score>."


def workspace(out: Path, n: int) -> pd.DataFrame:
    market = load_market([ROOT / "tests" / "data" / "pse_slice.csv"], name="PSE")
    rules = TASK.settings(compose_config(["task=forecast", "task.samples.interval=5"]).task).samples
    samples = build_samples(market, rules).frame.head(n)
    settings = RenderSettings(spec=ChartSpec(), freqs=("daily", "weekly"), max_bars=50, renderer="pil")
    render_samples(samples, market.bars, settings, out, workers=2)
    manifest = collect_manifest(samples, settings, out)
    paths = manifest.pivot(index="sample_id", columns="freq", values="path").add_prefix("image_")
    return samples.merge(paths, left_on="sample_id", right_index=True)


def backend_for(name: str, spec: ModelSpec, generation: GenerationSpec):
    if name == "vllm":
        from candlebench.inference.backends.vllm import VLLMBackend

        settings = VLLMSettings(enforce_eager=True, gpu_memory_utilization=0.9, cpu_kvcache_space_gb=1, merged_dir="/tmp")
        return VLLMBackend(spec, generation, settings, Media(2, (800, 600)))
    from candlebench.inference.backends.hf import TransformersBackend

    return TransformersBackend(spec, generation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=96)
    parser.add_argument("--backend", choices=["transformers", "vllm"], default="transformers")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 8])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        spec = ModelSpec(name="tiny_qwen2_5_vl", path=str(out / "model"), dtype="float32", max_model_len=1024,
                         build="qwen2_5_vl", fixture=str(out / "model"), random_weights=True)
        ensure_built(spec)
        samples = workspace(out, args.samples)
        requests = [Request(r.sample_id, PROMPT, (out / r.image_daily, out / r.image_weekly)) for r in samples.itertuples()]
        generation = GenerationSpec(max_new_tokens=16)
        policy = ImagePolicy()
        backend = backend_for(args.backend, spec, generation)

        def one(request) -> None:
            images = tuple(policy.apply(p) for p in request.image_paths)
            backend.generate([PreparedRequest(request.sample_id, request.prompt, images)])

        one(requests[0])
        start = time.perf_counter()
        for request in requests:
            one(request)
        reference = len(requests) / (time.perf_counter() - start)

        rates = {}
        sizes = args.batch_sizes if args.backend == "transformers" else [len(requests)]
        for size in sizes:
            store = RecordStore(out / "runs" / f"b{size}")
            start = time.perf_counter()
            run_requests(requests, store, "bench", spec.name, args.backend, lambda: UnclosedBackend(backend),
                         policy, Shard(), RunnerSettings(batch_size=size))
            rates[size] = len(requests) / (time.perf_counter() - start)
        backend.close()

    print(f"{args.backend} backend, tiny Qwen2.5-VL (fp32, CPU), {len(requests)} samples, 16 new tokens")
    print(f"{'one request at a time (reference)':<42}{reference:>10.2f} samples/s")
    for size, rate in rates.items():
        print(f"{f'runner, batch {size}':<42}{rate:>10.2f} samples/s   {rate / reference:>5.2f}x reference")


class UnclosedBackend(Batched):
    """The runner closes the backend it made; the benchmark reuses one model across its runs."""

    def __init__(self, backend):
        self._backend = backend
        self.name = backend.name

    def generate(self, batch, encoded=None):
        return self._backend.generate(batch)

    def close(self) -> None:
        pass


if __name__ == "__main__":
    main()
