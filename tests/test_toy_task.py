"""The task seam holds: a task defined only here — this file and its config, registered from the
test — runs through samples → render → baseline → infer (tiny fixture) → import → score → report
with no change to the shared stages."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

import pandas as pd
import pytest
from hydra.core.config_store import ConfigStore

import tasks
from candlebench.core.results import Parsed, RunData
from candlebench.market.market import Market
from candlebench.stages.graph import run_stage
from scoring.report import ScoredRun, Section, Table
from tasks.base import BuiltSamples, Column, Inputs, RequestSpec, ScoreSettings, Task

CONFIG = {
    "task": {
        "name": "toy",
        "prompt": "Bars before {cutoff}:\n{ohlcv}\nDid the next close rise? Answer UP or DOWN.",
        "answer_regex": "(UP|DOWN)",
    },
    "samples": {"every": 120, "min_bars": 30},
    "render": {"max_bars": 20, "ma_windows": [5], "ma_colors": ["black"]},
    "baseline": {"names": ["always_up"], "params": {}},
}


def _always_up(samples: pd.DataFrame, market: Market, cfg, **params) -> Mapping[str, str | None]:
    return {sid: "UP" for sid in samples["sample_id"]}


class ToyTask(Task):
    """Did the stock close up on the cutoff day? One daily chart and the OHLCV text per sample."""

    name = "toy"
    columns = (Column("direction", "string"),)
    baselines = {"always_up": _always_up}

    def build_samples(self, market: Market, cfg) -> BuiltSamples:
        cal, bars = market.calendar, market.bars
        rows = []
        for cutoff in cal[int(cfg.samples.min_bars):: int(cfg.samples.every)]:
            day = bars[bars["date"] == cutoff].set_index("code")["close"]
            before = bars[bars["date"] < cutoff].groupby("code")["close"].last()
            for code in sorted(set(day.index) & set(before.index)):
                rows.append({"sample_id": f"toy-{code}-{cutoff:%Y%m%d}", "task": "toy", "market": market.name,
                             "code": code, "cutoff": cutoff, "up": bool(day[code] > before[code])})
        frame = pd.DataFrame(rows)
        return BuiltSamples(frame, {"samples": len(frame)})

    def inputs(self, cfg) -> Inputs:
        return Inputs(charts=("daily",), text=True)

    def prompt_identity(self, cfg) -> str:
        return cfg.task.prompt

    def request(self, cfg, sample: Mapping[str, Any], texts: Mapping[str, str]) -> RequestSpec:
        prompt = cfg.task.prompt.format(cutoff=f"{sample['cutoff']:%Y-%m-%d}", ohlcv=texts["text_ohlcv"])
        return RequestSpec(prompt, ("daily",), ("text_ohlcv",))

    def parser(self, cfg) -> Callable[[str | None], Parsed]:
        def parse(text: str | None) -> Parsed:
            found = re.search(r"\b(UP|DOWN)\b", text or "")
            if found is None:
                return Parsed(None, "none", "no UP or DOWN", {"direction": None})
            return Parsed(found.group(1), "word", None, {"direction": found.group(1).lower()})

        return parse

    def score(self, run: RunData, cfg, settings: ScoreSettings) -> dict:
        answered = run.parsed[run.parsed["direction"].notna()]
        right = (answered["direction"] == "up") == answered["up"]
        return {"accuracy": float(right.mean()) if len(answered) else None,
                "parse_failure_rate": float(run.parsed["direction"].isna().mean())}

    def compare(self, a: RunData, b: RunData, settings: ScoreSettings) -> dict:
        return {"accuracy_diff": b.metrics["accuracy"] - a.metrics["accuracy"]}

    def report(self, runs: list[ScoredRun], comparisons: Mapping[str, dict], datasets=()) -> list[Section]:
        frame = pd.DataFrame({"Run": [r.label for r in runs], "Accuracy": [r.metrics["accuracy"] for r in runs]})
        return [Section("Toy task", (Table("Accuracy on the cutoff day's direction", frame),))]


@pytest.fixture(scope="module")
def toy(tmp_path_factory, env):
    ConfigStore.instance().store(group="task", name="toy", node=CONFIG, package="_global_")
    tasks.register(ToyTask())
    return tmp_path_factory.mktemp("toy")


def test_a_task_defined_in_a_test_runs_every_stage(toy, env, monkeypatch):
    monkeypatch.setenv("CANDLEBENCH_CACHE", env["CANDLEBENCH_CACHE"])
    common = ["task=toy", "data=slice", "data.codes=[AC,ALI,SM]", f"out_dir={toy}", "render.workers=1",
              "infer.batch_size=4"]
    for stage in ("samples", "render", "baseline", "infer"):
        run_stage(stage, common)
    samples = pd.read_parquet(toy / "toy" / "samples.parquet")
    assert len(samples) >= 9 and {"image_daily", "text_ohlcv"} <= set(samples.columns)
    text = (toy / "toy" / samples["text_ohlcv"].iloc[0]).read_text()
    assert text.startswith(f"{samples['code'].iloc[0]} daily bars before") and "date,open,high,low,close" in text

    run = toy / "toy" / "runs" / "tiny_qwen2_5_vl-transformers"
    records = [json.loads(line) for line in (run / "responses.jsonl").read_text().splitlines()]
    assert len(records) == len(samples) and {r["answer"] for r in records} <= {"UP", "DOWN"}
    info = json.loads((run / "run.json").read_text())
    assert info["task"] == "toy" and info["identity"]["generation"]["regex"] == "(UP|DOWN)"

    # Responses made elsewhere join as a run of their own, parsed by the toy's parser.
    answers = toy / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sample_id": s, "text": "I say DOWN."}) + "\n" for s in samples["sample_id"]))
    run_stage("import", [*common, f"import_file={answers}", "infer.run_name=elsewhere"])
    for name in ("always_up", "tiny_qwen2_5_vl-transformers", "elsewhere"):
        run_stage("score", [*common, f"score.run={name}"])
    run_stage("report", [*common, "tasks=[toy]", "report.compare=[[always_up,elsewhere]]"])

    metrics = json.loads((toy / "toy" / "runs" / "elsewhere" / "metrics.json").read_text())
    assert metrics["accuracy"] == pytest.approx(1 - samples["up"].mean())
    assert metrics["n_missing_records"] == 0 and metrics["task"] == "toy"
    up = json.loads((toy / "toy" / "runs" / "always_up" / "metrics.json").read_text())
    assert up["accuracy"] == pytest.approx(samples["up"].mean())
    md = (toy / "report" / "report.md").read_text()
    assert "## Toy task" in md and "| elsewhere |" in md and "(random weights)" in md
    comparisons = json.loads((toy / "report" / "comparisons.json").read_text())
    assert comparisons["toy"]["always_up → elsewhere"]["accuracy_diff"] == pytest.approx(1 - 2 * samples["up"].mean())
