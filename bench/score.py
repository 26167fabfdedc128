"""Scoring speed: the full ``compute_metrics`` on a paper-sized run, on one core.

    .venv/bin/python bench/score.py [--rows N] [--dates D] [--n-boot B]

Input: N synthetic predictions over D cutoff dates (seeded), with both horizons, regimes,
continuous-trend flags, parse failures, missing labels, "unclear" zeros and out-of-range values, so
every branch of the scorer runs. The figure is the wall time of one ``compute_metrics`` call with
the bootstrap and a release-date split; the first (cold) call is reported separately.
"""

from __future__ import annotations

import os

# One core: pin the BLAS/OpenMP pools before numpy is imported, or they read the machine's cores.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# Run as a script from anywhere: make the repository's packages importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.forecast.metrics import compute_metrics  # noqa: E402

SEED = 20260414
TARGET_S = 2.0


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dates", type=int, default=32)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()

    frame = synthetic_run(args.rows, args.dates)
    release = str(frame["cutoff"].sort_values().iloc[len(frame) // 2].date())
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        metrics = compute_metrics(frame, horizon=30, release_date=release, n_boot=args.n_boot, seed=0)
        timings.append(time.perf_counter() - start)
    print(f"rows={args.rows} dates={args.dates} n_boot={args.n_boot} release_date={release} threads=1")
    print(f"compute_metrics cold: {timings[0]:.3f} s   warm (best of {len(timings) - 1}): "
          f"{min(timings[1:]):.3f} s   target < {TARGET_S:.1f} s")
    print(f"ic_mean={metrics['ic_mean']:.4f} CI={metrics['ci']['ic_mean']}  "
          f"accuracy={metrics['accuracy']:.4f} CI={metrics['ci']['accuracy']}  "
          f"r_5 ic_mean={metrics['by_horizon']['r_5']['ic_mean']:.4f}")


if __name__ == "__main__":
    main()
