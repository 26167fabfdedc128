"""Reading metrics: accuracy per question, per time frame and modality, and numbers comparable
across question types: per type its accuracy, two chance levels and the chance-corrected score,
and the headline, a balanced mean over types. Every 95% interval comes from a cluster bootstrap
over charts (a stock, cutoff and time frame: the reading task's unit of analysis, whose questions
share one image), one weight matrix for all of a run's figures.

Each asked question of each answered sample is one verdict (:func:`verdicts`): right when the parsed
answer equals the truth (prices within 1%); a question the answer leaves out, or an answer that did
not parse, is wrong, so accuracy is over every question asked (``answered`` says how many got a
readable answer). Questions left out as ambiguous were never asked and count nowhere.

Chance, per verdict, then averaged over a type's verdicts:

* ``chance_uniform``: 1 / the number of answers the question allows (a count 1/11; a price 0): a
  guess among the choices.
* ``chance_majority``: the share of the question's most common true answer in its time frame, over
  the run's samples: what always giving that answer scores (the ``majority`` baseline, in-sample).

A price has no constant answer to give: its chance is 0 both ways.

The chance-corrected score of a type is ``(accuracy - chance) / (1 - chance)`` against the majority
level (Cohen's kappa's form: 0 = no better than the best constant answer, 1 = every answer right;
negative = worse), the uniform one beside it. A type whose chance is 1 (one answer everywhere) has
no score. The headline (``balanced_<modality>``): the balanced accuracy (the mean over types, each
type weighing the same however many questions it holds) and its score, the same correction of it by
the mean majority chance of the types. (Not the mean of the types' scores: a type whose majority
chance is near 1, the patterns' "none", scores -10 for a guesser and would outweigh all others.)

``unanswerable``: of the items whose right answer is ``cannot_tell``, the share answered so; and of
the answerable items of questions that offer it, the share wrongly answered ``cannot_tell``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_ratio
from candlebench.tasks.reading.questions import CANNOT_TELL, CHOICES, NUMERIC, QUESTIONS, TYPES, UP_CANDLES, is_right

VERDICT_COLUMNS = ["sample_id", "code", "cutoff", "frame", "modality", "question", "truth", "answered", "right",
                   "cannot_tell"]
CHART = ["code", "cutoff", "frame"]  # the cluster: one image and the questions asked of it


def _uniform(question: str) -> float:
    """A uniform guess's chance: 1 / the answers a question allows; 0 for a price (no finite set)."""
    if question in CHOICES:
        return 1.0 / len(CHOICES[question])
    return 1.0 / len(UP_CANDLES) if NUMERIC[question] == "count" else 0.0


UNIFORM = {q: _uniform(q) for q in QUESTIONS}
OFFERS_CANNOT_TELL = {q: CANNOT_TELL in CHOICES.get(q, ()) for q in QUESTIONS}
IS_PRICE = {q: NUMERIC.get(q) == "price" for q in QUESTIONS}


def verdicts(parsed: pd.DataFrame) -> pd.DataFrame:
    """One row per (sample, asked question) of a run's parsed rows."""
    keys = ["sample_id", "code", "cutoff", "frame", "modality"]
    rows, questions, truths, given = [], [], [], []
    for i, (found, answer) in enumerate(zip(parsed["questions"], parsed["answer"])):
        answer = json.loads(answer) if isinstance(answer, str) else {}
        for question, truth in json.loads(found).items():
            rows.append(i)
            questions.append(question)
            truths.append(truth)
            given.append(answer.get(question))
    out = parsed[keys].iloc[rows].reset_index(drop=True)
    out["question"], out["truth"] = questions, pd.Series(truths, dtype=object)
    out["answered"] = np.fromiter((g is not None for g in given), bool, len(given))
    out["right"] = np.fromiter((is_right(q, t, g) for q, t, g in zip(questions, truths, given)), bool, len(given))
    out["cannot_tell"] = np.fromiter((g == CANNOT_TELL for g in given), bool, len(given))
    return out[VERDICT_COLUMNS]


