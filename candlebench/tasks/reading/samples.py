"""Samples of the reading task: one per stock x cutoff x time frame x modality (and, where both time
frames are asked about, one of frame ``both`` per stock x cutoff x modality showing the two charts
together, for the questions that compare them), on the forecast
task's grid (every ``interval`` trading days, the same ``min_bars`` and staleness rules:
:mod:`candlebench.task_api.windows`), so a model's reading and its forecast of the same chart can be joined on
(code, cutoff). Each sample carries its questions' true answers (``questions``, JSON), the questions
left out and why (``left_out``), the bars the prompt names (``marked``: letter, bars from the
right, date: A-D as the chart letters them, and E, a bar before the drawn window, where mark_color
asks about it), the letter mark_color asks about (``mark_color``) and how many pixels the trend
questions' answers lie from flipping (``margins``: the chart's difficulty); the modalities of one
chart share them. The bars are the renderer's own (:func:`candlebench.market.bars.chart_bars` on the
history strictly before the cutoff), and so are the pixels the questions are judged in (the task's
chart spec). Modalities: ``chart``, ``text`` (the same bars as OHLCV text) and ``blank`` (a white
image of the chart's size: the image-free control).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pandas as pd

from candlebench.market.bars import FREQS, chart_bars
from candlebench.market.market import Market
from candlebench.rendering.chart import ChartSpec
from candlebench.tasks.reading.questions import OUTSIDE_BACK, QuestionSet, pair_set, question_set
from candlebench.task_api.windows import evaluation_windows
from candlebench.tasks.reading.settings import ReadingSettings

# The frame of a sample that shows the daily and the weekly chart together (questions.PAIR_RULES),
# made for each stock and cutoff when both time frames are asked about.
PAIR = "both"


def sample_id(code: str, cutoff: pd.Timestamp, frame: str, modality: str) -> str:
    return hashlib.sha256(f"reading|{code}|{cutoff:%Y-%m-%d}|{frame}|{modality}".encode()).hexdigest()[:16]


def build_samples(market: Market, s: ReadingSettings, chart: ChartSpec) -> tuple[pd.DataFrame, dict]:
    """The samples of the window ``s.samples`` per time frame of ``s.frames`` and modality of
    ``s.modalities``, and their summary; ``chart``: the spec the task's charts are drawn by, whose
    pixels the questions are judged in."""
    dropped: Counter[str] = Counter()
    dates, windows = evaluation_windows(market, **s.samples.window, dropped=dropped, codes=s.samples.codes)
    rows, asked, left_out = [], Counter(), Counter()

    def add(w, frame: str, found: QuestionSet) -> None:
        asked.update(found.answers.keys())
        left_out.update(f"{q}: {why}" for q, why in found.left_out.items())
        if not found.answers:
            # Every question left out (e.g. the daily and weekly charts' pair when neither moved
            # clearly): no sample, or a model would be asked nothing and even the oracle counted
            # as failing to answer; counted among the dropped windows.
            dropped[f"{frame}: no question survives"] += 1
            return
        shared = {"task": "reading", "market": market.name, "code": w.code, "cutoff": w.date, "frame": frame,
                  "questions": json.dumps(found.answers), "left_out": json.dumps(found.left_out),
                  "marked": json.dumps(found.marked), "mark_color": found.mark_color,
                  "margins": json.dumps(found.margins), "n_questions": len(found.answers)}
        rows.extend({"sample_id": sample_id(w.code, w.date, frame, m), "modality": m, **shared} for m in s.modalities)

    for w in windows:
        charts = {}
        for freq in s.frames:
            # A few bars more than drawn: the tail is the chart's (MAs over the whole history either
            # way), the rest the bars before it that mark_color's outside bar is taken from.
            longer = chart_bars(w.history, freq, s.render.ma_windows, s.render.max_bars + OUTSIDE_BACK)
            bars = longer.tail(s.render.max_bars).reset_index(drop=True)
            charts[freq] = question_set(bars, chart, w.code, w.date, freq, longer.iloc[:len(longer) - len(bars)])
            add(w, freq, charts[freq])
        if set(FREQS) <= set(charts):  # the daily and the weekly chart asked about together
            add(w, PAIR, pair_set(charts["daily"], charts["weekly"]))
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
