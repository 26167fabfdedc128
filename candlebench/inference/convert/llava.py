"""Convert an original LLaVA-repo checkpoint (haotian-liu/LLaVA, ``LlavaLlamaForCausalLM``) to the
transformers ``LlavaForConditionalGeneration`` layout, loadable by transformers and vLLM.

An original checkpoint holds the language model, the projector and (usually) no vision tower:
``config.json`` names the CLIP tower in ``mm_vision_tower`` (a hub id such as
``openai/clip-vit-large-patch14-336`` or a local directory). Key mapping::

    model.embed_tokens.*                   -> language_model.model.embed_tokens.*
    model.layers.*                         -> language_model.model.layers.*
    model.norm.*                           -> language_model.model.norm.*
    lm_head.*                              -> language_model.lm_head.*
    model.mm_projector.0.*                 -> multi_modal_projector.linear_1.*
    model.mm_projector.2.*                 -> multi_modal_projector.linear_2.*
    model.mm_projector.{weight,bias}       -> multi_modal_projector.linear_1.* (``linear``)
    (CLIP) vision_model.*                  -> vision_tower.vision_model.*
    model.vision_tower.vision_tower.vision_model.*   (a tower fine-tuned and saved inside the
                                           checkpoint) -> vision_tower.vision_model.*, preferred
                                           over the separate CLIP checkpoint

The output uses the names transformers 5.x itself writes for LLaVA (``language_model.model.*``,
``multi_modal_projector.*``) with the vision tower nested as ``vision_tower.vision_model.*``, the
spelling vLLM expects (transformers loads it too). The tokenizer gets an ``<image>`` token (and a
``<pad>`` token if it has none); the embedding and output matrices grow by the new rows, initialised
to the mean of the existing rows. A chat template is attached: LLaVA-1.5's ``vicuna_v1`` format, or a
Llama-3 header format when the tokenizer has ``<|start_header_id|>``.

Projectors (``mm_projector_type``): ``mlp2x_gelu`` maps onto transformers' two-layer projector as
is; ``linear`` / ``mlp1x_gelu`` (one Linear) and ``identity`` become the same two-layer projector
with an identity second layer (and first, for ``identity``) and no activation between
(``projector_hidden_act="linear"``), which computes exactly the original. ``mlpNx_gelu`` with
N >= 3 has no transformers equivalent (a clear error).

The language model's config is taken whole from the checkpoint, including the rotary embedding:
checkpoints written by transformers 4.x spell it ``rope_theta`` / ``rope_scaling`` (FinLLaVA's
Llama-3 base: theta 500,000; Llama-3.1: ``llama3`` scaling), which 5.x folds into
``rope_parameters``; dropping them would silently run Llama-3 at theta 10,000.

Also supported: ``image_aspect_ratio`` ``pad`` (pad to a square with the mean colour, as LLaVA-1.5
does) or ``square``/unset; ``mm_vision_select_feature`` ``patch`` or ``cls_patch``. Not supported
(clear error): LLaVA-NeXT ``anyres`` checkpoints (``image_newline``), ``mm_use_im_start_end``.

Chat format: Llama-3 checkpoints get LLaVA's ``llava_llama_3`` conversation — a system turn (the
conversation's own system prompt unless the messages bring one), user turn with the images first,
``<|eot_id|>`` after each turn — and ``<|eot_id|>`` among the end-of-sequence ids, so decoding
stops at the end of the answer. Not verifiable offline: which conversation FinLLaVA was trained
with (its repository names LLaVA-NeXT's ``llava_llama_3``) and its exact system prompt; pass
``chat_template=`` to override.

Public API: :func:`convert_llava`, :class:`ConversionError`, :data:`VICUNA_V1_TEMPLATE`,
:data:`LLAMA3_TEMPLATE`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Iterator

__all__ = ["convert_llava", "ConversionError", "VICUNA_V1_TEMPLATE", "LLAMA3_TEMPLATE", "LLAMA3_SYSTEM"]

IMAGE_TOKEN = "<image>"
PAD_TOKEN = "<pad>"
SHARD_BYTES = 4 * 1024**3

VICUNA_V1_SYSTEM = (
    "A chat between a curious human and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the human's questions."
)

# LLaVA-1.5 "vicuna_v1": "<system> USER: <image>\n<image>\nquestion ASSISTANT:" (images first).
VICUNA_V1_TEMPLATE = (
    "{% set ns = namespace(system=\"" + VICUNA_V1_SYSTEM + "\") %}"
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{% if message['content'] is string %}{% set ns.system = message['content'] %}"
    "{% else %}{% set ns.system = message['content'][0]['text'] %}{% endif %}"
    "{% endif %}{% endfor %}"
    "{{ ns.system }} "
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ message['role'].upper() }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' or 'image' in item %}<image>\n{% endif %}{% endfor %}"
    "{% for item in message['content'] %}{% if item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% else %} {% endif %}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)

# LLaVA-NeXT's conv_llava_llama_3 system prompt.
LLAMA3_SYSTEM = (
    "You are a helpful language and vision assistant. You are able to understand the visual content "
    "that the user provides, and assist the user with a variety of tasks using natural language."
)

# LLaVA's "llava_llama_3" conversation (Llama-3 headers, a system turn), images first in the user turn.
LLAMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% if messages[0]['role'] != 'system' %}"
    "<|start_header_id|>system<|end_header_id|>\n\n" + LLAMA3_SYSTEM + "<|eot_id|>"
    "{% endif %}"
    "{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}"
    "{% for item in message['content'] %}{% if item['type'] == 'image' or 'image' in item %}<image>\n{% endif %}{% endfor %}"
    "{% for item in message['content'] %}{% if item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}{% endfor %}"
    "{% endif %}<|eot_id|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


class ConversionError(ValueError):
    """The source checkpoint cannot be converted (missing file, unsupported setting)."""


# --- reading the source ------------------------------------------------------------------------------


def _read_json(path: Path, what: str) -> dict:
    if not path.is_file():
        raise ConversionError(f"{what} not found: {path}")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConversionError(f"{what} is not valid JSON: {path}: {exc}") from exc


def _weight_files(directory: Path, what: str) -> list[Path]:
    """The weight files of a checkpoint directory: safetensors preferred, then PyTorch .bin; a
    sharded checkpoint is read through its index."""
    for index_name, single in (("model.safetensors.index.json", "model.safetensors"),
                               ("pytorch_model.bin.index.json", "pytorch_model.bin")):
        index = directory / index_name
        if index.is_file():
            weight_map = _read_json(index, f"{what} weight index")["weight_map"]
            files = [directory / name for name in sorted(set(weight_map.values()))]
            missing = [str(f) for f in files if not f.is_file()]
            if missing:
                raise ConversionError(f"{what}: shard(s) listed in {index} are missing: {', '.join(missing)}")
            return files
        if (directory / single).is_file():
            return [directory / single]
    files = sorted(directory.glob("*.safetensors")) or sorted(directory.glob("pytorch_model*.bin"))
    if not files:
        raise ConversionError(
            f"{what}: no weights in {directory} (expected model*.safetensors or pytorch_model*.bin)"
        )
    return files


def _iter_tensors(files: list[Path]) -> Iterator[tuple[str, "object"]]:
    import torch

    for path in files:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), "pt") as fh:
                for key in fh.keys():
                    yield key, fh.get_tensor(key)
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
            yield from state.items()
            del state


def _resolve_vision_tower(src: Path, config: dict, vision_tower: Path | None) -> Path:
    if vision_tower is not None:
        path = Path(vision_tower)
        if not path.is_dir():
            raise ConversionError(f"vision tower directory not found: {path}")
        return path
    name = config.get("mm_vision_tower") or config.get("vision_tower")
    if not name:
        raise ConversionError(f"{src / 'config.json'} has no mm_vision_tower; pass vision_tower=")
    for candidate in (Path(name), src / name):
        if candidate.is_dir():
            return candidate
    raise ConversionError(
        f"the vision tower {name!r} named by mm_vision_tower in {src / 'config.json'} is not a local "
        f"directory; download it (e.g. huggingface-cli download {name} --local-dir DIR) and pass "
        "vision_tower=DIR"
    )


def projector_depth(src: Path, config: dict) -> int:
    """Linear layers of the original projector: identity 0, linear / mlp1x_gelu 1, mlpNx_gelu N."""
    projector = config.get("mm_projector_type", "linear")
    if projector == "identity":
        return 0
    if projector == "linear":
        return 1
    found = re.fullmatch(r"mlp(\d+)x_gelu", str(projector))
    if found and 1 <= int(found.group(1)) <= 2:
        return int(found.group(1))
    raise ConversionError(
        f"{src / 'config.json'}: mm_projector_type={projector!r} is not supported: transformers' "
        "LlavaMultiModalProjector holds at most two linear layers with one activation "
        "(identity, linear, mlp1x_gelu and mlp2x_gelu convert)"
    )


def _check_supported(src: Path, config: dict) -> None:
    where = src / "config.json"
    projector_depth(src, config)
    aspect = config.get("image_aspect_ratio") or "square"
    if str(aspect).startswith("anyres") or config.get("mm_patch_merge_type", "flat") != "flat":
        raise ConversionError(
            f"{where}: image_aspect_ratio={aspect!r} / mm_patch_merge_type="
            f"{config.get('mm_patch_merge_type')!r} is a LLaVA-NeXT (anyres) checkpoint; this "
            "converter handles LLaVA-1.5 layouts only (LlavaNextForConditionalGeneration needs "
            "image_newline and grid pinpoints)"
        )
    if aspect not in ("pad", "square"):
        raise ConversionError(f"{where}: image_aspect_ratio={aspect!r} is not supported ('pad' or 'square')")
    if config.get("mm_use_im_start_end"):
        raise ConversionError(
            f"{where}: mm_use_im_start_end=true (<im_start>/<im_end> around image features) has no "
            "equivalent in transformers' LLaVA"
        )
    feature = config.get("mm_vision_select_feature", "patch")
    if feature not in ("patch", "cls_patch"):
        raise ConversionError(f"{where}: mm_vision_select_feature={feature!r} is not supported")


# --- conversion ----------------------------------------------------------------------------------------


_TEXT_RENAMES = [
    (re.compile(r"^model\.mm_projector\.0\."), "multi_modal_projector.linear_1."),
    (re.compile(r"^model\.mm_projector\.2\."), "multi_modal_projector.linear_2."),
    (re.compile(r"^model\.mm_projector\.(weight|bias)$"), r"multi_modal_projector.linear_1.\1"),
    (re.compile(r"^model\.vision_tower\.vision_tower\.vision_model\."), "vision_tower.vision_model."),
    (re.compile(r"^lm_head\."), "language_model.lm_head."),
    (re.compile(r"^model\.(embed_tokens|layers|norm)\b"), r"language_model.model.\1"),
]


def _rename(key: str) -> str | None:
    for pattern, repl in _TEXT_RENAMES:
        if pattern.match(key):
            return pattern.sub(repl, key, count=1)
    if key.startswith("model.image_newline"):
        raise ConversionError("checkpoint holds model.image_newline (LLaVA-NeXT); not supported")
    if "rotary_emb.inv_freq" in key:
        return None  # buffer saved by old transformers versions
    return None


def convert_llava(src: Path, dst: Path, vision_tower: Path | None = None, *,
                  chat_template: str | None = None, overwrite: bool = False) -> Path:
    """Convert the original-layout LLaVA checkpoint in ``src`` into ``dst`` (transformers
    ``LlavaForConditionalGeneration`` layout, with processor, tokenizer and chat template).

    ``vision_tower`` is the CLIP checkpoint directory; by default the ``mm_vision_tower`` path from
    ``src/config.json`` is used when it is a local directory. ``chat_template`` overrides the
    template chosen from the tokenizer. ``dst`` must not exist or be empty unless ``overwrite``.
    Returns ``dst``. Raises :class:`ConversionError` naming the path for anything missing or
    unsupported.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import (
        AutoConfig,
        AutoTokenizer,
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaProcessor,
    )

    src, dst = Path(src), Path(dst)
    if not src.is_dir():
        raise ConversionError(f"source checkpoint directory not found: {src}")
    config = _read_json(src / "config.json", "LLaVA config")
    _check_supported(src, config)
    tower_dir = _resolve_vision_tower(src, config, vision_tower)
    tower_config_raw = _read_json(tower_dir / "config.json", "vision tower config")

    if dst.exists() and any(dst.iterdir()):
        if not overwrite:
            raise ConversionError(f"destination is not empty: {dst} (pass overwrite=True)")
        shutil.rmtree(dst)
    dst.mkdir(parents=True, exist_ok=True)

    # --- configs
    if tower_config_raw.get("model_type") == "clip":
        vision_config = AutoConfig.from_pretrained(tower_dir).vision_config
    elif tower_config_raw.get("model_type") == "clip_vision_model":
        vision_config = CLIPVisionConfig.from_pretrained(tower_dir)
    else:
        raise ConversionError(
            f"{tower_dir / 'config.json'}: model_type={tower_config_raw.get('model_type')!r}; "
            "expected a CLIP checkpoint ('clip' or 'clip_vision_model')"
        )
    mm_hidden = config.get("mm_hidden_size")
    if mm_hidden is not None and int(mm_hidden) != vision_config.hidden_size:
        raise ConversionError(
            f"{src / 'config.json'}: mm_hidden_size={mm_hidden} but the vision tower in {tower_dir} "
            f"has hidden_size={vision_config.hidden_size}"
        )
    # 5.x's own keys plus the rotary keys 4.x wrote, which LlamaConfig folds into rope_parameters.
    text_keys = set(LlamaConfig().to_dict()) | {"rope_theta", "rope_scaling"}
    text_dict = {k: v for k, v in config.items() if k in text_keys and k not in ("architectures", "model_type")}
    dtype_name = config.get("torch_dtype") or config.get("dtype") or "float16"
    text_config = LlamaConfig(**text_dict)

    # --- tokenizer
    try:
        # With the Llama config given, transformers does not read src/config.json (model_type
        # llava_llama) as a generic config, which fails on Llama-3.1 rope_scaling.
        tokenizer = AutoTokenizer.from_pretrained(src, config=text_config)
    except Exception as exc:  # noqa: BLE001 (re-raised with the path)
        raise ConversionError(f"cannot load the tokenizer from {src}: {exc}") from exc
    added = []
    if IMAGE_TOKEN not in tokenizer.get_vocab():
        added.append(IMAGE_TOKEN)
    new_special = {"additional_special_tokens": [IMAGE_TOKEN]} if added else {}
    if tokenizer.pad_token is None:
        new_special["pad_token"] = PAD_TOKEN
    if new_special:
        try:  # transformers 5.x: keep the tokenizer's existing extra special tokens
            tokenizer.add_special_tokens(new_special, replace_extra_special_tokens=False)
        except TypeError:  # transformers 4.x
            tokenizer.add_special_tokens(new_special, replace_additional_special_tokens=False)
    if chat_template is None:
        chat_template = LLAMA3_TEMPLATE if "<|start_header_id|>" in tokenizer.get_vocab() else VICUNA_V1_TEMPLATE
    tokenizer.chat_template = chat_template
    tokenizer.padding_side = "left"
    new_vocab = max(len(tokenizer), text_config.vocab_size)

    # --- weights
    out: dict[str, torch.Tensor] = {}
    seen_tower_inside = False
    for key, tensor in _iter_tensors(_weight_files(src, "LLaVA checkpoint")):
        new = _rename(key)
        if new is None:
            continue
        if new.startswith("vision_tower."):
            seen_tower_inside = True
        out[new] = tensor
    depth = projector_depth(src, config)
    _complete_projector(out, depth, text_config.hidden_size, vision_config.hidden_size, src)
    required = ["language_model.model.embed_tokens.weight", "language_model.lm_head.weight",
                "multi_modal_projector.linear_1.weight", "multi_modal_projector.linear_2.weight"]
    missing = [k for k in required if k not in out]
    if missing:
        raise ConversionError(f"{src}: weights missing after conversion: {', '.join(missing)}")
    if not seen_tower_inside:
        for key, tensor in _iter_tensors(_weight_files(tower_dir, "vision tower")):
            if key.startswith("vision_model."):
                out["vision_tower." + key] = tensor
        if not any(k.startswith("vision_tower.") for k in out):
            raise ConversionError(f"{tower_dir}: no vision_model.* weights in the vision tower checkpoint")

    for key in ("language_model.model.embed_tokens.weight", "language_model.lm_head.weight"):
        weight = out[key]
        if weight.shape[0] < new_vocab:
            extra = weight.float().mean(dim=0, keepdim=True).to(weight.dtype)
            out[key] = torch.cat([weight, extra.expand(new_vocab - weight.shape[0], -1)], dim=0)
    text_config.vocab_size = new_vocab
    text_config.pad_token_id = tokenizer.pad_token_id

    select = config.get("mm_vision_select_feature", "patch")
    image_size, patch = vision_config.image_size, vision_config.patch_size
    llava_config = LlavaConfig(
        vision_config=vision_config,
        text_config=text_config,
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE_TOKEN),
        vision_feature_layer=int(config.get("mm_vision_select_layer", -2)),
        vision_feature_select_strategy="default" if select == "patch" else "full",
        projector_hidden_act="gelu" if depth == 2 else "linear",
        multimodal_projector_bias="multi_modal_projector.linear_1.bias" in out,
        image_seq_length=(image_size // patch) ** 2 + (0 if select == "patch" else 1),
        tie_word_embeddings=False,
    )
    llava_config.architectures = ["LlavaForConditionalGeneration"]
    llava_config.dtype = dtype_name
    llava_config.save_pretrained(dst)
    _save_sharded(out, dst, save_file)

    # --- processor
    processor = LlavaProcessor(
        image_processor=_image_processor(tower_dir, vision_config, pad=(config.get("image_aspect_ratio") == "pad")),
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy=llava_config.vision_feature_select_strategy,
        num_additional_image_tokens=1,
        chat_template=chat_template,
        image_token=IMAGE_TOKEN,
    )
    processor.save_pretrained(dst)

    gen_path = src / "generation_config.json"
    if gen_path.is_file():
        generation = GenerationConfig.from_dict(_read_json(gen_path, "generation config"))
    else:
        generation = GenerationConfig(bos_token_id=text_config.bos_token_id, eos_token_id=text_config.eos_token_id)
    generation.pad_token_id = tokenizer.pad_token_id
    if chat_template == LLAMA3_TEMPLATE:
        generation.eos_token_id = _with_eot(generation.eos_token_id, tokenizer)
    generation.save_pretrained(dst)
    (dst / "conversion.json").write_text(json.dumps({
        "converted_from": str(src.resolve()),
        "vision_tower": str(tower_dir.resolve()),
        "vision_tower_from_checkpoint": seen_tower_inside,
        "added_tokens": sorted(set(added + ([PAD_TOKEN] if "pad_token" in new_special else []))),
        "source_architectures": config.get("architectures"),
        "chat_template": "llama3" if chat_template == LLAMA3_TEMPLATE else
                         "vicuna_v1" if chat_template == VICUNA_V1_TEMPLATE else "custom",
    }, indent=2))
    return dst


