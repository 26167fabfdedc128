"""The report's sample browser: every answered sample of every run, inspectable in report.html
itself (no server, no network: it opens from disk).

What it holds per run and sample: the generic columns of ``parsed.parquet`` (the raw text, the
parsed answer, its tier or failure reason, the prompt as sent and which charts went with it), the
task's view (:meth:`tasks.base.Task.browse`: group, label, right / wrong, detail such as E2A's
claims) and the per-sample ``score_*`` columns. The data travel as one gzip-compressed JSON
document inside the page, which the page's script (``browser.js``) unpacks with the browser's own
``DecompressionStream``; prompts are stored once per distinct text (a sample's prompt is the same
in every first-pass run), which together with gzip keeps 10,000 samples x 3 runs mailable.

Images are the exact ones the model received: the run's :class:`ImagePolicy` (run.json) applied to
the sample's chart files. Under the identity policy (the default) those are the chart files
themselves, referenced relative to the report; any other policy writes each preprocessed image
once under ``report/inputs/<policy>/<chart sha256>.png`` (content-addressed, so a rebuilt report
reuses them). ``report.embed=true`` embeds a WebP thumbnail of each instead, for a single file
that travels alone (larger; the bench prints both sizes).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import os
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from candlebench.core.io import fingerprint
from candlebench.core.layout import TaskPaths
from candlebench.core.results import RunData
from rendering.model_input import ImagePolicy

ANSWER_CHARS = 80  # the table's answer column; the detail view shows it whole


@dataclass(frozen=True)
class BrowserSettings:
    embed: bool = False  # thumbnails inside the page instead of files next to it
    thumb_px: int = 360  # longest side of an embedded thumbnail
    page_size: int = 50

    def __post_init__(self) -> None:
        if self.thumb_px < 16 or self.page_size < 1:
            raise ValueError(f"report.thumb_px must be >= 16 and report.page_size >= 1, got {self.thumb_px}, {self.page_size}")


class Browsable(Protocol):
    """The task as the browser sees it (:meth:`tasks.base.Task.browse`)."""

    name: str

    def browse(self, run: RunData) -> pd.DataFrame: ...


@dataclass(frozen=True)
class BrowsedRun:
    """One run as the browser lists it: its task, the task folder its samples and charts live in,
    its data, and the name shown (prefixed with the market in a pooled report)."""

    task: Browsable
    paths: TaskPaths
    run: RunData
    shown: str


class _Images:
    """Image sources by (policy, chart file): each prepared once, however many runs share it."""

    def __init__(self, out: Path, settings: BrowserSettings):
        self.out, self.settings = out, settings
        self.table: list[list[Any]] = []  # [src, width, height] (sizes known only where prepared here)
        self.index: dict[tuple[str, str], int] = {}

    def get(self, policy: ImagePolicy, chart: Path, sha256: str | None) -> int:
        key = (fingerprint(asdict(policy)), str(chart))
        if key not in self.index:
            self.index[key] = len(self.table)
            self.table.append(self._source(policy, key[0], chart, sha256))
        return self.index[key]

    def _source(self, policy: ImagePolicy, policy_key: str, chart: Path, sha256: str | None) -> list[Any]:
        identity = policy == ImagePolicy()
        if not self.settings.embed and identity:
            return [Path(os.path.relpath(chart, self.out)).as_posix(), None, None]
        try:
            image = policy.apply(chart)
        except ValueError as err:  # a chart gone since the run: say so in its place, keep the rest
            return [None, None, None, str(err)]
        width, height = image.size
        if self.settings.embed:
            image.thumbnail((self.settings.thumb_px, self.settings.thumb_px))
            buf = io.BytesIO()
            image.save(buf, format="WEBP", quality=60, method=4)
            return [f"data:image/webp;base64,{base64.b64encode(buf.getvalue()).decode()}", width, height]
        name = Path("inputs") / policy_key / f"{sha256 or fingerprint(str(chart))}.png"
        target = self.out / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            image.save(partial, format="PNG")
            partial.replace(target)
        return [name.as_posix(), width, height]


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA else str(value)


def _json_safe(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 6)
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


def _policy(run: RunData) -> ImagePolicy:
    return ImagePolicy(**((run.info.get("identity") or {}).get("image_policy") or {}))


def _chart_shas(paths: TaskPaths) -> dict[tuple[str, str], str]:
    if not paths.manifest.exists():
        return {}
    manifest = pd.read_parquet(paths.manifest, columns=["sample_id", "freq", "sha256"])
    return dict(zip(zip(manifest["sample_id"], manifest["freq"]), manifest["sha256"]))


def browser_data(runs: list[BrowsedRun], out: Path, settings: BrowserSettings) -> dict[str, Any]:
    """The JSON document the page's script reads (columnar: one list per field)."""
    images = _Images(out, settings)
    prompts: dict[str, int] = {}
    samples: dict[tuple[str, str], int] = {}
    sample_cols: dict[str, list] = {k: [] for k in ("task", "id", "date", "code", "market", "group", "label")}
    rows: dict[str, list] = {k: [] for k in ("run", "sample", "tier", "reason", "failed", "outcome", "answer")}
    detail: dict[str, list] = {k: [] for k in ("text", "answer", "error", "prompt", "images", "scores", "extra")}
    tasks = sorted({b.task.name for b in runs})
    shas = {id(b.paths): _chart_shas(b.paths) for b in runs}
    for index, b in enumerate(runs):
        parsed = b.run.parsed
        view = b.task.browse(b.run).set_index("sample_id")
        policy = _policy(b.run)
        score_cols = [c for c in parsed.columns if c.startswith("score_")]
        for row in parsed.to_dict("records"):
            sid = str(row["sample_id"])
            task_view = view.loc[sid]
            key = (b.task.name, sid)
            if key not in samples:
                samples[key] = len(samples)
                for name, value in (("task", tasks.index(b.task.name)), ("id", sid), ("date", str(row["cutoff"])[:10]),
                                    ("code", str(row["code"])), ("market", str(row.get("market", ""))),
                                    ("group", str(task_view["group"])), ("label", str(task_view["label"]))):
                    sample_cols[name].append(value)
            answer = _text(row["answer"])
            prompt = _text(row.get("prompt"))
            charts = [c for c in (_text(row.get("charts")) or "").split(",") if c]
            rows["run"].append(index)
            rows["sample"].append(samples[key])
            rows["tier"].append(str(row["tier"]))
            rows["reason"].append(_text(row["reason"]))
            rows["failed"].append(answer is None)
            rows["outcome"].append(_text(task_view["outcome"]))
            rows["answer"].append(None if answer is None else answer[:ANSWER_CHARS])
            detail["text"].append(_text(row["text"]))
            detail["answer"].append(answer)
            detail["error"].append(_text(row["error"]))
            detail["prompt"].append(None if prompt is None else prompts.setdefault(prompt, len(prompts)))
            detail["images"].append([
                images.get(policy, b.paths.root / str(row[f"image_{c}"]), shas[id(b.paths)].get((sid, c)))
                for c in charts if f"image_{c}" in row
            ])
            detail["scores"].append({c[len("score_"):]: _json_safe(row[c]) for c in score_cols} or None)
            detail["extra"].append(task_view["detail"] if isinstance(task_view["detail"], dict) else None)
    return {
        "runs": [{"task": b.task.name, "name": b.shown, "kind": str(b.run.info.get("kind")),
                  "random_weights": bool(b.run.info.get("random_weights"))} for b in runs],
        "tasks": tasks, "samples": sample_cols, "rows": rows, "detail": detail,
        "prompts": list(prompts), "images": images.table, "page_size": settings.page_size,
    }


def packed(data: dict[str, Any]) -> str:
    """gzip (mtime 0: the same data give the same bytes) + base64 of the JSON."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode()


def browser_html(data: dict[str, Any]) -> str:
    """The browser's markup, its data and its script: a block for the report page's body."""
    script = resources.files("scoring").joinpath("browser.js").read_text(encoding="utf-8")
    style = resources.files("scoring").joinpath("browser.css").read_text(encoding="utf-8")
    return (
        f"<h2 id='samples'>Samples</h2><style>{style}</style>"
        "<div id='cb-browser'><p id='cb-status'>Loading the samples…</p></div>"
        f"<script type='application/octet-stream' id='cb-data'>{packed(data)}</script>"
        f"<script>{script}</script>"
    )
