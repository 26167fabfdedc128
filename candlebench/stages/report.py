"""``candlebench report``: every task's scored runs → one report, a section per task, with the
sample browser and the provenance. It dispatches on the task and knows no metric."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from candlebench.core.errors import CorruptFile, UserError
from candlebench.core.io import write_json
from candlebench.core.layout import StudyLayout, RunPaths, TaskPaths
from candlebench.core.results import RunAnswers
from candlebench.core.schema import read_versioned
from candlebench.stages.provenance import provenance
from candlebench.stages.provenance import section as provenance_section
from candlebench.stages import freshness
from candlebench.stages.freshness import parsed_is_under_key, read_metrics, scored_on_these_samples
from candlebench.stages.job import JobConfig
from candlebench.stages.run_identity import samples_fingerprint
from candlebench.stages.study import data_of, other_data, report_tasks
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import read_samples
from candlebench.report.browser import FILES, BrowserRun, BrowserSettings, browser_block
from candlebench.report.failures import FAILURE_COLUMNS, failure_rows, failure_table
from candlebench.report.settings import ReportSettings
from candlebench.report.model import RANDOM_WEIGHTS, Dataset, RunMetrics, Section, Table, scored_run
from candlebench.report.tables import with_answered
from candlebench.report.writer import write_report
from candlebench.task_api.registry import get_task
from candlebench.task_api.base import Task, extent


class StaleScores(UserError, FileNotFoundError):
    """metrics.json or parsed.parquet of another run key than the run's run.json."""


@dataclass(frozen=True)
class ScoredRunFiles:
    """A scored run before its rows are read: run.json and metrics.json, small, read for every run;
    parsed.parquet read when a step needs it and let go after (one run's rows in memory at a time,
    however many runs a paper-scale report holds)."""

    name: str
    paths: RunPaths
    samples: pd.DataFrame
    info: dict
    metrics: dict

    def load(self, columns: list[str] | None = None) -> RunAnswers:
        """Its rows; of ``columns`` alone where given (those it has: a baseline has no error column)."""
        if columns is not None:
            columns = [c for c in columns if c in pq.read_schema(self.paths.parsed).names]
        return RunAnswers(self.name, pd.read_parquet(self.paths.parsed, columns=columns), self.samples, self.info,
                       self.metrics)

    @property
    def answers(self) -> int:
        return pq.ParquetFile(self.paths.parsed).metadata.num_rows


def _scored_files(paths: TaskPaths, name: str, samples: pd.DataFrame) -> ScoredRunFiles:
    run = paths.run(name)
    info = RunInfo.read(run.info)  # run.json was checked to be there (:func:`_run_names`)
    metrics = read_metrics(run.metrics)
    keyed = parsed_is_under_key(run, info.run_key, metrics)
    if not keyed.fresh:
        raise StaleScores(f"{run.root}: {keyed.reason}; run `candlebench score score.run={name}` first")
    return ScoredRunFiles(name, run, samples, asdict(info), metrics)


def dataset(paths: TaskPaths, samples: pd.DataFrame) -> Dataset:
    summary = read_versioned("samples summary", paths.summary) if paths.summary.exists() else {}
    charts = pd.read_parquet(paths.manifest, columns=["freq"])["freq"].value_counts() if paths.manifest.exists() else {}
    return Dataset(_market(samples), summary, {str(k): int(v) for k, v in dict(charts).items()})


def study_line(tasks: list[TaskPaths]) -> str:
    """What each task asked, for the report's header: its samples, stocks and dates; then the data
    they came from: its files, bars and price adjustment (what `data check` notes of it), so two
    reports of one stock each never read alike."""
    sizes, data = [], {}
    for paths in tasks:
        keys = [k for k in ("code", "cutoff") if k in pq.read_schema(paths.samples).names]
        samples = pd.read_parquet(paths.samples, columns=keys or ["sample_id"])
        reach = extent(samples)
        where = ([_listed(sorted(map(str, samples["code"].unique())))] if "code" in samples else []) + (
            [_dates(samples["cutoff"])] if "cutoff" in samples else [])
        sizes.append(f"{paths.task}: {len(samples):,} samples" + (f" ({reach}: {'; '.join(where)})" if reach else ""))
        built = data_of(paths)
        if built.get("fingerprint"):
            data.setdefault(built["fingerprint"], built)
    return "; ".join(sizes) + "".join(f". {_data_line(d)}" for d in data.values())


