"""The browser's rows: each run's answers, samples, prompts, images and scores as columnar tables,
and the two layouts of their document: one inside the page (a small study), or one file per run
with shared prompt files (a large one)."""

from __future__ import annotations

import gzip
import hashlib
import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

import numpy as np
import pandas as pd

from candlebench.core.io import atomic_write, json_bytes
from candlebench.core.layout import TaskPaths
from candlebench.core.results import RunAnswers, has_answer
from candlebench.rendering.model_input import ImagePolicy
from candlebench.report.browser.images import Images
from candlebench.report.browser.settings import BrowserSettings

ANSWER_CHARS = 80  # the table's answer column; the detail view shows it whole
FILES = "browser"  # the large layout's folder, next to report.html
PROMPTS_PER_FILE = 2_000  # a detail view fetches one such file (~0.3 MB gzip'd for forecast prompts)
# The per-run files: level 6 writes about three times faster than 9 for a few per cent more bytes,
# and these are read from the local disk, not mailed.
FILE_LEVEL = 6


class Browsable(Protocol):
    """The task as the browser sees it (:meth:`candlebench.task_api.base.Task.browse`)."""

    name: str

    def browse(self, run: RunAnswers) -> pd.DataFrame: ...


@dataclass(frozen=True)
class BrowserRun:
    """One run as the browser lists it: its task, the task folder its samples and charts live in,
    the name shown (prefixed with the market in a pooled report), its run.json, how many records
    it has (one a sample, answered or not: core.results.has_answer), and how to read them: the
    writer reads each run when it comes to it and lets it go before the next, so no more than one
    run's rows are ever in memory."""

    task: Browsable
    paths: TaskPaths
    shown: str
    info: Mapping[str, Any]
    answers: int
    load: Callable[[], RunAnswers]


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else str(value)


