"""The captioning task's settings: its config.yaml as frozen dataclasses (candlebench.task_api.settings),
read by the samples, the prompt, the parser and the scorer alike."""

from __future__ import annotations

from dataclasses import dataclass

from candlebench.task_api.settings import StockWindow, TaskSettings


@dataclass(frozen=True, kw_only=True)
class CaptionMetrics:
    encoder: str | None
    bertscore_model: str | None
    bertscore_layers: int
    iou_epsilon: float
    batch_size: int


@dataclass(frozen=True, kw_only=True)
class CaptionSentiment:
    sentences: int
    weights: tuple[float, ...]
    positive: tuple[str, ...] | None
    negative: tuple[str, ...] | None
    model: str | None


@dataclass(frozen=True, kw_only=True)
class CaptionTaskSettings(TaskSettings):
    dataset: str | None  # your own captioned charts; None = generated from the market data
    freq: str
    prompt: str
    words: tuple[int, int]
    seed: int
    answer_tokens: int
    metrics: CaptionMetrics
    sentiment: CaptionSentiment
    samples: StockWindow
