"""The tiny random-weight VLM fixtures: they rebuild deterministically, reload with
``from_pretrained``, generate from a two-image chat, and vLLM's CPU build gives the same greedy token
ids as transformers (Qwen2.5-VL, LLaVA, Gemma 3, and a LoRA adapter through ``LoRARequest``)."""

from __future__ import annotations

import hashlib

import pytest


from fixtures import tiny_models as tm  # noqa: E402  (installs the torchvision glue first)
from candlebench.inference.tiny.tokenizer import FAMILIES, NEWLINE_TOKENS, build_tokenizer  # noqa: E402
from helpers import ROOT  # noqa: E402

# Runs in the vLLM CPU environment (`make test` runs `pytest -m vllm` there).
needs_vllm = pytest.mark.vllm

MAX_NEW = 12
PROMPTS = [
    tm.DEFAULT_PROMPT,
    "Stock code: 600519. Give a score between 0 and 100 for the next 30 trading days.",
]


@pytest.fixture(scope="session")
def qwen_dir(tiny_root):
    return tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)


@pytest.fixture(scope="session")
def lora_dir(tiny_root, qwen_dir):
    return tm.fixture_dir("qwen2_5_vl-lora", lambda d: tm.build_tiny_lora(qwen_dir, d), tiny_root)


class _ModelDirs(dict):
    """family -> fixture directory, each built on first use."""

    def __init__(self, root):
        super().__init__()
        self.root = root

    def __missing__(self, family):
        self[family] = tm.fixture_dir(family, tm.BUILDERS[family], self.root)
        return self[family]


@pytest.fixture(scope="session")
def model_dirs(tiny_root):
    return _ModelDirs(tiny_root)


@pytest.fixture(scope="session")
def images():
    first = tm.test_images(2, seed=0)
    return [first, first[::-1]]  # second prompt: the same charts, swapped


def _prompts(model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir)
    return [processor.apply_chat_template(tm.chat_messages(p), add_generation_prompt=True, tokenize=False)
            for p in PROMPTS]


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- tokenizer -------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_tokenizer_is_deterministic_and_round_trips(family):
    a, b = build_tokenizer(family), build_tokenizer(family)
    assert a.get_vocab() == b.get_vocab()
    assert 400 <= len(a) <= 600
    vocab = a.get_vocab()
    for nl in NEWLINE_TOKENS:
        assert nl in vocab
    text = "Stock 600519: <score>73</score>\n\nThe trend is up."
    ids = a(text, add_special_tokens=False).input_ids
    assert a.decode(ids) == text
    if a.chat_template:
        rendered = a.apply_chat_template(tm.chat_messages(), add_generation_prompt=True, tokenize=False)
        assert PROMPTS[0] in rendered or PROMPTS[0].strip() in rendered


def test_builds_are_deterministic(tmp_path, model_dirs):
    again = tm.build_tiny_llava(tmp_path / "again")
    for name in ("model.safetensors", "tokenizer.json", "config.json", "processor_config.json"):
        assert _sha256(again / name) == _sha256(model_dirs["llava"] / name), name


# --- transformers reload + generation ------------------------------------------------------------------


