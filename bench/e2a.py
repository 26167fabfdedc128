"""E2A-style scoring speed on one core: anchors for N windows, and parse + claims + metrics for N
responses, each against a floor measured in the same run.

    .venv/bin/python bench/e2a.py [--n 10000]

Windows are real: every 30-bar window of the committed PSE slice, cycled to N. Responses are the
reference responders' JSON answers to those windows (every rule of the claim matcher runs on
them). Floors: slicing the window arrays (what any anchor function must do) and ``json.loads`` of
the responses (what any parser must do); the ratios say how far above those floors we are.
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

from rendering.market import load_market  # noqa: E402
from tasks.e2a.anchors import compute_anchors  # noqa: E402
from tasks.e2a.claims import judge  # noqa: E402
from tasks.e2a.metrics import e2a_metrics  # noqa: E402
from tasks.e2a.parse import parse_response  # noqa: E402
from tasks.e2a.responders import RESPONDERS  # noqa: E402

SLICE = Path(__file__).resolve().parents[1] / "tests" / "data" / "pse_slice.csv"
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
    texts = [RESPONDERS[names[i % 3]](a) for i, a in enumerate(anchors)]
    json_s, _ = timed(lambda: [json.loads(t) for t in texts])

    def score():
        rows = []
        for i, (text, a) in enumerate(zip(texts, anchors)):
            answer = parse_response(text)
            rows.append({"modality": ("text", "chart", "both")[i % 3], "action": answer.action,
                         "confidence": answer.confidence, "strong_signals": a.strong_signals,
                         **judge(answer.analysis, answer.rationale, a)})
        return e2a_metrics(pd.DataFrame(rows))

    score_s, _ = timed(score)
    print(f"anchors:  {n} windows in {anchor_s:.2f} s ({anchor_s / n * 1e6:.0f} µs each), "
          f"{anchor_s / floor_s:.0f}x the array-slicing floor ({floor_s * 1e3:.1f} ms)")
    print(f"scoring:  {n} responses in {score_s:.2f} s ({score_s / n * 1e6:.0f} µs each), "
          f"{score_s / json_s:.0f}x the json.loads floor ({json_s * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
