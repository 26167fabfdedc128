"""Helpers the tests share (imported, not fixtures): the CLI as its own process, a stage in this one,
CSV writing, record tables, and the normalised view of a forecast run directory that the golden
files hold."""

from __future__ import annotations

import atexit
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest

from hypothesis import strategies as st

from candlebench.core.jsonl import read_jsonl
from fixtures.forked_cli import CANDLEBENCH, VOLATILE, Done, Parents, Started
from fixtures.vllm_server import TEST_KV_BYTES

# The checkout and its tests folder, for every test wherever it stands in tests/ (they mirror the package).
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA_DIR = TESTS / "data"
SLICE = DATA_DIR / "pse_slice.csv"

# vLLM's CPU build as the tests run it: eager (no graph compile), the tests' KV cache (not the 1 GiB default).
VLLM_CPU = ("backend=vllm", "backend.enforce_eager=true", f"backend.cpu_kvcache_space_gb={TEST_KV_BYTES / 2**30}")

# Texts a JSON Lines writer and reader must carry whole (tests of core.jsonl and of `import`): every
# character some reader ends a line at (str.splitlines: \v \f \x1c-\x1e U+0085 U+2028 U+2029),
# NUL, and the six characters of an escaped lone surrogate, which must stay six characters.
SEPARATORS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00"
ESCAPED_SURROGATE = "\\ud800"
# Any Unicode text (surrogates cannot be UTF-8), with the separators drawn often.
TEXTS = st.lists(st.one_of(st.characters(blacklist_categories=("Cs",)), st.sampled_from(SEPARATORS),
                           st.just(ESCAPED_SURROGATE))).map("".join)

_parents = Parents(Path(tempfile.mkdtemp(prefix="candlebench-cli-")))
atexit.register(_parents.close)


def cli(*args: str, env: dict | None = None, check: bool = True, cwd_out: Path | None = None) -> subprocess.CompletedProcess:
    """``candlebench ARGS`` in ``cwd_out`` (where relative out_dirs land), asserting success unless told:
    its own process, forked from one that imported the CLI once (fixtures/forked_cli.py)."""
    done = _parents(env).run(list(args), cwd=cwd_out or os.getcwd())
    if check:
        assert done.rc == 0, done.stderr[-4000:]
    return subprocess.CompletedProcess([CANDLEBENCH, *args], done.rc, done.stdout, done.stderr)


def script(path: Path, *args: str, env: dict) -> Done:
    """``python PATH ARGS`` forked like :func:`cli`'s commands, from the parent of ``env``."""
    return _parents(env).run(list(args), cwd=os.getcwd(), script=str(path))


def start(*args: str, env: dict | None = None, cwd_out: Path | None = None, environ: dict | None = None) -> Started:
    """``candlebench ARGS`` started in a session of its own, as ``Popen(start_new_session=True)``
    would, forked like :func:`cli`'s: ``poll``, ``wait``, and signals to ``pid`` or its group.
    ``environ``: variables set in it alone (Parent.start)."""
    return _parents(env).start(list(args), cwd=cwd_out or os.getcwd(), environ=environ)


@contextmanager
def environment(env: dict | None) -> Iterator[None]:
    """``env``'s variables in os.environ for the block, each restored after (pytest.MonkeyPatch):
    what a job reads while it runs (CANDLEBENCH_CACHE, which the config resolves), not what a module
    read when this process imported it (HF_HUB_OFFLINE): that needs a command of its own (:func:`cli`)."""
    with pytest.MonkeyPatch.context() as patch:
        for k, v in (env or {}).items():
            if k not in VOLATILE:
                patch.setenv(k, v)
        yield


def stage(name: str, *overrides: str, env: dict | None = None) -> str:
    """The stage job ``name`` under these overrides in this process (graph.run_stage), with ``env``'s
    variables (:func:`environment`); returns what it printed. For a test of what a stage writes or
    does: even forked, a command costs CPU the job does not (bench/cli_fork.py). No command line
    is tested here: an error the job raises reaches the test as itself, not as exit 1 and
    "error: ..." (a test of those runs :func:`cli`)."""
    from candlebench.stages.graph import run_stage

    printed = io.StringIO()
    try:
        with environment(env), redirect_stdout(printed):
            run_stage(name, list(overrides))
    finally:
        sys.stdout.write(printed.getvalue())  # where pytest shows it with a failure
    return printed.getvalue()


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def run_dir(out: Path, run: str, task: str = "forecast") -> Path:
    return out / task / "runs" / run


NOT_VERDICT = {"sample_id", "run_key", "error", "text", "prompt", "charts"}


def verdicts(out: Path, run: str, task: str = "forecast") -> dict[tuple[str, str], dict]:
    """(sample_id, run_key) -> the judge's verdict on that record (parsed.parquet: records keep only
    the text): ``answer`` as its JSON value, ``tier``, ``reason`` and the task's own columns."""
    parsed = pd.read_parquet(run_dir(out, run, task) / "parsed.parquet")
    samples = set(pd.read_parquet(out / task / "samples.parquet").columns)
    own = [c for c in parsed if c not in samples | NOT_VERDICT and not c.startswith("score_")]
    rows = parsed[["sample_id", "run_key", *own]].astype(object).where(parsed[["sample_id", "run_key", *own]].notna(), None)
    return {
        (row["sample_id"], row["run_key"]): {**row, "answer": None if row["answer"] is None else json.loads(row["answer"])}
        for row in rows.to_dict("records")
    }