def test_a_prompt_past_the_fixtures_nominal_length_is_read_whole(qwen_dir):
    """docs/reading.md says transformers' "Token indices sequence length is longer than the specified
    maximum sequence length (4110 > 4096)" is harmless with the tiny fixture: nothing is cut, and its
    rotary positions run past 4,096."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(qwen_dir)
    text = "2019-03-01,52.50,53.10,51.90,52.80,120400\n" * 400
    ids = processor.tokenizer(text)["input_ids"]
    assert processor.tokenizer.model_max_length == 4096 < len(ids)  # no truncation unless asked for
    model = AutoModelForImageTextToText.from_pretrained(qwen_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids[:4200]])).logits
    assert logits.shape[1] == 4200 and torch.isfinite(logits).all()
    assert "4110 > 4096" in (ROOT / "docs" / "reading.md").read_text().replace("\n", " ")


@pytest.mark.parametrize("family", ["qwen2_5_vl", "gemma3", "gemma4_e4b", "gemma4_31b", "llava"])
def test_fixture_reloads_and_generates_from_two_image_chat(family, model_dirs, images):
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    d = model_dirs[family]
    processor = AutoProcessor.from_pretrained(d)
    model = AutoModelForImageTextToText.from_pretrained(d, dtype=torch.float32).eval()
    messages = tm.chat_messages(images=images[0])
    inputs = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                           return_dict=True, return_tensors="pt")
    ids = inputs["input_ids"][0].tolist()
    image_token_id = model.config.image_token_id
    n_image_tokens = ids.count(image_token_id)
    per_image = {"qwen2_5_vl": None, "gemma3": 16, "gemma4_e4b": None, "gemma4_31b": None, "llava": 64}[family]
    if family == "qwen2_5_vl":  # (grid t*h*w) / merge^2 tokens per image
        per_image = int(inputs["image_grid_thw"][0].prod()) // 4
    elif per_image is None:  # Gemma 4: the aspect-kept size within 70 x 3x3 patches of 16 px, pooled 3x3
        from transformers.models.gemma4.image_processing_gemma4 import get_aspect_ratio_preserving_size

        width, height = images[0][0].size
        h, w = get_aspect_ratio_preserving_size(height, width, patch_size=16, max_patches=70 * 9, pooling_kernel_size=3)
        per_image = (h // 48) * (w // 48)
    assert n_image_tokens == 2 * per_image
    n = len(ids)
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=MAX_NEW, min_new_tokens=MAX_NEW, do_sample=False)
    new = out[0, n:].tolist()
    assert len(new) == MAX_NEW
    assert len(set(new)) >= 4, f"degenerate greedy output {new}"
    assert processor.decode(new)  # decodes


def test_llava_and_gemma3_vision_keys_use_vllm_spelling(model_dirs):
    from safetensors import safe_open

    for family in ("llava", "gemma3"):
        with safe_open(str(model_dirs[family] / "model.safetensors"), "pt") as fh:
            vision = [k for k in fh.keys() if "vision_tower" in k]
        assert vision and all(k.startswith("vision_tower.vision_model.") for k in vision), family


# --- LoRA ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def hf_lora_outputs(qwen_dir, lora_dir, images):
    prompts = _prompts(qwen_dir)
    return {
        "base": tm.hf_generate(qwen_dir, prompts, images, MAX_NEW),
        "peft": tm.hf_generate(qwen_dir, prompts, images, MAX_NEW, adapter=lora_dir),
        "merged": tm.hf_generate(qwen_dir, prompts, images, MAX_NEW, adapter=lora_dir, merge=True),
    }


def test_lora_unmerged_equals_merged_and_differs_from_base(hf_lora_outputs):
    assert hf_lora_outputs["peft"] == hf_lora_outputs["merged"]
    assert hf_lora_outputs["peft"] != hf_lora_outputs["base"]


def test_lora_with_legacy_keys_loads_through_load_adapter(tmp_path, qwen_dir, images, hf_lora_outputs):
    """Adapters trained before transformers 4.52 name keys ``base_model.model.model.layers.N``.
    ``model.load_adapter`` maps them onto transformers 5's ``model.language_model``;
    ``PeftModel.from_pretrained`` (peft 0.21) silently drops them (only a warning)."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    legacy = tm.build_tiny_lora(qwen_dir, tmp_path / "legacy", legacy_keys=True)
    processor = AutoProcessor.from_pretrained(qwen_dir)
    model = AutoModelForImageTextToText.from_pretrained(qwen_dir, dtype=torch.float32).eval()
    model.load_adapter(str(legacy))
    prompt = _prompts(qwen_dir)[0]
    inputs = processor(text=[prompt], images=images[0], return_tensors="pt")
    n = inputs["input_ids"].shape[1]
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=MAX_NEW, do_sample=False)
    assert out[0, n:].tolist() == hf_lora_outputs["peft"][0]


# --- vLLM parity ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vllm_outputs(tmp_path_factory, model_dirs, lora_dir, images, env):
    """One vLLM process, one engine per model: Qwen2.5-VL (base and LoRA requests), LLaVA, Gemma 3."""
    work = tmp_path_factory.mktemp("vllm-fixtures")
    paths = [tm.save_images(imgs, work / "images", prefix=f"p{i}-") for i, imgs in enumerate(images)]
    jobs = []
    for family in ("qwen2_5_vl", "llava", "gemma3"):
        d = model_dirs[family]
        prompts = _prompts(d)
        # Gemma 3's template starts with <bos>: do not let the tokenizer add a second one.
        add_special = False if family == "gemma3" else None
        requests = [{"prompt": p, "images": paths[i], "add_special_tokens": add_special}
                    for i, p in enumerate(prompts)]
        job = {"model": str(d), "max_tokens": MAX_NEW, "ignore_eos": False, "requests": requests}
        if family == "qwen2_5_vl":
            job["lora"] = {"name": "tiny", "path": str(lora_dir), "rank": tm.LORA_RANK}
            job["requests"] = requests + [dict(r, lora=True) for r in requests]
        jobs.append(job)
    result = tm.run_vllm_generate({"jobs": jobs}, work, env)
    out = {}
    for family, job in zip(("qwen2_5_vl", "llava", "gemma3"), result["jobs"]):
        out[family] = [o["token_ids"] for o in job["outputs"]]
    return out


@needs_vllm
@pytest.mark.parametrize("family", ["qwen2_5_vl", "llava", "gemma3"])
def test_vllm_greedy_tokens_equal_transformers(family, vllm_outputs, model_dirs, images):
    d = model_dirs[family]
    expected = tm.hf_generate(d, _prompts(d), images, MAX_NEW)
    got = vllm_outputs[family][: len(PROMPTS)]
    assert got == expected
    assert all(len(set(t)) >= 4 for t in got)


@needs_vllm
def test_vllm_lora_request_equals_peft(vllm_outputs, hf_lora_outputs):
    got = vllm_outputs["qwen2_5_vl"][len(PROMPTS):]
    assert got == hf_lora_outputs["peft"]
    assert got != hf_lora_outputs["base"]
