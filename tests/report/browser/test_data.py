"""The sample browser's layout for a large study: one data file per run beside report.html (the
prompts, shared by every run, in files of their own), written one run at a time; a small study
keeps every row inside the page."""

from __future__ import annotations

import base64
import gc
import gzip
import json
import weakref
from pathlib import Path

import pandas as pd
import pytest

from candlebench.core.layout import TaskPaths
from candlebench.core.results import RunAnswers, answered_rows
from candlebench.report.browser import data as browser_data
from candlebench.report.browser import FILES, BrowserRun, BrowserSettings, browser_block, write_run_files
from candlebench.report.browser.images import Images

pytestmark = pytest.mark.unit


class _Task:
    name = "forecast"

    def browse(self, run: RunAnswers) -> pd.DataFrame:
        parsed = run.parsed
        return pd.DataFrame({"sample_id": parsed["sample_id"], "group": "bull", "label": "up",
                             "outcome": [None if a is None else "right" for a in parsed["answer"]], "detail": None})


def _parsed(run: int, n: int = 5) -> pd.DataFrame:
    failed = [k % 4 == run % 4 for k in range(n)]
    return pd.DataFrame({
        "sample_id": [f"s{k}" for k in range(n)], "cutoff": pd.Timestamp("2024-01-02"), "code": [f"C{k}" for k in range(n)],
        "answer": [None if f else f"0.{run}{k}" for k, f in enumerate(failed)], "tier": ["none" if f else "tag" for f in failed],
        "reason": ["no score found" if f else None for f in failed], "error": None,
        "text": [f"run {run} says {k}" for k in range(n)], "prompt": [f"prompt of sample {k}" for k in range(n)],
        "charts": "", "score_hit": [float(k % 2) for k in range(n)],
    })


def _runs(tmp_path: Path, n_runs: int, live: list | None = None) -> list[BrowserRun]:
    """Runs read when asked; ``live`` gets a weak reference to each frame handed out."""
    def load(r: int) -> RunAnswers:
        frame = _parsed(r)
        if live is not None:
            gc.collect()
            assert [ref for ref in live if ref() is not None] == [], "an earlier run's rows are still held"
            live.append(weakref.ref(frame))
        return RunAnswers(f"m{r}", frame, pd.DataFrame(), {"kind": "model"}, {"horizon": 30})

    paths = TaskPaths(tmp_path / "forecast")
    return [BrowserRun(_Task(), paths, f"m{r}", {"kind": "model"}, 5, lambda r=r: load(r)) for r in range(n_runs)]


def _read(path: Path):
    return json.loads(gzip.decompress(path.read_bytes()))


def test_each_run_is_its_own_file_read_and_let_go_one_at_a_time(tmp_path):
    live: list = []
    out = tmp_path / "report"
    index = write_run_files(_runs(tmp_path, 3, live), out, BrowserSettings(split_above=0))
    assert len(live) == 3
    assert [r["name"] for r in index["runs"]] == ["m0", "m1", "m2"] and "rows" not in index
    for number, entry in enumerate(index["runs"]):
        data = _read(out / entry["file"])
        assert set(data["rows"]["run"]) == {number}  # its own rows only, by the page's run number
        assert data["detail"]["text"] == [f"run {number} says {k}" for k in range(5)]
        assert data["detail"]["scores"][1] == {"hit": 1.0}
        assert entry["records"] == 5 and entry["failures"] == [["no score found", sum(data["rows"]["failed"])]]
        assert data["samples"]["id"] == [f"s{k}" for k in range(5)]
    assert index["groups"] == ["bull"] and index["tiers"] == ["none", "tag"] and index["reasons"] == ["no score found"]


def test_the_prompts_every_run_shares_are_written_once(tmp_path, monkeypatch):
    monkeypatch.setattr(browser_data, "PROMPTS_PER_FILE", 2)
    out = tmp_path / "report"
    index = write_run_files(_runs(tmp_path, 2), out, BrowserSettings(split_above=0))
    ids = [_read(out / r["file"])["detail"]["prompt"] for r in index["runs"]]
    assert ids[0] == ids[1] == [0, 1, 2, 3, 4]
    files = sorted((out / FILES / "prompts").iterdir(), key=lambda p: int(p.name.split(".")[0]))
    assert [_read(f) for f in files] == [["prompt of sample 0", "prompt of sample 1"],
                                         ["prompt of sample 2", "prompt of sample 3"], ["prompt of sample 4"]]
    assert index["split"] == {"prompts": f"{FILES}/prompts/", "prompts_per_file": 2}


def test_a_small_study_keeps_its_rows_in_the_page_and_a_large_one_beside_it(tmp_path):
    out = tmp_path / "report"
    page = browser_block(_runs(tmp_path, 2), out, BrowserSettings(split_above=10))
    assert not (out / FILES).exists()
    data = json.loads(gzip.decompress(base64.b64decode(page.split("id='cb-data'>")[1].split("<")[0])))
    assert len(data["rows"]["run"]) == 10 and data["prompts"] == [f"prompt of sample {k}" for k in range(5)]
    browser_block(_runs(tmp_path, 3), out, BrowserSettings(split_above=10))
    assert len(list((out / FILES / "runs").iterdir())) == 3
    browser_block(_runs(tmp_path, 1), out, BrowserSettings(split_above=10))
    assert not (out / FILES).exists()  # no stale files of the larger study beside the small page


def test_a_row_is_answered_as_every_stage_counts_answers(tmp_path):
    """The page's "N of M records, A answered" reads the writer's flag of each row: a failed
    generation and a record with no text are rows but no answers; an answer its parser could not
    read is one (a parse failure). A stored table's row is answered as core.results.answered_rows says."""
    frame = _parsed(0, 4)  # rows 0 (a parse failure) to 3, each with a text
    frame.loc[1, ["text", "error", "answer"]] = [None, "HTTP 500: server error", None]
    frame.loc[2, ["text", "answer"]] = [None, None]
    run = RunAnswers("m0", frame, pd.DataFrame(), {"kind": "model"}, {"horizon": 30})
    runs = [BrowserRun(_Task(), TaskPaths(tmp_path / "forecast"), "m0", {"kind": "model"}, 4, lambda: run)]
    data = browser_data.browser_data(runs, tmp_path / "report", BrowserSettings())
    assert data["rows"]["answered"] == answered_rows(frame).tolist()
    assert data["rows"]["answered"] == [True, False, False, True] and data["rows"]["failed"] == [True, True, True, False]


@pytest.mark.parametrize("charts", ["inline", "bundle", "files"])
def test_where_the_browsers_charts_go(tmp_path, charts):
    """inline: the chart's own bytes inside the page; bundle: a copy inside the report folder;
    files: the study's file, referenced from beside the report (it does not travel)."""
    from PIL import Image

    from candlebench.rendering.model_input import ImagePolicy

    chart = tmp_path / "forecast" / "images" / "2024-01-02" / "AC" / "daily.png"
    chart.parent.mkdir(parents=True)
    Image.new("RGB", (40, 30), "white").save(chart)
    out = tmp_path / "report"
    images = Images(out, BrowserSettings(charts=charts))
    src = images.table[images.of_run(ImagePolicy(), tmp_path / "forecast")("images/2024-01-02/AC/daily.png", "ab12")][0]
    if charts == "inline":
        assert base64.b64decode(src.split(",", 1)[1]) == chart.read_bytes()
    elif charts == "bundle":
        assert (out / src).read_bytes() == chart.read_bytes() and not src.startswith("..")
    else:
        assert src == "../forecast/images/2024-01-02/AC/daily.png"
