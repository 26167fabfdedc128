"""The browser's images: the exact ones the model received, each prepared once however many runs
share it, and where it goes (a file reference, inside the page, or a copy in the report folder)."""

from __future__ import annotations

import base64
import io
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import PIL.Image

from candlebench.core.io import fingerprint
from candlebench.rendering.model_input import ImagePolicy
from candlebench.report.browser.settings import BrowserSettings


class Images:
    """Image sources by (policy, chart file): each prepared once, however many runs share it (a
    large study's per-run files each list theirs, from the ``sources`` every file shares)."""

    def __init__(self, out: Path, settings: BrowserSettings, sources: dict | None = None):
        self.out, self.settings = out, settings
        self.table: list[list[Any]] = []  # [src, width, height] (sizes known only where prepared here)
        self.index: dict[tuple[str, str, str], int] = {}
        self.sources: dict[tuple[str, str, str], list[Any]] = {} if sources is None else sources

    def of_run(self, policy: ImagePolicy, root: Path) -> Callable[[str, str | None], int]:
        """The index of a run's image: (chart file relative to the task folder ``root``, as
        parsed.parquet names it; its sha256) -> its place in ``table``. The policy is fingerprinted
        once per run, not once per image of 1.6 M rows."""
        policy_key, folder = fingerprint(asdict(policy)), str(root)

        def get(chart: str, sha256: str | None) -> int:
            key = (policy_key, folder, chart)
            found = self.index.get(key)
            if found is None:
                found = self.index[key] = len(self.table)
                if key not in self.sources:
                    self.sources[key] = self._source(policy, policy_key, root / chart, sha256)
                self.table.append(self.sources[key])
            return found

        return get

    def _source(self, policy: ImagePolicy, policy_key: str, chart: Path, sha256: str | None) -> list[Any]:
        identity, charts = policy == ImagePolicy(), self.settings.charts
        if charts == "files" and identity:
            return [Path(os.path.relpath(chart, self.out)).as_posix(), None, None]
        if charts in ("inline", "bundle") and identity and chart.is_file():  # the chart file itself, byte for byte
            with PIL.Image.open(chart) as image:
                width, height = image.size
            if charts == "inline":
                return [f"data:image/png;base64,{base64.b64encode(chart.read_bytes()).decode()}", width, height]
            return [self._write(policy_key, chart, sha256, lambda p: shutil.copyfile(chart, p)), width, height]
        try:
            image = policy.apply(chart)
        except ValueError as err:  # a chart gone since the run: say so in its place, keep the rest
            return [None, None, None, str(err)]
        width, height = image.size
        if charts in ("thumbnails", "inline"):
            if charts == "thumbnails":
                image.thumbnail((self.settings.thumb_px, self.settings.thumb_px))
            buf = io.BytesIO()
            image.save(buf, format="WEBP", quality=60, method=4) if charts == "thumbnails" else image.save(buf, format="PNG")
            kind = "webp" if charts == "thumbnails" else "png"
            return [f"data:image/{kind};base64,{base64.b64encode(buf.getvalue()).decode()}", width, height]
        return [self._write(policy_key, chart, sha256, lambda p: image.save(p, format="PNG")), width, height]

    def _write(self, policy_key: str, chart: Path, sha256: str | None, save: Callable[[Path], Any]) -> str:
        """The image's file inside the report folder (content-addressed: written once), relative to it."""
        name = Path("inputs") / policy_key / f"{sha256 or fingerprint(str(chart))}.png"
        target = self.out / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".part")
            save(partial)
            partial.replace(target)
        return name.as_posix()
