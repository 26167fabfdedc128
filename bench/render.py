"""Chart rendering speed: our Pillow renderer against mplfinance and against PNG encoding alone.

    .venv/bin/python bench/render.py [--charts N] [--workers K]

Inputs are N synthetic 50-bar daily windows (seeded random walks, MAs computed on a longer
history so MA90 is defined on every bar). Single-core figures come from the main process;
throughput figures from a process pool whose workers build the same windows in their initializer,
so the timed part is rendering plus returning the PNG bytes.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import multiprocessing as mp
import multiprocessing.synchronize
import os
import platform
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import PIL

# Run as a script from anywhere: make the repository's packages importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from candlebench.rendering.chart import ChartSpec, encode_png, render_chart, render_image  # noqa: E402
from candlebench.rendering.chart_mpl import render_chart_mpl  # noqa: E402

SEED = 20240301
WINDOW = 50
SPEC = ChartSpec()
TITLE = "BENCH.SH · Daily · cutoff 2024-03-01"
PAPER_CHARTS = 193_524  # HS300 + S&P 500, 32 cutoffs, daily + weekly (the paper's Table 2)
POOL_PASSES = 3  # each pool renders every window this many times, for a steadier rate
COL = 46


def synthetic_window(index: int, spec: ChartSpec = SPEC, bars: int = WINDOW) -> pd.DataFrame:
    """One seeded random-walk window with MAs taken from the history before it."""
    rng = np.random.default_rng([SEED, index])
    total = bars + max(spec.ma_windows) + 60
    start_price = float(np.exp(rng.uniform(0.0, 7.0)))  # ~1 to ~1100, exercises label formats
    close = start_price * np.exp(np.cumsum(rng.normal(0.0005, 0.02, total)))
    open_ = np.concatenate(([start_price], close[:-1])) * np.exp(rng.normal(0, 0.005, total))
    high = np.maximum(open_, close) * np.exp(np.abs(rng.normal(0, 0.01, total)))
    low = np.minimum(open_, close) * np.exp(-np.abs(rng.normal(0, 0.01, total)))
    volume = np.round(np.exp(rng.normal(13.5, 0.5, total)))
    first_day = pd.Timestamp("2010-01-01") + pd.Timedelta(days=int(rng.integers(5000)))
    history = pd.DataFrame(
        {
            "date": pd.bdate_range(first_day, periods=total),
            "open": open_,
            "high": high,
            "low": low,
            "close": close,
            "volume": volume,
        }
    )
    for w in spec.ma_windows:
        history[f"ma{w}"] = history["close"].rolling(w, min_periods=w).mean()
    return history.tail(bars).reset_index(drop=True)


def mplfinance_version() -> str:
    return importlib.metadata.version("mplfinance")


def rate(fn: Callable[[object], object], items: list, repeats: int = 1) -> float:
    """Items per second, best of ``repeats`` passes."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return len(items) / best


_worker_windows: list[pd.DataFrame] = []


def _init_worker(n: int, ready: mp.synchronize.Barrier) -> None:
    _worker_windows.extend(synthetic_window(i) for i in range(n))
    render_chart(_worker_windows[0], SPEC, TITLE)  # fonts and static layer, out of the timing
    ready.wait()


def _render_index(i: int) -> bytes:
    return render_chart(_worker_windows[i], SPEC, TITLE)


