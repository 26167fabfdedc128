"""The report's provenance: the code, packages, data and each run as their own files record them,
and the resolved config of every stage the run walked."""

from __future__ import annotations

import json
import subprocess

import yaml

from helpers import ROOT, SLICE, cli

MODEL = "tiny_qwen2_5_vl-transformers"


def test_provenance_equals_the_runs_files_and_configs(tmp_path, env):
    out = tmp_path / "out"
    cli("run", "tasks=[e2a]", "data=slice", "data.codes=[AC]", "task.samples.interval=200", "task.passes=[]",
        f"out_dir={out}", env=env)
    found = json.loads((out / "report" / "provenance.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    assert found["environment"]["git_commit"].startswith(head) and "torch" in found["environment"]["packages"]
    runs = {r["run"]: r for r in found["runs"]}
    assert set(runs) == {"anchor_oracle", "always_hold", "contrarian", MODEL}
    info = json.loads((out / "e2a" / "runs" / MODEL / "run.json").read_text())
    tiny = runs[MODEL]
    assert tiny["run_key"] == info["run_key"] and tiny["path"] == info["identity"]["model"]["path"]
    assert tiny["dtype"] == info["identity"]["model"]["dtype"] and tiny["backend"] == "transformers"
    assert tiny["device"] == "cpu"  # the records' device: the GPU name on a GPU
    lines = (out / "e2a" / "runs" / MODEL / "responses.jsonl").read_text().splitlines()
    wall = sum(json.loads(x)["latency_s"] for x in lines)
    assert tiny["records"] == len(lines) and abs(tiny["wall_s"] - wall) < 1e-3 and tiny["samples_per_s"] > 0
    from candlebench.market.market import load_market

    market = load_market([SLICE], name="PSE", codes=["AC"])
    (data,) = found["data"]
    assert data["fingerprint"] == market.fingerprint() and data["rows"] == market.report.rows
    # Every stage the run walked left its resolved config; the infer one is the run's.
    assert {"samples.e2a", "render.e2a", "baseline.e2a", f"infer.e2a.{MODEL}", "score.e2a", "report"} <= set(found["configs"])
    infer = yaml.safe_load(found["configs"][f"infer.e2a.{MODEL}"])
    assert infer["model"]["path"] == tiny["path"] and infer["infer"]["run_name"] == MODEL
    assert infer["infer"]["generation"]["max_new_tokens"] == info["identity"]["generation"]["max_new_tokens"]
    md = (out / "report" / "report.md").read_text()
    assert md.index("## E2A-style") < md.index("## Provenance") and tiny["run_key"] in md  # results first (#24)


def test_a_runs_speed_and_devices_count_only_its_current_run_key(tmp_path):
    """responses.jsonl keeps the answers of every key a run was redone under; provenance is of the current one."""
    from candlebench.core.layout import StudyLayout
    from candlebench.stages.provenance import run_provenance

    paths = StudyLayout(tmp_path).task("forecast")
    run = paths.run("m")
    run.root.mkdir(parents=True)
    run.info.write_text(json.dumps({"kind": "model", "model_name": "m", "run_key": "new",
                                    "identity": {"model": {"path": "/x"}, "backend": "transformers"}}))
    from candlebench.inference.records import ResponseRecord

    # Whole records, as the runner writes them (a row missing a record's fields is refused by the reader).
    rows = [ResponseRecord.answered("old", f"s{i}", "m", "transformers", "0.1", latency_s=5.0, device="cpu") for i in range(3)]
    rows += [ResponseRecord.answered("new", f"s{i}", "m", "transformers", "0.1", latency_s=0.5, device="NVIDIA H200") for i in range(4)]
    run.responses.write_text("".join(json.dumps(r.as_row()) + "\n" for r in rows))
    found = run_provenance(paths, "m")
    assert (found["records"], found["wall_s"], found["samples_per_s"], found["device"]) == (4, 2.0, 2.0, "NVIDIA H200")
