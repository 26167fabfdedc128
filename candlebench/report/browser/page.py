"""The browser's block of report.html: its markup, its data (packed inside, or an index of the
per-run files) and its script."""

from __future__ import annotations

import base64
import gzip
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from candlebench.core.io import json_bytes
from candlebench.report.browser.data import FILES, BrowserRun, browser_data, write_run_files
from candlebench.report.browser.settings import BrowserSettings


def browser_block(runs: list[BrowserRun], out: Path, settings: BrowserSettings) -> str:
    """The page's browser: every row inside it for a small study, an index of per-run files for a
    study of more than ``settings.split_above`` answers."""
    if sum(b.answers for b in runs) > settings.split_above:
        return browser_html(write_run_files(runs, out, settings))
    shutil.rmtree(out / FILES, ignore_errors=True)  # no stale files from a larger study once
    return browser_html(browser_data(runs, out, settings))


def packed(data: dict[str, Any]) -> str:
    """gzip (mtime 0: the same data give the same bytes) + base64 of the JSON."""
    return base64.b64encode(gzip.compress(json_bytes(data), compresslevel=9, mtime=0)).decode()


def browser_html(data: dict[str, Any]) -> str:
    """The browser's markup, its data and its script: a block for the report page's body."""
    script = resources.files("candlebench.report.browser").joinpath("browser.js").read_text(encoding="utf-8")
    style = resources.files("candlebench.report.browser").joinpath("browser.css").read_text(encoding="utf-8")
    return (
        f"<h2 id='samples'>Samples</h2><style>{style}</style>"
        "<div id='cb-browser'><p id='cb-status'>Loading the samples…</p></div>"
        f"<script type='application/octet-stream' id='cb-data'>{packed(data)}</script>"
        f"<script>{script}</script>"
    )