def _dates(cutoffs: pd.Series) -> str:
    dates = pd.to_datetime(cutoffs)
    return f"{dates.min():%Y-%m-%d} .. {dates.max():%Y-%m-%d}"


def _listed(codes: list[str], at_most: int = 12) -> str:
    return ", ".join(codes[:at_most]) + (f" and {len(codes) - at_most} more" if len(codes) > at_most else "")


def _data_line(data: dict) -> str:
    adjusted = [n for n in data.get("notes") or () if "adjust" in n]
    return (f"Data: {', '.join(data.get('files') or ['?'])} ({data.get('stocks', '?')} stocks, {data.get('rows', '?')} bars, "
            f"bars fingerprint {data['fingerprint']}); prices: "
            + ("; ".join(adjusted) if adjusted else "used as given (no adjustment noted)")
            + ("; mixed price adjustment" if data.get("mixed_adjustment") else ""))


def one_data_set_of(layout: StudyLayout, tasks: list[str]) -> tuple[list[str], Section | None]:
    """The tasks of the study's data set, the command's first task's (its first with market data),
    and a section naming those built from other bars (their samples rebuilt from other data since):
    a report never mixes sections of two data sets."""
    ours, other = other_data(layout, tasks)
    if not other:
        return tasks, None
    rows = [{"Task": t, "Built from": ", ".join(b.get("files") or []), "Bars": b["fingerprint"]} for t, b in other.items()]
    return [t for t in tasks if t not in other], Section("Not shown: tasks built from other data", (Table(
        "Tasks whose samples came from other bars", pd.DataFrame(rows),
        f"This report is of {', '.join(ours.get('files') or [])} (bars {ours['fingerprint']}). These tasks' samples were "
        "built from other bars (their data changed since, or another file): rebuild them with this data "
        "(`candlebench run 'tasks=[...]'`), or report them from their own out_dir."),), {})


def _market(samples: pd.DataFrame) -> str:
    return "+".join(sorted(map(str, samples["market"].unique()))) if "market" in samples else ""


def task_section(task: Task, paths: list[TaskPaths], job: JobConfig
                 ) -> tuple[list[Section], list[RunMetrics], dict, list[BrowserRun]]:
    """One section per task over the task folders of this out_dir and of ``report.pool`` (other
    markets' out_dirs): their runs side by side, each labelled with its market; and the runs as
    the sample browser lists them."""
    runs, datasets, comparisons, failures, browsed, elsewhere, dated = [], [], {}, [], [], [], []
    wanted = {str(n) for n in job.report.runs} if job.report.runs else None
    for where in paths:
        samples = read_samples(where)
        names = [n for n in _run_names(where) if wanted is None or n in wanted]
        dated += [_dated_row(where.run(n), freshness.NOT_SCORED) for n in names
                  if not where.run(n).metrics.exists() and not where.run(n).score_error.exists()]
        names = [n for n in names if where.run(n).metrics.exists()]
        if not names:
            continue
        names, other = _of_these_samples(where, names, samples)
        elsewhere += other
        if not names:
            continue
        data = {n: _scored_files(where, n, samples) for n in names}  # also: every run's scores are of its current key
        market = _market(samples)
        now = samples_fingerprint(samples, where)
        stale = {n: freshness.scores_are_current(task, where.run(n), now, len(samples)) for n in names}
        dated += [_dated_row(where.run(n), why) for n, why in stale.items() if not why.fresh]
        runs += [_marked(scored_run(n, dict(d.metrics), bool(d.info["random_weights"]), market,
                                    task.references.get(n, "") if d.info.get("kind") == "baseline" else ""),
                         stale[n].fresh)
                 for n, d in data.items()]
        datasets.append(dataset(where, samples))
        prefix = f"{market}: " if len(paths) > 1 else ""
        failures += [r for n, d in data.items() for r in failure_rows(f"{prefix}{n}", d.load(FAILURE_COLUMNS).parsed)]
        browsed += [BrowserRun(task, where, f"{prefix}{n}", d.info, d.answers, d.load) for n, d in data.items()]
        # Each second pass against its first pass (E2A's verify: ΔUCR, Δcoverage, ΔNDR), then the pairs asked for;
        # run.json's identity names the first pass under "revises", as task.revises did.
        second_passes = [(d.info["identity"]["revises"], n) for n, d in data.items()
                         if d.info["identity"].get("revises")]
        comparisons.update({
            f"{prefix}{a} → {b}": task.compare(data[a].load(), data[b].load(), job.score)
            for a, b in [*second_passes, *((str(a), str(b)) for a, b in job.report.compare)]
            if a in data and b in data
        })
    sections = [with_answered(s, runs) for s in task.report(runs, comparisons, datasets)] if runs else []
    unscored = unscored_section(task.name, paths, {r["Folder"] for r in elsewhere})
    hidden = other_samples_section(task.name, elsewhere)
    out_of_date = out_of_date_section(task.name, dated)
    return (sections + [s for s in (failure_table(task.name, failures), out_of_date, unscored, hidden) if s], runs,
            comparisons, browsed)


