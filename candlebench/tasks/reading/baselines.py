"""Reference answers for the reading task, each a run scored like a model's (the JSON a model is
asked for), labelled in the report for what they are:

* ``uniform_random``: each question's answer drawn uniformly from its choices (counts from 0-10),
  seeded; a price (``highest_close``, ``last_close``) has no finite choice set and is left
  unanswered (scored wrong: a guess is within 1% by chance about never).
* ``majority``: each question's most common true answer over these samples (per time frame),
  in-sample, so no constant answer does better; prices unanswered as above.
* ``oracle``: the true answers: the ceiling check (accuracy 1 when the judge and the data agree).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import numpy as np
import pandas as pd

from candlebench.market.market import Market
from candlebench.tasks.reading.questions import CHOICES, NUMERIC, UP_CANDLES

# Every question with a finite set of answers: the choices, and the counts; prices have none.
_CHOICES = {**CHOICES, **{q: UP_CANDLES for q, kind in NUMERIC.items() if kind == "count"}}


def _texts(samples: pd.DataFrame, answer) -> dict[str, str]:
    return {row["sample_id"]: json.dumps(answer(row, json.loads(row["questions"])))
            for row in samples[["sample_id", "frame", "questions"]].to_dict("records")}


def uniform_random(samples: pd.DataFrame, market: Market, s: Any, *, seed: int = 0) -> Mapping[str, str]:
    """Uniformly random among each question's choices (prices unanswered)."""
    rng = np.random.default_rng(int(seed))

    def answer(row: dict, truths: dict) -> dict:
        out = {}
        for q in truths:
            if q in _CHOICES:
                pick = _CHOICES[q][int(rng.integers(len(_CHOICES[q])))]
                out[q] = int(pick) if q in NUMERIC else pick
        return out

    return _texts(samples, answer)


def majority(samples: pd.DataFrame, market: Market, s: Any) -> Mapping[str, str]:
    """Each question's most common true answer per time frame, over these samples (prices unanswered)."""
    truths = [(row["frame"], q, t) for row in samples[["frame", "questions"]].to_dict("records")
              for q, t in json.loads(row["questions"]).items() if q in _CHOICES]
    counts = pd.DataFrame(truths, columns=["frame", "question", "truth"]).astype({"truth": str})
    common = {} if counts.empty else (counts.groupby(["frame", "question"])["truth"]
                                      .agg(lambda t: t.value_counts().sort_index().idxmax()).to_dict())

    def answer(row: dict, truths: dict) -> dict:
        found = {q: common[(row["frame"], q)] for q in truths if (row["frame"], q) in common}
        return {q: int(a) if q in NUMERIC else a for q, a in found.items()}

    return _texts(samples, answer)


def oracle(samples: pd.DataFrame, market: Market, s: Any) -> Mapping[str, str]:
    """The true answers (a ceiling check, not a model)."""
    return _texts(samples, lambda row, truths: truths)


BASELINES = {"uniform_random": uniform_random, "majority": majority, "oracle": oracle}
