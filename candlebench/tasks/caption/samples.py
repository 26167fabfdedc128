"""Samples of the captioning task: one per stock x evaluation date, the chart of the bars before
it, and the generated reference with its annotations (:mod:`candlebench.tasks.caption.describer`).

The evaluation grid and the skipping rules are :mod:`candlebench.task_api.windows`'. Each sample carries
``reference`` (the analyst's text), ``metadata`` (JSON: degree / time / price -> the items the
chart shows), ``reference_opinion`` and ``reference_words``. The reference is written from the
very bars the render stage draws for the sample (``chart_bars`` of the history before the date)
and the axis labels of their layout, so it can only describe what the chart shows.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pandas as pd

from candlebench.market.bars import chart_bars
from candlebench.market.market import Market
from candlebench.rendering.chart import ChartSpec
from candlebench.tasks.caption.describer import describe, seed_of
from candlebench.task_api.windows import evaluation_windows
from candlebench.tasks.caption.settings import CaptionTaskSettings


def sample_id(code: str, date: pd.Timestamp) -> str:
    return hashlib.sha256(f"caption|{code}|{date:%Y-%m-%d}".encode()).hexdigest()[:16]


def build_samples(market: Market, s: CaptionTaskSettings, chart: ChartSpec) -> tuple[pd.DataFrame, dict]:
    """The samples of the window ``s.samples``, each reference written from the ``s.freq`` chart's
    last ``s.render.max_bars`` bars, phrased by ``s.seed``."""
    dropped: Counter[str] = Counter()
    dates, windows = evaluation_windows(market, **s.samples.window, dropped=dropped, codes=s.samples.codes)
    rows = []
    for w in windows:
        sid = sample_id(w.code, w.date)
        bars = chart_bars(w.history, s.freq, chart.ma_windows, s.render.max_bars)
        d = describe(bars, chart, w.code, s.freq, seed_of(sid, s.seed))
        rows.append({"sample_id": sid, "task": "caption", "market": market.name, "code": w.code, "cutoff": w.date,
                     "reference": d.text, "metadata": json.dumps(d.metadata), "reference_opinion": d.opinion,
                     "reference_words": len(d.text.split())})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(["cutoff", "code"], kind="stable").reset_index(drop=True)
    summary = {
        "task": "caption", "samples": len(frame), "cutoffs": len(dates),
        "stocks": 0 if frame.empty else int(frame["code"].nunique()),
        "reference_words": {} if frame.empty else {k: int(v) for k, v in frame["reference_words"].describe()[["min", "50%", "max"]].items()},
        "reference_opinions": {} if frame.empty else {str(k): int(v) for k, v in frame["reference_opinion"].value_counts().sort_index().items()},
        "dropped_windows": dict(sorted(dropped.items())),
        "data": market.report.as_dict(),
    }
    return frame, summary
