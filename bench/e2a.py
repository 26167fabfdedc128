"""The E2A-style judge: its accuracy on the hand-labelled gold set (tests/gold/e2a/) per language,
and its speed on one core: anchors for N windows, and parse + claims + metrics for N responses,
each against a floor measured in the same run.

    .venv/bin/python bench/e2a.py [--n 10000]

Windows are real: every 30-bar window of the committed PSE slice, cycled to N. Responses: the
reference responders' JSON answers to those windows, and the gold set's realistic answers (fences,
think blocks, markdown, free text, English and Chinese) cycled to N on their own windows. Floors:
slicing the window arrays (what any anchor function must do) and ``json.loads`` of the responders'
answers (what any parser must do); the ratios say how far above those floors we are.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from candlebench.market.market import load_market  # noqa: E402
from candlebench.tasks.e2a.anchors import compute_anchors  # noqa: E402
from candlebench.tasks.e2a.claims import judge  # noqa: E402
from candlebench.tasks.e2a.metrics import e2a_metrics  # noqa: E402
from candlebench.tasks.e2a.parse import parse_response  # noqa: E402
from candlebench.tasks.e2a.responders import RESPONDERS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "pse_slice.csv"
sys.path.insert(0, str(ROOT / "tests" / "gold" / "e2a"))

from accuracy import FLOORS, measure  # noqa: E402
from facts import window_anchors  # noqa: E402
from gold import answers  # noqa: E402
COLUMNS = ("open", "high", "low", "close", "volume")


def windows(n: int) -> list[dict]:
    market = load_market([SLICE], name="PSE")
    found = []
    for code in sorted(market.bars["code"].unique()):
        arrays = {k: market.stock(code)[k].to_numpy() for k in COLUMNS}
        found += [{k: v[:end] for k, v in arrays.items()} for end in range(30, len(arrays["close"]) + 1)]
    return [found[i % len(found)] for i in range(n)]


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    n = parser.parse_args().n
    histories = windows(n)
    floor_s, _ = timed(lambda: [{k: v[-30:] for k, v in h.items()} for h in histories])
    anchor_s, anchors = timed(lambda: [compute_anchors(h) for h in histories])
    names = list(RESPONDERS)
    texts = [RESPONDERS[names[i % len(names)]](a) for i, a in enumerate(anchors)]
    json_s, _ = timed(lambda: [json.loads(t) for t in texts])

    def score(pairs):
        rows = []
        for i, (text, a) in enumerate(pairs):
            answer = parse_response(text)
            rows.append({"modality": ("text", "chart", "both")[i % 3], "action": answer.action,
                         "confidence": answer.confidence, "strong_signals": a.strong_signals,
                         **judge(answer.analysis, answer.rationale, a)})
        return e2a_metrics(pd.DataFrame(rows))

    score_s, _ = timed(lambda: score(zip(texts, anchors)))
    gold = [item for _, _, item in answers()]
    gold_pairs = [(item["response"], window_anchors(item["code"], item["cutoff"])) for item in gold]
    gold_pairs = [gold_pairs[i % len(gold_pairs)] for i in range(n)]
    gold_s, _ = timed(lambda: score(gold_pairs))
    accuracy, _ = measure(gold)
    for lang, a in accuracy.items():
        print(f"gold {lang}: {a['n']} answers, {a['claims']} claims | " + ", ".join(
            f"{k} {a[k]:.3f} (floor {FLOORS[k]})" for k in FLOORS))
    print(f"anchors:  {n} windows in {anchor_s:.2f} s ({anchor_s / n * 1e6:.0f} µs each), "
          f"{anchor_s / floor_s:.0f}x the array-slicing floor ({floor_s * 1e3:.1f} ms)")
    print(f"scoring:  {n} responder answers in {score_s:.2f} s ({score_s / n * 1e6:.0f} µs each), "
          f"{score_s / json_s:.0f}x the json.loads floor ({json_s * 1e3:.1f} ms)")
    print(f"scoring:  {n} gold-set answers in {gold_s:.2f} s ({gold_s / n * 1e6:.0f} µs each), "
          f"{gold_s / json_s:.0f}x the json.loads floor")


if __name__ == "__main__":
    main()
