"""The real-size random-weight models of bench/infer_gpu.py, one :class:`Family` per transformers
model class: the published configs' values that size compute (config.json and
preprocessor_config.json of each checkpoint on the Hub, written here since nothing can be
downloaded on the GPU machines), the processor at the checkpoint's image settings over the tiny
fixture's tokenizer and chat template, the vision tower called alone, and its FLOPs.

What each family's transformers code does differently (docs/inference.md says which levers apply):

* Qwen2.5-VL: patch 14, window attention (112 px windows) in all but 4 of 32 vision layers,
  a gated SiLU MLP of width 3,420; M-RoPE over the merged patches.
* Qwen3-VL: patch 16, no windows (every layer attends over the whole image), learned position
  embeddings bilinearly interpolated to each grid, an ungated GELU MLP of width 4,304, and
  deepstack: the outputs of vision layers 8, 16 and 24 go through their own mergers and are added
  to the first three language-model layers' hidden states at the image positions.
* Gemma 3: SigLIP at a fixed 896x896 (4,096 patches per image, full attention in 27 layers, one
  dense batch: no varlen packing to do), average-pooled 4x4 to 256 tokens per image; pan-and-scan
  (off in the published processor, and here) would cut an 800x600 chart into 2 crops besides the
  whole: three times the tower's work per chart; the language model alternates five sliding-window
  (1,024) layers with one global, and attends bidirectionally within each image.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

# config.json of Qwen/Qwen2.5-VL-{7B,3B}-Instruct
QWEN2_5_VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                      fullatt_block_indexes=[7, 15, 23, 31], window_size=112, patch_size=14, spatial_merge_size=2,
                      temporal_patch_size=2)
# config.json of Qwen/Qwen3-VL-8B-Instruct
QWEN3_VISION = dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, num_position_embeddings=2304,
                    deepstack_visual_indexes=[8, 16, 24], patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                    hidden_act="gelu_pytorch_tanh")
# config.json of google/gemma-3-12b-it (SigLIP-So400m at 896 px)
SIGLIP = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16, image_size=896,
              patch_size=14, vision_use_head=False)


@dataclass(frozen=True)
class Model:
    family: str
    text: dict  # the language model's config
    vision: dict  # the vision tower's config
    tie: bool = False


MODELS = {
    "7b": Model("qwen2_5_vl", dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                                   num_attention_heads=28, num_key_value_heads=4, vocab_size=152064),
                dict(QWEN2_5_VISION, out_hidden_size=3584)),
    "3b": Model("qwen2_5_vl", dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
                                   num_attention_heads=16, num_key_value_heads=2, vocab_size=151936),
                dict(QWEN2_5_VISION, out_hidden_size=2048), tie=True),
    "qwen3-8b": Model("qwen3_vl", dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                                       num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                       vocab_size=151936),
                      dict(QWEN3_VISION, out_hidden_size=4096)),
    "gemma3-12b": Model("gemma3", dict(hidden_size=3840, intermediate_size=15360, num_hidden_layers=48,
                                       num_attention_heads=16, num_key_value_heads=8, head_dim=256,
                                       query_pre_attn_scalar=256, sliding_window=1024, vocab_size=262208,
                                       layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 8),
                        dict(SIGLIP), tie=True),
    # CPU runs of the script only: real-size images and prompts, two-layer models. Vision MLP widths
    # off the multiple of 128, as the real towers' 3,420 and 4,304: mlp_pad runs.
    "tiny": Model("qwen2_5_vl", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=2, num_key_value_heads=1, vocab_size=152064),
                  dict(QWEN2_5_VISION, depth=2, hidden_size=64, intermediate_size=120, num_heads=2, out_hidden_size=64,
                       fullatt_block_indexes=[1])),
    "tiny-qwen3": Model("qwen3_vl", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                                         vocab_size=151936),
                        dict(QWEN3_VISION, depth=2, hidden_size=64, intermediate_size=120, num_heads=2,
                             out_hidden_size=64, deepstack_visual_indexes=[0])),
    "tiny-gemma3": Model("gemma3", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                                        query_pre_attn_scalar=32, sliding_window=1024, vocab_size=262208,
                                        layer_types=["sliding_attention", "full_attention"]),
                         dict(SIGLIP, hidden_size=64, intermediate_size=120, num_hidden_layers=2,
                              num_attention_heads=2), tie=True),
}


class Family:
    """One model class: how the bench builds, feeds and counts it."""

    fixture: str  # the tiny fixture whose tokenizer and chat template the bench uses
    image_token: str
    real_vocabulary = False  # whether --tokenizer (Qwen's vocabulary) counts this family's text

    def processor(self, work: Path, tokenizer_dir: str | None = None) -> Any:
        raise NotImplementedError

    def config(self, model: Model, processor: Any, tiny: bool) -> Any:
        raise NotImplementedError

    def tower(self, model: Any, inputs: Any) -> Any:
        """The vision tower (and its projection) alone over ``inputs``' images."""
        raise NotImplementedError

    def attention_modules(self, model: Any) -> list:
        raise NotImplementedError

    def patches(self, one: Any) -> list[int]:
        """Patches per image of the processor output ``one``."""
        return [int(t * h * w) for t, h, w in one["image_grid_thw"].tolist()]

    def attention_flops(self, vision: Any, patches: list[int]) -> float:
        """QK^T and AV of the tower over images of ``patches`` patches: every layer over the whole image."""
        return sum(4 * vision.hidden_size * n * n * self.depth(vision) for n in patches)

    def depth(self, vision: Any) -> int:
        return vision.depth

    def vision_params(self, name: str) -> bool:
        return ".visual." in f".{name}"

    def merged(self, name: str) -> bool:
        """Parameters that run on the merged tokens (1 in 4 patches), not on every patch."""
        return "merger" in name

    def describe(self, one: Any) -> str:
        return f"{one['image_grid_thw'].tolist()} patch grids"


