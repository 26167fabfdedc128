"""GPU throughput of the transformers backend at real checkpoint sizes, in one process, no download.

    python bench/infer_gpu.py                                   # 3B and 7B on the GPU
    python bench/infer_gpu.py --models 7b qwen3-8b gemma3-12b   # the three families
    python bench/infer_gpu.py --models tiny --device cpu --batch-sizes 2 --serial 2 --runner-batch 2 --lever-batch 1

Qwen2.5-VL-3B / -7B, Qwen3-VL-8B and Gemma-3-12B (bench/gpu_models.py: their published configs,
what each family's transformers code does differently) are built with random bf16 weights, directly on
the device (throughput does not depend on the weights' values; building in place also computes
the rotary ``inv_freq`` buffers, which a meta-device build + ``to_empty`` leaves as garbage). The
requests are the forecast task's: its prompt through the checkpoint family's chat template, with
two real 800x600 charts of the committed slice, through the real backend (processor inside
``generate``, as in a run), a fixed answer length (min = max new tokens).

Rows, each against the same requests, each in its own guard (a row that fails prints one line and
the others still run); ``--rows`` picks some (a window spends its minutes on what changed):

* (a) calibration: the bf16 matmul peak this GPU reaches (fp32 on CPU), and the datasheet's;
* (b) one request at a time, the VLMEvalKit way;
* (c) the batched backend at each batch size, the vision tower on transformers' own path;
* (d) the same with ``model.vision_attention=varlen`` and the default vision speed-ups that apply
  to the family's tower (``inference/vision_speedups.py``: flash kernel, grid caches, patch matmul,
  padded MLP; a line names them), pixels prepared ahead; a family where none applies (Gemma 3's
  SigLIP) has no (d), levers or compile rows: its (d) is its (c);
* the levers: the vision tower over ``--lever-batch`` requests' charts with all speed-ups, each one
  off in turn, and none; the image processor's CPU time per request (now in the runner's loader
  threads) and the batch encode with and without the pixels prepared ahead;
* compile: the vision tower over the split batch's charts with ``compile_blocks`` too, its first
  call (the compile of that batch's bucket) timed apart from the steady state; then (d) again with
  it, and the split after it runs with it;
* decode: ``generate`` at ``--runner-batch`` with ``--decode-tokens`` new tokens, each step
  stamped (CUDA events, no host sync added: bench/gpu_decode.py), each setting after a call of its
  own: transformers' attention and the grouped decode attention with the dynamic cache, and
  (``--static-cache``) the grouped attention with the static cache, its first call (the compile) timed;
* (e) (d) through the real runner at ``--runner-batch`` over ``--runner-batches`` batches (chart
  files decoded and the image processor run in the loader threads, records written and fsynced per
  batch) at the runner's GIL switch interval (``infer.gil_switch_ms``: 0.5 ms on a GPU): the row is
  the steady state after the first batch (start-up, the first encode and any compile excluded), a
  line adds the rate with start-up and the batch encode timed on its own (the runner's encode
  thread); (e)/(d) only at equal batch and vision settings;
* e-5ms: (e) at Python's 5 ms switch interval (the loader threads' processor holding the GIL
  while the thread that launches the kernels waits);
* e-encode: (e) with the pixels in the batch encode (``backend.pixels_ahead=false``);
* (f) with ``--long-new-tokens N``: the runner at N new tokens, decode steps stamped inside it, the
  allocator's statistics around it (``torch.cuda.memory_stats()``: peaks, cudaMalloc calls,
  retries), and a direct ``generate`` of one batch stamped the same way, in this process: first
  the baseline, transformers' decode (``--baseline-batches``), then the backend's default for N
  (grouped decode attention, deferred stop check, rope index in the encode, the static cache from
  64 new tokens on CUDA, its compile timed apart), with ``--static-cache`` the other cache too; f-expandable: the default
  again with the allocator's ``expandable_segments``;
* (g): the E2A and reading requests (``--tasks``: built by their own stages from the committed
  slice, prompts of their real lengths, so batches are padded) through the runner at their answer
  budgets (``answer_tokens``), ``--task-batches`` batches each.

The decode rows (decode, f, g) run for ``--long-models``. Every row runs with the decode
speed-ups a run takes by default (``model.decode_speedups``), the rows that compare say against what.

Printed: samples/s, (c)/(b), (d)/(b), (e)/(d); model FLOP utilisation against (a) and against
the datasheet; a vision / prefill / decode split of one batch (vision tower alone, the prefill
forward pass less the vision tower and the rope index, the rest of ``generate`` from inputs encoded
ahead), each with its own FLOPs over its own time, the rope index and the batch encode timed apart; the attention
implementation that ran, whether torch's flash varlen kernel did, and the vision attention calls
per layer, counted; with the compile row, compile_blocks' acceptance test (inference/compile_check.py:
its error against the fp32 tower within 1.25x eager bf16's). FLOPs: 2 x the
non-embedding parameters per token through each tower, the LM head only where logits are taken
(the last prompt position and each new token), attention's QK^T and AV over each token's keys
(causal prefill, windowed / full vision layers), embedding lookups none. Prompt tokens are
measured: the image tokens by the real image processor; the text tokens of the Qwen families by
the tokenizer given with ``--tokenizer`` (Qwen's real vocabulary, bench/qwen_vocab.py: the forecast
request is 1,531 tokens for Qwen2.5-VL), else by the tiny fixture's byte-level BPE, which
over-counts English against the real vocabularies (1,869; the line says which; Gemma 3's
vocabulary installs from nowhere: its text is always counted by the tiny BPE).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from candlebench.inference.backends.base import GenerationSpec, PreparedRequest  # noqa: E402
from candlebench.inference.backends.hf import TransformersBackend  # noqa: E402
from candlebench.inference.chat import chat_text  # noqa: E402
from candlebench.inference.compile_check import CompileVerdict, relative_error  # noqa: E402
from candlebench.inference.decode_attention import use_grouped  # noqa: E402
from candlebench.inference.decode_speedups import rope_index  # noqa: E402
from candlebench.inference.models import ModelSpec  # noqa: E402
from candlebench.inference.vision_attention import VARLEN, VISION_CONFIG, use_varlen  # noqa: E402
from candlebench.inference.vision_speedups import DEFAULT_SPEEDUPS, apply_speedups, compile_blocks  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from gpu_decode import Steps, Tracked, expandable_segments, memory_delta, stamping  # noqa: E402
from gpu_models import FAMILIES, MODELS, build  # noqa: E402

ROWS = ("b", "c", "d", "levers", "compile", "e", "e-5ms", "e-encode", "split", "decode", "f", "f-expandable", "g")

DATASHEET_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0}


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, device: str) -> tuple[object, float]:
    sync(device)
    start = time.perf_counter()
    value = fn()
    sync(device)
    return value, time.perf_counter() - start


def calibrate(device: str) -> float:
    """TFLOPS of a large matmul in the dtype the models run in."""
    n, dtype = (8192, torch.bfloat16) if device == "cuda" else (1024, torch.float32)
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    a @ b
    reps = 20 if device == "cuda" else 5
    _, seconds = timed(lambda: [a @ b for _ in range(reps)], device)
    return 2 * n**3 * reps / seconds / 1e12


def requests(n: int, work: Path) -> tuple[list[PreparedRequest], list, str]:
    """n forecast requests over two real rendered charts, and the chart files for the runner."""
    from candlebench.market.market import load_market
    from candlebench.stages.graph import compose_job
    from candlebench.rendering.chart import ChartSpec
    from candlebench.rendering.model_input import prepare_image
    from candlebench.rendering.render import RenderSettings, collect_manifest, render_samples
    from candlebench.tasks.forecast.samples import build_samples
    from candlebench.tasks.forecast.task import TASK

    market = load_market([ROOT / "tests" / "data" / "pse_slice.csv"], name="PSE")
    job = compose_job([f"data.path={ROOT / 'tests' / 'data' / 'pse_slice.csv'}", "task.samples.interval=200"]).job
    samples = build_samples(market, job.settings.samples).frame.head(1)
    settings = RenderSettings(spec=ChartSpec(), freqs=("daily", "weekly"), max_bars=50, renderer="pil")
    render_samples(samples, market.bars, settings, work, workers=1)
    manifest = collect_manifest(samples, settings, work)
    files = [work / p for p in manifest.sort_values("freq")["path"]]
    prompt = TASK.request(job.settings, job.context, samples.iloc[0].to_dict(), {}).prompt
    images = tuple(prepare_image(f.read_bytes(), None) for f in files)  # as the runner decodes them
    return [PreparedRequest(f"s{i:05d}", prompt, images) for i in range(n)], files, prompt


def task_requests(tasks: list[str], work: Path) -> dict[str, tuple[list, int]]:
    """Each task's runner requests over the committed slice (two stocks), built by its own samples,
    render and request stages as a run builds them, with its answer budget (``answer_tokens``)."""
    from candlebench.rendering.inputs import read_samples
    from candlebench.stages.graph import compose_job
    from candlebench.stages.infer import build_requests
    from candlebench.stages.render import render
    from candlebench.stages.samples import samples

    out = {}
    for name in tasks:
        job = compose_job([f"task={name}", f"data.path={ROOT / 'tests' / 'data' / 'pse_slice.csv'}",
                           f"out_dir={work / 'tasks'}", "render.workers=1", "data.codes=[AC,ALI]"]).job
        samples(job)
        render(job)
        built, _ = build_requests(job, read_samples(job.task_paths))
        out[name] = (built, int(job.task_block.get("answer_tokens") or job.model.max_new_tokens))
    return out


class Flops:
    """FLOPs of one sample's vision tower, prefill and decode (see the module docstring)."""

    def __init__(self, model, family, one, prompt_tokens: int, new_tokens: int):
        text = model.config.get_text_config()
        params = dict(model.named_parameters())
        vision = {n: p.numel() for n, p in params.items() if family.vision_params(n)}
        embed = model.get_input_embeddings().weight.numel()
        head = 0 if model.config.tie_word_embeddings else model.get_output_embeddings().weight.numel()
        body = sum(p.numel() for p in params.values()) - sum(vision.values()) - embed - head
        d, layers, vocab = text.hidden_size, text.num_hidden_layers, text.vocab_size
        # attention's width: Gemma 3's 16 heads x 256 is not its hidden 3,840
        width = text.num_attention_heads * (getattr(text, "head_dim", None) or d // text.num_attention_heads)
        patches = sum(family.patches(one))
        per_patch = sum(n for name, n in vision.items() if not family.merged(name))
        per_merged = sum(vision.values()) - per_patch
        self.vision = (2 * (per_patch + per_merged / 4) * patches
                       + family.attention_flops(model.config.vision_config, family.patches(one)))
        self.prefill = 2 * body * prompt_tokens + 2 * layers * width * prompt_tokens**2 + 2 * d * vocab
        context = prompt_tokens + new_tokens / 2
        self.decode = new_tokens * (2 * body + 2 * d * vocab + 4 * layers * width * context)

    @property
    def total(self) -> float:
        return self.vision + self.prefill + self.decode


def vision_calls(model, family, run) -> int:
    """The most attention calls any vision layer made during ``run()``, counted at the interface."""
    from transformers import AttentionInterface

    layer = {id(attn): i for i, attn in enumerate(family.attention_modules(model))}
    calls: Counter = Counter()
    saved = {}
    for name in ("sdpa", VARLEN):
        if name not in AttentionInterface._global_mapping:
            continue
        saved[name] = original = AttentionInterface._global_mapping[name]

        def counting(module, *a, _original=original, **k):
            if id(module) in layer:
                calls[layer[id(module)]] += 1
            return _original(module, *a, **k)

        AttentionInterface._global_mapping[name] = counting
    try:
        run()
    finally:
        AttentionInterface._global_mapping.update(saved)
    return max(calls.values())


def ratio(value: float, reference: float, of: str = "") -> str:
    """``value / reference`` as "1.23x" + ``of``; "–" when either was not measured (its row not run)."""
    return f"{value / reference:.2f}x{of}" if math.isfinite(value) and math.isfinite(reference) else "–"


def guarded(name: str, label: str, fn):
    """``fn()``, or one printed line saying why it failed: the window prints whatever it can."""
    try:
        return fn()
    except Exception as err:  # noqa: BLE001 - one failing row must not cost the window's other rows
        reason = f"{type(err).__name__}: {str(err)[:200]}".splitlines()[0]
        print(f"{name:<12}{label}: failed ({reason})")
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return None


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["3b", "7b"], choices=sorted(MODELS))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[8, 32, 64, 128])
    parser.add_argument("--serial", type=int, default=8, help="requests of the one-at-a-time row (b)")
    parser.add_argument("--runner-batch", type=int, default=64, help="batch size of the runner rows (e), (f), (g) and decode")
    parser.add_argument("--runner-batches", type=int, default=4,
                        help="batches each runner row runs (its row: the steady state after the first)")
    parser.add_argument("--baseline-batches", type=int,
                        help="batches of row (f)'s baseline, transformers' decode (default: --runner-batches)")
    parser.add_argument("--tasks", nargs="*", default=["e2a", "reading"],
                        help="row (g): these tasks' requests through the runner at their answer budgets")
    parser.add_argument("--task-new-tokens", type=int, default=0, help="row (g)'s answer length (0: each task's budget)")
    parser.add_argument("--task-batches", type=int, default=2, help="row (g)'s batches per task")
    parser.add_argument("--lever-batch", type=int, default=32, help="requests whose charts the lever table encodes")
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--long-new-tokens", type=int, default=0, help="row (f): the runner at this answer length (0: none)")
    parser.add_argument("--long-models", nargs="+", choices=sorted(MODELS),
                        help="the models of the decode rows: decode, (f), (g) (default: all)")
    parser.add_argument("--static-cache", action="store_true",
                        help="row (f) again with backend.static_cache (compiled decode step on CUDA), compile timed apart")
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS, help="the rows to run (default: all)")
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile's backend for the compile row (the CPU test traces with 'eager')")
    parser.add_argument("--decode-tokens", type=int, default=32, help="new tokens of the decode row")
    parser.add_argument("--reference-requests", type=int, default=16,
                        help="requests of the compile row's fp32 reference (the first of its batch)")
    parser.add_argument("--tokenizer", help="Qwen's tokenizer (bench/qwen_vocab.py, or a checkpoint's directory): it "
                                            "counts the Qwen families' text")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    return parser.parse_args(argv)


