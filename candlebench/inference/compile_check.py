"""When ``compile_blocks`` (``model.vision_speedups``) may be on by default: its acceptance test.

Inductor's fused kernels sum in their own order, so in bf16 the compiled vision tower differs from
the eager one (by 1.9e-2 of the scale on an H200, 2026-12-04). That alone says nothing: the eager
bf16 tower differs from the same tower in fp32 as well. The criterion is therefore measured
against the tower in fp32 (the reference): the compiled tower's error is at most
:data:`TOLERANCE` times the eager bf16 tower's, and the answers agree (greedy tokens and parsed
answers equal to eager's on the tiny fixtures: tests/inference/test_compile_check.py). The GPU
bench prints the verdict for the real towers (bench/infer_gpu.py, its compile row);
docs/inference.md says what a window must show before the default changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

TOLERANCE = 1.25


def relative_error(got: Any, reference: Any) -> float:
    """The largest absolute difference from ``reference``, over ``reference``'s largest magnitude."""
    reference = reference.float()
    return float((got.float() - reference).abs().max() / reference.abs().max())


@dataclass(frozen=True)
class CompileVerdict:
    eager: float  # the eager tower's error against the fp32 reference (relative_error)
    compiled: float  # the compiled tower's

    @property
    def ratio(self) -> float:
        if self.eager == 0:
            return 1.0 if self.compiled == 0 else math.inf
        return self.compiled / self.eager

    @property
    def passed(self) -> bool:
        return self.ratio <= TOLERANCE

    def line(self) -> str:
        return (f"against the fp32 tower: eager {self.eager:.1e}, compiled {self.compiled:.1e} of its scale "
                f"({self.ratio:.2f}x; acceptance <= {TOLERANCE}x: {'pass' if self.passed else 'fail'})")
