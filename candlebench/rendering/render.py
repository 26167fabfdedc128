"""Drawing a task's inputs to files: every chart of its time frames (and the OHLCV text blocks
when it asks for them) for each (code, cutoff) of its samples, in parallel, resumable, byte-stable.
The render stage (:mod:`candlebench.stages.render`) runs it on a task's samples.

Files: ``images/<cutoff>/<code>/<freq>.png`` (and ``ohlcv.txt``) under the task's folder of the
task_dir, shared by the task's samples of the same stock and cutoff (E2A's three modalities).
Progress is an append-only ``images/manifest.jsonl`` (one line per written file, flushed and
fsynced per stock); a file is written under a temporary name and renamed, so a killed run leaves
no half-written chart. A re-run skips a file only when the manifest
holds it under the same chart settings *and* the bytes on disk still hash to the recorded sha256;
anything missing, corrupt or rendered with other settings is drawn again. On a cluster the stocks
split over array tasks (``chunk``), each with a manifest file of its own; :func:`collect_manifest`
gathers them once every file is drawn.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import threading
import time
import zlib
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Protocol, Sequence

import pandas as pd
import PIL
from candlebench.core.io import atomic_write, fingerprint
from candlebench.core.rules import ConfigError, integer, one_of, optional_integer
from candlebench.core.settings import setting
from candlebench.core.jsonl import JsonlAppender, read_jsonl
from candlebench.core.progress import progress
from candlebench.core.schema import KEY, stamped, version_of
from candlebench.core.hash_partition import in_part
from candlebench.market.bars import chart_bars, history_before
from candlebench.rendering.chart import MARKS_DRAWING, ChartSpec, blank_png, render_chart
from candlebench.rendering.chart_mpl import render_chart_mpl
from candlebench.rendering.inputs import BLANK_INPUT, TEXT_INPUT, text_column
from candlebench.rendering.marks import with_marks
from candlebench.rendering.text import sample_text

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
    text: bool = False  # also write the OHLCV text blocks of the same bars
    colors: tuple[str, str] = ("green", "red")  # names of the up and down colours, for prompts

    def describe(self) -> str:
        s = self.spec
        return (f"{self.renderer} {s.width}x{s.height}, {self.colors[0]}-up, {self.max_bars} bars, "
                f"MAs {list(s.ma_windows)}, inputs {list(self.inputs)}")

    @property
    def frames(self) -> tuple[str, ...]:
        """The time frames drawn as charts (the blank image of a chart's size is no time frame)."""
        return tuple(f for f in self.freqs if f != BLANK_INPUT)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every file drawn or written per (code, cutoff)."""
        return (*self.freqs, TEXT_INPUT) if self.text else self.freqs

    def key(self) -> str:
        """Fingerprint of everything that changes a chart's bytes (not workers or paths).

        The PNG bytes also depend on the zlib Python links and on Pillow's bundled FreeType, so
        their versions are part of it: another machine may re-render, never mix.
        """
        environment = {"zlib": zlib.ZLIB_RUNTIME_VERSION, "pillow": PIL.__version__}
        spec = asdict(self.spec)
        if not spec["marks"]:
            # An unmarked chart is byte for byte what it was before marks existed: its key stays
            # the same, so studies drawn then keep their charts (and their runs' freshness).
            del spec["marks"]
        else:  # the key covers settings, not code: a lettered chart's names how its letters are drawn
            spec["marks_drawing"] = MARKS_DRAWING
        return fingerprint({**asdict(self), "spec": spec, "environment": environment})


@dataclass(frozen=True)
class StockJob:
    code: str
    bars: pd.DataFrame  # the stock's whole daily history; each chart cuts it at its cutoff
    cutoffs: tuple[pd.Timestamp, ...]
    recorded: Mapping[str, tuple[str, str]]  # relative path -> (sha256, data) of earlier runs, same settings


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """``render.chunk``: this job's part of the stocks."""

    index: int = setting(integer(0))
    count: int = setting(integer(1))

    def __post_init__(self) -> None:
        if self.index >= self.count:
            raise ConfigError(f"render.chunk.index={self.index}: must be < render.chunk.count={self.count}")


@dataclass(frozen=True, kw_only=True)
class Drawing:
    """``render:``: how charts are drawn (a task's ``task.render:`` is what they show)."""

    renderer: str = setting(one_of(RENDERERS))
    width: int = setting(integer(200))
    height: int = setting(integer(150))
    colors: str = setting(one_of(COLOR_CONVENTIONS))  # a colour convention's name
    workers: int | None = setting(optional_integer(1))  # None: one per CPU
    chunk: Chunk


class Design(Protocol):
    """A task's chart design (``task.render:``): bars, moving averages, lettered bars."""

    max_bars: int
    ma_windows: tuple[int, ...]
    ma_colors: tuple[str, ...]
    marks: int


def render_settings(drawing: Drawing, design: Design, freqs: Sequence[str], text: bool = False) -> RenderSettings:
    """The render settings of ``drawing`` (renderer, size, colour convention) and a task's chart
    ``design`` for the inputs the task declares: charts of the time frames ``freqs``, and the OHLCV
    text blocks when ``text``."""
    up, down = COLOR_CONVENTIONS[drawing.colors]
    spec = ChartSpec(
        width=int(drawing.width),
        height=int(drawing.height),
        up_color=up,
        down_color=down,
        ma_windows=tuple(int(w) for w in design.ma_windows),
        ma_colors=tuple(str(c) for c in design.ma_colors),
        marks=int(design.marks),
    )
    return RenderSettings(
        spec=spec, freqs=tuple(freqs), max_bars=int(design.max_bars), renderer=str(drawing.renderer), text=text,
        colors=(up, down),
    )


def chart_path(cutoff: pd.Timestamp, code: str, freq: str) -> str:
    """Relative to the task's folder; ``freq`` is a time frame, or the text input (a .txt file)."""
    suffix = "txt" if freq == TEXT_INPUT else "png"
    return f"images/{cutoff:%Y-%m-%d}/{code}/{freq}.{suffix}"


def input_paths(samples: pd.DataFrame, freq: str) -> list[str]:
    """Each sample's file of input ``freq``, relative to the task's folder: its stock's chart at its
    cutoff (every sample of that stock and date shares it), or, for samples of a dataset without
    stocks and dates, a file of its own (its id where that is a safe file name, else a digest of it)."""
    if {"code", "cutoff"} <= set(samples.columns):
        return [chart_path(c, code, freq) for c, code in zip(samples["cutoff"], samples["code"])]
    suffix = "txt" if freq == TEXT_INPUT else "png"
    return [f"images/samples/{_file_name(str(sid))}/{freq}.{suffix}" for sid in samples["sample_id"]]


def _file_name(sample_id: str) -> str:
    safe = re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}", sample_id)
    return sample_id if safe else hashlib.sha256(sample_id.encode()).hexdigest()[:16]


