"""The render job: stable bytes across runs and worker counts, no look-ahead, resume after a kill."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from candlebench.market.bars import with_moving_averages
from candlebench.rendering.chart import ChartSpec, render_chart
from candlebench.rendering.render import (
    RenderSettings,
    StockJob,
    _run_jobs,
    chart_path,
    chart_title,
    collect_manifest,
    copy_images,
    read_manifest,
    render_samples,
)
from candlebench.tasks.forecast.samples import build_samples

from helpers import cli, setup_of, start
SETTINGS = RenderSettings(spec=ChartSpec(), freqs=("daily", "weekly"), max_bars=50, renderer="pil")


@pytest.fixture(scope="module")
def few_samples(slice_market):
    frame = build_samples(slice_market, setup_of("task=forecast", "task.samples.interval=90").settings.samples).frame
    return frame[frame["code"].isin(["AC", "PHN", "SM"])].reset_index(drop=True)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.png"))}


def test_same_bytes_across_runs_and_worker_counts(tmp_path, few_samples, slice_market):
    render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path / "a", workers=1)
    render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path / "b", workers=2)
    one = collect_manifest(few_samples, SETTINGS, tmp_path / "a")
    two = collect_manifest(few_samples, SETTINGS, tmp_path / "b")
    pd.testing.assert_frame_equal(one, two)
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert a == b and len(a) == 2 * len(few_samples)
    for row in one.itertuples():
        data = (tmp_path / "a" / row.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row.sha256
        assert Image.open(io.BytesIO(data)).size == (row.width, row.height)
    assert set(one["sample_id"]) == set(few_samples["sample_id"])


def test_mutating_bars_on_or_after_the_cutoff_leaves_both_pngs_unchanged(tmp_path, few_samples, slice_market):
    sample = few_samples.iloc[len(few_samples) // 2]
    bars = slice_market.bars.copy()
    future = (bars["code"] == sample.code) & (bars["date"] >= sample.cutoff)
    rng = np.random.default_rng(0)
    bars.loc[future, ["open", "high", "low", "close"]] *= rng.uniform(0.5, 2.0, size=(future.sum(), 1))
    bars.loc[future, "volume"] *= 10
    one = few_samples.iloc[[len(few_samples) // 2]]
    render_samples(one, slice_market.bars, SETTINGS, tmp_path / "a", workers=1)
    render_samples(one, bars, SETTINGS, tmp_path / "b", workers=1)
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    # and the mutation is visible to a chart of a later cutoff
    later = pd.Timestamp(sample.cutoff) + pd.Timedelta(days=120)
    moved = one.assign(cutoff=later)
    render_samples(moved, slice_market.bars, SETTINGS, tmp_path / "c", workers=1)
    render_samples(moved, bars, SETTINGS, tmp_path / "d", workers=1)
    assert tree(tmp_path / "c") != tree(tmp_path / "d")


def test_weekly_chart_of_a_midweek_cutoff_ends_with_the_partial_week(tmp_path, slice_market, slice_rows):
    cutoff = pd.Timestamp("2018-03-14")  # Wednesday: the last weekly candle is Mon 12 + Tue 13 only
    sample = pd.DataFrame([{"sample_id": "x", "code": "AC", "cutoff": cutoff}])
    render_samples(sample, slice_market.bars, SETTINGS, tmp_path, workers=1)
    # the same chart drawn from weekly bars aggregated by hand from the CSV rows
    rows = [r for r in slice_rows if r["code"] == "AC" and r["date"] < "2018-03-14"]
    weeks: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        weeks.setdefault(pd.Timestamp(r["date"]).isocalendar()[:2], []).append(r)
    hand = pd.DataFrame(
        [
            {
                "date": pd.Timestamp(w[-1]["date"]),
                "open": float(w[0]["open"]),
                "high": max(float(r["high"]) for r in w),
                "low": min(float(r["low"]) for r in w),
                "close": float(w[-1]["close"]),
                "volume": sum(float(r["volume"]) for r in w),
            }
            for _, w in sorted(weeks.items())
        ]
    )
    assert hand["date"].iloc[-1] == pd.Timestamp("2018-03-13")
    expected = render_chart(with_moving_averages(hand, (5, 20, 90)).tail(50).reset_index(drop=True), ChartSpec(), chart_title("AC", "weekly", cutoff))
    assert (tmp_path / chart_path(cutoff, "AC", "weekly")).read_bytes() == expected


def test_chunks_split_the_stocks_and_together_equal_one_run(tmp_path, few_samples, slice_market):
    render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path / "one", workers=1)
    for index in range(3):
        render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path / "three", workers=1, chunk=(index, 3))
    assert tree(tmp_path / "one") == tree(tmp_path / "three")
    assert len(list((tmp_path / "three" / "images").glob("manifest.chunk*of3.jsonl"))) == 3
    pd.testing.assert_frame_equal(
        collect_manifest(few_samples, SETTINGS, tmp_path / "one"),
        collect_manifest(few_samples, SETTINGS, tmp_path / "three"),
    )
    render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path / "part", workers=1, chunk=(0, 2))
    with pytest.raises(FileNotFoundError, match="not rendered yet"):
        collect_manifest(few_samples, SETTINGS, tmp_path / "part")


@pytest.mark.unit
def test_images_of_samples_without_stock_or_date_are_kept_per_sample(tmp_path):
    """A dataset's own images, its samples keyed by id alone: each copied to a file of its sample
    (an id unfit for a file name by its digest), split over chunks by sample, and collected."""
    sources = []
    for i, colour in enumerate(("red", "blue", "green")):
        sources.append(tmp_path / f"src{i}.png")
        Image.new("RGB", (4, 4), colour).save(sources[-1])
    samples = pd.DataFrame({"sample_id": ["a", "b", "../c"], "task": "mine"})
    settings = RenderSettings(spec=ChartSpec(), freqs=("daily",), max_bars=50, renderer="pil")
    provided = dict(zip(samples["sample_id"], sources))
    for index in range(2):
        copy_images(samples, provided, settings, tmp_path / "out", chunk=(index, 2))
    manifest = collect_manifest(samples, settings, tmp_path / "out")
    digest = hashlib.sha256(b"../c").hexdigest()[:16]
    assert manifest["path"].tolist() == [f"images/samples/{digest}/daily.png", "images/samples/a/daily.png",
                                         "images/samples/b/daily.png"]
    for sid, path in zip(manifest["sample_id"], manifest["path"]):
        assert (tmp_path / "out" / path).read_bytes() == provided[sid].read_bytes()


def test_rerun_skips_valid_files_and_redraws_missing_corrupt_or_restyled(tmp_path, few_samples, slice_market):
    render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path, workers=1)
    lines = len(read_manifest(tmp_path / "images" / "manifest.jsonl"))
    paths = sorted((tmp_path / "images").rglob("*.png"))
    paths[0].unlink()
    paths[1].write_bytes(paths[1].read_bytes()[:100])
    before = {p: p.stat().st_mtime_ns for p in paths[2:]}
    render_samples(few_samples, slice_market.bars, SETTINGS, tmp_path, workers=1)
    assert len(read_manifest(tmp_path / "images" / "manifest.jsonl")) == lines + 2
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())
    Image.open(paths[1]).verify()
    red = RenderSettings(spec=ChartSpec(up_color="red", down_color="green"), freqs=SETTINGS.freqs, max_bars=50, renderer="pil")
    render_samples(few_samples, slice_market.bars, red, tmp_path, workers=1)
    assert len(read_manifest(tmp_path / "images" / "manifest.jsonl")) == 2 * lines + 2


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_signal_whose_raise_a_finalizer_dropped_still_ends_the_pool(tmp_path, few_samples, slice_market):
    """SIGTERM handled while the main thread runs a ``__del__``: Python prints the KeyboardInterrupt
    and drops it; the pool's loop stops all the same, before it hands on another stock."""
    class SignalledWhileFinalised:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)  # the handler runs here, in __del__, and its raise goes nowhere

    bars = dict(tuple(slice_market.bars.groupby("code")))
    jobs = [StockJob(code, bars[code], tuple(group["cutoff"]), {}) for code, group in few_samples.groupby("code")]
    stocks = _run_jobs(jobs, SETTINGS, tmp_path, workers=2)
    next(stocks)
    SignalledWhileFinalised()
    with pytest.raises(KeyboardInterrupt):
        next(stocks)


