"""The chart-reading task's settings: its config.yaml as a frozen dataclass (candlebench.task_api.settings),
read by the samples, the prompts and the judge alike."""

from __future__ import annotations

from dataclasses import dataclass

from candlebench.core.rules import ConfigError
from candlebench.market.bars import FREQS
from candlebench.core.settings import setting
from candlebench.task_api.settings import StockWindow, TaskSettings, subset_of
from candlebench.tasks.reading.questions import MA_WINDOWS, MARKS

# What a sample shows the model: the chart, the same bars as OHLCV text, or a blank image of the
# chart's size (the image-free control).
MODALITIES = ("chart", "text", "blank")


@dataclass(frozen=True, kw_only=True)
class ReadingSettings(TaskSettings):
    frames: tuple[str, ...] = setting(subset_of(FREQS))
    modalities: tuple[str, ...] = setting(subset_of(MODALITIES))
    # Per language: the prompt, what {inputs} says per modality, the frames' names, the questions
    # and how a marked bar is named.
    prompts: dict[str, str]
    language: str = setting(key_of="prompts")
    prompt: str  # the language's prompt
    inputs: dict[str, dict[str, str]]
    pair_inputs: dict[str, dict[str, str]]  # {inputs} of a sample showing the daily and weekly charts together
    frame_names: dict[str, dict[str, str]]
    questions: dict[str, dict[str, str]]
    mark: dict[str, str]
    answer_tokens: int
    samples: StockWindow

    def __post_init__(self) -> None:
        if set(MA_WINDOWS) - set(self.render.ma_windows):
            raise ConfigError(f"task.render.ma_windows: {list(self.render.ma_windows)} must draw MA{list(MA_WINDOWS)}: "
                              "the questions ask about them")
        if self.render.marks != len(MARKS):
            raise ConfigError(f"task.render.marks={self.render.marks}: the reading charts letter {len(MARKS)} bars "
                              f"({', '.join(MARKS)}), which the questions name")