OUT_OF_DATE = "(out of date)"


def _run_names(paths: TaskPaths) -> list[str]:
    """The task's runs; a run folder without its run.json is refused in one line (its answers
    cannot be told from another run's): never left out of the report without a word."""
    names = paths.run_names()
    for name in names:
        if not paths.run(name).info.exists():
            raise CorruptFile(f"{paths.run(name).info}: missing, so the answers in {paths.run(name).root} belong to no "
                              "known run; restore it, or re-run the stage that made the run (infer / baseline / import)")
    return names


def _marked(run: RunMetrics, fresh: bool) -> RunMetrics:
    """A run whose scores are not of its records now (by this judge, on these samples) says so
    wherever it is shown, until `score` makes them current."""
    return run if fresh else replace(run, label=f"{run.label} {OUT_OF_DATE}")


def _dated_row(run: RunPaths, why: freshness.Stale) -> dict:
    return {"Run": run.name, "Why": why.reason, "Redo": f"`{why.redo}`"}


def out_of_date_section(task: str, rows: list[dict]) -> Section | None:
    """Runs whose scores shown are not of their records now (written to since, judged by an older
    judge, ...) and runs not scored at all: each with why and the command that makes it current."""
    if not rows:
        return None
    return Section(f"{task}: scores out of date or missing", (Table(
        f"{task}: runs whose scores are not of their answers now", pd.DataFrame(rows),
        f"Runs marked {OUT_OF_DATE} in the tables above show scores of older answers, another judge or other samples; "
        "runs not scored yet are not in them. The command in Redo makes them current."),), {})


def _of_these_samples(paths: TaskPaths, names: list[str], samples: pd.DataFrame) -> tuple[list[str], list[dict]]:
    """(the runs scored on these samples, a row for each other one): a run scored on another data
    file's or other settings' samples is never in the results tables."""
    now = samples_fingerprint(samples, paths)
    shown, other = [], []
    for name in names:
        metrics = read_metrics(paths.run(name).metrics)
        if scored_on_these_samples(metrics, now, len(samples)).fresh:
            shown.append(name)
        else:
            other.append({"Run": name, "Scored on (samples)": metrics.get("n_samples"), "Samples now": len(samples),
                          "Folder": str(paths.run(name).root)})
    return shown, other


def other_samples_section(task: str, rows: list[dict]) -> Section | None:
    if not rows:
        return None
    return Section(f"{task}: not shown: made for other data/settings", (Table(
        f"{task}: not shown: made for other data/settings", pd.DataFrame(rows),
        "Scored on other samples than this folder's samples.parquet (another data file or other task.samples "
        "settings, built here since): their numbers are of other samples. Give each data set its own out_dir "
        "(the default: outputs/<file name>), or `candlebench score` them again after rebuilding their samples."),), {})


def unscored_section(task: str, paths: list[TaskPaths], hidden: set[str]) -> Section | None:
    """Runs whose last scoring failed: never left out without a word. ``hidden``: the folders of
    runs whose older scores are of other samples (not shown)."""
    rows = [{"Run": n, "Why": _score_error(where.run(n)),
             "Older scores shown": "yes" if where.run(n).metrics.exists() and str(where.run(n).root) not in hidden
             else "no"}
            for where in paths for n in where.run_names() if where.run(n).score_error.exists()]
    if not rows:
        return None
    return Section(f"{task}: runs that could not be scored", (Table(
        f"{task}: runs not scored", pd.DataFrame(rows),
        "Scoring failed for these runs; score_error.json in each run folder holds the traceback. "
        "`candlebench score score.run=<run>` again once the cause is fixed."),), {})