def main() -> None:
    args = arguments()
    device = args.device
    gpu = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    sheet = next((v for k, v in DATASHEET_TFLOPS.items() if k in gpu), None)
    peak = calibrate(device)
    print(f"device {gpu}; torch {torch.__version__}; transformers {transformers_version()}; (a) matmul peak reached "
          f"{peak:.1f} TFLOPS; datasheet dense bf16 {sheet or 'unknown'} TFLOPS")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        n_max = max(args.batch_sizes + [args.serial, args.runner_batch, args.lever_batch])
        reqs, files, prompt = requests(n_max, work)
        bench = Bench(args, device, peak, sheet, reqs, files, prompt, work)
        for name in args.models:
            guarded(name, "model", lambda: bench.model(name))
            if device == "cuda":
                torch.cuda.empty_cache()


def transformers_version() -> str:
    import transformers

    return transformers.__version__


HEADER = f"{'model':<12}{'row':<34}{'batch':>6}{'samples/s':>11}{'ratio':>16}{'TFLOPS':>9}{'MFU (a)':>9}{'MFU sheet':>10}"


class Bench:
    """The rows of one model, each in its own guard (see :func:`guarded`)."""

    def __init__(self, args, device, peak, sheet, reqs, files, prompt, work):
        self.args, self.device, self.peak, self.sheet = args, device, peak, sheet
        self.reqs, self.files, self.prompt, self.work = reqs, files, prompt, work

    def measure_prompt(self, name: str) -> None:
        """The family's processor at its checkpoint's image settings, and the forecast request's
        tokens measured through it (the text by the tiny fixture's byte-level BPE, which over-counts
        English against the real vocabularies, or by ``--tokenizer`` for Qwen2.5-VL)."""
        family = self.family = FAMILIES[MODELS[name].family]
        tokenizer = self.args.tokenizer if family.real_vocabulary else None
        processor = self.processor = family.processor(self.work, tokenizer)
        processor.tokenizer.padding_side = "left"
        one = self.one = processor(text=[chat_text(processor, self.prompt, 2)], images=[list(self.reqs[0].images)],
                                   return_tensors="pt")
        self.prompt_tokens = int(one["input_ids"].shape[1])
        image_tokens = int((one["input_ids"] == processor.tokenizer.convert_tokens_to_ids(family.image_token)).sum())
        counted = tokenizer or f"the tiny {family.fixture} fixture's BPE (over-counts against the real vocabulary)"
        print(f"{name} prompt: {self.prompt_tokens} tokens measured, {image_tokens} of them image tokens "
              f"({family.describe(one)}); text counted by {counted}; {self.args.new_tokens} new tokens")

    def row(self, label: str, batch: int, rate: float, ratio: str = "", flops: Flops | None = None) -> None:
        achieved = (flops or self.flops).total * rate / 1e12
        mfu_sheet = f"{achieved / self.sheet:>10.1%}" if self.sheet and self.device == "cuda" else f"{'–':>10}"
        print(f"{self.name:<12}{label:<34}{batch:>6}{rate:>11.2f}{ratio:>16}{achieved:>9.2f}{achieved / self.peak:>9.1%}"
              + mfu_sheet)

    def fastest(self, fn, times: int = 2) -> float:
        """The least of ``times`` timings after one warm-up: timing noise only ever adds."""
        fn()
        return min(timed(fn, self.device)[1] for _ in range(times))

    def model(self, name: str) -> None:
        args, device = self.args, self.device
        rows = set(args.rows)
        self.name = name
        generation = GenerationSpec(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens)
        self.measure_prompt(name)
        model = build(name, device, self.processor)
        family = self.family
        self.flops = Flops(model, family, self.one, self.prompt_tokens, args.new_tokens)
        backend = TransformersBackend.of_loaded(model, self.processor, generation)
        # the decode speed-ups a run takes by default (model.decode_speedups); the decode row A/Bs the attention
        grouped, backend.deferred_stop, backend.rope_ahead = use_grouped(model), True, True
        print(f"\n{name}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters; "
              f"{self.flops.total / 1e12:.2f} TFLOP per sample (vision {self.flops.vision / self.flops.total:.0%}, "
              f"prefill {self.flops.prefill / self.flops.total:.0%}, decode {self.flops.decode / self.flops.total:.0%})")
        print(f"{name:<12}decode: {'the grouped decode attention, ' if grouped else ''}the stop check deferred (CUDA)"
              + (", the rope index in the encode" if hasattr(model.model, "get_rope_index") else ""))
        print(HEADER)
        reqs = self.reqs
        serial = guarded(name, "(b)", lambda: self.serial(backend)) if "b" in rows else None
        serial = serial or float("nan")
        rates: dict[str, dict[int, float]] = {"c": {}, "d": {}, "d+": {}}
        packs = getattr(model.config, "model_type", "") in VISION_CONFIG  # else its (d) is its (c)
        if "c" in rows or ("d" in rows and not packs):
            guarded(name, "(c)", lambda: self.batched(backend, "(c) batched, transformers' vision", reqs, rates["c"], serial))
        varlen = use_varlen(model)
        self.levers_on = tuple(k for k, on in apply_speedups(model, DEFAULT_SPEEDUPS).items() if on)
        print(f"{name:<12}vision levers that apply to {model.config.model_type}: "
              + (f"varlen attention, {', '.join(self.levers_on)}" if varlen else "none: (d) is (c), no lever rows"))
        self.attention_line(model, backend, reqs, varlen)
        prepared = guarded(name, "processor", lambda: self.processor_timing(backend)) or reqs
        if not varlen:
            rates["d"] = rates["c"]
        if "d" in rows and varlen:
            guarded(name, "(d)", lambda: self.batched(backend, "(d) batched, varlen + levers", prepared, rates["d"], serial))
        if "levers" in rows and varlen:
            guarded(name, "levers", lambda: self.levers(model, backend))
        apply_speedups(model, DEFAULT_SPEEDUPS)
        split_batch = max(rates["d"], default=max(args.batch_sizes))
        settings = "varlen vision + levers" if varlen else "transformers' path"
        if "compile" in rows and varlen and guarded(name, "compile",
                                                     lambda: self.compiled(model, backend, prepared, split_batch)):
            settings += " + compiled blocks"
            # at the compiled batch alone: another size would time its own compile
            guarded(name, "(d) compiled", lambda: self.batched(backend, "(d) + compiled vision blocks", prepared,
                                                               rates["d+"], serial, sizes=(split_batch,)))
        best_c = max(rates["c"].values(), default=float("nan"))
        best_d = max([*rates["d"].values(), *rates["d+"].values()], default=float("nan"))
        # (e) against (d) at the runner's batch and vision settings only (compiled blocks, when that row ran)
        direct = rates["d+"].get(args.runner_batch, rates["d"].get(args.runner_batch, math.nan))
        long = name in (args.long_models or args.models)
        if "decode" in rows and long:
            guarded(name, "decode", lambda: self.decode_steps(backend, prepared))
        if "e" in rows:
            runner = guarded(name, "(e)", lambda: self.runner(backend, "(e) (d) through the runner", direct))
            print(f"{name:<12}best (c)/(b) {ratio(best_c, serial)}, best (d)/(b) {ratio(best_d, serial)}, "
                  f"(e)/(d) at batch {args.runner_batch} {ratio(runner or math.nan, direct)}")
        if "e-5ms" in rows:
            # the runner's GIL switch interval against Python's 5 ms (the loader threads' processor
            # holds the GIL that long while the launching thread waits: 1.15x on an H200, 2026-12-04)
            guarded(name, "(e) switch", lambda: self.runner(backend, "(e) GIL switch interval 5 ms", direct,
                                                            switch_ms=5.0))
        if "e-encode" in rows:
            guarded(name, "(e) off", lambda: self.runner(backend, "(e) pixels in the batch encode", direct, ahead=False))
        if "split" in rows:
            guarded(name, "split", lambda: self.split(model, backend, prepared, split_batch, settings))
        if "g" in rows and args.tasks and long:
            guarded(name, "(g)", lambda: self.task_rows(backend))
        if "f" in rows and args.long_new_tokens and long:  # last: a long compile
            guarded(name, "(f)", lambda: self.long_answers(backend, prepared))
        del backend, model

    def serial(self, backend) -> float:
        backend.generate(self.reqs[:1])  # warm-up: kernels, allocator
        _, t = timed(lambda: [backend.generate([r]) for r in self.reqs[: self.args.serial]], self.device)
        self.row("(b) one request at a time", 1, self.args.serial / t)
        return self.args.serial / t

    def batched(self, backend, label: str, reqs, rates: dict[int, float], serial: float,
                sizes: tuple[int, ...] | None = None) -> None:
        """``sizes``: batches already run (no warm-up); default ``--batch-sizes`` after one."""
        if sizes is None:
            backend.generate(reqs[: self.args.batch_sizes[0]])  # warm-up
        for batch in sizes or self.args.batch_sizes:
            try:
                _, t = timed(lambda: backend.generate(reqs[:batch]), self.device)
            except torch.OutOfMemoryError:
                print(f"{self.name:<12}{label:<34}{batch:>6}{'OOM':>11}")
                torch.cuda.empty_cache()
                break
            rates[batch] = batch / t
            self.row(label, batch, batch / t, ratio(batch / t, serial, " (b)"))

    def attention_line(self, model, backend, reqs, varlen: bool) -> None:
        from candlebench.inference.vision_attention import FLASH_KERNEL

        vision = model.config.vision_config  # the sub-config the tower's modules hold
        for label, setup in (("transformers'", lambda: vision.__setattr__("_attn_implementation", "sdpa")),
                             ("varlen", lambda: use_varlen(model)))[: 1 + varlen]:
            setup()
            impl = vision._attn_implementation
            calls = vision_calls(model, self.family, lambda: backend.generate(reqs[:1]))
            kernel = {True: "torch's flash varlen kernel", False: "padded SDPA", None: "padded SDPA"}[
                FLASH_KERNEL["checked"] if impl == VARLEN else False]
            print(f"{'':<12}vision attention {impl}: {calls} calls per layer for one request (2 images)"
                  + (f", {kernel}" if impl == VARLEN else "")
                  + f"; language model {model.model.language_model.config._attn_implementation}")

    def processor_timing(self, backend) -> list[PreparedRequest]:
        """The image processor's CPU time per request, now spent in the runner's loader threads,
        and the batch encode with and without it; the requests with their pixels ready."""
        n = len(self.reqs)
        prepared, t_prepare = timed(lambda: [backend.prepare(r) for r in self.reqs], "cpu")
        batch = self.args.runner_batch
        t_whole = min(timed(lambda: backend.encode(self.reqs[:batch]), "cpu")[1] for _ in range(2))
        t_ahead = min(timed(lambda: backend.encode(prepared[:batch]), "cpu")[1] for _ in range(2))
        if not backend.pixels.usable:  # Gemma 3's processor overrides the generic path
            print(f"{self.name:<12}image processor: the whole processor in the batch encode ({type(self.processor).__name__} "
                  f"overrides the generic path): {t_whole:.2f} s for a batch of {batch}")
            return self.reqs
        print(f"{self.name:<12}image processor on CPU: {t_prepare / n * 1000:.1f} ms per request (2 charts), now in the "
              f"loader threads; batch encode of {batch}: whole processor {t_whole:.2f} s, pixels ahead {t_ahead:.2f} s "
              f"({t_whole / max(t_ahead, 1e-9):.1f}x)")
        return prepared

    def levers(self, model, backend) -> None:
        """The vision tower over ``--lever-batch`` requests' charts with every speed-up, each one
        off, and none (varlen attention throughout)."""
        n = self.args.lever_batch
        inputs = backend.encode(self.reqs[:n]).to(model.device)

        def tower():
            with torch.inference_mode():
                self.family.tower(model, inputs)

        on = self.levers_on
        settings = [("all levers", on)]
        settings += [(f"all but {off}", tuple(k for k in on if k != off)) for off in on]
        settings += [("none (varlen, padded SDPA)", ())]
        times = {}
        for label, names in settings:
            apply_speedups(model, names)
            times[label] = self.fastest(tower)
        base = times["all levers"]
        print(f"{self.name:<12}vision tower, {2 * n} charts: " + "; ".join(
            f"{label} {t:.3f} s ({t / base:.2f}x)" for label, t in times.items())
            + f"; {self.flops.vision * n / base / 1e12:.1f} TFLOPS with all ({self.flops.vision * n / base / 1e12 / self.peak:.1%} of (a))")

    def runner(self, backend, label: str, direct: float | None, ahead: bool = True, switch_ms: float | None = None,
               requests: list | None = None, stamp: bool = False, memory: bool = False,
               batches: int | None = None) -> float:
        """The real runner over ``--runner-batches`` batches of ``--runner-batch`` (the forecast
        request unless ``requests`` are given); its row is the steady state (the batches after the
        first), a line gives the rate with start-up, the batch encode timed on its own (in the
        runner's encode thread), with ``stamp`` the decode steps inside the runner, and with
        ``memory`` the allocator's statistics around it. ``switch_ms``: the GIL switch interval
        while the loader threads work; None: the runner's default."""
        from candlebench.inference.records import RecordStore
        from candlebench.inference.runner import Request, RunnerSettings, Shard, default_gil_switch_ms, run_requests
        from candlebench.rendering.model_input import ImagePolicy

        batch = self.args.runner_batch
        store = RecordStore(Path(tempfile.mkdtemp(dir=self.work, prefix=f"run-{self.name}-")))  # a fresh run each time
        requests = requests or [Request(f"r{i:05d}", self.prompt, tuple(self.files), None, ("daily", "weekly"))
                                for i in range((batches or self.args.runner_batches) * batch)]
        settings = RunnerSettings(batch_size=batch, prefetch_batches=2, loader_threads=4,
                               gil_switch_ms=default_gil_switch_ms() if switch_ms is None else switch_ms)
        tracked = Tracked(backend, self.device, stamp)
        backend.pixels_ahead = ahead

        def run():
            return timed(lambda: run_requests(requests, store, "bench", self.name, "transformers", lambda: tracked,
                                              ImagePolicy(), Shard(), settings), self.device)
        try:
            (stats, t), mem = memory_delta(run, self.device) if memory else (run(), "")
        finally:
            backend.pixels_ahead = True
        if stats.generated != len(requests) or stats.errors:
            raise RuntimeError(f"the runner generated {stats.generated} of {len(requests)} ({stats.errors} errors)")
        steady = tracked.steady(batch)
        flops = Flops(backend.model, self.family, self.one, self.prompt_tokens, backend.generation.max_new_tokens)
        self.row(label, batch, steady, ratio(steady, direct or math.nan, " (d)"), flops)
        encode = sorted(tracked.encodes)[len(tracked.encodes) // 2]
        steps = ""
        if tracked.steps:
            later = tracked.steps[1:] or tracked.steps
            steps = (f"; inside the runner: first token after {sorted(f for f, _ in later)[len(later) // 2]:.3f} s, "
                     f"then {sorted(s for _, s in later)[len(later) // 2] * 1000:.1f} ms a step")
        print(f"{self.name:<12}{label}: {len(requests)} requests in {len(tracked.returned)} batches, steady "
              f"{steady:.2f}/s after the first batch, {len(requests) / t:.2f}/s with start-up; batch encode "
              f"{encode:.3f} s (median, in its thread){steps}" + (f"; {mem}" if mem else ""))
        return steady

    def long_answers(self, backend, prepared) -> None:
        """Row (f): the runner at ``--long-new-tokens``, its decode steps stamped inside it and the
        allocator's statistics around it, then a direct ``generate`` of one batch of the same size,
        stamped the same way, in this process. First the baseline, transformers' decode (its SDPA
        with the KV copy, a stop check and a mask check reading the device each step, the rope
        index at the start of generate, the dynamic cache), then the backend's default for this
        answer length (the grouped decode attention, the deferred stop check, the rope index in the
        encode thread, and from ``model.static_cache_from_tokens`` new tokens on CUDA the
        static cache), and with ``--static-cache`` the other cache too; a static cache's first batch
        (the compile, on CUDA) timed apart. Row f-expandable: the default again with the
        allocator's expandable segments."""
        from candlebench.inference.decode_speedups import wants_static_cache

        saved = backend.generation, backend.static_cache, backend.deferred_stop, backend.rope_ahead
        text = backend.model.config.get_text_config()
        own = text._attn_implementation
        n, batch = self.args.long_new_tokens, self.args.runner_batch
        backend.generation = GenerationSpec(max_new_tokens=n, min_new_tokens=n)
        chosen = wants_static_cache(None, n, ModelSpec.static_cache_from_tokens, self.device == "cuda")
        settings = [("transformers' decode", "sdpa", False, False), ("default decode", own, True, chosen)]
        if self.args.static_cache:
            settings.append((f"default + {'dynamic' if chosen else 'static'} cache", own, True, not chosen))
        rates = {}
        try:
            for label, impl, on, static in settings:
                text._attn_implementation, backend.static_cache = impl, static
                backend.deferred_stop = backend.rope_ahead = on
                label = f"{label}, {'static' if static else 'dynamic'} cache" if "cache" not in label else label
                if static:
                    _, first = timed(lambda: backend.generate(prepared[:batch]), self.device)
                    print(f"{self.name:<12}(f) static cache: compile + first batch of {batch} {first:.1f} s")
                rates[label] = self.runner(backend, f"(f) {n} new tokens, {label}", None, stamp=True, memory=True,
                                           batches=self.args.baseline_batches if impl == "sdpa" else None)
                self.against_baseline(n, rates)  # each as it comes: a window's limit may cut the rest
                print(f"{self.name:<12}(f) {label}, a direct generate of {batch}: {self.stamped(backend, prepared[:batch])}")
            if "f-expandable" in self.args.rows:
                text._attn_implementation, backend.static_cache = own, chosen
                backend.deferred_stop = backend.rope_ahead = True
                with expandable_segments(self.device) as on:
                    if on:
                        rates["expandable segments"] = self.runner(backend, f"(f) {n} new tokens, expandable segments",
                                                                   None, stamp=True, memory=True)
                        self.against_baseline(n, rates)
                    else:
                        print(f"{self.name:<12}(f) expandable segments: CUDA's allocator only, not run")
        finally:
            text._attn_implementation = own
            backend.generation, backend.static_cache, backend.deferred_stop, backend.rope_ahead = saved

    def against_baseline(self, n: int, rates: dict[str, float]) -> None:
        base = next(iter(rates.values()))
        print(f"{self.name:<12}(f) at {n} new tokens, against transformers' decode: " + ", ".join(
            f"{label} {rate / base:.2f}x" for label, rate in rates.items()))

    def stamped(self, backend, batch: list) -> str:
        """One ``generate`` of ``batch`` (encoded first, as the runner does ahead), its steps stamped."""
        encoded = backend.encode(batch)
        steps = Steps(self.device)
        with stamping(backend.model, steps):
            steps.start()
            backend.generate(batch, encoded)
        first, step = steps.summary()
        return f"first token after {first:.3f} s, then {step * 1000:.1f} ms a step"

    def task_rows(self, backend) -> None:
        """Row (g): each of ``--tasks``' requests (built by the task's own stages from the committed
        slice) through the runner at the task's answer budget (``answer_tokens``, or
        ``--task-new-tokens``), ``--task-batches`` batches of its real prompts: the runner sorts
        them by length, and a batch is padded to its longest; the backend's default decode for
        that length (a static cache from 64 new tokens on CUDA)."""
        from candlebench.inference.decode_speedups import wants_static_cache

        saved = backend.generation, backend.static_cache
        try:
            for task, (requests, budget) in task_requests(self.args.tasks, self.work).items():
                n = self.args.task_new_tokens or budget
                backend.generation = GenerationSpec(max_new_tokens=n, min_new_tokens=n)
                backend.static_cache = wants_static_cache(None, n, ModelSpec.static_cache_from_tokens,
                                                          self.device == "cuda")
                chosen = requests[: self.args.task_batches * self.args.runner_batch]
                lengths = sorted(len(r.prompt) for r in chosen)
                print(f"{self.name:<12}(g) {task}: {len(chosen)} of its {len(requests)} requests, prompts of "
                      f"{lengths[0]}-{lengths[-1]} characters, {sum(len(r.image_paths) for r in chosen)} charts")
                self.runner(backend, f"(g) {task}, {n} new tokens", None, requests=chosen, stamp=True, memory=True)
        finally:
            backend.generation, backend.static_cache = saved

    def compiled(self, model, backend, prepared, batch: int) -> bool:
        """The vision tower over ``batch`` requests' charts with the default speed-ups, then with
        ``compile_blocks`` too: its first call (the compile of this patch count's bucket) apart
        from the steady state, and its output against the eager tower's (inductor's kernels sum
        in their own order). The compile stays on for the rows after it."""
        inputs = backend.encode(prepared[:batch]).to(model.device)

        def tower():
            with torch.inference_mode():
                return self.family.tower(model, inputs)

        eager = self.fastest(tower, 1)
        want = tower()
        reference = self.fp32_tower(model, backend, prepared[: min(batch, self.args.reference_requests)])
        compile_blocks(model.model.visual, backend=self.args.compile_backend)
        try:
            got, first = timed(tower, self.device)
            steady = min(timed(tower, self.device)[1] for _ in range(2))
        except Exception:
            apply_speedups(model, DEFAULT_SPEEDUPS)  # the rows after this one run eagerly
            raise
        drift = relative_error(got, want)
        rows = len(reference)  # the first requests' tokens: the reference covers those
        verdict = CompileVerdict(relative_error(want[:rows], reference), relative_error(got[:rows], reference))
        tflops = self.flops.vision * batch / steady / 1e12
        print(f"{self.name:<12}vision tower, {2 * batch} charts, compiled blocks: compile + first call {first:.1f} s; "
              f"steady {steady:.3f} s against {eager:.3f} s eager ({eager / steady:.2f}x), {tflops:.1f} TFLOPS "
              f"({tflops / self.peak:.1%} of (a)); largest difference from eager {drift:.1e} of its scale; "
              f"over its first {min(batch, self.args.reference_requests)} requests {verdict.line()}")
        return True

    def fp32_tower(self, model, backend, prepared: list, chunk: int = 8) -> torch.Tensor:
        """The vision tower in fp32 (a copy) over ``prepared``'s charts, ``chunk`` requests at a time
        (fp32 runs the padded SDPA, not the flash kernel: a whole batch's padded windows would not
        fit), concatenated in the batch's order: compile_blocks' reference (inference/compile_check.py)."""
        import copy
        from types import SimpleNamespace

        from candlebench.inference.vision_attention import FLASH_KERNEL

        # the speed-ups are closures over the tower they were installed on: the copy takes them off
        # (transformers' own tower, its MLP unpadded) and the process-wide flash switch is kept
        holder = SimpleNamespace(config=model.config, model=SimpleNamespace(visual=copy.deepcopy(model.model.visual)))
        flash = FLASH_KERNEL["on"]
        apply_speedups(holder, ())
        FLASH_KERNEL["on"] = flash
        holder.model.visual.float()
        parts = []
        with torch.inference_mode():
            for start in range(0, len(prepared), chunk):
                inputs = backend.encode(prepared[start: start + chunk]).to(model.device)
                inputs["pixel_values"] = inputs["pixel_values"].float()
                parts.append(self.family.tower(holder, inputs).float())
        del holder
        return torch.cat(parts)

    def decode_steps(self, backend, prepared) -> None:
        """``generate`` at ``--runner-batch`` with ``--decode-tokens`` new tokens, each step stamped
        (:class:`gpu_decode.Steps`: events on the stream, no host sync added), each setting after a
        call of its own (warm kernels; for the static cache the compile, timed): transformers'
        attention and the grouped decode attention with the dynamic cache, and (``--static-cache``)
        the grouped attention with the static cache, as the backend calls it (its length bucketed,
        the stop check deferred)."""
        from candlebench.inference.decode_speedups import deferred_stop, static_cache_kwargs

        batch, n = self.args.runner_batch, self.args.decode_tokens
        inputs = backend.encode(prepared[:batch]).to(backend.model.device)
        text = backend.model.config.get_text_config()
        own = text._attn_implementation  # the grouped decode attention where it applies

        def run(cache: dict) -> tuple[float, float]:
            steps = Steps(self.device)
            steps.start()
            with torch.inference_mode(), deferred_stop(("cuda",) if backend.deferred_stop else ()):
                backend.model.generate(**inputs, max_new_tokens=n, min_new_tokens=n, do_sample=False, temperature=None,
                                       top_p=None, top_k=None, pad_token_id=backend.pad_id, logits_processor=[steps],
                                       **cache)
            return steps.summary()

        static = static_cache_kwargs(inputs["input_ids"].shape[1], n)
        settings = [("sdpa, dynamic cache", "sdpa", {}), (f"{own}, dynamic cache", own, {})]
        settings += [(f"{own}, static cache", own, static)] * self.args.static_cache
        parts = []
        try:
            for label, impl, cache in settings:
                text._attn_implementation = impl
                if cache:  # the compile's recompiles and skipped CUDA graphs said aloud
                    torch._logging.set_logs(recompiles=True, perf_hints=True)
                try:
                    _, first = timed(lambda: run(cache), self.device)
                finally:
                    torch._logging.set_logs()
                to_first, step = run(cache)
                parts.append(f"{label} (first call {first:.1f} s): first token after {to_first:.3f} s, then "
                             f"{step * 1000:.1f} ms a step")
        finally:
            text._attn_implementation = own
        print(f"{self.name:<12}decode at batch {batch}, {n} new tokens: " + "; ".join(parts))

    def split(self, model, backend, prepared, split_batch: int, settings: str) -> None:
        """One batch of ``split_batch``: the vision tower alone, the rope index alone, the prefill
        forward pass less both (the language model), the rest of ``generate`` from inputs encoded
        ahead (decode); the batch encode apart (the runner does it in its encode thread, off the
        GPU's path)."""
        t_encode = self.fastest(lambda: backend.encode(prepared[:split_batch]), 1)
        encoded = backend.encode(prepared[:split_batch])
        inputs = encoded.to(model.device)
        with torch.inference_mode():
            t_vision = self.fastest(lambda: self.family.tower(model, inputs), 1)
            t_rope = self.fastest(lambda: rope_index(model, inputs), 1) if rope_index(model, inputs) else 0.0
            t_prefill = max(t_vision + t_rope, self.fastest(lambda: model(**inputs, logits_to_keep=1), 1))
        t_all = max(t_prefill, self.fastest(lambda: backend.generate(prepared[:split_batch], encoded), 1))
        f = self.flops
        parts = (("vision", f.vision, t_vision), ("prefill", f.prefill, t_prefill - t_vision - t_rope),
                 ("decode", f.decode, t_all - t_prefill))
        print(f"{self.name:<12}split of one batch of {split_batch} ({settings}, pixels ahead): "
              + "; ".join(split_part(label, fl * split_batch, t, self.peak) for label, fl, t in parts)
              + f"; rope index {t_rope:.3f} s (in the prefill's call); batch encode {t_encode:.3f} s apart (the runner's "
              "encode thread)")


def split_part(label: str, flops: float, seconds: float, peak: float) -> str:
    """One part of the split: its time and the rate it ran at; a part whose time is a difference
    floored at 0 (its pass timed no slower than the parts before it: timing noise, at tiny sizes)
    has no rate, not one divided by nothing (it printed millions of TFLOPS)."""
    if seconds <= 0:
        return f"{label} {seconds:.3f} s, within the timing noise"
    rate = flops / seconds / 1e12
    return f"{label} {seconds:.3f} s, {rate:.2f} TFLOPS ({rate / peak:.1%} of (a))"


if __name__ == "__main__":
    main()