def _json_safe(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


def _dates(values: pd.Series) -> list[str]:
    """Each value's day as str(value)[:10] does it, a datetime column at numpy's speed."""
    if pd.api.types.is_datetime64_dtype(values.dtype):
        return np.datetime_as_string(values.to_numpy(), unit="D").tolist()
    return [str(v)[:10] for v in values]


def _scores(parsed: pd.DataFrame) -> list[dict | None]:
    """Each row's per-sample scores (the ``score_*`` columns, prefix dropped), None without any."""
    columns = [c for c in parsed.columns if c.startswith("score_")]
    if not columns:
        return [None] * len(parsed)
    values = [[_json_safe(v) for v in parsed[c].tolist()] for c in columns]
    return [dict(zip((c[len("score_"):] for c in columns), row)) for row in zip(*values)]


def _policy(info: Mapping[str, Any]) -> ImagePolicy:
    return ImagePolicy(**((info.get("identity") or {}).get("image_policy") or {}))


def _chart_shas(paths: TaskPaths) -> dict[tuple[str, str], str]:
    if not paths.manifest.exists():
        return {}
    manifest = pd.read_parquet(paths.manifest, columns=["sample_id", "freq", "sha256"])
    return dict(zip(zip(manifest["sample_id"], manifest["freq"]), manifest["sha256"]))


class _InlinePrompts:
    """A small study's prompts: a list inside the page, each distinct text once."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def get(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))


class _PromptFiles:
    """A large study's prompts: each distinct text once over every run, written in files of
    PROMPTS_PER_FILE as they fill. Only a digest of each text seen is kept (the texts themselves
    until their file is written), so memory grows with the distinct prompts' count, not the runs'."""

    def __init__(self, folder: Path):
        self.folder, self.index, self.pending = folder, {}, []

    def get(self, text: str) -> int:
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.index)
            self.pending.append(text)
            if len(self.pending) == PROMPTS_PER_FILE:
                self.flush()
        return found

    def flush(self) -> None:
        if self.pending:
            number = (len(self.index) - 1) // PROMPTS_PER_FILE
            _write_gzip_json(self.pending, self.folder / f"{number}.json.gz")
            self.pending = []


@dataclass
class _Tables:
    """The browser's columnar tables (one list per field) of some runs: every run's for a small
    study's page, one run's for a large study's file."""

    images: Images
    prompts: _InlinePrompts | _PromptFiles
    tasks: list[str]
    samples: dict[tuple[str, str], int] = field(default_factory=dict)
    sample_cols: dict[str, list] = field(default_factory=lambda: {
        k: [] for k in ("task", "id", "date", "code", "market", "group", "label")})
    rows: dict[str, list] = field(default_factory=lambda: {
        k: [] for k in ("run", "sample", "tier", "reason", "failed", "answered", "outcome", "answer")})
    detail: dict[str, list] = field(default_factory=lambda: {
        k: [] for k in ("text", "answer", "error", "prompt", "images", "scores", "extra")})

    def add(self, index: int, b: BrowserRun, run: RunAnswers) -> None:
        """Every row of ``run`` (the ``index``-th of the page's runs), a column at a time: a
        row-by-row pandas lookup would cost more than all the rest at 1.6 M rows."""
        parsed = run.parsed
        n = len(parsed)
        ids = [str(v) for v in parsed["sample_id"]]
        view = b.task.browse(run)
        view = view.set_index(view["sample_id"].astype(str)).reindex(ids)
        col = lambda name: parsed[name].tolist() if name in parsed else [None] * n  # noqa: E731
        answers = [_text(v) for v in col("answer")]
        texts, errors = [_text(v) for v in col("text")], [_text(v) for v in col("error")]
        self.rows["run"] += [index] * n
        self.rows["sample"] += self._samples(b.task.name, ids, parsed, view)
        self.rows["tier"] += [str(v) for v in col("tier")]
        self.rows["reason"] += [_text(v) for v in col("reason")]
        self.rows["failed"] += [a is None for a in answers]
        # The page counts answers by the project's one meaning of "answered", not its rows.
        self.rows["answered"] += [has_answer(t, e) for t, e in zip(texts, errors)]
        self.rows["outcome"] += [_text(v) for v in view["outcome"].tolist()]
        self.rows["answer"] += [None if a is None else a[:ANSWER_CHARS] for a in answers]
        self.detail["text"] += texts
        self.detail["answer"] += answers
        self.detail["error"] += errors
        self.detail["prompt"] += [None if p is None else self.prompts.get(p) for p in map(_text, col("prompt"))]
        self.detail["images"] += self._images(b, ids, col("charts"), parsed)
        self.detail["scores"] += _scores(parsed)
        self.detail["extra"] += [e if isinstance(e, dict) else None for e in view["detail"].tolist()]

    def _samples(self, task_name: str, ids: list[str], parsed: pd.DataFrame, view: pd.DataFrame) -> list[int]:
        """Each row's sample, listed the first time a run answers it."""
        task = self.tasks.index(task_name)
        # A dataset task's samples may have no market, stock or date: those cells stay empty.
        blank = [""] * len(ids)
        columns = zip(ids, _dates(parsed["cutoff"]) if "cutoff" in parsed else blank,
                      parsed["code"].tolist() if "code" in parsed else blank,
                      parsed["market"].tolist() if "market" in parsed else blank, view["group"].tolist(),
                      view["label"].tolist())
        found = []
        for sid, date, code, market, group, label in columns:
            key = (task_name, sid)
            if key not in self.samples:
                self.samples[key] = len(self.samples)
                for name, value in (("task", task), ("id", sid), ("date", date), ("code", str(code)),
                                    ("market", str(market)), ("group", str(group)), ("label", str(label))):
                    self.sample_cols[name].append(value)
            found.append(self.samples[key])
        return found

    def _images(self, b: BrowserRun, ids: list[str], charts: list, parsed: pd.DataFrame) -> list[list[int]]:
        """Each row's images: those of its charts (``charts``: "daily,weekly") under the run's policy."""
        image = self.images.of_run(_policy(b.info), b.paths.root)
        shas = _chart_shas(b.paths)
        files = {c[len("image_"):]: parsed[c].tolist() for c in parsed.columns if c.startswith("image_")}
        return [[image(str(files[c][k]), shas.get((sid, c))) for c in (_text(shown) or "").split(",") if c in files]
                for k, (sid, shown) in enumerate(zip(ids, charts))]

    def document(self) -> dict[str, Any]:
        return {"samples": self.sample_cols, "rows": self.rows, "detail": self.detail, "images": self.images.table}

    def keys(self) -> set[str]:
        """The sample keys (``date``, ``code``) some sample here has: the page shows a column and a
        filter of each, none of a key no sample has (a dataset's own samples: no market)."""
        return {k for k in ("date", "code") if any(self.sample_cols[k])}

    def failures(self) -> list[list]:
        """[[reason or "", count], ...] of the failed rows, for the page's failure table."""
        counts: dict[str, int] = {}
        for failed, reason in zip(self.rows["failed"], self.rows["reason"]):
            if failed:
                counts[reason or ""] = counts.get(reason or "", 0) + 1
        return sorted(map(list, counts.items()))


def _run_entry(b: BrowserRun) -> dict[str, Any]:
    return {"task": b.task.name, "name": b.shown, "kind": str(b.info.get("kind")),
            "random_weights": bool(b.info.get("random_weights"))}


def _tasks(runs: list[BrowserRun]) -> list[str]:
    return sorted({b.task.name for b in runs})


def browser_data(runs: list[BrowserRun], out: Path, settings: BrowserSettings) -> dict[str, Any]:
    """The JSON document the page's script reads, every run's rows in it (a small study)."""
    prompts = _InlinePrompts()
    tables = _Tables(Images(out, settings), prompts, _tasks(runs))
    for index, b in enumerate(runs):
        tables.add(index, b, b.load())
    return {"runs": [_run_entry(b) for b in runs], "tasks": tables.tasks, **tables.document(),
            "prompts": list(prompts.index), "page_size": settings.page_size, "keys": sorted(tables.keys())}


def _write_gzip_json(value: Any, path: Path) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(gzip.compress(json_bytes(value), compresslevel=FILE_LEVEL, mtime=0)))


