"""Caption scoring speed on this machine: every metric for N captions, with the Java runtime and
the encoders started once per run, each stage timed and set against a floor in the same run.

    .venv/bin/python bench/caption.py [--n 2000]

Captions and references are real: the describer's references for every 30-bar-spaced window of
the committed PSE slice, cycled to N, each scored against another window's reference (the
``shuffled`` baseline: similar wording, different facts, so no metric is trivially 1). Stages:
startup (Java's METEOR process, both encoders loaded), the pycocoevalcap metrics (one PTB
tokenizer run for every text, BLEU-4, METEOR, ROUGE-L, CIDEr), BERTScore, COS, SA and IoU. The
floor is a whitespace split of every text, what any metric must at least do; the ratio says
how far above it each stage is.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rendering.chart import ChartSpec  # noqa: E402
from rendering.market import load_market  # noqa: E402
from tasks.caption.samples import CaptionSpec, build_samples  # noqa: E402

SLICE = Path(__file__).resolve().parents[1] / "tests" / "data" / "pse_slice.csv"


def corpus(n: int) -> tuple[list[str], list[str], list[dict]]:
    import json

    market = load_market([SLICE], name="PSE")
    frame, _ = build_samples(market, CaptionSpec(interval=30), ChartSpec(ma_windows=(5, 10, 20), ma_colors=("black", "orange", "blue")))
    refs = [frame["reference"].iloc[i % len(frame)] for i in range(n)]
    meta = [json.loads(frame["metadata"].iloc[i % len(frame)]) for i in range(n)]
    cands = [frame["reference"].iloc[(i + 7) % len(frame)] for i in range(n)]
    return cands, refs, meta


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    cands, refs, meta = corpus(n)
    t = time.perf_counter()
    for text in (*cands, *refs):
        text.split()
    floor = time.perf_counter() - t

    from tasks.caption.iou import CATEGORIES, iou
    from tasks.caption.metrics import CaptionScorer, CaptionSettings
    from tasks.caption.sentiment import closing_sentiment

    timings = {}
    t = time.perf_counter()
    scorer = CaptionScorer(CaptionSettings())
    scorer._embed(["warm up"])
    scorer._bertscore(["warm up"], ["warm up"])
    timings["startup (Java METEOR, both encoders)"] = time.perf_counter() - t
    t = time.perf_counter()
    scorer.text_metrics(cands, refs)
    timings["pycocoevalcap: PTB tokenizer, BLEU-4, METEOR, ROUGE-L, CIDEr"] = time.perf_counter() - t
    t = time.perf_counter()
    scorer._bertscore(cands, refs)
    timings["BERTScore (MiniLM-L6)"] = time.perf_counter() - t
    t = time.perf_counter()
    scorer._embed(cands), scorer._embed(refs)
    timings["COS (MiniLM-L6 embeddings)"] = time.perf_counter() - t
    t = time.perf_counter()
    for c, r in zip(cands, refs):
        closing_sentiment(c), closing_sentiment(r)
    timings["SA (lexicon, closing sentences)"] = time.perf_counter() - t
    t = time.perf_counter()
    for c, r, m in zip(cands, refs, meta):
        iou(c, r, m, CATEGORIES)
    timings["IoU (Eq. 1)"] = time.perf_counter() - t
    print(f"{n} captions; floor (whitespace split of every text): {floor * 1000:.1f} ms")
    for name, seconds in timings.items():
        print(f"  {name:<62} {seconds:7.2f} s  {seconds / floor:9.0f}x floor")
    total = sum(timings.values())
    print(f"  {'all metrics':<62} {total:7.2f} s  {total / floor:9.0f}x floor  ({n / total:.0f} captions/s)")


if __name__ == "__main__":
    main()