def _score_error(run: RunPaths) -> str:
    """The one-line reason of score_error.json (a damaged one says so: scoring again rewrites it)."""
    try:
        return str(json.loads(run.score_error.read_text(encoding="utf-8"))["error"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return f"{run.score_error}: damaged; `candlebench score score.run={run.name}` writes it again"


# What the report's console line says of each place of the charts: whether the page travels.
TRAVELS = {
    "inline": "its charts are inside it: the page travels alone",
    "thumbnails": "chart thumbnails inside it: the page travels alone",
    "bundle": "its charts are copied into its folder: the folder travels whole",
    "files": "its charts are the study's files (report.embed=false, or more than report.embed_max_mb): to move it, "
             "`candlebench report report.bundle=true` copies them into its folder",
}


def charts_within(browsed: list[BrowserRun], limit: float) -> bool:
    """Whether the chart files of the report's task folders weigh at most ``limit`` bytes on disk
    (each folder once; the count stops at the limit)."""
    total = 0
    for paths in {b.paths.root: b.paths for b in browsed}.values():
        if not paths.manifest.exists():
            continue
        for name in pd.read_parquet(paths.manifest, columns=["path"])["path"]:
            chart = paths.root / name
            total += chart.stat().st_size if chart.is_file() else 0
            if total > limit:
                return False
    return True


def browser_settings(settings: ReportSettings, browsed: list[BrowserRun]) -> BrowserSettings:
    """Where the browser's charts go (candlebench.report.browser.settings.CHARTS), from report.embed / bundle and the study's size."""
    embed, answers = settings.embed, sum(b.answers for b in browsed)
    if embed is True:
        charts = "thumbnails"
    elif embed == "auto" and answers <= settings.split_above and charts_within(browsed, settings.embed_max_mb * 1e6):
        charts = "inline"
    else:
        charts = "bundle" if settings.bundle else "files"
    return BrowserSettings(charts=charts, thumb_px=settings.thumb_px, page_size=settings.page_size,
                           split_above=settings.split_above)


def report(job: JobConfig) -> None:
    layout = job.layout
    pooled = [layout] + [StudyLayout(Path(p)) for p in (job.report.pool or [])]
    missing_dirs = [str(p.study_dir) for p in pooled[1:] if not p.study_dir.is_dir()]
    if missing_dirs:
        raise FileNotFoundError(f"report.pool: no such run folder {missing_dirs}")
    tasks = report_tasks(list(job.tasks or []), {t for p in pooled for t in p.tasks_present()})
    tasks, other_data = one_data_set_of(layout, tasks)
    sections, runs, comparisons, browsed = [], [], {}, []
    for name in tasks:
        present = [p.task(name) for p in pooled if name in p.tasks_present()]
        found, scored, compared, listed = task_section(get_task(name), present, job)
        sections += found
        runs += scored
        browsed += listed
        if compared:
            comparisons[name] = compared
    if not runs:
        raise FileNotFoundError(f"{layout.study_dir}: no runs of {tasks} scored on its samples now (runs scored on other "
                                "data/settings are not shown); run `candlebench score` first")
    if job.report.runs:
        missing = sorted(set(map(str, job.report.runs)) - {r.name for r in runs})
        if missing:
            raise FileNotFoundError(f"report.runs: no scored run named {missing} under {layout.study_dir}")
    out = Path(job.report.dir)
    write_json(comparisons, out / "comparisons.json")
    shown: dict[str, list[str]] = {}
    for r in runs:  # this out_dir's runs (pooled ones have their own provenance)
        shown.setdefault(str(r.metrics.get("task")), []).append(r.name)
    here = [layout.task(t) for t in tasks if layout.task(t).samples.exists()]
    found = provenance(layout, here, {t: [n for n in names if layout.task(t).run(n).info.exists()] for t, names in shown.items()})
    write_json(found, out / "provenance.json")
    sections = [*sections, *([other_data] if other_data else []), provenance_section(found)]  # provenance last, folded
    random = any(r.label.endswith(RANDOM_WEIGHTS) for r in runs)
    settings = browser_settings(job.report, browsed)
    samples = browser_block(browsed, out, settings)
    md, page = write_report(sections, out, job.report.title, random, samples, study_line(here))
    answers = sum(b.answers for b in browsed)  # the browser's rows: a sample's record, an answer or not (has_answer)
    print(f"report of {len(runs)} runs over {len(sections)} sections: {md} and {page} "
          f"({page.stat().st_size / 1e6:.2f} MB, {answers} records in its sample browser; {TRAVELS[settings.charts]})")
    if answers > settings.split_above:
        print(f"its sample browser reads one file per run from {out / FILES} (over report.split_above="
              f"{settings.split_above} answers): open it with `candlebench view {out}`")
