"""compile_blocks' acceptance test (inference/compile_check.py) on the tiny Qwen2.5-VL in bf16:
against the tower in fp32, the compiled tower's error is within 1.25x the eager bf16 tower's, and
greedy answers and their parsed scores equal eager's. Compiled here through dynamo with
``aot_eager`` (the graphs and decompositions the compile takes, eager kernels): inductor's CPU
build of the same two blocks took 86 s on this shared machine (measured once, 2026-12-07: eager
7.7e-3, compiled 6.3e-3 of the scale, 0.82x, pass); the GPU window judges inductor's kernels on
the real towers (bench/infer_gpu.py, compile row)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from PIL import Image

import candlebench.inference.tiny.builders as tm
from candlebench.inference.backends.base import GenerationSpec, PreparedRequest
from candlebench.inference.backends.hf import TransformersBackend, load_model
from candlebench.inference.compile_check import TOLERANCE, CompileVerdict, relative_error
from candlebench.inference.models import ModelSpec
from candlebench.inference.vision_speedups import compile_blocks
from candlebench.tasks.forecast.parse import parse_score

SCORE = "<score>(-0[.][0-4][0-9][0-9]|0[.][0-9][0-9][0-9])</score>"  # the forecast task's answer_format


def test_compiled_vision_blocks_pass_the_acceptance_test_and_keep_the_answers(tiny_root):
    path = tm.fixture_dir("qwen2_5_vl", tm.build_tiny_qwen2_5_vl, tiny_root)
    spec = ModelSpec(name="tiny", path=str(path), dtype="bfloat16")
    backend = TransformersBackend(spec, GenerationSpec(max_new_tokens=16, regex=SCORE), device_map=None)
    reference, processor = load_model(replace(spec, dtype="float32"))
    charts = [Image.effect_noise((112, 112), 40 + 20 * i).convert("RGB") for i in range(4)]
    batch = [PreparedRequest(f"s{i}", "Score the trend.", tuple(charts[i: i + 2])) for i in range(3)]
    inputs = processor.image_processor(images=charts, return_tensors="pt")

    def tower(model, dtype):
        with torch.inference_mode():
            return model.model.visual(inputs["pixel_values"].to(dtype), grid_thw=inputs["image_grid_thw"]).pooler_output

    want, eager = tower(reference, torch.float32), tower(backend.model, torch.bfloat16)
    answers = [g.text for g in backend.generate(batch)]
    compile_blocks(backend.model.model.visual, backend="aot_eager")
    verdict = CompileVerdict(relative_error(eager, want), relative_error(tower(backend.model, torch.bfloat16), want))
    assert verdict.eager > 1e-4 and verdict.passed, verdict.line()  # bf16 is off fp32; compiled no further than 1.25x
    compiled = [g.text for g in backend.generate(batch)]
    assert compiled == answers
    scores = [parse_score(a) for a in answers]
    assert all(s.value is not None for s in scores) and [parse_score(a) for a in compiled] == scores


@pytest.mark.unit
@pytest.mark.parametrize("eager, compiled, passed", [(1e-2, 1.2e-2, True), (1e-2, 1.3e-2, False), (0.0, 0.0, True),
                                                      (0.0, 1e-7, False), (2e-2, 1e-2, True)])
def test_the_verdict_is_the_compiled_error_within_the_tolerance_of_eagers(eager, compiled, passed):
    verdict = CompileVerdict(eager, compiled)
    assert verdict.passed is passed
    assert verdict.line().endswith(f"acceptance <= {TOLERANCE}x: {'pass' if passed else 'fail'})")
