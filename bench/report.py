"""Report build time, peak memory and size with its sample browser, and the time a browser takes
to show the first page of samples; each figure set against a reference measured in the same run.

    .venv/bin/python bench/report.py [--samples 10000] [--runs 3] [--browser] [--split-above N]

Input: real forecast samples of the committed PSE slice with their rendered charts (samples +
render, through the CLI), cycled to N samples (each copy its own sample id, stock and answers,
the charts shared), and R model runs whose rows carry what real ones do: the forecast prompt
the task builds for each sample, both charts, a 200-character answer with its score tag, about
3% unparseable answers. A child process writes each run's parsed.parquet, as scoring does, so
this process holds only what the report's writer reads (one run at a time) and its peak RSS is
the writer's. Figures:

* write: the sample browser (``browser_block``: inside the page up to report.split_above
  answers, else one file per run) and the whole ``write_report``; its peak RSS; reference =
  ``DataFrame.to_json`` of the same rows, the least any writer of them does.
* size: report.html in MB, and the per-run files beside it; reference = those rows' plain JSON.
* embed: WebP thumbnails (report.embed=true) of every distinct chart here, per image, and the
  size N samples with two charts each of their own would add.
* --browser: seconds from opening report.html in headless chromium until the first page of
  samples is on screen (served by ``candlebench view`` when its rows are per-run files);
  reference = the same for a 100-sample report.
* --split-above: report.split_above for this run (default: the config's); a number above the
  answers writes the one-file page every study had before, to set the two layouts side by side.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from candlebench.core.results import RunAnswers  # noqa: E402
from candlebench.stages.graph import compose_job  # noqa: E402
from candlebench.stages.parsed import GENERIC  # noqa: E402
from candlebench.commands.view import serve  # noqa: E402
from candlebench.rendering.inputs import read_samples  # noqa: E402
from candlebench.report.browser import FILES, BrowserRun, BrowserSettings, browser_block  # noqa: E402
from candlebench.report.model import Section  # noqa: E402
from candlebench.report.writer import write_report  # noqa: E402

WORDS = ("the close sits above its 20-day average while volume fades; the weekly chart shows a higher low and "
         "the last candle is a doji, so momentum is mixed but leaning up").split()
INFO = {"kind": "model", "random_weights": False, "identity": {"image_policy": {}}}


def study(out: Path) -> list[str]:
    common = ["data=slice", f"out_dir={out}", "task.samples.interval=10"]
    exe = str(Path(sys.executable).with_name("candlebench"))
    for stage in (["samples"], ["render", "render.workers=1"]):
        subprocess.run([exe, *stage, *common], check=True, capture_output=True, cwd=out)
    return common


def write_runs(common: list[str], n: int, n_runs: int, folder: Path, seed: int = 0) -> tuple[float, float]:
    """Each run's parsed rows as ``folder/model<r>.parquet``; returns the reference: seconds and MB
    of ``DataFrame.to_json`` of every run's rows (one run at a time)."""
    job = compose_job([*common, "task=forecast"]).job
    task = job.task
    base = read_samples(job.task_paths)
    rng = np.random.default_rng(seed)
    copies = [base.assign(sample_id=base["sample_id"] + f"-{k}", code=base["code"] + f"{k}")
              for k in range(-(-n // len(base)))]
    samples = pd.concat(copies, ignore_index=True).iloc[:n].reset_index(drop=True)
    prompts = [task.request(job.settings, job.context, row, {}).prompt for row in samples.to_dict("records")]
    folder.mkdir(parents=True, exist_ok=True)
    floor_s = floor_mb = 0.0
    for r in range(n_runs):
        pred = np.round(rng.normal(0, 0.1, n), 3)
        failed = rng.random(n) < 0.03
        text = [("I cannot judge this chart." if f else
                 " ".join(rng.choice(WORDS, 32)) + f" <score>{p}</score>") for p, f in zip(pred, failed)]
        parsed = samples.assign(
            run_key=f"bench{r}", pred=np.where(failed, np.nan, pred), pred_in_range=~failed,
            answer=[None if f else str(p) for p, f in zip(pred, failed)],
            tier=np.where(failed, "none", "tag"), reason=np.where(failed, "no score found", None), error=None,
            text=text, prompt=prompts, charts="daily,weekly",
        )
        assert set(GENERIC) <= set(parsed.columns)
        raw, seconds = timed(lambda: parsed.to_json(orient="records", date_format="iso"))
        floor_s, floor_mb = floor_s + seconds, floor_mb + len(raw.encode()) / 1e6
        parsed.to_parquet(folder / f"model{r}.parquet", index=False)
    return floor_s, floor_mb


def runs(common: list[str], n: int, n_runs: int, folder: Path) -> tuple[list[BrowserRun], float, float]:
    """The runs as the report stage lists them (read when the writer comes to each), written by a
    child process so that their making counts in none of this process's figures."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        floor_s, floor_mb = pool.submit(write_runs, common, n, n_runs, folder).result()
    job = compose_job([*common, "task=forecast"]).job
    task, paths = job.task, job.task_paths
    listed = [BrowserRun(task, paths, f"model{r}", INFO, n, lambda r=r: load(folder / f"model{r}.parquet"))
              for r in range(n_runs)]
    return listed, floor_s, floor_mb


def load(path: Path, rows: np.ndarray | None = None) -> RunAnswers:
    parsed = pd.read_parquet(path)
    return RunAnswers(path.stem, parsed if rows is None else parsed.iloc[rows], pd.DataFrame(), INFO, {"horizon": 30})


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # Linux: kB


def build(browsed: list[BrowserRun], out: Path, settings: BrowserSettings) -> dict:
    (md, page), seconds = timed(lambda: write_report([Section("Bench", ())], out, "bench", False,
                                                     browser_block(browsed, out, settings)))
    files = sorted((out / FILES).rglob("*.json.gz"))
    return {"write_s": seconds, "mb": page.stat().st_size / 1e6, "page": page, "split": bool(files),
            "files_mb": sum(f.stat().st_size for f in files) / 1e6,
            "run_file_mb": max((f.stat().st_size for f in files if f.parent.name == "runs"), default=0) / 1e6}


def first_page_s(page: Path) -> float:
    """Seconds until the first page of samples is on screen: opened from disk, or through
    ``candlebench view``'s server when its rows are files beside it."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1600"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium")
    driver = webdriver.Chrome(service=webdriver.ChromeService(shutil.which("chromedriver")), options=options)
    served = serve(page.parent) if (page.parent / FILES).is_dir() else None
    try:
        driver.get("about:blank")
        start = time.perf_counter()
        driver.get(served.url if served else page.as_uri())
        while not driver.execute_script("return document.getElementById('cb-browser').dataset.ready"):
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        driver.quit()
        if served:
            served.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="also time the first page in headless chromium")
    parser.add_argument("--split-above", type=int, default=BrowserSettings().split_above,
                        help="answers above which the rows are per-run files (report.split_above)")
    args = parser.parse_args()
    settings = BrowserSettings(split_above=args.split_above)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        common = study(work)
        browsed, t_floor, floor_mb = runs(common, args.samples, args.runs, work / "parsed")
        rows = args.samples * args.runs
        before = peak_rss_gb()
        got = build(browsed, work / "report", settings)
        peak = peak_rss_gb()
        print(f"{args.samples} samples x {args.runs} runs = {rows} answers")
        print(f"reference: DataFrame.to_json of the rows {t_floor:.2f} s, {floor_mb:.1f} MB")
        print(f"write (sample browser {'as one file per run' if got['split'] else 'inside the page'} + write_report) "
              f"{got['write_s']:.2f} s ({got['write_s'] / t_floor:.1f}x the reference); peak RSS {peak:.2f} GB "
              f"({before:.2f} GB before the write)")
        print(f"report.html {got['mb']:.2f} MB" + (
            f", its per-run files {got['files_mb']:.1f} MB (the largest run's {got['run_file_mb']:.1f} MB)"
            if got["split"] else "") + f" ({floor_mb / (got['mb'] + got['files_mb']):.1f}x smaller than the rows' JSON); "
              "charts referenced as files next to it")
        first = browsed[0]
        frame = pd.read_parquet(work / "parsed" / "model0.parquet", columns=["image_daily", "image_weekly"])
        distinct = frame.drop_duplicates(subset=["image_daily"]).index.to_numpy()
        charts = len(set(frame["image_daily"]) | set(frame["image_weekly"]))
        one = [BrowserRun(first.task, first.paths, "one", INFO, len(distinct),
                          lambda: load(work / "parsed" / "model0.parquet", distinct))]
        lean = build(one, work / "lean", BrowserSettings())
        fat = build(one, work / "fat", BrowserSettings(charts="thumbnails"))
        per_image = (fat["mb"] - lean["mb"]) / charts
        print(f"embed: {charts} distinct charts, {(fat['write_s'] - lean['write_s']) / charts * 1e3:.1f} ms and "
              f"{per_image * 1e3:.1f} kB per thumbnail; {args.samples} samples with 2 charts of their own would add "
              f"~{per_image * 2 * args.samples:.0f} MB")
        if args.browser:
            small, _, _ = runs(common, 100, args.runs, work / "small-parsed")
            reference = build(small, work / "small", BrowserSettings())
            t_small, t_big = first_page_s(reference["page"]), first_page_s(got["page"])
            print(f"first page in chromium: {t_big:.2f} s for {rows} answers; reference {t_small:.2f} s for "
                  f"{100 * args.runs} ({t_big / t_small:.1f}x)")


if __name__ == "__main__":
    main()