def input_column(name: str) -> str:
    return text_column() if name == TEXT_INPUT else f"image_{name}"


def chart_title(code: str, freq: str, cutoff: pd.Timestamp) -> str:
    return f"{code} | {freq.title()} | cutoff {cutoff:%Y-%m-%d}"


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def data_fingerprints(bars: pd.DataFrame, cutoffs: tuple[pd.Timestamp, ...]) -> list[str]:
    """For each cutoff, a fingerprint of the bars a chart of it is drawn from (every bar before it:
    the moving averages reach back past the window). Another market file with other bars there
    gives another fingerprint, so the chart is redrawn rather than trusted."""
    rows = pd.util.hash_pandas_object(bars[["date", "open", "high", "low", "close", "volume"]], index=False).to_numpy()
    ends = bars["date"].searchsorted(pd.DatetimeIndex(cutoffs), side="left")
    return [hashlib.sha256(rows[:end].tobytes()).hexdigest()[:16] for end in ends]


def render_stock(job: StockJob, settings: RenderSettings, task_dir: Path) -> list[dict]:
    """Draw (or verify) every chart of one stock; returns manifest rows of the files it wrote.

    A file is kept only when the manifest holds it under these settings, from the same bars, and
    its bytes on disk still hash to the recorded sha256."""
    draw = RENDERERS[settings.renderer]
    rows = []
    for cutoff, data in zip(job.cutoffs, data_fingerprints(job.bars, job.cutoffs)):
        history = history_before(job.bars, cutoff)
        for freq in settings.inputs:
            rel = chart_path(cutoff, job.code, freq)
            target = task_dir / rel
            recorded = job.recorded.get(rel)
            if recorded is not None and recorded[1] == data and _sha256(target) == recorded[0]:
                continue
            if freq == TEXT_INPUT:
                png = sample_text(
                    history, job.code, cutoff, settings.frames, settings.spec.ma_windows, settings.max_bars
                ).encode()
            elif freq == BLANK_INPUT:
                png = blank_png(settings.spec)
            else:
                bars = chart_bars(history, freq, settings.spec.ma_windows, settings.max_bars)
                if settings.spec.marks:
                    bars = with_marks(bars, job.code, cutoff, freq, settings.spec.marks)
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
                    "data": data,
                }
            )
    return rows