class Qwen(Family):
    image_token = "<|image_pad|>"
    real_vocabulary = True  # Qwen's BPE (bench/qwen_vocab.py builds it) counts the text with --tokenizer

    def rebuilt(self, tiny: Any, image: Any, tokenizer_dir: str | None) -> Any:
        """The fixture's processor class and chat template over the checkpoint's image processor
        and, given ``tokenizer_dir``, Qwen's real tokenizer (the processor takes its image token
        ids from the tokenizer it is built with)."""
        from transformers import AutoTokenizer

        tokenizer = (AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True, padding_side="left")
                     if tokenizer_dir else tiny.tokenizer)
        return type(tiny)(image_processor=image, tokenizer=tokenizer, video_processor=tiny.video_processor,
                          chat_template=tiny.chat_template)

    def ids(self, processor: Any) -> dict:
        tok = processor.tokenizer
        return {k: tok.convert_tokens_to_ids(t) for k, t in
                (("image_token_id", "<|image_pad|>"), ("vision_start_token_id", "<|vision_start|>"),
                 ("vision_end_token_id", "<|vision_end|>"), ("video_token_id", "<|video_pad|>"))}

    def tower(self, model: Any, inputs: Any) -> Any:
        return model.model.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"]).pooler_output

    def attention_modules(self, model: Any) -> list:
        return [b.attn for b in model.model.visual.blocks]