def score_as_made(out: Path, run: str, task: str = "forecast") -> None:
    """``candlebench score`` of run ``run`` in this process, under the config of the stage that made
    it (``out_dir/configs``, which every stage writes): infer, baseline and import write records
    alone, and `score` alone judges them into parsed.parquet and metrics.json."""
    from omegaconf import OmegaConf

    from candlebench.stages.job import job_config
    from candlebench.stages.score import score

    kind = json.loads((run_dir(out, run, task) / "run.json").read_text())["kind"]
    made = out / "configs" / (f"infer.{task}.{run}.yaml" if kind == "model" else f"{kind}.{task}.yaml")
    cfg = OmegaConf.load(made)
    cfg.score.run = run
    with redirect_stdout(io.StringIO()):
        score(job_config(cfg))


def records(out: Path, run: str, task: str = "forecast") -> pd.DataFrame:
    """A run's records with the judge's verdict on each (answer, tier, reason, the task's columns)
    where it is one of the run's current key and inputs: the run scored first (:func:`score_as_made`)."""
    score_as_made(out, run, task)
    judged = verdicts(out, run, task)
    rows = [{**row, **judged.get((row["sample_id"], row["run_key"]), {})}
            for row in read_jsonl(run_dir(out, run, task) / "responses.jsonl")]
    return pd.DataFrame(rows).set_index("sample_id").sort_index()


def _on_slice(workspace: Path, run: str) -> tuple[str, ...]:
    return "data=slice", f"out_dir={workspace}", f"infer.run_name={run}"


def infer(workspace: Path, env: dict, run: str, *overrides: str, check: bool = True) -> subprocess.CompletedProcess:
    """``candlebench infer`` of run ``run`` over the workspace's samples, as a command (:func:`cli`)."""
    return cli("infer", *_on_slice(workspace, run), *overrides, env=env, check=check)


def infer_here(workspace: Path, env: dict, run: str, *overrides: str) -> str:
    """The same infer job in this process (:func:`stage`): what it printed."""
    return stage("infer", *_on_slice(workspace, run), *overrides, env=env)


# What metrics.json says of its own scoring, which the golden files predate: the schema version,
# the judge version, the answered count and the records it was scored from.
SCORING_BOOKKEEPING = ("schema", "judge_version", "answered", "records")


def forecast_snapshot(out: Path) -> dict:
    """What the forecast benchmark produced, independent of where the files live: each chart's
    sha256, the samples, every run's records (text, tokens) with their judged value and metrics
    (minus the run key, which hashes the run's identity and so changes with its layout, and the
    scoring's bookkeeping)."""
    task = out / "forecast"
    samples = pd.read_parquet(task / "samples.parquet")
    charts = pd.read_parquet(task / "images" / "manifest.parquet")
    snapshot = {
        "charts": {p.removeprefix("images/"): s for p, s in zip(charts["path"], charts["sha256"])},
        "samples": json.loads(
            samples.drop(columns=[c for c in samples if c.startswith(("image_", "text_"))])
            .to_json(orient="records", date_format="iso", double_precision=15)
        ),
        "records": {},
        "metrics": {},
    }
    for run in sorted(p.name for p in (task / "runs").iterdir()):
        rows = list(read_jsonl(task / "runs" / run / "responses.jsonl"))
        judged = verdicts(out, run)
        snapshot["records"][run] = {
            r["sample_id"]: {"text": r["text"], "token_ids": r["token_ids"], "value": v["answer"], "tier": v["tier"],
                             "reason": v["reason"]}
            for r in rows for v in [judged[(r["sample_id"], r["run_key"])]]
        }
        metrics = json.loads((task / "runs" / run / "metrics.json").read_text())
        # bookkeeping: the samples are compared above
        for key in ("run_key", "task", "samples_fingerprint", *SCORING_BOOKKEEPING):
            metrics.pop(key)
        snapshot["metrics"][run] = metrics
    return snapshot


def setup_of(*overrides: str):
    """The job under these config overrides (its task, settings and context among the rest), as
    its entrance builds it (candlebench.stages.job)."""
    from candlebench.stages.graph import compose_job

    return compose_job(list(overrides)).job


def slice_charts(workspace: Path, n: int) -> list:
    """The daily charts of the workspace's first ``n`` forecast samples, then their weekly ones, as
    the runner decodes them: real images of two sizes for the vision-path tests."""
    from candlebench.rendering.model_input import prepare_image

    samples = pd.read_parquet(workspace / "forecast" / "samples.parquet").head(n)
    return [prepare_image(workspace / "forecast" / p, None) for p in [*samples["image_daily"], *samples["image_weekly"]]]


def e2a_compare(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> dict:
    """The E2A task's comparison (the per-sample default) of two runs given as scored rows (see
    tasks/e2a/metrics.py: ``sample_id``, ``code``, ``cutoff``, ``modality``, the action and claim
    counts), each kept as the score stage keeps its per-sample table in parsed.parquet."""
    from candlebench.core.results import RunAnswers
    from candlebench.tasks.e2a.metrics import PER_SAMPLE, per_sample

    def run(name: str, rows: pd.DataFrame) -> RunAnswers:
        scores = per_sample(rows, 0.7, 1).set_index("sample_id").add_prefix("score_")
        parsed = rows[["sample_id", "code", "cutoff", "modality"]].assign(answer='"x"').join(scores, on="sample_id")
        return RunAnswers(name, parsed, pd.DataFrame(), {})

    return PER_SAMPLE.compare(run("a", a), run("b", b), n_boot, seed)
