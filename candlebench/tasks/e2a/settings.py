"""The E2A-style task's settings: its config.yaml as a frozen dataclass (candlebench.task_api.settings),
read by the samples, the prompts and the judge alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from candlebench.core.settings import setting
from candlebench.task_api.settings import StockWindow, TaskSettings, subset_of

MODALITIES = ("text", "chart", "both")  # what a sample shows the model: the OHLCV text, the chart, or both


@dataclass(frozen=True, kw_only=True)
class E2ASettings(TaskSettings):
    modalities: tuple[str, ...] = setting(subset_of(MODALITIES))
    prompts: dict[str, str]  # language -> the prompt
    language: str = setting(key_of="prompts")
    prompt: str  # the language's prompt
    inputs: dict[str, dict[str, str]]  # language -> modality -> what {inputs} says
    verify: dict[str, dict[str, str]]  # language -> the verify pass's prompt and words
    answer_tokens: int
    eci_confidence: float
    eci_signals: int
    anchors: dict[str, Any]  # AnchorSettings' thresholds
    samples: StockWindow
