"""Samples of the reading task: one per stock x cutoff x time frame x modality, on the forecast
task's grid (every ``interval`` trading days, the same ``min_bars`` and staleness rules:
:mod:`candlebench.task_api.windows`), so a model's reading and its forecast of the same chart can be joined on
(code, cutoff). Each sample carries its questions' true answers (``questions``, JSON), the questions
left out and why (``left_out``), and the four marked bars (``marked``: bars from the right, date);
the modalities of one chart share them. The bars are the renderer's own
(:func:`candlebench.market.bars.chart_bars` on the history strictly before the cutoff).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from candlebench.market.bars import FREQS, chart_bars
from candlebench.market.market import Market
from candlebench.tasks.reading.questions import MA_WINDOWS, question_set
from candlebench.task_api.windows import evaluation_windows

MODALITIES = ("chart", "text")


@dataclass(frozen=True)
class ReadingSpec:
    start: str | None = None
    end: str | None = None
    interval: int = 30
    min_bars: int = 90
    max_stale_days: int = 5
    codes: tuple[str, ...] | None = None
    frames: tuple[str, ...] = FREQS
    modalities: tuple[str, ...] = MODALITIES
    max_bars: int = 50
    ma_windows: tuple[int, ...] = MA_WINDOWS

    def __post_init__(self) -> None:
        for key, chosen, allowed in (("frames", self.frames, FREQS), ("modalities", self.modalities, MODALITIES)):
            if not chosen or set(chosen) - set(allowed):
                raise ValueError(f"task.{key}: {list(chosen)} must be a non-empty subset of {list(allowed)}")
        if set(MA_WINDOWS) - set(self.ma_windows):
            raise ValueError(f"task.render.ma_windows: {list(self.ma_windows)} must draw MA{list(MA_WINDOWS)}: "
                             "the questions ask about them")


def sample_id(code: str, cutoff: pd.Timestamp, frame: str, modality: str) -> str:
    return hashlib.sha256(f"reading|{code}|{cutoff:%Y-%m-%d}|{frame}|{modality}".encode()).hexdigest()[:16]


def build_samples(market: Market, spec: ReadingSpec) -> tuple[pd.DataFrame, dict]:
    dropped: Counter[str] = Counter()
    dates, windows = evaluation_windows(market, spec.start, spec.end, spec.interval, spec.min_bars,
                                        spec.max_stale_days, dropped, spec.codes)
    rows, asked, left_out = [], Counter(), Counter()
    for w in windows:
        history = w.history
        for freq in spec.frames:
            bars = chart_bars(history, freq, spec.ma_windows, spec.max_bars)
            found = question_set(bars, f"{w.code}|{w.date:%Y-%m-%d}|{freq}")
            asked.update(found.answers.keys())
            left_out.update(f"{q}: {why}" for q, why in found.left_out.items())
            shared = {"task": "reading", "market": market.name, "code": w.code, "cutoff": w.date, "frame": freq,
                      "questions": json.dumps(found.answers), "left_out": json.dumps(found.left_out),
                      "marked": json.dumps(found.marked), "n_questions": len(found.answers)}
            rows += [{"sample_id": sample_id(w.code, w.date, freq, m), "modality": m, **shared} for m in spec.modalities]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(["cutoff", "code", "frame", "modality"], kind="stable").reset_index(drop=True)
    summary = {
        "task": "reading",
        "samples": len(frame),
        "charts": 0 if frame.empty else int(frame[["code", "cutoff", "frame"]].drop_duplicates().shape[0]),
        "cutoffs": len(dates),
        "stocks": 0 if frame.empty else int(frame["code"].nunique()),
        # Per chart (not per modality): how often each question is asked, and each reason it was not.
        "asked": dict(sorted(asked.items())),
        "left_out": dict(sorted(left_out.items())),
        "dropped_windows": dict(sorted(dropped.items())),
        "data": market.report.as_dict(),
    }
    return frame, summary
