"""``candlebench score`` (one run → metrics.json) and ``candlebench report`` (runs → report)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from candlebench.io import write_json
from scoring.compare import compare_runs
from scoring.forecast import compute_metrics
from scoring.report import ScoredRun, load_run, write_report


def runs_dir(cfg: DictConfig) -> Path:
    return Path(cfg.out_dir) / "runs"


def score_run(run_dir: Path, samples: pd.DataFrame, horizon: int, n_boot: int, seed: int) -> dict:
    parsed_path = run_dir / "parsed.parquet"
    if not parsed_path.exists():
        raise FileNotFoundError(f"{parsed_path}: no answers yet; run `candlebench infer` (or `baseline`) first")
    parsed = pd.read_parquet(parsed_path)
    info = json.loads((run_dir / "run.json").read_text())
    metrics = compute_metrics(parsed, horizon=horizon, release_date=info.get("release_date"), n_boot=n_boot, seed=seed)
    # Samples with no record at all (an unfinished run) are not parse failures: report them apart.
    metrics["n_samples"] = len(samples)
    metrics["n_missing_records"] = int((~samples["sample_id"].isin(parsed["sample_id"])).sum())
    metrics["run_key"] = info.get("run_key")
    write_json(metrics, run_dir / "metrics.json")
    return metrics


def score(cfg: DictConfig) -> None:
    run_dir = runs_dir(cfg) / (cfg.score.run or cfg.infer.run_name)
    samples = pd.read_parquet(Path(cfg.out_dir) / "samples.parquet")
    m = score_run(run_dir, samples, int(cfg.task.horizon), int(cfg.score.n_boot), int(cfg.score.seed))
    print(
        f"{run_dir.name}: IC {m['ic_mean']}, Rank IC {m['rank_ic_mean']}, accuracy {m['accuracy']}, "
        f"bias {m['bias']} ({m['bias_grade']}), parse failures {m['parse_failure_rate']}, "
        f"missing records {m['n_missing_records']} -> {run_dir / 'metrics.json'}"
    )


def report(cfg: DictConfig) -> None:
    root = runs_dir(cfg)
    names = list(cfg.report.runs) if cfg.report.runs else sorted(p.parent.name for p in root.glob("*/metrics.json"))
    if not names:
        raise FileNotFoundError(f"{root}: no scored runs; run `candlebench score` first")
    missing = [n for n in names if not (root / n / "metrics.json").exists()]
    if missing:
        raise FileNotFoundError(f"runs without metrics.json under {root}: {missing}")
    runs: list[ScoredRun] = [load_run(root / n) for n in names]
    comparisons = {}
    for a, b in cfg.report.compare:
        comparisons[f"{a} → {b}"] = compare_runs(
            pd.read_parquet(root / a / "parsed.parquet"),
            pd.read_parquet(root / b / "parsed.parquet"),
            horizon=int(cfg.task.horizon),
            n_boot=int(cfg.score.n_boot),
            seed=int(cfg.score.seed),
        )
    out = Path(cfg.report.dir)
    write_json(comparisons, out / "comparisons.json")
    md, page = write_report(runs, comparisons, out, cfg.report.title)
    print(f"report of {len(runs)} runs: {md} and {page}")


def score_all(cfg: DictConfig, names: list[str]) -> None:
    samples = pd.read_parquet(Path(cfg.out_dir) / "samples.parquet")
    for name in names:
        score_run(runs_dir(cfg) / name, samples, int(cfg.task.horizon), int(cfg.score.n_boot), int(cfg.score.seed))