def read_manifest(path: Path) -> list[dict]:
    """Rows of the progress manifest, of any schema version this candlebench knows (a newer one is
    refused naming the line); a last line cut short by a kill is ignored."""
    return list(read_jsonl(path, "`candlebench render`", _manifest_row))


def _manifest_row(row: dict) -> dict:
    version_of("render manifest", row)  # version 1 (before versions) has the same fields
    row.pop(KEY, None)
    return row


def _run_jobs(
    jobs: list[StockJob], settings: RenderSettings, task_dir: Path, workers: int
) -> Iterator[tuple[StockJob, list[dict]]]:
    """(job, manifest rows) as each stock finishes, in completion order."""
    if workers == 1:
        for job in jobs:
            yield job, render_stock(job, settings, task_dir)
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_end_with_the_parent, initargs=(os.getpid(),))
    try:
        with _interruptible() as stop:
            futures = {pool.submit(render_stock, job, settings, task_dir): i for i, job in enumerate(jobs)}
            pending = set(futures)
            while pending:
                if stop.is_set():
                    raise KeyboardInterrupt("signal")
                done, pending = wait(pending, timeout=_STOP_CHECK_S, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=futures.get):
                    yield jobs[futures[future]], future.result()
    except BaseException:
        # Killed (SIGTERM), interrupted (Ctrl-C) or failed: end the workers now rather than leave
        # them drawing, or hung, after this process is gone. What they wrote is renamed into
        # place only when whole, and the manifest has every finished stock: a re-run resumes.
        for process in list((pool._processes or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# How often a worker looks whether its parent is still there, and the parent whether it was stopped.
_PARENT_CHECK_S = _STOP_CHECK_S = 0.2


def _end_with_the_parent(parent: int) -> None:
    """A worker's own signal handling, and its end when the parent ends however it does (SIGKILL
    included: an orphan would go on drawing into the run folder beside a resumed render, then wait
    forever). Forked while the parent's SIGTERM handler was installed, it takes the default back
    (SIGTERM ends it); it ignores Ctrl-C, which the whole process group gets: the parent ends it in
    order. A watchdog thread ends it within ``_PARENT_CHECK_S`` of its parent's death (reparented:
    another parent pid), portable where Linux's parent-death signal is not."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


@contextmanager
def _interruptible() -> Iterator[threading.Event]:
    """SIGTERM and Ctrl-C raise KeyboardInterrupt here, so the pool is torn down as for Ctrl-C, and
    set the event the pool's loop looks at between its waits. The raise alone can be lost: a signal
    handled while the main thread runs a finalizer (a ``__del__``, a weakref callback) raises in it,
    where Python prints the exception and drops it. (A render the tests interrupted ran on to exit 0
    twice in some twenty runs of the suite; a dropped raise is the one way found for that.)"""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def interrupt(signum, frame):
        stop.set()
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def manifest_file(task_dir: Path, chunk: tuple[int, int]) -> Path:
    # One file per chunk: array tasks never append to the same file.
    index, count = chunk
    name = "manifest.jsonl" if count == 1 else f"manifest.chunk{index}of{count}.jsonl"
    return task_dir / "images" / name


def recorded_charts(task_dir: Path, settings: RenderSettings) -> dict[str, tuple[str, str | None]]:
    """path -> (sha256, data fingerprint) from every chunk's manifest, for files drawn under these
    settings; the latest row of a path wins (a redraw appends a new one)."""
    rows = [r for path in sorted((task_dir / "images").glob("manifest*.jsonl")) for r in read_manifest(path)]
    return {r["path"]: (r["sha256"], r.get("data")) for r in rows if r.get("settings") == settings.key()}


def render_samples(
    samples: pd.DataFrame,
    bars: pd.DataFrame,
    settings: RenderSettings,
    task_dir: Path,
    workers: int,
    chunk: tuple[int, int] = (0, 1),
) -> None:
    """Render (or verify) every chart of the stocks in ``chunk`` that the samples need."""
    recorded = recorded_charts(task_dir, settings)
    pairs = samples[["code", "cutoff"]].drop_duplicates().sort_values(["code", "cutoff"])
    pairs = pairs[pairs["code"].map(lambda c: in_part(c, *chunk))]
    by_code = {code: group for code, group in bars.groupby("code", sort=True)}
    jobs = []
    for code, group in pairs.groupby("code", sort=True):
        if code not in by_code:
            raise ValueError(f"samples.parquet has stock {code!r}, which the market data lacks")
        cutoffs = tuple(group["cutoff"])
        paths = {chart_path(c, code, f) for c in cutoffs for f in settings.inputs}
        jobs.append(StockJob(code, by_code[code], cutoffs, {p: recorded[p] for p in paths if p in recorded}))

    manifest_path = manifest_file(task_dir, chunk)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    # temp files of a run killed between write and rename; only this chunk's stocks, since other
    # chunks may be writing theirs right now
    for stale in manifest_path.parent.rglob("*.partial"):
        if in_part(stale.parent.name, *chunk):
            stale.unlink()
    total = len(pairs) * len(settings.inputs)
    with JsonlAppender(manifest_path) as manifest, progress(total, "file", "render") as bar:
        for job, rows in _run_jobs(jobs, settings, task_dir, workers):
            manifest.write(stamped("render manifest", r) for r in rows)
            bar.update(len(job.cutoffs) * len(settings.inputs))


def copy_images(samples: pd.DataFrame, provided: Mapping[str, Path], settings: RenderSettings, task_dir: Path,
                chunk: tuple[int, int] = (0, 1)) -> None:
    """A task's own images where its charts would be drawn (one time frame), each recorded in the
    manifest like a drawn chart, its source's sha256 as the data fingerprint: a changed source
    file is copied again, an unchanged one is kept."""
    (freq,) = settings.freqs
    recorded = recorded_charts(task_dir, settings)
    manifest_path = manifest_file(task_dir, chunk)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    # Split by stock as drawn charts are; samples without stocks (a dataset's own) by sample.
    keys = samples["code"] if "code" in samples else samples["sample_id"]
    cutoffs = samples["cutoff"] if "cutoff" in samples else [None] * len(samples)
    with JsonlAppender(manifest_path) as manifest:
        for sid, key, cutoff, rel in zip(samples["sample_id"], keys, cutoffs, input_paths(samples, freq)):
            if not in_part(str(key), *chunk):
                continue
            source = Path(provided[sid])
            data = source.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            target = task_dir / rel
            if recorded.get(rel) == (digest, digest) and _sha256(target) == digest:
                continue
            atomic_write(target, lambda p: p.write_bytes(data))
            manifest.write([stamped("render manifest", {
                "code": key if "code" in samples else None,
                "cutoff": None if cutoff is None else f"{cutoff:%Y-%m-%d}", "freq": freq, "path": rel,
                "sha256": digest, "width": settings.spec.width, "height": settings.spec.height,
                "settings": settings.key(), "data": digest, "source": str(source)})])


MANIFEST_COLUMNS = ["sample_id", "freq", "path", "sha256", "width", "height", "settings"]


def collect_manifest(samples: pd.DataFrame, settings: RenderSettings, task_dir: Path) -> pd.DataFrame:
    """One row per sample and freq (sample_id, freq, path, sha256, width, height); every chart must
    have been drawn under these settings."""
    recorded = recorded_charts(task_dir, settings)
    records = [
        {
            "sample_id": sid,
            "freq": freq,
            "path": path,
            "sha256": recorded.get(path, (None,))[0],
            "width": settings.spec.width,
            "height": settings.spec.height,
            "settings": settings.key(),
        }
        for freq in settings.inputs
        for sid, path in zip(samples["sample_id"], input_paths(samples, freq))
    ]
    manifest = pd.DataFrame(records, columns=MANIFEST_COLUMNS)  # no rows for a task that draws nothing
    missing = manifest.loc[manifest["sha256"].isna(), "path"]
    if len(missing):
        raise FileNotFoundError(
            f"{task_dir / 'images'}: {len(missing)} charts not rendered yet (e.g. {missing.iloc[0]}); "
            "run every render chunk first"
        )
    return manifest.sort_values(["sample_id", "freq"], kind="stable").reset_index(drop=True)