def _complete_projector(out: dict, depth: int, text_hidden: int, vision_hidden: int, src: Path) -> None:
    """Give a one-layer (or no) projector the identity layers that make it transformers' two-layer one."""
    import torch

    if depth == 2:
        return
    if depth == 0:
        if text_hidden != vision_hidden:
            raise ConversionError(
                f"{src / 'config.json'}: an identity projector needs mm_hidden_size == hidden_size "
                f"({vision_hidden} != {text_hidden})"
            )
        out["multi_modal_projector.linear_1.weight"] = torch.eye(text_hidden)
        out["multi_modal_projector.linear_1.bias"] = torch.zeros(text_hidden)
    weight = out["multi_modal_projector.linear_1.weight"]
    out["multi_modal_projector.linear_2.weight"] = torch.eye(text_hidden, dtype=weight.dtype)
    out["multi_modal_projector.linear_2.bias"] = torch.zeros(text_hidden, dtype=weight.dtype)
    out.setdefault("multi_modal_projector.linear_1.bias", torch.zeros(text_hidden, dtype=weight.dtype))


def _with_eot(eos, tokenizer) -> list[int]:
    """End-of-sequence ids plus ``<|eot_id|>``: a Llama-3 chat answer ends there, not at the base's eos."""
    ids = [e for e in (eos if isinstance(eos, list) else [eos]) if e is not None]
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    return ids + [eot] if eot not in ids else ids


