"""Report build time and size with its sample browser, and the time a browser takes to show the
first page of samples; each figure set against a reference measured in the same run.

    .venv/bin/python bench/report.py [--samples 10000] [--runs 3] [--browser]

Input: real forecast samples of the committed PSE slice with their rendered charts (samples +
render, through the CLI), cycled to N samples (each copy its own sample id, stock and answers,
the charts shared), and R model runs whose rows carry what real ones do: the forecast prompt
the task builds for each sample, both charts, a 200-character answer with its score tag, about
3% unparseable answers. Figures:

* build: the browser's data (``browser_data``), their packing (gzip + base64) and the whole
  ``write_report``; reference = ``DataFrame.to_json`` of the same rows, the least any writer of
  them does.
* size: report.html in MB; reference = those rows' plain JSON (the compression ratio).
* embed: WebP thumbnails (report.embed=true) of every distinct chart here, per image, and the
  size N samples with two charts each of their own would add.
* --browser: seconds from opening report.html in headless chromium until the first page of
  samples is on screen; reference = the same for a 100-sample report.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from candlebench.core.layout import task_paths  # noqa: E402
from candlebench.core.results import RunData  # noqa: E402
from candlebench.stages.graph import compose_config  # noqa: E402
from candlebench.stages.parsed import GENERIC  # noqa: E402
from rendering.inputs import read_samples  # noqa: E402
from scoring.browser import BrowsedRun, BrowserSettings, browser_data, browser_html, packed  # noqa: E402
from scoring.report import Section, write_report  # noqa: E402
from tasks import get_task  # noqa: E402

WORDS = ("the close sits above its 20-day average while volume fades; the weekly chart shows a higher low and "
         "the last candle is a doji, so momentum is mixed but leaning up").split()


def study(out: Path) -> list[str]:
    common = ["data=slice", f"out_dir={out}", "task.samples.interval=10"]
    exe = str(Path(sys.executable).with_name("candlebench"))
    for stage in (["samples"], ["render", "render.workers=1"]):
        subprocess.run([exe, *stage, *common], check=True, capture_output=True, cwd=out)
    return common


def runs(common: list[str], n: int, n_runs: int, seed: int = 0) -> list[BrowsedRun]:
    cfg = compose_config([*common, "task=forecast"])
    task, paths = get_task("forecast"), task_paths(cfg)
    base = read_samples(paths)
    rng = np.random.default_rng(seed)
    copies = [base.assign(sample_id=base["sample_id"] + f"-{k}", code=base["code"] + f"{k}")
              for k in range(-(-n // len(base)))]
    samples = pd.concat(copies, ignore_index=True).iloc[:n].reset_index(drop=True)
    prompts = [task.request(cfg, row, {}).prompt for row in samples.to_dict("records")]
    out = []
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
        info = {"kind": "model", "random_weights": False, "identity": {"image_policy": {}}}
        out.append(BrowsedRun(task, paths, RunData(f"model{r}", parsed, samples, info, {"horizon": 30}), f"model{r}"))
    return out


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def build(browsed: list[BrowsedRun], out: Path, settings: BrowserSettings) -> dict:
    data, t_data = timed(lambda: browser_data(browsed, out, settings))
    _, t_pack = timed(lambda: packed(data))
    (md, page), t_write = timed(lambda: write_report([Section("Bench", ())], out, "bench", False,
                                                     browser_html(browser_data(browsed, out, settings))))
    return {"data_s": t_data, "pack_s": t_pack, "write_s": t_write, "mb": page.stat().st_size / 1e6, "page": page}


def first_page_s(page: Path) -> float:
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1600"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium")
    driver = webdriver.Chrome(service=webdriver.ChromeService(shutil.which("chromedriver")), options=options)
    try:
        driver.get("about:blank")
        start = time.perf_counter()
        driver.get(page.as_uri())
        while not driver.execute_script("return document.getElementById('cb-browser').dataset.ready"):
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="also time the first page in headless chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        common = study(work)
        browsed = runs(common, args.samples, args.runs)
        rows = sum(len(b.run.parsed) for b in browsed)
        raw, t_floor = timed(lambda: "".join(b.run.parsed.to_json(orient="records", date_format="iso") for b in browsed))
        got = build(browsed, work / "report", BrowserSettings())
        print(f"{args.samples} samples x {args.runs} runs = {rows} answers")
        print(f"reference: DataFrame.to_json of the rows {t_floor:.2f} s, {len(raw.encode()) / 1e6:.1f} MB")
        print(f"browser data {got['data_s']:.2f} s, packing {got['pack_s']:.2f} s, whole write_report {got['write_s']:.2f} s "
              f"({got['write_s'] / t_floor:.1f}x the reference)")
        print(f"report.html {got['mb']:.2f} MB ({len(raw.encode()) / 1e6 / got['mb']:.1f}x smaller than the rows' JSON); "
              "charts referenced as files next to it")
        charts = sorted({p for b in browsed[:1] for c in ("daily", "weekly") for p in b.run.parsed[f"image_{c}"].unique()})
        distinct = browsed[0].run.parsed.drop_duplicates(subset=["image_daily"]).reset_index(drop=True)
        one = [BrowsedRun(browsed[0].task, browsed[0].paths,
                          RunData("one", distinct, distinct, browsed[0].run.info, {"horizon": 30}), "one")]
        lean = build(one, work / "lean", BrowserSettings())
        fat = build(one, work / "fat", BrowserSettings(embed=True))
        per_image = (fat["mb"] - lean["mb"]) / len(charts)
        print(f"embed: {len(charts)} distinct charts, {(fat['data_s'] - lean['data_s']) / len(charts) * 1e3:.1f} ms and "
              f"{per_image * 1e3:.1f} kB per thumbnail; {args.samples} samples with 2 charts of their own would add "
              f"~{per_image * 2 * args.samples:.0f} MB")
        if args.browser:
            small = build(runs(common, 100, args.runs), work / "small", BrowserSettings())
            t_small, t_big = first_page_s(small["page"]), first_page_s(got["page"])
            print(f"first page in chromium: {t_big:.2f} s for {rows} answers; reference {t_small:.2f} s for "
                  f"{100 * args.runs} ({t_big / t_small:.1f}x)")


if __name__ == "__main__":
    main()
