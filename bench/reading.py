"""The reading judge: its accuracy on the hand-labelled gold set (tests/gold/reading/) per language
(values and verdicts read right, whole answers, wrong credit given, credit lost), and its speed on one core scoring N answers (parse, verdicts, metrics with a 1,000-draw bootstrap),
against a floor measured in the same run: ``json.loads`` of the same texts (what any judge of a
JSON answer must do).

    .venv/bin/python bench/reading.py [--n 100000]

Samples are real: the reading task's samples of the committed PSE slice (every stock, every 30th
trading day, both time frames and modalities), cycled to N rows. Answers: the three baselines'
JSON (chance, majority, oracle) and the gold set's realistic answers (prose, fences, think blocks,
lenient JSON, Chinese), in turn; the floor reads N of the baselines' answers.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "gold" / "reading"))

from reading_accuracy import CEILINGS, FLOORS, measure  # noqa: E402
from reading_gold import answers  # noqa: E402

from candlebench.market.market import load_market  # noqa: E402
from candlebench.rendering.chart import ChartSpec  # noqa: E402
from candlebench.tasks.reading.baselines import BASELINES  # noqa: E402
from candlebench.tasks.reading.metrics import reading_metrics  # noqa: E402
from candlebench.tasks.reading.parse import parse_answer  # noqa: E402
from candlebench.tasks.reading.questions import MARKS  # noqa: E402
from candlebench.stages.graph import compose_config  # noqa: E402
from candlebench.task_api.registry import get_task  # noqa: E402
from candlebench.tasks.reading.samples import build_samples  # noqa: E402

SLICE = ROOT / "tests" / "data" / "pse_slice.csv"


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def rows(n: int) -> tuple[pd.DataFrame, list[str]]:
    """N sample rows (the real samples, cycled, each with its own id) with an answer text each, and N
    of the baselines' JSON answers (the floor's input)."""
    market = load_market([SLICE], name="PSE")
    settings = get_task("reading").settings(compose_config(["task=reading"]).task)
    samples, _ = build_samples(market, settings, ChartSpec(marks=len(MARKS)))
    texts = [dict(baseline(samples, market, None)) for baseline in BASELINES.values()]
    gold = [item["response"] for item in answers()]
    picked = samples.iloc[[i % len(samples) for i in range(n)]].reset_index(drop=True)
    picked["text"] = [texts[i % 4][sid] if i % 4 < 3 else gold[i % len(gold)]
                      for i, sid in enumerate(picked["sample_id"])]
    picked["sample_id"] = [f"{sid}-{i}" for i, sid in enumerate(picked["sample_id"])]
    plain = [t for found in texts for t in found.values()]
    return picked, [plain[i % len(plain)] for i in range(n)]


def score(frame: pd.DataFrame) -> dict:
    parsed = [parse_answer(t).answers for t in frame["text"]]
    return reading_metrics(frame.assign(answer=[None if a is None else json.dumps(a) for a in parsed]), n_boot=1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    n = parser.parse_args().n
    frame, plain = rows(n)
    floor_s, _ = timed(lambda: [json.loads(t) for t in plain])
    score_s, metrics = timed(lambda: score(frame))
    accuracy, _ = measure()
    for lang, a in accuracy.items():
        print(f"gold {lang}: {a['n']} questions | " + ", ".join(f"{k} {a[k]:.3f} (floor {FLOORS[k]})" for k in FLOORS)
              + f", wrong credit {a['wrong_credit']} (at most {CEILINGS['wrong_credit']}), credit lost "
                f"{a['credit_lost']:.3f} (at most {CEILINGS['credit_lost']})")
    questions = metrics["all"]["n"]
    print(f"scoring:  {n} answers ({questions} questions) in {score_s:.2f} s ({score_s / n * 1e6:.0f} µs an answer, "
          f"{score_s / questions * 1e6:.1f} µs a question), {score_s / floor_s:.0f}x the json.loads floor "
          f"({floor_s * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
