"""Reading metrics: accuracy per question, per time frame and modality, with 95% intervals from a
bootstrap over cutoff dates (the stocks of one date share the market's move: :mod:`candlebench.scoring.bootstrap`).

Each asked question of each answered sample is one verdict (:func:`verdicts`): right when the parsed
answer equals the truth (highest_close within 1%); a question the answer leaves out, or an answer
that did not parse, is wrong, so accuracy is over every question asked (``answered`` says how many
got a readable answer). Questions left out as ambiguous were never asked and count nowhere.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_ratio
from candlebench.tasks.reading.questions import QUESTIONS, is_right

VERDICT_COLUMNS = ["sample_id", "code", "cutoff", "frame", "modality", "question", "answered", "right"]


def verdicts(parsed: pd.DataFrame) -> pd.DataFrame:
    """One row per (sample, asked question) of a run's parsed rows."""
    rows = []
    for row in parsed[["sample_id", "code", "cutoff", "frame", "modality", "questions", "answer"]].itertuples(index=False):
        answer = json.loads(row.answer) if isinstance(row.answer, str) else {}
        for question, truth in json.loads(row.questions).items():
            given = answer.get(question)
            rows.append((row.sample_id, row.code, row.cutoff, row.frame, row.modality, question,
                         given is not None, is_right(question, truth, given)))
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def date_terms(v: pd.DataFrame, dates: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """Per cutoff date of ``dates`` (in order): right verdicts and verdicts of ``v``."""
    grouped = v.groupby("cutoff")["right"].agg(["sum", "count"]).reindex(dates, fill_value=0)
    return grouped["sum"].to_numpy(float), grouped["count"].to_numpy(float)


def _block(v: pd.DataFrame, weights: np.ndarray | None, dates: pd.Index) -> dict[str, Any]:
    n = len(v)
    out: dict[str, Any] = {"n": n, "accuracy": float(v["right"].mean()) if n else None,
                           "answered": float(v["answered"].mean()) if n else None}
    if weights is not None and n:
        right, count = date_terms(v, dates)
        out["ci"] = {"accuracy": percentile_ci(weighted_ratio(weights, right, count))}
    return out


def reading_metrics(parsed: pd.DataFrame, n_boot: int = 0, seed: int = 0) -> dict[str, Any]:
    """``all``, ``<modality>`` (chart, text), ``questions.<q>`` (over frames and modalities) and
    ``cells.<q>.<frame>.<modality>`` blocks of n, accuracy, answered share and (with ``n_boot``) ``ci``;
    and the parse failure rate over samples."""
    v = verdicts(parsed)
    dates = pd.Index(sorted(v["cutoff"].unique()))
    weights = date_weights(len(dates), n_boot, seed) if n_boot > 0 and len(dates) else None
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for (question, frame, modality), part in v.groupby(["question", "frame", "modality"], sort=True):
        cells.setdefault(question, {}).setdefault(frame, {})[modality] = _block(part, weights, dates)
    return {
        "all": _block(v, weights, dates),
        **{m: _block(part, weights, dates) for m, part in v.groupby("modality", sort=True)},
        "questions": {q: _block(v[v["question"] == q], weights, dates) for q in QUESTIONS if (v["question"] == q).any()},
        "cells": cells,
        "parse_failure_rate": float(parsed["answer"].isna().mean()) if len(parsed) else None,
    }


def per_sample(parsed: pd.DataFrame) -> pd.DataFrame:
    """Right and asked questions of each sample (parsed.parquet's ``score_right``, ``score_asked``)."""
    v = verdicts(parsed)
    counts = v.groupby("sample_id")["right"].agg(right="sum", asked="count").reset_index()
    return parsed[["sample_id"]].merge(counts, on="sample_id", how="left").fillna({"right": 0, "asked": 0}).astype(
        {"right": int, "asked": int})
