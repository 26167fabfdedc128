"""Samples of the E2A-style task: one per stock x evaluation date x modality, with the window's anchors.

Evaluation dates are trading days of the market calendar, every ``interval`` days from
``task.samples.start`` (the forecast task's grid and keys); the window is the stock's last
``anchors.window`` bars strictly before the date. A stock is skipped at a date (and counted) when it
has fewer than ``min_bars`` bars before it (the window plus MA20's history) or has not traded in
the ``max_stale_days`` trading days before it. Each sample carries ``anchor_<name>`` (label),
``anchor_value_<name>`` (the number behind it, NaN where none), ``strong`` (the strong anchors,
comma-joined) and ``strong_signals``; the three modalities of one window share them.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pandas as pd

from candlebench.market.market import Market
from candlebench.tasks.e2a.anchors import ANCHORS, Anchors, AnchorSettings, compute_anchors
from candlebench.task_api.windows import evaluation_windows
from candlebench.tasks.e2a.settings import E2ASettings

BAR_COLUMNS = ("open", "high", "low", "close", "volume")


def sample_id(code: str, date: pd.Timestamp, modality: str) -> str:
    return hashlib.sha256(f"e2a|{code}|{date:%Y-%m-%d}|{modality}".encode()).hexdigest()[:16]


def anchor_columns(anchors: Anchors) -> dict[str, object]:
    row: dict[str, object] = {f"anchor_{a}": anchors.labels[a] for a in ANCHORS}
    row.update({f"anchor_value_{k}": float(v) for k, v in anchors.values.items()})
    row["strong"] = ",".join(anchors.strong)
    row["strong_signals"] = anchors.strong_signals
    return row


def anchors_of(row) -> Anchors:
    """The anchors a sample row carries, as :func:`compute_anchors` returned them."""
    labels = {a: str(row[f"anchor_{a}"]) for a in ANCHORS}
    values = {k[len("anchor_value_"):]: float(row[k]) for k in row.keys() if str(k).startswith("anchor_value_")}
    strong = tuple(s for s in str(row["strong"]).split(",") if s)
    return Anchors(labels, values, strong)


def build_samples(market: Market, s: E2ASettings, settings: AnchorSettings = AnchorSettings()) -> tuple[pd.DataFrame, dict]:
    """A sample per window of ``s.samples`` and modality of ``s.modalities``, with the window's anchors."""
    dropped: Counter[str] = Counter()
    dates, windows = evaluation_windows(market, **s.samples.window, dropped=dropped, codes=s.samples.codes)
    rows = []
    arrays: dict[str, dict[str, np.ndarray]] = {}
    for w in windows:
        if w.code not in arrays:
            arrays = {w.code: {k: w.bars[k].to_numpy(dtype=float) for k in BAR_COLUMNS}}
        anchors = compute_anchors({k: v[: w.n] for k, v in arrays[w.code].items()}, settings)
        shared = {"task": "e2a", "market": market.name, "code": w.code, "cutoff": w.date, **anchor_columns(anchors)}
        rows += [{"sample_id": sample_id(w.code, w.date, m), "modality": m, **shared} for m in s.modalities]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values(["cutoff", "code", "modality"], kind="stable").reset_index(drop=True)
    summary = {
        "task": "e2a",
        "samples": len(frame),
        "windows": 0 if frame.empty else int(frame[["code", "cutoff"]].drop_duplicates().shape[0]),
        "cutoffs": len(dates),
        "stocks": 0 if frame.empty else int(frame["code"].nunique()),
        "per_modality": {} if frame.empty else {str(k): int(v) for k, v in frame["modality"].value_counts().sort_index().items()},
        "strong_signals": {} if frame.empty else {str(k): int(v) for k, v in frame.drop_duplicates(["code", "cutoff"])["strong_signals"].value_counts().sort_index().items()},
        "dropped_windows": dict(sorted(dropped.items())),
        "data": market.report.as_dict(),
    }
    return frame, summary
