"""What the tests' fork server (tests/fixtures/forked_cli.py) saves per CLI command, and what running
the stage in the test's own process would save beyond it: the forecast pipeline a stage test runs
(samples, render, baseline, a tiny model's infer, score, report), each command as a fresh
`candlebench` process, forked from the parent that imported the CLI and the heavy packages once,
and as `run_stage` in this process (what tests/stages/test_import.py does), the ways taking turns,
each pass in an out_dir of its own so every way does the same work. CPU is the command's (and the
children it waited for), from the kernel's accounting; in process, this process's CPU time.

    .venv/bin/python bench/cli_fork.py [--passes N]  (N a multiple of 3: each way first as often)

The parent's own start (its imports, once per test process and environment) is printed beside it:
the commands a parent must serve before it pays for itself.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fork server is a test fixture

from fixtures.forked_cli import CANDLEBENCH, Parent  # noqa: E402

SLICE = ROOT / "tests" / "data" / "pse_slice.csv"
COMMON = ("data=slice", "data.codes=[AC,ALI,PHN,SM]")
STEPS = (
    ("samples", ("task.samples.interval=90",)),
    ("render", ("render.workers=1",)),
    ("baseline", ("task.baseline.names=[momentum]",)),
    ("infer", ("infer.run_name=tiny", "infer.batch_size=4")),
    ("score", ("score.run=momentum",)),
    ("report", ()),
)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fresh(argv: list[str], env: dict) -> tuple[float, float]:
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run([CANDLEBENCH, *argv], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return time.perf_counter() - start, children_cpu() - cpu


def forked(parent: Parent, argv: list[str]) -> tuple[float, float]:
    done = parent.run(argv, cwd=os.getcwd())
    assert done.rc == 0, done.stderr[-2000:]
    return done.wall, done.cpu


def in_process(argv: list[str]) -> tuple[float, float]:
    from candlebench.stages.graph import run_stage

    cpu, start = time.process_time(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # kept, as the others' are
        run_stage(argv[0], argv[1:])
    return time.perf_counter() - start, time.process_time() - cpu


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=3, help="pipelines per way (the ways take turns going first)")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-cli-fork-"))
    env = {**os.environ, "CANDLEBENCH_CACHE": str(scratch / "cache"), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_CURRENT_TEST", None)
    os.environ.update(env)  # what run_stage reads, in this process
    sys.path.insert(0, str(ROOT))

    start = time.perf_counter()
    parent = Parent(env, scratch / "parent")
    parent_wall, parent_cpu = time.perf_counter() - start, process_cpu(parent.proc.pid)

    # The tiny checkpoint is built on first use: once, untimed, before any way is timed; in this
    # process, so it has imported what the stages import, as a test process has.
    for name, extra in STEPS:
        in_process([name, *COMMON, f"out_dir={scratch / 'warm'}", *extra])

    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    ways = {"fresh": lambda argv: fresh(argv, env), "forked": lambda argv: forked(parent, argv), "in process": in_process}
    order = list(ways)
    for n in range(args.passes):
        for way in order[n % 3:] + order[:n % 3]:
            out = scratch / f"{way.replace(' ', '_')}{n}"
            for name, extra in STEPS:
                times.setdefault((way, name), []).append(ways[way]([name, *COMMON, f"out_dir={out}", *extra]))
    parent.close()
    shutil.rmtree(scratch, ignore_errors=True)

    print(f"{'command':<10}" + "".join(f"{way + ' wall':>18}{way + ' CPU':>17}" for way in ways))
    mean: dict[str, list[float]] = {way: [0.0, 0.0] for way in ways}
    for name, _ in STEPS:
        cells = ""
        for way in ways:
            runs = times[(way, name)]
            wall, cpu = sum(w for w, _ in runs) / len(runs), sum(c for _, c in runs) / len(runs)
            mean[way][0] += wall / len(STEPS)
            mean[way][1] += cpu / len(STEPS)
            cells += f"{wall:>17.2f}s{cpu:>16.2f}s"
        print(f"{name:<10}{cells}")
    print(f"{'mean':<10}" + "".join(f"{wall:>17.2f}s{cpu:>16.2f}s" for wall, cpu in mean.values()))
    for way in ("forked", "in process"):
        print(f"{way}/fresh per command: CPU {mean[way][1] / mean['fresh'][1]:.2f}, wall {mean[way][0] / mean['fresh'][0]:.2f}")
    saved = mean["fresh"][1] - mean["forked"][1]
    print(f"fork server: {saved:.2f} CPU s saved a command; its parent's start {parent_wall:.2f} s wall, "
          f"{parent_cpu:.2f} s CPU, paid back after {parent_cpu / saved:.1f} commands" if saved > 0 else
          "fork server: no CPU saved a command")
    print(f"in process beyond forked: {mean['forked'][1] - mean['in process'][1]:.2f} CPU s, "
          f"{mean['forked'][0] - mean['in process'][0]:.2f} s wall a command")


if __name__ == "__main__":
    main()
