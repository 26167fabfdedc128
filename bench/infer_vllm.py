"""bench/infer_gpu.py's twin for machines with vLLM: the same models, requests and ratios through
the vLLM backend, its weights random (``load_format="dummy"``) at the published sizes.

    python bench/infer_vllm.py                                  # 3B and 7B on the GPU
    python bench/infer_vllm.py --models tiny --batch-sizes 4 --serial 2 --requests 8     # vLLM's CPU build

A checkpoint directory is written per model with the published config and the tiny fixture's
tokenizer and chat template beside Qwen2.5-VL's image settings (no weights: vLLM draws them), then
served by ``VLLMBackend`` as a run would. Rows: (a) the calibrated matmul peak; (b) one request
at a time; (c) ``LLM.generate`` over chunks of each batch size; (d) continuous feeding
(``backend.feed=continuous``) of ``--requests``; (e) (d) through the real runner (chart files
decoded in the prefetch threads, each record fsynced); (f) the same engine behind vLLM's
OpenAI-compatible server, fed by ``backend=server`` (``ServerBackend.stream``: PNG data URLs over
HTTP, the server's chat template and detokenizer) at each ``--server-concurrency``, against (d):
the cost of the HTTP path, measured. Printed: samples/s, (c)/(b), (d)/(c), (e)/(d), (f)/(d), and
model FLOP utilisation against (a) and the datasheet, FLOPs counted as in bench/infer_gpu.py.
Everything vLLM runs sits under ``main()``: its workers may re-import this module.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    import gpu_models as gm
    import infer_gpu as g
    from candlebench.inference.backends.base import GenerationSpec, Media
    from candlebench.inference.backends.settings import VLLMSettings
    from candlebench.inference.backends.vllm import VLLMBackend
    from candlebench.inference.chat import chat_text
    from candlebench.inference.models import ModelSpec
    from candlebench.inference.records import RecordStore
    from candlebench.inference.runner import Request, RunnerSettings, Shard, run_requests
    from candlebench.rendering.model_input import ImagePolicy

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["3b", "7b"], choices=sorted(k for k, m in gm.MODELS.items() if m.family == "qwen2_5_vl"))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[32, 128, 256])
    parser.add_argument("--serial", type=int, default=8)
    parser.add_argument("--requests", type=int, default=512, help="requests of rows (d) and (e)")
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--cpu-kvcache-gb", type=float, default=4,
                        help="vLLM's CPU build: its KV cache in GiB, zeroed at each engine start (the tiny model needs MiBs)")
    parser.add_argument("--server-concurrency", nargs="*", type=int, default=[1, 8, 64],
                        help="row (f): requests in flight to the server (none: no server row)")
    args = parser.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    sheet = next((v for k, v in g.DATASHEET_TFLOPS.items() if k in gpu), None)
    peak = g.calibrate(device)
    print(f"device {gpu}; (a) matmul peak reached {peak:.1f} TFLOPS; datasheet dense bf16 {sheet or 'unknown'} TFLOPS")
    generation = GenerationSpec(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        family = gm.FAMILIES["qwen2_5_vl"]
        processor, tokenizer_name = family.processor(work), "the tiny fixture's BPE (over-counts against Qwen's vocabulary)"
        reqs, files, prompt = g.requests(max(args.batch_sizes + [args.serial, args.requests]), work)
        one = processor(text=[chat_text(processor, prompt, 2)], images=[list(reqs[0].images)], return_tensors="pt")
        prompt_tokens = int(one["input_ids"].shape[1])
        print(f"prompt: {prompt_tokens} tokens measured (text by {tokenizer_name}); {args.new_tokens} new tokens")
        for name in args.models:
            config = family.config(gm.MODELS[name], processor, tiny=name.startswith("tiny"))
            with torch.device("meta"):  # parameter counts for the FLOPs, no memory
                shape = Qwen2_5_VLForConditionalGeneration(config)
            flops = g.Flops(shape, family, one, prompt_tokens, args.new_tokens)
            folder = work / f"qwen2_5_vl-{name}"
            config.architectures = ["Qwen2_5_VLForConditionalGeneration"]  # how vLLM picks its model class
            config.save_pretrained(folder)
            processor.save_pretrained(folder)
            shape.generation_config.eos_token_id = processor.tokenizer.eos_token_id
            shape.generation_config.save_pretrained(folder)
            engine = VLLMSettings(feed="continuous", in_flight=max(args.batch_sizes), enforce_eager=device != "cuda",
                                    gpu_memory_utilization=0.9, cpu_kvcache_space_gb=args.cpu_kvcache_gb,
                                    merged_dir=str(work / "merged"), load_format="dummy")
            backend = VLLMBackend(ModelSpec(name=name, path=str(folder), max_model_len=4096), generation, engine,
                                  Media(2, (800, 600)))
            print(f"\n{name}: {flops.total / 1e12:.2f} TFLOP per sample")
            print(f"{'model':<6}{'row':<30}{'batch':>6}{'samples/s':>11}{'ratio':>14}{'TFLOPS':>9}{'MFU (a)':>9}{'MFU sheet':>10}")

            def row(label: str, batch: int, rate: float, ratio: str = "") -> None:
                achieved = flops.total * rate / 1e12
                print(f"{name:<6}{label:<30}{batch:>6}{rate:>11.2f}{ratio:>14}{achieved:>9.2f}{achieved / peak:>9.1%}"
                      + (f"{achieved / sheet:>10.1%}" if sheet and device == "cuda" else f"{'–':>10}"))

            backend.generate(reqs[:1])
            _, t = g.timed(lambda: [backend.generate([r]) for r in reqs[: args.serial]], device)
            serial = args.serial / t
            row("(b) one request at a time", 1, serial)
            chunked = {}
            for batch in args.batch_sizes:
                _, t = g.timed(lambda: backend.generate(reqs[:batch]), device)
                chunked[batch] = batch / t
                row("(c) LLM.generate chunks", batch, batch / t, f"{batch / t / serial:.2f}x (b)")
            best = max(chunked.values())
            _, t = g.timed(lambda: [a for step in backend.stream(iter(reqs[: args.requests])) for a in step], device)
            fed = args.requests / t
            row("(d) continuous feeding", backend.in_flight, fed, f"{fed / best:.2f}x (c)")
            runner_requests = [Request(f"r{i:05d}", prompt, tuple(files), None, ("daily", "weekly"))
                               for i in range(args.requests)]
            settings = RunnerSettings(batch_size=max(args.batch_sizes), prefetch_batches=2, loader_threads=4)
            _, t = g.timed(lambda: run_requests(runner_requests, RecordStore(work / f"run-{name}"), "bench", name, "vllm",
                                                lambda: g.Tracked(backend, device), ImagePolicy(), Shard(), settings),
                                                device)
            runner = args.requests / t
            row("(e) (d) through the runner", backend.in_flight, runner, f"{runner / fed:.2f}x (d)")
            backend.close()
            served = {}
            if args.server_concurrency:
                served = server_rows(folder, engine, generation, reqs[: args.requests], args.server_concurrency, device, work)
                for concurrency, rate in served.items():
                    row("(f) server, concurrency", concurrency, rate, f"{rate / fed:.2f}x (d)")
            print(f"{name:<6}best (c)/(b) {best / serial:.2f}x, (d)/(c) {fed / best:.2f}x, (e)/(d) {runner / fed:.2f}x"
                  + (f", best (f)/(d) {max(served.values()) / fed:.2f}x" if served else ""))


def server_rows(folder: Path, vllm_settings, generation, reqs: list, concurrencies: list[int], device: str, work: Path) -> dict[int, float]:
    """Row (f): the model folder served by vLLM's OpenAI server with the in-process engine's settings
    (dummy weights, the same dtype, length and image limits), requests/s through ``ServerBackend``
    at each concurrency, after one warm-up request. The in-process engine is closed first: both
    would not fit one GPU."""
    import os

    sys.path.insert(0, str(ROOT / "tests"))
    import infer_gpu as g
    from fixtures.vllm_server import VLLMServer
    from candlebench.inference.backends.base import Media
    from candlebench.inference.backends.server import ServerBackend
    from candlebench.inference.backends.settings import ServerSettings
    from candlebench.inference.backends.vllm import gib_bytes
    from candlebench.inference.models import ModelSpec

    engine = ["--max-model-len", "4096", "--load-format", "dummy", "--seed", "0",
              "--limit-mm-per-prompt", '{"image": {"count": 2, "width": 800, "height": 600}, "video": 0}']
    cpu = ["--enforce-eager", "--dtype", "float32", "--kv-cache-memory-bytes", str(gib_bytes(vllm_settings.cpu_kvcache_space_gb))]
    engine += cpu if device != "cuda" else ["--gpu-memory-utilization", "0.9"]
    # vLLM's own layout (the engine core in a process of its own), as a deployment runs it.
    server = VLLMServer(folder, dict(os.environ), work / "server.log", args=tuple(engine), engine_process=True)
    try:
        started = server.start(timeout_s=900)
        print(f"(f) vLLM's OpenAI server up in {started:.0f} s at {server.base_url}")
        rates = {}
        for concurrency in concurrencies:
            backend = ServerBackend(ModelSpec(name="bench", path=str(folder)), generation,
                                    ServerSettings(base_url=server.base_url, concurrency=concurrency),
                                    Media(2, (800, 600)))
            [a for step in backend.stream(iter(reqs[:1])) for a in step]  # warm-up
            answers, t = g.timed(lambda: [a for step in backend.stream(iter(reqs)) for a in step], device)
            failed = [r for _, r in answers if isinstance(r, Exception)]
            if failed:
                raise RuntimeError(f"{len(failed)} of {len(reqs)} server requests failed, e.g. {failed[0]}")
            rates[concurrency] = len(reqs) / t
        return rates
    finally:
        server.stop()


if __name__ == "__main__":
    main()
