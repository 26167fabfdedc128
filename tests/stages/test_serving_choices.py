"""What the backends are told ahead of the prompts: vLLM's memory profile of the task's real images
(and no video), and the prompt layout, a protocol variant in the run key."""

from __future__ import annotations

import pytest

import candlebench.inference.tiny.builders as tm
from candlebench.core.rules import ConfigError
from candlebench.stages.graph import compose_job
from candlebench.stages.infer import media
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.inference.backends.base import Media
from candlebench.inference.backends.vllm import mm_limits
from candlebench.inference.chat import chat_text
from candlebench.rendering.model_input import fit_size

from helpers import SLICE


def config(*overrides: str):
    return compose_job([f"data.path={SLICE}", "model=tiny_qwen2_5_vl", *overrides]).job


def test_vllm_profiles_the_tasks_images_at_their_size_and_no_video():
    forecast = media(config("task=forecast"))
    assert forecast == Media(2, (800, 600), "images_first")
    assert mm_limits(forecast) == {"image": {"count": 2, "width": 800, "height": 600}, "video": 0}
    budget = media(config("task=forecast", "infer.image.max_pixels=120000"))
    assert budget.size == fit_size((800, 600), 120_000) == (400, 300)
    assert media(config("task=e2a", "render.width=1000")).size == (1000, 600)
    assert mm_limits(Media(1)) == {"image": 1, "video": 0}  # images a dataset brings: no size known ahead


def test_text_first_puts_the_task_text_before_the_charts(tiny_root):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root))
    first, after = (chat_text(processor, "Score this stock.", 2, None, layout) for layout in ("images_first", "text_first"))
    assert first.count("<|image_pad|>") == after.count("<|image_pad|>") == 2
    assert first.index("<|vision_start|>") < first.index("Score this stock.")
    assert after.index("Score this stock.") < after.index("<|vision_start|>")
    with pytest.raises(ValueError, match="infer.prompt_layout=sideways"):
        chat_text(processor, "x", 1, None, "sideways")


def test_the_layout_is_in_the_run_key_only_when_it_is_the_variant():
    keys = {}
    for layout in ("images_first", "text_first"):
        job = config("task=forecast", f"infer.prompt_layout={layout}")
        info = model_run_info(job, model_spec(job))
        keys[layout] = (info.run_key, info.identity.get("prompt_layout"))
    assert keys["images_first"][1] is None and keys["text_first"][1] == "text_first"
    assert keys["images_first"][0] != keys["text_first"][0]
    with pytest.raises(ConfigError, match="infer.prompt_layout='sideways': must be images_first or text_first"):
        config("infer.prompt_layout=sideways")


def test_the_batch_is_the_backends_own_else_the_models_on_a_gpu_and_8_on_cpu():
    import torch

    seven = config("model=qwen2_5_vl_7b")
    assert seven.infer.batch_size is None and seven.model.gpu_batch_size == 128
    assert seven.batch_size() == (128 if torch.cuda.is_available() else 8)
    assert config("model=qwen2_5_vl_3b", "backend=vllm").batch_size() == 256  # vLLM's own chunk
    assert config("backend=server", "backend.concurrency=3").batch_size() == 3  # what a server has in flight
    assert config("model=qwen2_5_vl_3b", "infer.batch_size=3").batch_size() == 3
    assert config("backend=server", "infer.batch_size=5").batch_size() == 5


def test_a_model_that_would_run_partly_on_cpu_is_refused_unless_asked(tiny_root, capsys):
    import torch
    from transformers import AutoModelForImageTextToText

    from candlebench.inference.backends.hf import DoesNotFit, check_placement, placement

    path = tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)
    # What a GPU run finds after an offload: the weights on the CPU (load_model checks on GPUs only).
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32)
    with pytest.raises(DoesNotFit, match=r"would run partly on \['cpu'\]; .*backend.device_map=auto"):
        check_placement(model, path, None)
    check_placement(model, path, "auto")
    assert "parts of the model run on ['cpu'] (backend.device_map=auto)" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert placement(path, None) is None and placement(path, "auto") is None


def test_the_thinking_probe_leaves_a_template_without_the_switch_unwarned(tiny_root):
    """Qwen2.5-VL's template reads no enable_thinking: probing it with one made transformers warn
    "Kwargs passed to processor.__call__" once per infer job (4 lines in a demo)."""
    import logging

    from transformers import AutoProcessor
    from transformers.utils import logging as hf_logging

    from candlebench.inference.chat import check_thinking, template_variables

    processor = AutoProcessor.from_pretrained(tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root))
    assert "enable_thinking" not in template_variables(processor) and "messages" in template_variables(processor)
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    hf_logging.get_logger().addHandler(handler)
    try:
        check_thinking(processor, "tiny", {}, 32)
    finally:
        hf_logging.get_logger().removeHandler(handler)
    assert not [m for m in seen if "Kwargs passed" in m], seen