def date_terms(v: pd.DataFrame, dates: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """Per cutoff date of ``dates`` (in order): right verdicts and verdicts of ``v``."""
    grouped = v.groupby("cutoff")["right"].agg(["sum", "count"]).reindex(dates, fill_value=0)
    return grouped["sum"].to_numpy(float), grouped["count"].to_numpy(float)


def _scored(v: pd.DataFrame) -> pd.DataFrame:
    """The verdicts as the metrics read them: each with its chance levels, its question's type and
    its chart's cluster number; the grouping keys as categories (pandas' string columns are copied
    whole at every cut, and the metrics cut them a few hundred times)."""
    truth = v["truth"].astype(str)
    majority = truth.groupby([v["question"], v["frame"]]).transform(lambda t: t.value_counts().iloc[0] / len(t))
    # A price has no constant answer to give (two closes rarely repeat; one within 1% of many is
    # the scale's accident, not a strategy): its chance is 0 both ways.
    price = v["question"].map(IS_PRICE).to_numpy(bool)
    return pd.DataFrame({
        **{k: pd.Categorical(v[k]) for k in ("question", "frame", "modality")},
        "type": pd.Categorical(v["question"].map(TYPES)),
        "chart": v.groupby(CHART, sort=True).ngroup().to_numpy() if len(v) else np.zeros(0, int),
        "right": v["right"].to_numpy(bool), "answered": v["answered"].to_numpy(bool),
        "cannot_tell": v["cannot_tell"].to_numpy(bool), "unanswerable": (truth == CANNOT_TELL).to_numpy(bool),
        "offers_cannot_tell": v["question"].map(OFFERS_CANNOT_TELL).to_numpy(bool),
        "chance_majority": np.where(price, 0.0, majority.to_numpy(float)) if len(v) else np.zeros(0),
        "chance_uniform": v["question"].map(UNIFORM).to_numpy(float),
    })


def corrected(accuracy, chance):
    """(accuracy - chance) / (1 - chance); NaN where chance is 1."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.asarray(chance) < 1, (np.asarray(accuracy) - chance) / (1 - np.asarray(chance)), np.nan)


class _Clusters:
    """One bootstrap weight matrix over the charts of a run's verdicts (None: no intervals)."""

    def __init__(self, v: pd.DataFrame, n_boot: int, seed: int):
        self.n = int(v["chart"].max()) + 1 if len(v) else 0
        self.weights = date_weights(self.n, n_boot, seed) if n_boot > 0 and self.n else None

    def replicates(self, part: pd.DataFrame, column: str = "right") -> np.ndarray | None:
        """Per replicate the mean of ``column`` over ``part``, its charts drawn as the weights say."""
        if self.weights is None:
            return None
        ids = part["chart"].to_numpy()
        total = np.bincount(ids, weights=part[column].to_numpy(float), minlength=self.n)
        count = np.bincount(ids, minlength=self.n).astype(float)
        return weighted_ratio(self.weights, total, count)


def _block(v: pd.DataFrame, clusters: _Clusters) -> dict[str, Any]:
    n = len(v)
    out: dict[str, Any] = {"n": n, "accuracy": float(v["right"].mean()) if n else None,
                           "answered": float(v["answered"].mean()) if n else None}
    reps = clusters.replicates(v) if n else None
    if reps is not None:
        out["ci"] = {"accuracy": percentile_ci(reps)}
    return out


def _types(v: pd.DataFrame, clusters: _Clusters) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per type its figures, and the balanced block over types (with intervals where bootstrapped)."""
    types, reps = {}, {}
    for name, part in v.groupby("type", sort=True):
        accuracy = float(part["right"].mean())
        majority, uniform = float(part["chance_majority"].mean()), float(part["chance_uniform"].mean())
        block = {"n": len(part), "charts": int(part["chart"].nunique()), "accuracy": accuracy,
                 "chance_uniform": uniform, "chance_majority": majority,
                 "corrected_uniform": float(corrected(accuracy, uniform)),
                 "corrected_majority": float(corrected(accuracy, majority))}
        r = clusters.replicates(part)
        if r is not None:
            reps[name] = (r, majority)
            block["ci"] = {"accuracy": percentile_ci(r), "corrected_majority": percentile_ci(corrected(r, majority))}
        types[name] = {k: (None if isinstance(x, float) and np.isnan(x) else x) for k, x in block.items()}
    balanced: dict[str, Any] = {"n": int(v["chart"].nunique()), "types": len(types),
                                "accuracy": None, "chance_majority": None, "score": None}
    if types:
        accuracy = float(np.mean([t["accuracy"] for t in types.values()]))
        chance = float(np.mean([t["chance_majority"] for t in types.values()]))
        balanced.update(accuracy=accuracy, chance_majority=chance, score=float(corrected(accuracy, chance)))
    if reps:
        # A type asked of no drawn chart in a replicate drops out of that replicate's means.
        accuracy_r = np.stack([r for r, _ in reps.values()])
        chance_r = np.where(np.isnan(accuracy_r), np.nan, np.array([c for _, c in reps.values()])[:, None])
        balanced["ci"] = {"accuracy": percentile_ci(np.nanmean(accuracy_r, axis=0)),
                          "score": percentile_ci(corrected(np.nanmean(accuracy_r, axis=0), np.nanmean(chance_r, axis=0)))}
    return types, balanced


def _unanswerable(v: pd.DataFrame, clusters: _Clusters) -> dict[str, Any] | None:
    unanswerable = v[v["unanswerable"]]
    could = v[~v["unanswerable"] & v["offers_cannot_tell"]]
    if unanswerable.empty:
        return None
    out = {"n": len(unanswerable), "said_cannot_tell": float(unanswerable["cannot_tell"].mean()),
           "n_answerable": len(could), "false_cannot_tell": float(could["cannot_tell"].mean()) if len(could) else None}
    reps = clusters.replicates(unanswerable, "cannot_tell")
    if reps is not None:
        out["ci"] = {"said_cannot_tell": percentile_ci(reps)}
    return out


def reading_metrics(parsed: pd.DataFrame, n_boot: int = 0, seed: int = 0) -> dict[str, Any]:
    """``all``, ``<modality>`` (chart, text, blank), ``questions.<q>`` (over frames and modalities) and
    ``cells.<q>.<frame>.<modality>`` blocks of n, accuracy, answered share and (with ``n_boot``) ``ci``;
    per modality ``types.<modality>.<type>`` (accuracy, chance levels, chance-corrected scores),
    ``balanced_<modality>`` (the headline: the balanced accuracy over types and its chance-corrected
    score) and ``unanswerable.<modality>``; and the parse failure rate over samples."""
    v = _scored(verdicts(parsed))
    clusters = _Clusters(v, n_boot, seed)
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for (question, frame, modality), part in v.groupby(["question", "frame", "modality"], sort=True):
        cells.setdefault(question, {}).setdefault(frame, {})[modality] = _block(part, clusters)
    by_question = dict(tuple(v.groupby("question")))
    out: dict[str, Any] = {
        "all": _block(v, clusters),
        **{m: _block(part, clusters) for m, part in v.groupby("modality", sort=True)},
        "questions": {q: _block(by_question[q], clusters) for q in QUESTIONS if q in by_question},
        "cells": cells, "types": {}, "unanswerable": {},
        "parse_failure_rate": float(parsed["answer"].isna().mean()) if len(parsed) else None,
    }
    for modality, part in v.groupby("modality", sort=True):
        out["types"][modality], out[f"balanced_{modality}"] = _types(part, clusters)
        found = _unanswerable(part, clusters)
        if found is not None:
            out["unanswerable"][modality] = found
    return out


def per_sample(parsed: pd.DataFrame) -> pd.DataFrame:
    """Right and asked questions of each sample (parsed.parquet's ``score_right``, ``score_asked``)."""
    v = verdicts(parsed)
    counts = v.groupby("sample_id")["right"].agg(right="sum", asked="count").reset_index()
    return parsed[["sample_id"]].merge(counts, on="sample_id", how="left").fillna({"right": 0, "asked": 0}).astype(
        {"right": int, "asked": int})
