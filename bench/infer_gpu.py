"""GPU throughput of the transformers backend's model call at real checkpoint sizes, no download.

    python bench/infer_gpu.py [--models 7b 3b] [--batch-sizes 1 4 16 32] [--new-tokens 8]
    python bench/infer_gpu.py --models tiny --device cpu      # a smoke test of this script

Builds Qwen2.5-VL-7B / -3B from their published configs with random bf16 weights (throughput does
not depend on the weights' values), then times prefill-heavy requests shaped like the forecast
task: two 800x600 charts (smart-resized to 812x588: 609 visual tokens each after the 2x2 merge)
plus a ~450-token prompt, and a fixed output length (min = max new tokens, EOS ignored). Inputs
are built directly as token ids and patch tensors, so no tokenizer or processor is needed.
Prints samples/s per batch size and the fraction of the GPU's dense bf16 peak reached, counting
2·params FLOPs per token through the language model and the vision tower's own per-patch cost.
"""

from __future__ import annotations

import argparse
import time

import torch

# Published configs (config.json of Qwen/Qwen2.5-VL-{7B,3B}-Instruct), the parts that size compute.
CONFIGS = {
    "7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, vocab_size=152064, rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]},
               vision=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                           fullatt_block_indexes=[7, 15, 23, 31], window_size=112, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2), tie=False),
    "3b": dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
               num_key_value_heads=2, vocab_size=151936, rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]},
               vision=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=2048,
                           fullatt_block_indexes=[7, 15, 23, 31], window_size=112, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2), tie=True),
    # CPU smoke test of this script only.
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, vocab_size=152064, rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]},
                 vision=dict(depth=2, hidden_size=64, intermediate_size=128, num_heads=2, out_hidden_size=64,
                             fullatt_block_indexes=[1], window_size=112, patch_size=14,
                             spatial_merge_size=2, temporal_patch_size=2), tie=False),
}
IMAGE_PAD, VISION_START, VISION_END = 151655, 151652, 151653
GRID = (1, 42, 58)  # an 800x600 chart smart-resized to 588x812 (multiples of 28): 42x58 patches of 14
PROMPT_TOKENS = 450
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}


def build_model(name: str, device: str):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    spec = dict(CONFIGS[name])
    vision = spec.pop("vision")
    tie = spec.pop("tie")
    config = Qwen2_5_VLConfig(
        text_config=dict(spec, max_position_embeddings=32768, rope_theta=1e6, tie_word_embeddings=tie),
        vision_config=vision,
        image_token_id=IMAGE_PAD, vision_start_token_id=VISION_START, vision_end_token_id=VISION_END,
        tie_word_embeddings=tie,
    )
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(config)
    model = model.to_empty(device=device).to(dtype)
    generator = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02, generator=generator)
    return model.eval()


def inputs_for(batch: int, device: str, patch_dim: int) -> dict:
    t, h, w = GRID
    visual = t * h * w // 4
    row = [1] * PROMPT_TOKENS
    for _ in range(2):
        row += [VISION_START] + [IMAGE_PAD] * visual + [VISION_END]
    row += [2] * 8
    ids = torch.tensor([row] * batch, device=device)
    n_patches = t * h * w
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "pixel_values": torch.randn(2 * batch * n_patches, patch_dim, device=device),
        "image_grid_thw": torch.tensor([GRID] * (2 * batch), device=device),
    }


def flops_per_sample(model, prompt_len: int, new_tokens: int) -> float:
    lm = sum(p.numel() for n, p in model.named_parameters() if not n.startswith(("model.visual", "visual")))
    vision = sum(p.numel() for n, p in model.named_parameters() if n.startswith(("model.visual", "visual")))
    patches = 2 * GRID[0] * GRID[1] * GRID[2]
    return 2.0 * lm * (prompt_len + new_tokens) + 2.0 * vision * patches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["7b", "3b"], choices=sorted(CONFIGS))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 4, 16, 32])
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    peak = next((v for k, v in PEAK_BF16_TFLOPS.items() if k in gpu), None)
    print(f"device: {gpu}; dense bf16 peak used: {peak or 'unknown'} TFLOPS; torch {torch.__version__}")
    print(f"{'model':<6}{'batch':>6}{'samples/s':>12}{'tokens/s (prefill)':>20}{'TFLOPS':>10}{'of peak':>9}")
    for name in args.models:
        model = build_model(name, args.device)
        vision_cfg = model.config.vision_config
        patch_dim = 3 * vision_cfg.temporal_patch_size * vision_cfg.patch_size**2
        for batch in args.batch_sizes:
            inputs = inputs_for(batch, args.device, patch_dim)
            prompt_len = inputs["input_ids"].shape[1]
            kwargs = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, do_sample=False,
                          pad_token_id=0, eos_token_id=None)
            try:
                with torch.inference_mode():
                    model.generate(**inputs, **kwargs)  # warm-up: kernels, allocator
                    if args.device == "cuda":
                        torch.cuda.synchronize()
                    start = time.perf_counter()
                    for _ in range(args.repeats):
                        model.generate(**inputs, **kwargs)
                    if args.device == "cuda":
                        torch.cuda.synchronize()
            except torch.OutOfMemoryError:
                print(f"{name:<6}{batch:>6}{'OOM':>12}")
                torch.cuda.empty_cache()
                break
            seconds = (time.perf_counter() - start) / args.repeats
            rate = batch / seconds
            tflops = flops_per_sample(model, prompt_len, args.new_tokens) * rate / 1e12
            share = f"{tflops / peak:.1%}" if peak else "–"
            print(f"{name:<6}{batch:>6}{rate:>12.2f}{batch * prompt_len / seconds:>20.0f}{tflops:>10.1f}{share:>9}")
        del model
        if args.device == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