def pool_rate(workers: int, n: int) -> float:
    ctx = mp.get_context()
    ready = ctx.Barrier(workers + 1)
    with ctx.Pool(workers, initializer=_init_worker, initargs=(n, ready)) as pool:
        ready.wait()  # every worker has built its inputs: only rendering is timed
        start = time.perf_counter()
        jobs = list(range(n)) * POOL_PASSES
        pool.map(_render_index, jobs, chunksize=max(1, len(jobs) // (workers * 8)))
        return len(jobs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--charts", type=int, default=200, help="synthetic windows to render")
    parser.add_argument("--workers", type=int, default=None, help="an extra pool size to measure")
    args = parser.parse_args()
    n = args.charts
    n_mpl = max(5, n // 10)

    # mplfinance's styles ask for font weights DejaVu lacks; matplotlib's notes on that would
    # land in the middle of the table.
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    windows = [synthetic_window(i) for i in range(n)]
    render_chart(windows[0], SPEC, TITLE)
    render_chart_mpl(windows[0], SPEC, TITLE)  # imports and font caches, out of the timing

    ours = rate(lambda w: render_chart(w, SPEC, TITLE), windows, repeats=3)
    draw_only = rate(lambda w: render_image(w, SPEC, TITLE), windows, repeats=3)
    images = [render_image(w, SPEC, TITLE) for w in windows]
    floor = rate(encode_png, images, repeats=3)
    mpl = rate(lambda w: render_chart_mpl(w, SPEC, TITLE), windows[:n_mpl])
    sizes = [len(encode_png(im)) for im in images]

    print(f"{n} synthetic {WINDOW}-bar windows, {SPEC.width}x{SPEC.height}; mplfinance on the first {n_mpl}")
    print(
        f"mean PNG size {np.mean(sizes) / 1024:.1f} KiB; {os.cpu_count()} CPUs; Python {platform.python_version()}, "
        f"Pillow {PIL.__version__}, zlib {zlib.ZLIB_RUNTIME_VERSION}, mplfinance {mplfinance_version()}"
    )
    print()
    print(f"{'single core':<{COL}}{'charts/s':>10}{'ms/chart':>10}")
    for name, r in (
        ("ours: render_chart (draw + encode)", ours),
        ("ours: draw only (render_image)", draw_only),
        ("PNG-encode floor (same pixels, same zlib)", floor),
        (f"mplfinance (render_chart_mpl, {n_mpl} charts)", mpl),
    ):
        print(f"{name:<{COL}}{r:>10.1f}{1000 / r:>10.2f}")
    print(f"{'speed-up, ours / mplfinance':<{COL}}{ours / mpl:>10.1f}x")
    print(f"{'cost, ours / PNG-encode floor':<{COL}}{floor / ours:>10.2f}x")
    print()

    sizes_to_run = sorted({1, 2, *([args.workers] if args.workers else [])})
    rates = {k: pool_rate(k, n) for k in sizes_to_run}
    print(f"{f'process pool ({n} windows x {POOL_PASSES})':<{COL}}{'charts/s':>10}{'scaling':>10}")
    for k, r in rates.items():
        print(f"{f'{k} worker(s)':<{COL}}{r:>10.1f}{r / rates[1]:>9.2f}x")
    print()

    job_rates = {k: job_rate(k) for k in sizes_to_run}
    print(f"{'render job on the committed slice (end to end)':<{COL}}{'charts/s':>10}{'scaling':>10}")
    for k, r in job_rates.items():
        print(f"{f'{k} worker(s)':<{COL}}{r:>10.1f}{r / job_rates[1]:>9.2f}x")
    per_core = job_rates[1]
    minutes = PAPER_CHARTS / (16 * per_core * min(1.0, job_rates[2] / (2 * per_core))) / 60
    print(
        f"paper scale ({PAPER_CHARTS:,} charts) on a 16-core node at the measured per-core rate and "
        f"1->2 scaling efficiency: {minutes:.1f} min (target <= 10 min, >= 330 charts/s)"
    )


def job_rate(workers: int) -> float:
    """Charts/s of the whole render job: cut history, weekly bars, MAs, draw, encode, write, manifest."""
    from candlebench.market.market import load_market
    from candlebench.rendering.render import RenderSettings, render_samples
    from candlebench.stages.graph import compose_config
    from candlebench.tasks.forecast.samples import build_samples
    from candlebench.tasks.forecast.task import TASK

    market = load_market([Path(__file__).resolve().parents[1] / "tests" / "data" / "pse_slice.csv"], name="PSE")
    rules = TASK.settings(compose_config(["task=forecast", "task.samples.interval=5"]).task).samples
    samples = build_samples(market, rules).frame
    settings = RenderSettings(spec=SPEC, freqs=("daily", "weekly"), max_bars=50, renderer="pil")
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        render_samples(samples, market.bars, settings, Path(out), workers)
        return 2 * len(samples[["code", "cutoff"]].drop_duplicates()) / (time.perf_counter() - start)


if __name__ == "__main__":
    main()
