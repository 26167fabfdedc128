"""Comparison speed: the forecast task's paired comparison of two runs at ten times the paper's
S&P 500 scale (500 stocks x 170 cutoff dates = 85,000 samples), 1,000 bootstrap draws, on one core.

    .venv/bin/python bench/compare.py [--stocks S] [--dates D] [--n-boot B]

Input: two seeded synthetic runs of bench/score.py's kind (both horizons, regimes, parse failures,
missing labels, out-of-range values) on the same samples. The figure: the wall time of
``compare_runs`` (join, per-date IC and Rank IC, direction, per horizon and per regime, each with its
sign-flip test over dates and its bootstrap of dates, and the release-date split) against a floor
measured in the same run: one ``np.bincount`` over the samples (a per-date sum) and one product of
the (B x D) bootstrap draws with a (D x 2) table of per-date sums, the least any comparison over
dates does. The first (cold) call is reported separately.
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

# Run as a script from anywhere: make the repository's packages and this folder's importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from candlebench.scoring.bootstrap import date_weights  # noqa: E402
from candlebench.tasks.forecast.compare import compare_runs  # noqa: E402
from score import SEED, synthetic_run  # noqa: E402

TARGET_S = 2.0  # 85,000 samples, 170 dates, 1,000 draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stocks", type=int, default=500)
    parser.add_argument("--dates", type=int, default=170)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()

    rows = args.stocks * args.dates
    a = synthetic_run(rows, args.dates, SEED)
    b = synthetic_run(rows, args.dates, SEED).assign(pred=synthetic_run(rows, args.dates, SEED + 7)["pred"])
    release = str(a["cutoff"].sort_values().iloc[rows // 2].date())

    def compare() -> tuple[float, dict]:
        start = time.perf_counter()
        out = compare_runs(a, b, horizon=30, n_boot=args.n_boot, seed=0, split_date=release)
        return time.perf_counter() - start, out

    def floor() -> float:
        codes = np.arange(rows) % args.dates
        values = a["r_30"].fillna(0.0).to_numpy()
        weights = date_weights(args.dates, args.n_boot, 0)
        start = time.perf_counter()
        sums = np.bincount(codes, values, args.dates)
        weights @ np.column_stack([sums, sums])
        return time.perf_counter() - start

    runs = [compare() for _ in range(3)]
    floors = [floor() for _ in range(5)]
    best, out = min(runs[1:], key=lambda r: r[0])
    print(f"stocks={args.stocks} dates={args.dates} samples={rows} n_boot={args.n_boot} split={release} threads=1")
    print(f"compare_runs cold: {runs[0][0]:.3f} s   warm (best of {len(runs) - 1}): {best:.3f} s   target <= {TARGET_S:.1f} s")
    print(f"floor, one bincount + one ({args.n_boot} x {args.dates}) @ ({args.dates} x 2) product: {min(floors):.5f} s   "
          f"compare / floor: {best / min(floors):.0f}x")
    for name, block in (("ΔIC", out["ic"]), ("ΔAcc", out["direction"])):
        diff = block.get("mean_diff", block.get("diff"))
        print(f"{name}={diff:.4f} CI={block['ci']} p={block['p']:.3g} ({block['method']}, {block['n_clusters']} "
              f"{block['unit']}s)")


if __name__ == "__main__":
    main()
