"""Your own captioned charts for the captioning task (``task.dataset=PATH``), instead of the
generated set: the paper's ElliottWave-Forecast articles, a broker's notes, anything with a chart
image and an analyst's text.

``PATH`` is a JSONL manifest, one object per line::

    {"image": "charts/aapl-2024-03-01.png", "reference": "The stock ...",
     "metadata": {"degree": ["(iii)", "((4))"], "time": ["2024-03-01"], "price": ["182.50"]},
     "id": "aapl-1", "code": "AAPL", "date": "2024-03-01"}

``image`` (relative to the manifest's folder, or absolute) and ``reference`` are required;
``metadata`` (the annotated items by category, Eq. 1's O_a: degree / time / price, each a list of
strings as they appear on the chart), ``id`` (default: the image path), ``code`` and ``date`` (the
chart's stock and day, kept as the samples' ``stock`` and ``date`` columns) are optional. The
samples carry no market keys (``code``, ``cutoff``: task_api/base.py): their charts are the dataset's,
not drawn from a market, so each is filed under its own sample (``images/samples/<id>/``) and the
bootstrap draws each sample alone. Or ``PATH`` is a
folder: every ``*.png`` / ``*.jpg`` in it with the reference in ``<stem>.txt`` and, optionally, the
metadata in ``<stem>.json``. Every problem is an error naming the line or file, before anything
is written; the render stage copies each image into the task's images folder (its sha256 in the
manifest, like a drawn chart), so infer, import and score treat both sets alike.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image, UnidentifiedImageError

from candlebench.core.errors import UserError
from candlebench.core.io import read_utf8
from candlebench.core.jsonl import json_objects
from candlebench.tasks.caption.iou import CATEGORIES, length

IMAGES = ("*.png", "*.jpg", "*.jpeg")


class DatasetError(UserError, ValueError):
    """A caption dataset that cannot become samples; the message names the line or file."""


def _check_image(path: Path, where: str) -> None:
    if not path.is_file():
        raise DatasetError(f"{where}: image {path} does not exist")
    try:
        with Image.open(path) as img:
            img.verify()
    except (UnidentifiedImageError, OSError) as err:
        raise DatasetError(f"{where}: {path} is not a readable image ({err})") from None


def _metadata(value: Any, where: str) -> dict[str, list[str]]:
    if value is None:
        return {c: [] for c in CATEGORIES}
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: metadata must be an object of {list(CATEGORIES)} -> lists, got {type(value).__name__}")
    unknown = sorted(set(value) - set(CATEGORIES))
    if unknown:
        raise DatasetError(f"{where}: metadata category {unknown} unknown; the categories are {list(CATEGORIES)}")
    out = {}
    for c in CATEGORIES:
        items = value.get(c, [])
        if not isinstance(items, list) or not all(isinstance(i, (str, int, float)) for i in items):
            raise DatasetError(f"{where}: metadata.{c} must be a list of strings")
        out[c] = [str(i) for i in items]
    return out


def _entries(path: Path) -> list[tuple[str, dict]]:
    if path.is_dir():
        images = sorted({p for pattern in IMAGES for p in path.glob(pattern)})
        if not images:
            raise DatasetError(f"{path}: no {'/'.join(IMAGES)} images in this folder")
        entries = []
        for image in images:
            text = image.with_suffix(".txt")
            if not text.is_file():
                raise DatasetError(f"{image}: no reference {text.name} beside it")
            meta = image.with_suffix(".json")
            try:
                metadata = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else None
            except json.JSONDecodeError as err:
                raise DatasetError(f"{meta}: not JSON ({err.msg})") from None
            entries.append((str(image), {"image": image.name, "reference": text.read_text(encoding="utf-8"),
                                         "metadata": metadata, "id": image.stem}))
        return entries
    if not path.is_file():
        raise DatasetError(f"task.dataset={path}: no such file or folder")
    text = read_utf8(path, DatasetError, "a caption manifest is UTF-8 JSONL")
    entries = [(f"{path}, line {number}", row) for number, row in json_objects(text, path, DatasetError)]
    if not entries:
        raise DatasetError(f"{path}: empty manifest, no captioned charts")
    return entries


def read_dataset(path: Path, name: str = "dataset") -> pd.DataFrame:
    """Samples of the captioning task from a manifest or folder (module docstring)."""
    path = Path(path)
    base = path if path.is_dir() else path.parent
    rows, ids = [], {}
    for where, row in _entries(path):
        missing = [k for k in ("image", "reference") if not str(row.get(k) or "").strip()]
        if missing:
            raise DatasetError(f"{where}: no {missing} (or only whitespace); every entry needs an image and a reference text")
        image = Path(str(row["image"]))
        image = image if image.is_absolute() else base / image
        _check_image(image, where)
        ident = str(row.get("id") or row["image"])
        if ident in ids:
            raise DatasetError(f"{where}: {'an image of the same name as' if path.is_dir() else 'the same id ' + repr(ident) + ' as'} "
                               f"{ids[ident]}; {'rename one of the two images' if path.is_dir() else 'give each entry its own id'}")
        ids[ident] = where
        try:
            date = pd.Timestamp(str(row["date"])) if row.get("date") else pd.NaT
        except ValueError:
            raise DatasetError(f"{where}: date {row['date']!r} is not a date (YYYY-MM-DD)") from None
        reference = str(row["reference"]).strip()
        # market: the dataset's name, the source a pooled report names beside its runs.
        rows.append({"sample_id": hashlib.sha256(f"caption|{name}|{ident}".encode()).hexdigest()[:16], "task": "caption",
                     "market": name, "stock": str(row["code"]) if row.get("code") else None, "date": date,
                     "reference": reference,
                     "metadata": json.dumps(_metadata(row.get("metadata"), where)), "reference_opinion": None,
                     "reference_words": length(reference), "source_image": str(image.resolve())})
    return pd.DataFrame(rows)  # in the manifest's order
