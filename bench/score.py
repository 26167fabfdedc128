"""Scoring speed: judging and scoring a paper-sized run, on one core.

    .venv/bin/python bench/score.py [--rows N] [--dates D] [--n-boot B]

Input: N synthetic predictions over D cutoff dates (seeded), with both horizons, regimes,
continuous-trend flags, parse failures, missing labels, "unclear" zeros and out-of-range values, so
every branch of the scorer runs; each written as the text a model gives (mostly the score tag,
some prose around it, some refusals), as records: three decimals as asked, so a run repeats texts,
and a second set where every text is its own. The figures: the wall time of ``score``'s
judging — the forecast parser over every record's text, into the parsed table
(:func:`candlebench.stages.parsed.parsed_table`) — plus ``compute_metrics`` with the bootstrap and a
release-date split, against the floor: ``compute_metrics`` alone on the table already parsed (what
scoring cost before it judged). The first (cold) call is reported separately.

Then the records' stamp (:meth:`RecordStore.stamp`, a sha256 of the parts' content that decides
whether a run's scores are of its records now) over ``--stamp-records`` records as infer writes them
(text, tokens, a prompt of a forecast prompt's length), in four parts on disk, against its floor:
hashlib's own file digest (sha256) of each part; and the time to read those records back, which
`score` and `status` spend anyway.
"""

from __future__ import annotations

import os

# One core: pin the BLAS/OpenMP pools before numpy is imported, or they read the machine's cores.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Run as a script from anywhere: make the repository's packages importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from candlebench.stages.parsed import parsed_table  # noqa: E402
from candlebench.inference.records import RecordStore, ResponseRecord  # noqa: E402
from candlebench.tasks.forecast.metrics import compute_metrics  # noqa: E402
from candlebench.tasks.forecast.task import TASK  # noqa: E402

SEED = 20260414
TARGET_S = 3.0  # judging and scoring 200k answers
# What models write around the score, in the shares they do (seeded), the prediction at {v}.
PHRASES = (
    (0.80, "<score>{v}</score>"),
    (0.10, "The daily chart shows a rising channel with higher lows. <score>{v}</score>"),
    (0.05, "<think>Volume fades on the last candles.</think>\nScore: {v}"),
    (0.05, "Expected 30-day return between {v} and {w}."),
)
REFUSAL = "I cannot predict future stock prices."


def synthetic_run(rows: int, dates: int, seed: int = SEED) -> pd.DataFrame:
    """Predictions weakly correlated with the 5-day return, as the paper finds VLMs to be."""
    rng = np.random.default_rng(seed)
    cutoffs = pd.date_range("2023-01-03", periods=dates, freq="30B")
    date_idx = np.arange(rows) % dates
    market = rng.normal(0.0, 0.05, dates)[date_idx]
    r_5 = market / 3 + rng.normal(0.0, 0.04, rows)
    r_30 = market + r_5 + rng.normal(0.0, 0.08, rows)
    pred = np.round(0.3 * r_5 + rng.normal(0.0, 0.05, rows), 3)
    pred[rng.random(rows) < 0.02] = 0.0
    wild = rng.random(rows) < 0.002
    pred[wild] = rng.choice([-3.0, 5.0], int(wild.sum()))
    pred[rng.random(rows) < 0.01] = np.nan
    r_30[rng.random(rows) < 0.01] = np.nan
    share_up = pd.Series(r_5 > 0).groupby(date_idx).transform("mean").to_numpy()
    regime = np.where(share_up > 0.7, "bull", np.where(share_up < 0.3, "bear", "sideways"))
    return pd.DataFrame(
        {
            "cutoff": cutoffs[date_idx],
            "code": [f"{i // dates:06d}.SZ" for i in range(rows)],
            "pred": pred,
            "pred_in_range": ~wild,
            "r_5": r_5,
            "r_30": r_30,
            "regime": regime,
            "continuous_rise": rng.random(rows) < 0.05,
            "continuous_fall": rng.random(rows) < 0.05,
        }
    )


def answer_texts(frame: pd.DataFrame, distinct: bool = False, seed: int = SEED) -> list[str]:
    """Each prediction as a model writes it (three decimals, as asked: a run repeats many texts); a
    missing one as a refusal (a parse failure). ``distinct``: nine decimals, every text its own."""
    rng = np.random.default_rng(seed + 1)
    shares = np.array([share for share, _ in PHRASES])
    picks = rng.choice(len(PHRASES), len(frame), p=shares / shares.sum())
    values = frame["pred"] + (np.arange(len(frame)) * 1e-9 if distinct else 0.0)
    digits = 9 if distinct else 3
    return [REFUSAL if np.isnan(v) else PHRASES[k][1].format(v=f"{v:.{digits}f}", w=f"{v + 0.05:.{digits}f}")
            for v, k in zip(values, picks)]


