"""``candlebench render``: every input the task's samples declare (charts of its time frames, the
OHLCV text blocks when it asks for them), drawn by :mod:`candlebench.rendering.render`, or the task's own
images copied in their place.

At the end the manifest is written as ``images/manifest.parquet`` (sample_id, freq, path, sha256,
width, height) and the paths are merged into ``samples.parquet`` (``image_daily``, ...,
``text_ohlcv``). On a cluster the stocks split over ``render.chunk.count`` array tasks, each with a
manifest file of its own; the chunk that finds every file drawn (:func:`finalize_render`) collects
them, so no separate step is needed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd
import pyarrow.parquet as pq

from candlebench.core.errors import UserError
from candlebench.core.io import write_parquet
from candlebench.core.layout import TaskPaths
from candlebench.core.lock import WriterLock, one_writer
from candlebench.market.data_source import open_market
from candlebench.stages.freshness import same_market
from candlebench.stages.job import JobConfig
from candlebench.rendering.inputs import read_samples
from candlebench.rendering.render import (collect_manifest, copy_images, input_column, input_paths, read_manifest,
                              render_samples)


def finalize_render(job: JobConfig) -> pd.DataFrame | None:
    """Write images/manifest.parquet and merge the input paths into samples.parquet, once every
    input is drawn; returns None while some chunk is still missing files."""
    paths = job.task_paths
    samples = read_samples(paths)
    try:
        manifest = collect_manifest(samples, job.context.render, paths.root)
    except FileNotFoundError:
        return None
    write_parquet(manifest, paths.manifest)
    columns = manifest.pivot(index="sample_id", columns="freq", values="path")
    columns.columns = [input_column(c) for c in columns.columns]
    merged = samples.drop(columns=[c for c in samples.columns if c.startswith(("image_", "text_"))])
    merged = merged.merge(columns, left_on="sample_id", right_index=True, how="left")
    write_parquet(merged, paths.samples)
    return manifest


def writing(job: JobConfig) -> WriterLock:
    """One render per task and chunk at a time: two would both draw every chart."""
    chunk = (job.drawing.chunk.index, job.drawing.chunk.count)
    paths = job.task_paths
    return WriterLock(paths.render_lock(*chunk), f"the charts of {paths.images} (chunk {chunk[0]}/{chunk[1]})",
                      "let it draw: a render run after it finds its charts drawn")


@one_writer(writing)
def render(job: JobConfig) -> None:
    """Draw this chunk's inputs; the chunk that completes the set merges the paths into the samples."""
    paths = job.task_paths
    samples = read_samples(paths)
    if job.draws_nothing:
        # A manifest of no rows: render ran and found nothing to draw (status says so, not "none yet").
        write_parquet(collect_manifest(samples, job.context.render, paths.root), paths.manifest)
        print(f"{job.task.name}: no charts or text files to draw (its inputs are in its prompts)")
        return
    settings = job.context.render
    workers = int(job.drawing.workers or os.cpu_count() or 1)
    chunk = (job.drawing.chunk.index, job.drawing.chunk.count)
    provided = job.task.provided_images(job.settings, samples)
    if provided is not None:
        copy_images(samples, provided, settings, paths.root, chunk)
    else:
        lacking = [k for k in ("code", "cutoff") if k not in samples]
        if lacking:
            raise UserError(f"task {job.task.name}: its samples have no {' or '.join(lacking)} to draw charts of; a task "
                            "whose samples have none gives their images (Task.provided_images)")
        market = same_market(job.data, paths.summary, samples["code"].unique(), open_market(job.data))
        render_samples(samples, market.bars, settings, paths.root, workers, chunk)
    manifest = finalize_render(job)
    if manifest is None:
        print(f"render chunk {chunk[0]}/{chunk[1]} done under {paths.images} (other chunks still missing)")
        return
    print(f"{len(manifest)} inputs ({settings.renderer}, key {settings.key()}) under {paths.images}")


@dataclass(frozen=True)
class RenderProgress:
    drawn: int  # of the inputs needed, those a manifest lists
    needed: int
    inputs: tuple[str, ...]  # the time frames (and text) the manifests hold
    merged: bool  # the paths are merged into samples.parquet (the last chunk did it)
    nothing_to_draw: bool  # render ran and wrote a manifest of no rows: the prompts carry the inputs


def render_progress(paths: TaskPaths, samples: pd.DataFrame) -> RenderProgress:
    """What the manifests on disk hold of what the samples need, whatever config drew them
    (`candlebench status` reads a folder); freshness's :func:`charts_are_drawn` asks the same under a config."""
    rows = [r for p in paths.images.glob("manifest*.jsonl") for r in read_manifest(p)]
    inputs = tuple(sorted({r["freq"] for r in rows}))
    needed = {path for f in inputs for path in input_paths(samples, f)}
    nothing = not rows and paths.manifest.exists() and pq.read_metadata(paths.manifest).num_rows == 0
    return RenderProgress(len(needed & {r["path"] for r in rows}), len(needed), inputs,
                          any(c.startswith(("image_", "text_")) for c in samples.columns), nothing)