def _file_name(index: int, b: BrowserRun) -> str:
    return f"{index}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', f'{b.task.name}-{b.shown}')}.json.gz"


def write_run_files(runs: list[BrowserRun], out: Path, settings: BrowserSettings) -> dict[str, Any]:
    """A large study: each run's tables as its own file under ``out/browser/runs`` and the shared
    prompts under ``out/browser/prompts``, one run read at a time; returns the page's index of
    them (the runs with their files, record and failure counts, and the filters' choices)."""
    folder = out / FILES
    shutil.rmtree(folder, ignore_errors=True)  # a rebuilt report's runs, not an older one's
    prompts = _PromptFiles(folder / "prompts")
    tasks = _tasks(runs)
    entries, groups, tiers, reasons, keys, sources = [], set(), set(), set(), set(), {}
    for index, b in enumerate(runs):
        tables = _Tables(Images(out, settings, sources), prompts, tasks)
        tables.add(index, b, b.load())
        name = _file_name(index, b)
        _write_gzip_json(tables.document(), folder / "runs" / name)
        entries.append({**_run_entry(b), "file": f"{FILES}/runs/{name}", "records": len(tables.rows["run"]),
                        "failures": tables.failures()})
        groups.update(tables.sample_cols["group"])
        tiers.update(tables.rows["tier"])
        reasons.update(r for r in tables.rows["reason"] if r)
        keys |= tables.keys()
    prompts.flush()
    return {"runs": entries, "tasks": tasks, "page_size": settings.page_size,
            "split": {"prompts": f"{FILES}/prompts/", "prompts_per_file": PROMPTS_PER_FILE},
            "groups": sorted(groups - {""}), "tiers": sorted(tiers), "reasons": sorted(reasons), "keys": sorted(keys)}