class Qwen25(Qwen):
    fixture = "qwen2_5_vl"

    def processor(self, work: Path, tokenizer_dir: str | None = None) -> Any:
        from transformers import AutoProcessor, Qwen2VLImageProcessor

        import candlebench.inference.tiny.builders as tm

        processor = AutoProcessor.from_pretrained(tm.build_tiny_qwen2_5_vl(work / "tiny-qwen"))
        # preprocessor_config.json: an 800x600 chart becomes 812x588
        image = Qwen2VLImageProcessor(size={"shortest_edge": 3136, "longest_edge": 12845056}, patch_size=14,
                                      merge_size=2, temporal_patch_size=2)
        return self.rebuilt(processor, image, tokenizer_dir)

    def config(self, model: Model, processor: Any, tiny: bool) -> Any:
        from transformers import Qwen2_5_VLConfig

        rope = {"type": "mrope", "mrope_section": [4, 6, 6] if tiny else [16, 24, 24]}
        return Qwen2_5_VLConfig(text_config=dict(model.text, max_position_embeddings=32768, rope_theta=1e6,
                                                 rope_scaling=rope, tie_word_embeddings=model.tie),
                                vision_config=model.vision, tie_word_embeddings=model.tie, **self.ids(processor))

    def attention_flops(self, vision: Any, patches: list[int]) -> float:
        full = len(vision.fullatt_block_indexes)
        per_window = (vision.window_size // vision.patch_size) ** 2
        return sum(4 * vision.hidden_size * (n * n * full + n * min(n, per_window) * (vision.depth - full))
                   for n in patches)


class Qwen3(Qwen):
    fixture = "qwen3_vl"

    def processor(self, work: Path, tokenizer_dir: str | None = None) -> Any:
        from transformers import AutoProcessor, Qwen2VLImageProcessor

        import candlebench.inference.tiny.builders as tm

        processor = AutoProcessor.from_pretrained(tm.build_tiny_qwen3_vl(work / "tiny-qwen3"))
        # preprocessor_config.json: an 800x600 chart becomes 800x608 (multiples of 32)
        image = Qwen2VLImageProcessor(size={"shortest_edge": 65536, "longest_edge": 16777216}, patch_size=16,
                                      merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
        return self.rebuilt(processor, image, tokenizer_dir)

    def config(self, model: Model, processor: Any, tiny: bool) -> Any:
        from transformers import Qwen3VLConfig

        rope = {"rope_type": "default", "rope_theta": 5_000_000.0, "mrope_interleaved": True,
                "mrope_section": [4, 6, 6] if tiny else [24, 20, 20]}
        return Qwen3VLConfig(text_config=dict(model.text, max_position_embeddings=262144, rope_parameters=rope,
                                              tie_word_embeddings=model.tie),
                             vision_config=model.vision, tie_word_embeddings=model.tie, **self.ids(processor))


class Gemma3(Family):
    fixture = "gemma3"
    image_token = "<image_soft_token>"

    def processor(self, work: Path, tokenizer_dir: str | None = None) -> Any:
        from transformers import AutoProcessor, Gemma3ImageProcessor, Gemma3Processor

        import candlebench.inference.tiny.builders as tm

        tiny = AutoProcessor.from_pretrained(tm.build_tiny_gemma3(work / "tiny-gemma3"))
        # preprocessor_config.json / processor_config.json: 896x896, 256 tokens per image, pan-and-scan off
        image = Gemma3ImageProcessor(size={"height": 896, "width": 896}, image_mean=[0.5] * 3, image_std=[0.5] * 3,
                                     do_pan_and_scan=False)
        return Gemma3Processor(image_processor=image, tokenizer=tiny.tokenizer, chat_template=tiny.chat_template,
                               image_seq_length=256)

    def config(self, model: Model, processor: Any, tiny: bool) -> Any:
        from transformers import Gemma3Config

        ids = processor.tokenizer.convert_tokens_to_ids
        # rope theta and the global layers' linear scaling change no FLOPs: left at their defaults
        return Gemma3Config(text_config=dict(model.text, max_position_embeddings=131072,
                                             tie_word_embeddings=model.tie),
                            vision_config=model.vision, mm_tokens_per_image=256, tie_word_embeddings=model.tie,
                            boi_token_index=ids("<start_of_image>"), eoi_token_index=ids("<end_of_image>"),
                            image_token_index=ids(self.image_token))

    def tower(self, model: Any, inputs: Any) -> Any:
        return model.model.get_image_features(pixel_values=inputs["pixel_values"]).pooler_output

    def attention_modules(self, model: Any) -> list:
        tower = model.model.vision_tower
        tower = getattr(tower, "vision_model", tower)  # transformers < 5.19 nest the transformer one level down
        return [layer.self_attn for layer in tower.encoder.layers]

    def patches(self, one: Any) -> list[int]:
        _, _, height, width = one["pixel_values"].shape
        return [(height // 14) * (width // 14)] * int(one["pixel_values"].shape[0])

    def depth(self, vision: Any) -> int:
        return vision.num_hidden_layers

    def vision_params(self, name: str) -> bool:
        return "vision_tower." in name or "multi_modal_projector." in name

    def merged(self, name: str) -> bool:
        return False  # the projector's one matmul runs on 256 of 4,096 positions: counted on all (+0.1%)

    def describe(self, one: Any) -> str:
        return f"{int(one['pixel_values'].shape[0])} images at {list(one['pixel_values'].shape[2:])} px"


FAMILIES: dict[str, Family] = {"qwen2_5_vl": Qwen25(), "qwen3_vl": Qwen3(), "gemma3": Gemma3()}


def build(name: str, device: str, processor: Any) -> Any:
    """``name``'s model with random weights, built in place on ``device`` (bf16 on CUDA)."""
    from transformers import AutoModelForImageTextToText

    spec = MODELS[name]
    config = FAMILIES[spec.family].config(spec, processor, tiny=name.startswith("tiny"))
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=dtype, attn_implementation="sdpa")
    model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    return model.eval()