def _image_processor(tower_dir: Path, vision_config, pad: bool):
    """LLaVA's image preprocessing: the tower's CLIP preprocessing, plus padding to a square with the
    mean colour when the checkpoint was trained with ``image_aspect_ratio: pad``."""
    from transformers import LlavaImageProcessor

    kwargs = {}
    pre = tower_dir / "preprocessor_config.json"
    if pre.is_file():
        raw = json.loads(pre.read_text())
        for key in ("size", "crop_size", "image_mean", "image_std", "do_center_crop", "do_resize",
                    "do_normalize", "do_rescale", "rescale_factor", "resample", "do_convert_rgb"):
            if key in raw:
                kwargs[key] = raw[key]
    else:
        size = vision_config.image_size
        kwargs.update(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
        kwargs.update(image_mean=[0.48145466, 0.4578275, 0.40821073],
                      image_std=[0.26862954, 0.26130258, 0.27577711])
    if isinstance(kwargs.get("size"), int):
        kwargs["size"] = {"shortest_edge": kwargs["size"]}
    if isinstance(kwargs.get("crop_size"), int):
        kwargs["crop_size"] = {"height": kwargs["crop_size"], "width": kwargs["crop_size"]}
    return LlavaImageProcessor(do_pad=pad, **kwargs)


def _save_sharded(tensors: dict, dst: Path, save_file) -> None:
    """Write ``model.safetensors`` (or ``model-0000i-of-0000n.safetensors`` + index above
    :data:`SHARD_BYTES`)."""
    sizes = {k: t.numel() * t.element_size() for k, t in tensors.items()}
    total = sum(sizes.values())
    keys = sorted(tensors)
    if total <= SHARD_BYTES:
        save_file({k: tensors[k].contiguous() for k in keys}, str(dst / "model.safetensors"),
                  metadata={"format": "pt"})
        return
    shards: list[list[str]] = [[]]
    used = 0
    for k in keys:
        if shards[-1] and used + sizes[k] > SHARD_BYTES:
            shards.append([])
            used = 0
        shards[-1].append(k)
        used += sizes[k]
    weight_map = {}
    for i, shard in enumerate(shards, start=1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: tensors[k].contiguous() for k in shard}, str(dst / name), metadata={"format": "pt"})
        weight_map.update({k: name for k in shard})
    (dst / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
