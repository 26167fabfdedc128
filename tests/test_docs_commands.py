"""Every ```bash block of README.md and docs/*.md runs as written, so the documentation cannot drift
from the code.

The blocks run in document order (README first, then docs/ by name) in one working directory, as a
newcomer would type them: `my.csv`, `exports/`, `yahoo/`, `dayfirst.csv`, `answers.jsonl`,
`mine.jsonl` and the demo market are small stand-ins made from the committed slice (two stocks,
about half a year), so every stage of every task runs for real in seconds; the study one command
makes (`outputs/my`, `outputs/demo-run`) is the one the next command finds. The only words added
to a command are `render.workers=1` (no process pool on a small machine). A command may start with
environment assignments (`CANDLEBENCH_TASKS=docs/example_task candlebench ...`), set in its process;
`docs/` is the checkout's, as for a user in the repository.

A block that cannot run here (a GPU, real weights, a SLURM cluster, the network) is preceded by
``<!-- not run: why -->``; its Hydra commands must still compose (`--cfg job`: every key exists,
every group option too; a `--multirun` command as its first job), its other commands must be
commands `candlebench` has.

Commands run as every test's do (fixtures/forked_cli.py): each its own process, forked from one
that imported the CLI and torch once, with its own exit code and output, in the working directory.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass
from itertools import takewhile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fixtures.forked_cli import Parent
from helpers import ROOT, SLICE

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->", re.S)
FENCE = re.compile(r"^```(\w*)\s*$")
SMALL = ["render.workers=1"]
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=.*")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    commands: list[list[str]]  # each a `candlebench ...` line split as bash would
    environ: list[dict[str, str]]  # each command's leading VAR=value assignments
    other: list[str]  # lines that are not candlebench commands
    not_run: str | None  # the annotation's reason

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if fence.group(1) != "bash":
            continue
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        note = NOT_RUN.fullmatch(before.strip())
        joined = "\n".join(body).replace("\\\n", " ").splitlines()
        commands, environ, other = [], [], []
        for text in joined:
            words = shlex.split(text, comments=True)
            assigned = dict(w.split("=", 1) for w in takewhile(ASSIGNMENT.fullmatch, words))
            words = words[len(assigned):]
            if not words:
                continue
            if words[0] == "candlebench":
                commands.append(words[1:])
                environ.append(assigned)
            else:
                other.append(text)
        found.append(Block(str(path.relative_to(ROOT)), start + 1, commands, environ, other,
                           note.group(1) if note else None))
    return found


ALL = [b for page in PAGES for b in blocks(page)]


# --- the stand-ins for a user's files ------------------------------------------------------------

def _slice(codes: list[str], first: str, last: str) -> pd.DataFrame:
    frame = pd.read_csv(SLICE)
    return frame[frame["code"].isin(codes) & (frame["date"] >= first) & (frame["date"] <= last)].reset_index(drop=True)


def make_sandbox(work: Path, cache: Path) -> None:
    # Your own CSV: two stocks, 120 trading days: one forecast cutoff (90 bars before, 30 after),
    # two E2A-style and caption dates.
    mine = _slice(["AC", "SM"], "2017-01-01", "2017-12-31")
    days = sorted(mine["date"].unique())[:120]
    mine[mine["date"].isin(days)].to_csv(work / "my.csv", index=False)
    # The demo market: the same two stocks around the demo's first cutoff (2018-01-02).
    demo = _slice(["AC", "SM"], "2017-08-01", "2018-02-20")
    demo["date"] = pd.to_datetime(demo["date"])
    (cache / "demo").mkdir(parents=True)
    demo.to_parquet(cache / "demo" / "pse_daily.parquet", index=False)
    # A folder of exports: TuShare `daily` (newest first) and one Yahoo download.
    (work / "exports").mkdir()
    (work / "yahoo").mkdir()
    ts = _slice(["ALI"], "2017-06-01", "2018-04-30").iloc[::-1]
    pd.DataFrame({"ts_code": "600519.SH", "trade_date": ts["date"].str.replace("-", ""), "open": ts["open"],
                  "high": ts["high"], "low": ts["low"], "close": ts["close"], "pre_close": ts["close"],
                  "change": 0.0, "pct_chg": 0.0, "vol": ts["volume"], "amount": ts["amount"]}
                 ).to_csv(work / "exports" / "tushare_daily.csv", index=False)
    yf = _slice(["JFC"], "2017-06-01", "2018-04-30")
    yahoo = pd.DataFrame({"Date": yf["date"], "Open": yf["open"], "High": yf["high"], "Low": yf["low"],
                          "Close": yf["close"], "Adj Close": yf["close"], "Volume": yf["volume"]})
    yahoo.to_csv(work / "exports" / "JFC.csv", index=False)
    yahoo.to_csv(work / "yahoo" / "JFC.csv", index=False)
    dayfirst = mine[mine["date"].isin(days)].copy()
    dayfirst["date"] = pd.to_datetime(dayfirst["date"]).dt.strftime("%d/%m/%Y")
    dayfirst.to_csv(work / "dayfirst.csv", index=False)
    (work / "docs").symlink_to(ROOT / "docs")  # the example task's folder, where the guide names it


def answers_for(study: dict, path: Path) -> None:
    """Answers made elsewhere for the samples of the study the import command names."""
    samples = pd.read_parquet(path.parent / study["out_dir"] / study["task"]["name"] / "samples.parquet")
    path.write_text("".join(json.dumps({"sample_id": s, "text": f"<score>{0.01 * (i % 5 - 2):.3f}</score>",
                                        "model": "elsewhere"}) + "\n"
                            for i, s in enumerate(samples["sample_id"])))


def captioned_charts(work: Path) -> None:
    """Two charts with references and metadata, as a user's JSONL manifest."""
    charts = sorted((work / "outputs" / "my" / "caption" / "images").rglob("daily.png"))[:2]
    assert charts, "mine.jsonl is made from the quickstart's caption charts: run the README first"
    (work / "charts").mkdir(exist_ok=True)
    rows = []
    for i, chart in enumerate(charts):
        (work / "charts" / f"c{i}.png").write_bytes(chart.read_bytes())
        rows.append({"image": f"charts/c{i}.png", "id": f"c{i}", "code": "AC", "date": f"2017-05-0{i + 1}",
                     "reference": "The stock rose over the period on rising volume; support holds, the chartist is bullish.",
                     "metadata": {"degree": ["daily", "short-term"], "time": ["2017-05-01"], "price": ["700"]}})
    (work / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


class Shell:
    """The working directory a newcomer types in; each command forked from one importing parent."""

    def __init__(self, work: Path, env: dict):
        self.work, self.wall = work, 0.0
        self.parent = Parent(env, work.parent / "logs")

    def __call__(self, argv: list[str], environ: dict[str, str] | None = None) -> tuple[int, str, float]:
        """(exit code, output, CPU seconds of the command and its children)."""
        done = self.parent.run(argv, cwd=self.work, timeout=600, merge_stderr=True, environ=environ)
        self.wall += done.wall
        return done.rc, done.stdout, done.cpu

    def close(self) -> None:
        self.parent.close()


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    work, cache = base / "work", base / "cache"
    work.mkdir()
    make_sandbox(work, cache)
    env = {**os.environ, "CANDLEBENCH_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TMPDIR": str(base),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    sh = Shell(work, env)
    yield sh
    sh.close()


def is_plain(argv: list[str]) -> bool:
    from candlebench.cli import PLAIN_COMMANDS

    return any(" ".join(argv[:n]) in PLAIN_COMMANDS for n in (1, 2))


def single_job(argv: list[str]) -> list[str]:
    """A --multirun command as its first job (Hydra prints no config for a sweep)."""
    if "--multirun" not in argv and "-m" not in argv:
        return argv
    return [re.sub(r"^([\w/.]+=)([^\[{'\",]+),.*$", r"\1\2", w) for w in argv if w not in ("--multirun", "-m")]


def composed(shell: Shell, argv: list[str]) -> dict:
    rc, out, _ = shell([*argv, "--cfg", "job"])
    assert rc == 0, out[-3000:]
    return yaml.safe_load(out[out.index("# @package") if "# @package" in out else 0:])


def prepare(shell: Shell, argv: list[str]) -> None:
    """The user's files a command names, made when it first needs them."""
    if argv[:1] == ["import"]:
        answers_for(composed(shell, argv), shell.work / argv[1])
    if any("mine.jsonl" in word for word in argv) and not (shell.work / "mine.jsonl").exists():
        captioned_charts(shell.work)


def test_every_command_block_runs(shell):
    """Runnable blocks in order, each command for real; every failure is named by page and line."""
    timings, failed = [], []
    try:
        for block in ALL:
            if block.not_run is None:
                run_block(shell, block, timings, failed)
    finally:
        print(f"{len(timings)} commands, {sum(t[0] for t in timings):.0f} s CPU, {shell.wall:.0f} s wall")
        print("\n".join(f"{s:6.1f}s CPU {where} {cmd}" for s, where, cmd in sorted(timings, reverse=True)[:12]))
    assert not failed, "\n\n".join(failed)
    # Where the README says the reports are.
    for study in ("my", "demo-run"):
        assert (shell.work / "outputs" / study / "report" / "report.html").exists(), study


def run_block(shell: Shell, block: Block, timings: list, failed: list) -> None:
    if not block.commands or block.other:
        failed.append(f"{block.where}: a runnable bash block holds only `candlebench` commands (found "
                      f"{block.other}); precede it with <!-- not run: why --> if it cannot run in the tests")
        return
    for argv, environ in zip(block.commands, block.environ):
        if is_plain(argv):
            rc, out, s = shell(argv, environ)
        else:
            prepare(shell, argv)
            extra = [] if any(w.startswith("render.workers=") for w in argv) else SMALL
            rc, out, s = shell([*argv, *extra], environ)
        timings.append((s, block.where, " ".join(argv)))
        if rc != 0:
            failed.append(f"{block.where}: candlebench {shlex.join(argv)} failed (exit {rc}):\n{out[-3000:]}")


def test_blocks_that_do_not_run_say_why_and_still_compose(shell):
    checked, cpu = 0, 0.0
    for block in ALL:
        if block.not_run is None:
            continue
        assert len(block.not_run.split()) >= 3, f"{block.where}: say why the block cannot run here"
        for argv, environ in zip(block.commands, block.environ):
            checked += 1
            if is_plain(argv):
                continue
            rc, out, used = shell([*single_job(argv), "--cfg", "job"], environ)
            cpu += used
            assert rc == 0, f"{block.where}: candlebench {shlex.join(argv)} --cfg job failed:\n{out[-3000:]}"
    assert checked
    print(f"{checked} commands composed, {cpu:.0f} s CPU")


def _slug(title: str) -> str:
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@pytest.mark.unit
def test_links_between_pages_resolve():
    """Every relative link of the README and docs/ names a file that exists, and a heading in it."""
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"\w+://", target):
                continue
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            assert path.exists(), f"{page.relative_to(ROOT)}: link to {target}: no such file"
            if anchor:
                heads = {_slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text(), re.M)}
                assert anchor in heads, f"{page.relative_to(ROOT)}: link to {target}: no such heading"


@pytest.mark.unit
def test_blocks_are_found():
    """The parser sees the README's quickstart and every page has a command block."""
    assert any(b.commands == [["run", "data=csv", "data.path=my.csv"]] for b in ALL if b.page == "README.md")
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        assert any(b.page == name and (b.commands or b.other) for b in ALL), f"{name}: no command block"