def test_killed_render_resumes_to_the_uninterrupted_result(tmp_path):
    """SIGKILL the whole process group (job and pool) at two points; the re-runs finish the rest."""
    args = ["data=slice", "task.samples.interval=40"]
    for out in ("ref", "run"):
        done = cli("samples", *args, f"out_dir={tmp_path / out}", check=False)
        assert done.returncode == 0, done.stderr
    ref = cli("render", *args, f"out_dir={tmp_path / 'ref'}", "render.workers=1", check=False)
    assert ref.returncode == 0, ref.stderr
    manifest = tmp_path / "run" / "forecast" / "images" / "manifest.jsonl"
    for kill_after_lines in (1, 60):
        proc = start("render", *args, f"out_dir={tmp_path / 'run'}", "render.workers=2")
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if manifest.exists() and len(manifest.read_text().splitlines()) >= kill_after_lines:
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for png in (tmp_path / "run" / "forecast" / "images").rglob("*.png"):  # never a half-written chart
            Image.open(png).load()
    done = cli("render", *args, f"out_dir={tmp_path / 'run'}", "render.workers=2", check=False)
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path / "run") == tree(tmp_path / "ref")
    assert not list((tmp_path / "run" / "forecast" / "images").rglob("*.partial"))
    final = pd.read_parquet(tmp_path / "run" / "forecast" / "images" / "manifest.parquet")
    assert not final.duplicated(["sample_id", "freq"]).any()
    pd.testing.assert_frame_equal(final, pd.read_parquet(tmp_path / "ref" / "forecast" / "images" / "manifest.parquet"))
    samples = pd.read_parquet(tmp_path / "run" / "forecast" / "samples.parquet")
    assert samples["image_daily"].notna().all() and samples["image_weekly"].notna().all()
    assert all((tmp_path / "run" / "forecast" / p).exists() for p in samples["image_daily"])
