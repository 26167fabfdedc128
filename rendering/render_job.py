"""``candlebench render``: every sample's daily and weekly chart, in parallel, resumable, byte-stable.

Files: ``images/<cutoff>/<code>/<freq>.png`` under the run's out_dir, shared by every task that
samples the same stock and cutoff. Progress is an append-only ``images/manifest.jsonl`` (one line
per written file, flushed and fsynced per stock); a PNG is written under a temporary name and
renamed, so a killed run leaves no half-written chart. A re-run skips a file only when the manifest
holds it under the same chart settings *and* the bytes on disk still hash to the recorded sha256;
anything missing, corrupt or rendered with other settings is drawn again.

At the end the manifest is written as ``images/manifest.parquet`` (sample_id, freq, path, sha256,
width, height) and the image paths are merged into ``samples.parquet`` (``image_daily``, ...).
On a cluster the stocks split over ``render.chunk.count`` array tasks, each with a manifest file of
its own; a last step (:func:`finalize_render`) collects them once all chunks are done.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

import pandas as pd
import PIL
from omegaconf import DictConfig
from tqdm import tqdm

from candlebench.io import atomic_write, write_parquet
from candlebench.split import in_part
from rendering.bars import chart_bars, history_before
from rendering.chart import ChartSpec, render_chart
from rendering.chart_mpl import render_chart_mpl
from rendering.data_source import open_market

Renderer = Callable[[pd.DataFrame, ChartSpec, str], bytes]
RENDERERS: Mapping[str, Renderer] = {"pil": render_chart, "mplfinance": render_chart_mpl}
# up colour, down colour. The paper's prompt describes green-up candles; A-share charts are red-up.
COLOR_CONVENTIONS: Mapping[str, tuple[str, str]] = {"green_up": ("green", "red"), "red_up": ("red", "green")}


@dataclass(frozen=True)
class RenderSettings:
    spec: ChartSpec
    freqs: tuple[str, ...]
    max_bars: int
    renderer: str

    def key(self) -> str:
        """Fingerprint of everything that changes a chart's bytes (not workers or paths).

        The PNG bytes also depend on the zlib Python links and on Pillow's bundled FreeType, so
        their versions are part of it: another machine may re-render, never mix.
        """
        environment = {"zlib": zlib.ZLIB_RUNTIME_VERSION, "pillow": PIL.__version__}
        text = json.dumps(
            {**asdict(self), "spec": asdict(self.spec), "environment": environment}, sort_keys=True, default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StockJob:
    code: str
    bars: pd.DataFrame  # the stock's whole daily history; each chart cuts it at its cutoff
    cutoffs: tuple[pd.Timestamp, ...]
    recorded: Mapping[str, str]  # relative path -> sha256 from earlier runs with the same settings


def settings_from(cfg: DictConfig) -> RenderSettings:
    r = cfg.render
    if r.colors not in COLOR_CONVENTIONS:
        raise ValueError(f"render.colors={r.colors!r}: choose from {sorted(COLOR_CONVENTIONS)}")
    if r.renderer not in RENDERERS:
        raise ValueError(f"render.renderer={r.renderer!r}: choose from {sorted(RENDERERS)}")
    up, down = COLOR_CONVENTIONS[r.colors]
    spec = ChartSpec(
        width=int(r.width),
        height=int(r.height),
        up_color=up,
        down_color=down,
        ma_windows=tuple(int(w) for w in r.ma_windows),
        ma_colors=tuple(str(c) for c in r.ma_colors),
    )
    return RenderSettings(spec=spec, freqs=tuple(r.freqs), max_bars=int(r.max_bars), renderer=str(r.renderer))


def chart_path(cutoff: pd.Timestamp, code: str, freq: str) -> str:
    return f"images/{cutoff:%Y-%m-%d}/{code}/{freq}.png"


def chart_title(code: str, freq: str, cutoff: pd.Timestamp) -> str:
    return f"{code} | {freq.title()} | cutoff {cutoff:%Y-%m-%d}"


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def render_stock(job: StockJob, settings: RenderSettings, out_dir: Path) -> list[dict]:
    """Draw (or verify) every chart of one stock; returns manifest rows of the files it wrote."""
    draw = RENDERERS[settings.renderer]
    rows = []
    for cutoff in job.cutoffs:
        history = history_before(job.bars, cutoff)
        for freq in settings.freqs:
            rel = chart_path(cutoff, job.code, freq)
            target = out_dir / rel
            if rel in job.recorded and _sha256(target) == job.recorded[rel]:
                continue
            bars = chart_bars(history, freq, settings.spec.ma_windows, settings.max_bars)
            png = draw(bars, settings.spec, chart_title(job.code, freq, cutoff))
            atomic_write(target, lambda p: p.write_bytes(png))
            rows.append(
                {
                    "code": job.code,
                    "cutoff": f"{cutoff:%Y-%m-%d}",
                    "freq": freq,
                    "path": rel,
                    "sha256": hashlib.sha256(png).hexdigest(),
                    "width": settings.spec.width,
                    "height": settings.spec.height,
                    "settings": settings.key(),
                }
            )
    return rows


def read_manifest(path: Path) -> list[dict]:
    """Rows of the progress manifest; a last line cut short by a kill is ignored."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _append(manifest, rows: list[dict]) -> None:
    for row in rows:
        manifest.write(json.dumps(row, sort_keys=True) + "\n")
    manifest.flush()
    os.fsync(manifest.fileno())


