"""Caption scoring speed on this machine: every metric for N captions, two runs of one task (the
second finds the references' embeddings on disk, as a second model of the same task does), each
set against a floor measured in the same run.

    .venv/bin/python bench/caption.py [--n 2000]

Captions and references are real: the describer's references for every 30-bar-spaced window of
the committed PSE slice, cycled to N, each scored against another window's reference (the
``shuffled`` baseline: similar wording, different facts, so no metric is trivially 1); the second
run's captions are other windows' references again. Stages: startup (Java's METEOR process, the
encoder), each run's ``CaptionScorer.score`` (PTB tokenizer, BLEU-4, METEOR, ROUGE-L, CIDEr on the
whole reference set, BERTScore and COS from one encoder pass, SA, IoU), and the corpus values with
their bootstrap intervals. The floor is a whitespace split of every text, what any metric must at
least do; the ratio says how far above it each stage is.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from candlebench.market.market import load_market  # noqa: E402
from candlebench.rendering.chart import ChartSpec  # noqa: E402
from candlebench.stages.graph import compose_config  # noqa: E402
from candlebench.task_api.registry import get_task  # noqa: E402
from candlebench.tasks.caption.samples import build_samples  # noqa: E402

SLICE = Path(__file__).resolve().parents[1] / "tests" / "data" / "pse_slice.csv"


def corpus(n: int) -> tuple[list[str], list[str], list[str], list[dict]]:
    import json

    market = load_market([SLICE], name="PSE")
    settings = get_task("caption").settings(compose_config(["task=caption", "task.samples.interval=30"]).task)
    frame, _ = build_samples(market, settings, ChartSpec(ma_windows=(5, 10, 20), ma_colors=("black", "orange", "blue")))
    texts = frame["reference"].tolist()
    refs = [texts[i % len(texts)] for i in range(n)]
    meta = [json.loads(frame["metadata"].iloc[i % len(frame)]) for i in range(n)]
    first = [texts[(i + 7) % len(texts)] for i in range(n)]
    second = [texts[(i + 13) % len(texts)] for i in range(n)]
    return first, second, refs, meta


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    n = args.n
    first, second, refs, meta = corpus(n)
    t = time.perf_counter()
    for text in (*first, *refs):
        text.split()
    floor = time.perf_counter() - t

    from candlebench.tasks.caption.metrics import CaptionScorer, CaptionSettings

    timings = {}
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        scorer = CaptionScorer(CaptionSettings(cache_dir=cache))
        scorer.encoder.embed(["warm up"])
        timings["startup (Java METEOR, the encoder)"] = time.perf_counter() - t
        t = time.perf_counter()
        scorer.score(first, refs, meta)
        timings["run 1: every metric, references embedded and cached"] = time.perf_counter() - t
        t = time.perf_counter()
        scored = scorer.score(second, refs, meta)
        timings["run 2: every metric, references from the cache"] = time.perf_counter() - t
        t = time.perf_counter()
        scorer.corpus(scored), scorer.intervals(scored, args.n_boot)
        timings[f"run 2: corpus values and {args.n_boot} bootstrap replicates"] = time.perf_counter() - t
    print(f"{n} captions; floor (whitespace split of every text): {floor * 1000:.1f} ms")
    for name, seconds in timings.items():
        print(f"  {name:<62} {seconds:7.2f} s  {seconds / floor:9.0f}x floor")
    second_run = sum(v for k, v in timings.items() if k.startswith("run 2"))
    print(f"  {'second run in all':<62} {second_run:7.2f} s  {second_run / floor:9.0f}x floor  ({n / second_run:.1f} captions/s)")


if __name__ == "__main__":
    main()