def records(frame: pd.DataFrame, distinct: bool = False) -> list[ResponseRecord]:
    return [ResponseRecord.answered("bench", sid, "bench", "import", text)
            for sid, text in zip(frame["sample_id"], answer_texts(frame, distinct))]


PROMPT_CHARS = 1_200  # about the forecast prompt's length, which every model record keeps


def stamp_cost(n: int) -> None:
    """The records' stamp over ``n`` records in four parts, against hashlib over the same bytes."""
    prompt = ("You are a technical analyst. " * 100)[:PROMPT_CHARS]
    texts = answer_texts(synthetic_run(n, 32))
    with tempfile.TemporaryDirectory() as folder:
        store = RecordStore(Path(folder))
        for part in range(4):
            with store.writer(f"shard{part}") as writer:
                for start in range(part * n // 4, (part + 1) * n // 4, 10_000):
                    writer.write(ResponseRecord.answered("bench", f"s{i:07d}", "bench", "transformers", texts[i],
                                                         token_ids=tuple(range(12)), prompt=prompt, latency_s=0.01)
                                 for i in range(start, min(start + 10_000, (part + 1) * n // 4)))
        parts = sorted(store.parts_dir.glob("*.jsonl"))
        size = sum(p.stat().st_size for p in parts)

        def stamp() -> float:
            start = time.perf_counter()
            store.stamp()
            return time.perf_counter() - start

        def floor() -> float:
            start = time.perf_counter()
            for p in parts:
                with p.open("rb") as fh:
                    hashlib.file_digest(fh, "sha256")
            return time.perf_counter() - start

        stamp(), floor()  # the files in the page cache for both
        stamp_s, floor_s = min(stamp() for _ in range(3)), min(floor() for _ in range(3))
        start = time.perf_counter()
        read = sum(1 for _ in store.records())
        read_s = time.perf_counter() - start
    print(f"records stamp over {n:,} records ({size / 1e9:.2f} GB in {len(parts)} parts): {stamp_s:.3f} s   "
          f"floor, hashlib.file_digest sha256 of the same files: {floor_s:.3f} s   stamp / floor: {stamp_s / floor_s:.2f}x   "
          f"reading the {read:,} records back (score, status): {read_s:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dates", type=int, default=32)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--stamp-records", type=int, default=1_000_000)
    args = parser.parse_args()

    frame = synthetic_run(args.rows, args.dates)
    frame.insert(0, "sample_id", [f"s{i:07d}" for i in range(len(frame))])
    samples = frame.drop(columns=["pred", "pred_in_range"])
    stored = records(frame)
    release = str(frame["cutoff"].sort_values().iloc[len(frame) // 2].date())
    parse = TASK.parser(None)

    def judge_and_score() -> tuple[float, float, dict]:
        start = time.perf_counter()
        table = parsed_table(samples, stored, "bench", TASK, parse)
        judged = time.perf_counter()
        metrics = compute_metrics(table, horizon=30, release_date=release, n_boot=args.n_boot, seed=0)
        return judged - start, time.perf_counter() - start, metrics

    def judge_distinct() -> float:
        start = time.perf_counter()
        parsed_table(samples, every_own, "bench", TASK, parse)
        return time.perf_counter() - start

    def floor() -> float:
        start = time.perf_counter()
        compute_metrics(frame, horizon=30, release_date=release, n_boot=args.n_boot, seed=0)
        return time.perf_counter() - start

    runs = [judge_and_score() for _ in range(3)]
    floors = [floor() for _ in range(3)]
    every_own = records(frame, distinct=True)
    distinct_s = min(judge_distinct() for _ in range(2))
    judge_s, total_s, metrics = min(runs[1:], key=lambda r: r[1])
    print(f"rows={args.rows} dates={args.dates} n_boot={args.n_boot} release_date={release} threads=1 "
          f"distinct texts={len({r.text for r in stored})}")
    print(f"judge + score cold: {runs[0][1]:.3f} s   warm (best of {len(runs) - 1}): {total_s:.3f} s "
          f"(judging {judge_s:.3f} s)   target <= {TARGET_S:.1f} s")
    print(f"floor, compute_metrics alone on the parsed table: {min(floors[1:]):.3f} s   "
          f"judge + score / floor: {total_s / min(floors[1:]):.2f}x")
    print(f"judging when every text is its own ({len({r.text for r in every_own})} distinct, nine decimals): "
          f"{distinct_s:.3f} s")
    print(f"ic_mean={metrics['ic_mean']:.4f} CI={metrics['ci']['ic_mean']}  "
          f"accuracy={metrics['accuracy']:.4f} CI={metrics['ci']['accuracy']}  "
          f"r_5 ic_mean={metrics['by_horizon']['r_5']['ic_mean']:.4f}  "
          f"parse failures={metrics['parse_failure_rate']:.4f}")
    stamp_cost(args.stamp_records)


if __name__ == "__main__":
    main()