def _run_jobs(
    jobs: list[StockJob], settings: RenderSettings, out_dir: Path, workers: int
) -> Iterator[tuple[StockJob, list[dict]]]:
    """(job, manifest rows) as each stock finishes, in completion order."""
    if workers == 1:
        for job in jobs:
            yield job, render_stock(job, settings, out_dir)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(render_stock, job, settings, out_dir): job for job in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()


def manifest_file(out_dir: Path, chunk: tuple[int, int]) -> Path:
    # One file per chunk: array tasks never append to the same file.
    index, count = chunk
    name = "manifest.jsonl" if count == 1 else f"manifest.chunk{index}of{count}.jsonl"
    return out_dir / "images" / name


def recorded_charts(out_dir: Path, settings: RenderSettings) -> dict[str, str]:
    """path -> sha256 from every chunk's manifest, for charts drawn under these settings."""
    rows = [r for path in sorted((out_dir / "images").glob("manifest*.jsonl")) for r in read_manifest(path)]
    return {r["path"]: r["sha256"] for r in rows if r["settings"] == settings.key()}


def render_samples(
    samples: pd.DataFrame,
    bars: pd.DataFrame,
    settings: RenderSettings,
    out_dir: Path,
    workers: int,
    chunk: tuple[int, int] = (0, 1),
) -> None:
    """Render (or verify) every chart of the stocks in ``chunk`` that the samples need."""
    recorded = recorded_charts(out_dir, settings)
    pairs = samples[["code", "cutoff"]].drop_duplicates().sort_values(["code", "cutoff"])
    pairs = pairs[pairs["code"].map(lambda c: in_part(c, *chunk))]
    by_code = {code: group for code, group in bars.groupby("code", sort=True)}
    jobs = []
    for code, group in pairs.groupby("code", sort=True):
        if code not in by_code:
            raise ValueError(f"samples.parquet has stock {code!r}, which the market data lacks")
        cutoffs = tuple(group["cutoff"])
        paths = {chart_path(c, code, f) for c in cutoffs for f in settings.freqs}
        jobs.append(StockJob(code, by_code[code], cutoffs, {p: recorded[p] for p in paths if p in recorded}))

    manifest_path = manifest_file(out_dir, chunk)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    # temp files of a run killed between write and rename; only this chunk's stocks, since other
    # chunks may be writing theirs right now
    for stale in manifest_path.parent.rglob("*.partial"):
        if in_part(stale.parent.name, *chunk):
            stale.unlink()
    total = len(pairs) * len(settings.freqs)
    with open(manifest_path, "a") as manifest, tqdm(total=total, unit="chart", desc="render") as bar:
        for job, rows in _run_jobs(jobs, settings, out_dir, workers):
            _append(manifest, rows)
            bar.update(len(job.cutoffs) * len(settings.freqs))


def collect_manifest(samples: pd.DataFrame, settings: RenderSettings, out_dir: Path) -> pd.DataFrame:
    """One row per sample and freq (sample_id, freq, path, sha256, width, height); every chart must
    have been drawn under these settings."""
    recorded = recorded_charts(out_dir, settings)
    records = [
        {
            "sample_id": s.sample_id,
            "freq": freq,
            "path": chart_path(s.cutoff, s.code, freq),
            "sha256": recorded.get(chart_path(s.cutoff, s.code, freq)),
            "width": settings.spec.width,
            "height": settings.spec.height,
        }
        for s in samples.itertuples()
        for freq in settings.freqs
    ]
    manifest = pd.DataFrame(records)
    missing = manifest.loc[manifest["sha256"].isna(), "path"]
    if len(missing):
        raise FileNotFoundError(
            f"{out_dir / 'images'}: {len(missing)} charts not rendered yet (e.g. {missing.iloc[0]}); "
            "run every render chunk first"
        )
    return manifest.sort_values(["sample_id", "freq"], kind="stable").reset_index(drop=True)


def finalize_render(cfg: DictConfig) -> pd.DataFrame:
    """Write images/manifest.parquet and merge the chart paths into samples.parquet."""
    out_dir = Path(cfg.out_dir)
    samples_path = out_dir / "samples.parquet"
    samples = pd.read_parquet(samples_path)
    manifest = collect_manifest(samples, settings_from(cfg), out_dir)
    write_parquet(manifest, out_dir / "images" / "manifest.parquet")
    paths = manifest.pivot(index="sample_id", columns="freq", values="path").add_prefix("image_")
    merged = samples.drop(columns=[c for c in samples.columns if c.startswith("image_")])
    merged = merged.merge(paths, left_on="sample_id", right_index=True, how="left")
    write_parquet(merged, samples_path)
    return manifest


def render(cfg: DictConfig) -> None:
    out_dir = Path(cfg.out_dir)
    samples_path = out_dir / "samples.parquet"
    if not samples_path.exists():
        raise FileNotFoundError(f"{samples_path}: no samples yet; run `candlebench samples` with the same out_dir")
    samples = pd.read_parquet(samples_path)
    settings = settings_from(cfg)
    workers = int(cfg.render.workers or os.cpu_count() or 1)
    chunk = (int(cfg.render.chunk.index), int(cfg.render.chunk.count))
    market = open_market(cfg.data)
    render_samples(samples, market.bars, settings, out_dir, workers, chunk)
    if chunk[1] > 1:
        print(f"render chunk {chunk[0]}/{chunk[1]} done under {out_dir / 'images'} (finalize after all chunks)")
        return
    manifest = finalize_render(cfg)
    print(f"{len(manifest)} charts ({settings.renderer}, key {settings.key()}) under {out_dir / 'images'}")
