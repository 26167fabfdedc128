"""The tiny CLIP tower of both LLaVA layouts: its vision config and image processor, and a full
``CLIPModel`` checkpoint (what original LLaVA checkpoints reference by path)."""

from __future__ import annotations

from pathlib import Path

from candlebench.inference.tiny.shared import IMAGE_SIZE, PATCH, SEED, VISION_HIDDEN, redraw_weights, torch_setup, vision_dims


def clip_vision_config(**extra):
    from transformers import CLIPVisionConfig

    return CLIPVisionConfig(**vision_dims(), image_size=IMAGE_SIZE, patch_size=PATCH, projection_dim=VISION_HIDDEN, **extra)


def clip_image_processor():
    from transformers import CLIPImageProcessor

    return CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
    )


def build_tiny_clip(dest: Path) -> Path:
    """A full tiny CLIP checkpoint (text + vision towers, ``CLIPModel``), laid out like
    ``openai/clip-vit-large-patch14-336`` (the tower original LLaVA checkpoints reference)."""
    from transformers import CLIPConfig, CLIPModel

    torch = torch_setup()
    dest = Path(dest)
    vision = clip_vision_config().to_dict()
    text = dict(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=32, projection_dim=VISION_HIDDEN,
                bos_token_id=0, eos_token_id=1, pad_token_id=1)
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=VISION_HIDDEN)
    model = CLIPModel(config).to(torch.float32).eval()  # its config keeps no dtype, as the original tower's
    redraw_weights(model, SEED + 7)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    clip_image_processor().save_pretrained(dest)
    return dest
