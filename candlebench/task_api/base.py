"""The seam between the shared stages and a benchmark.

A task owns everything that makes it a benchmark: which samples it builds from a market, which
inputs each sample needs (charts of which time frames, OHLCV text blocks), the prompt, the answer
constraint, the parser, the metrics, the paired comparison, the report sections and its
baselines. The shared stages (samples, render, infer, baseline, import, score, report) never name
a task; they call these methods. The split follows inspect_ai (dataset / solver / scorer, typed,
failure as data) and lmms-eval (a task is a folder plus a yaml).

Contracts:

* ``build_samples`` returns a frame with at least ``sample_id`` (unique, stable) and ``task``, plus
  whatever labels and groups the task scores with. Samples drawn from the market data carry
  ``market``, ``code`` and ``cutoff`` too (:data:`MARKET_KEYS`): the render stage draws their charts
  by these, and the bootstrap resamples cutoff dates whole; a dataset of its own charts may have none.
* ``settings_type`` is the task's settings: a frozen dataclass mirroring its ``config.yaml``
  (:mod:`candlebench.task_api.settings`), built and checked once per job by :meth:`Task.settings`.
  The methods get it (``s``) and, where they need the job beyond it, a :class:`TaskContext`
  (the render settings, the study folder, the cache) — never the whole config.
* ``parser(s)`` maps raw text (None when generation failed) to a
  :class:`~candlebench.core.results.Parsed`; it never raises: a failure is ``answer=None`` with a
  reason. It runs when a run is scored, on the stored text (records keep no verdict), so with
  ``score`` it is the task's judge, versioned by ``judge_version``.
* ``columns`` are the flat columns the task adds to ``parsed.parquet`` beside the generic ones
  (``answer`` as JSON text, ``tier``, ``reason``, ``error``, ``text``).
* ``score`` returns JSON-safe metrics, optionally with ``per_sample``: a frame of ``sample_id`` and
  per-sample scores that the score stage joins to ``parsed.parquet`` as ``score_<name>`` columns;
  ``compare`` returns JSON-safe paired differences.
* ``per_sample`` (a :class:`~candlebench.scoring.per_sample.PerSample`) says which of those per-sample
  scores are the task's measures; declared, ``compare``, ``report`` and ``browse`` have defaults
  (bootstrap intervals, paired differences, the results table, the browser's verdicts: the last two
  from :mod:`candlebench.report.per_sample`) and ``score`` ends in ``self.per_sample.metrics(table,
  run, ...)``, or returns its own metrics with the table (E2A: its figures under the ``block`` it
  declares). ``report_tables`` and ``browse_detail`` add a task's own tables and browser detail;
  a task with views of its own overrides ``compare``, ``report`` and ``browse``.
* A second pass (E2A-style ``verify``) is a run of its own, its kind chosen by ``task.method``
  (one of ``second_passes``) and the first-pass run it builds on by ``task.revises``
  (:meth:`Task.first_pass_run`): ``request`` gets each sample's :class:`FirstPassAnswer` from that
  run, whose text enters the sample's input fingerprint, so a redone first pass makes the second
  one's answers stale. ``run`` and ``sweep`` follow every model's first pass with the second passes
  in ``task.passes``; the report compares each second pass with its first pass.
* ``browse`` gives the report's sample browser the task's view of each answered sample: its
  evaluation group, its label as text, whether the answer got it right, and any detail of its own
  (E2A's claims with their verdicts).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Mapping, Sequence, TypeVar

from candlebench.core.errors import UserError
from candlebench.core.results import Parsed, RunAnswers, bounded
from candlebench.core.rules import ConfigError, integer
from candlebench.core.settings import build, setting
from candlebench.report import per_sample as per_sample_views
from candlebench.scoring.per_sample import PerSample
from candlebench.task_api.settings import TaskSettings

if TYPE_CHECKING:  # kept light
    from pathlib import Path

    import pandas as pd

    from candlebench.market.market import Market
    from candlebench.rendering.render import RenderSettings
    from candlebench.report.model import Dataset, RunMetrics, Section

# Columns every task's samples carry; the shared stages rely on them.
SAMPLE_KEYS = ("sample_id", "task")
# Columns of samples drawn from the market data (a stock at a cutoff date): charts are drawn by them.
MARKET_KEYS = ("market", "code", "cutoff")


def extent(samples: "pd.DataFrame") -> str:
    """How far the samples reach into the market, "3 stocks × 12 dates"; "" for samples of a
    dataset that has no stocks or dates."""
    return " × ".join(f"{samples[c].nunique()} {what}" for c, what in (("code", "stocks"), ("cutoff", "dates"))
                      if c in samples)
# Every task's parser gives this reason (or flag) to a text whose reasoning block never closed: the
# token budget ran out while the model was thinking.
REASONING_CUT = "unclosed <think> block"


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # a pandas dtype name: the column's type in parsed.parquet


@dataclass(frozen=True)
class Inputs:
    """What the render stage draws or writes for every (code, cutoff) of the task's samples."""

    charts: tuple[str, ...]  # time frames of the charts, e.g. ("daily", "weekly")
    text: bool = False  # also the OHLCV text blocks (rendering/text.py) of the same bars


@dataclass(frozen=True)
class RequestSpec:
    """One sample as the model sees it: the prompt and the inputs it gets, in order."""

    prompt: str
    charts: tuple[str, ...]  # time frames whose charts go with the prompt
    texts: tuple[str, ...] = ()  # input names whose text the prompt holds (for the record)


@dataclass(frozen=True)
class TaskContext:
    """What a task reads of the job beyond its own settings; the stages build it
    (candlebench.stages.job)."""

    render: RenderSettings  # its charts as drawn: size, colours, chart design, time frames
    study_dir: Path  # the study folder (out_dir): another task's runs (reading next to forecast)
    cache_dir: Path  # local model files and downloads


class PassError(UserError, ValueError):
    """task.method / task.revises / task.passes name no pass this task has, or no first-pass run."""


@dataclass(frozen=True)
class FirstPassAnswer:
    """A sample's answer in the first-pass run a second pass shows it (``task.revises``)."""

    run: str
    text: str | None  # None: generation failed there
    answer: Any  # the parsed answer, None when it could not be parsed
    reason: str | None


@dataclass(frozen=True)
class BuiltSamples:
    frame: "pd.DataFrame"
    summary: dict  # JSON-safe counts: samples, cutoffs, dropped by reason, ...


@dataclass(frozen=True)
class ScoreSettings:
    """``score:``: the bootstrap every interval and paired test draws, and the runs a score job scores."""

    n_boot: int = setting(integer(0), default=1000)
    seed: int = 0
    # One run name, several, or None: every run of the task's folder whose scores are not current.
    run: str | tuple[str, ...] | None = None


@dataclass(frozen=True)
class NoAnswer:
    """A baseline's answer for a sample it cannot predict, with why: the record keeps the reason,
    so the report can say how many samples each baseline left out and for what."""

    reason: str


# fn(samples, market, task settings, **params) -> {sample_id: raw answer text, or NoAnswer(why) /
# None (no reason known) = no answer}. The settings, not only the params: a baseline that trains on
# history builds samples under the task's sample rules.
Baseline = Callable[..., Mapping[str, "str | NoAnswer | None"]]


# A task's settings type: every method of a task gets its settings as this.
S = TypeVar("S", bound=TaskSettings)


class Task(ABC, Generic[S]):
    name: ClassVar[str]
    # The task's settings (candlebench.task_api.settings): its config.yaml as a frozen dataclass.
    settings_type: type[S]
    columns: ClassVar[tuple[Column, ...]] = ()
    baselines: ClassVar[Mapping[str, Baseline]] = {}
    second_passes: ClassVar[tuple[str, ...]] = ()  # the kinds of second pass it offers (task.method values)
    # Tasks whose scored run of the same model this task's `score` reads (reading puts a model's
    # reading next to its forecast): `run` and `sweep` score those first, whatever the tasks' order.
    scored_after: ClassVar[tuple[str, ...]] = ()
    # Baselines that know the answer (the references' own generator, an oracle on the judge's facts):
    # name -> what they are. Their scores are ceilings, not results: the report shows them apart
    # and never marks one best.
    references: ClassVar[Mapping[str, str]] = {}
    # The version of the task's judge: its parser, claim matching and metrics, everything `score`
    # computes from the stored text. Raise it with every change that can alter a verdict or a metric
    # of answers already made: `candlebench score` then re-judges each run scored under another
    # version (no answer is generated again), and status and the report say which version judged it.
    judge_version: ClassVar[int] = 1
    # Columns of its samples.parquet that its prompts and scoring read and that older versions of the
    # task did not write: samples without one are refused in one line, not a KeyError mid-stage.
    sample_columns: ClassVar[tuple[str, ...]] = ()
    # The modules its scoring needs beyond the core install, and the pyproject extra that brings them.
    requires: ClassVar[tuple[str, tuple[str, ...]] | None] = None
    # Its results as one row per sample (scoring/per_sample.py): what the default compare, report
    # and browse (report/per_sample.py) read. None: the task brings its own compare and report.
    per_sample: ClassVar[PerSample | None] = None

    def settings(self, block: Mapping[str, Any]) -> S:
        """The task's settings from its ``task:`` block (a composed config block or a plain mapping),
        checked: ``candlebench.core.rules.ConfigError`` names the first key it cannot run with. A
        job builds them once, at its entrance (candlebench.stages.job)."""
        settings = build(self.settings_type, block)
        unknown = [n for n in settings.baseline.names if n not in self.baselines]
        if unknown:
            raise ConfigError(f"task.baseline.names={list(settings.baseline.names)}: {unknown} are not baselines of "
                              f"task {self.name}; known: {sorted(self.baselines)}")
        return settings

    @abstractmethod
    def build_samples(self, market: Market, s: S, ctx: TaskContext) -> BuiltSamples: ...

    @abstractmethod
    def inputs(self, s: S) -> Inputs: ...

    @abstractmethod
    def prompt_identity(self, s: S, ctx: TaskContext) -> str:
        """The prompt template as configured (colour convention, horizon, ...): part of the run key."""

    @abstractmethod
    def request(self, s: S, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str],
                first_pass: FirstPassAnswer | None = None) -> RequestSpec:
        """The prompt and inputs of one sample; ``texts`` holds the sample's text inputs by name;
        ``first_pass`` its answer in the first-pass run (second passes only)."""

    def first_pass_run(self, s: S) -> str | None:
        """The first-pass run whose answers this second pass builds on; None for a first pass."""
        method = s.method or "direct"
        if method == "direct":
            return None
        if method not in self.second_passes:
            raise PassError(f"task.method={method}: the {self.name} task has no such pass; "
                            f"task.method is one of {['direct', *self.second_passes]}")
        if not s.revises:
            raise PassError(f"task.method={method} needs task.revises: the first-pass run whose answers it shows")
        return str(s.revises)

    def uses_market(self, s: S) -> bool:
        """Whether the samples (and charts) come from the market data; False for a task whose
        samples bring their own images (captioning on your own charts)."""
        return True

    def provided_images(self, s: S, samples: pd.DataFrame) -> Mapping[str, Path] | None:
        """sample_id -> an image file the render stage copies instead of drawing the chart (the
        task's one time frame); None: every chart is drawn from the market data."""
        return None

    def images_per_prompt(self, s: S) -> int:
        return len(self.inputs(s).charts)

    def answer_constraint(self, s: S, constrain: bool = False) -> str | None:
        """A regex that constrained decoding holds answers to (both backends), None = free text:
        ``task.answer_regex``, else the task's answer format when the model is to be held to it."""
        return s.answer_regex or (s.answer_format if constrain else None)

    @abstractmethod
    def parser(self, s: S) -> Callable[[str | None], Parsed]: ...

    def judge(self, s: S) -> Callable[[str | None], Parsed]:
        """The parser every stage uses: :meth:`parser` behind the input bounds of
        ``candlebench.core.results.bounded``, so no one answer can stall a run's scoring."""
        return bounded(self.parser(s))

    @abstractmethod
    def score(self, run: RunAnswers, s: S, ctx: TaskContext, settings: ScoreSettings) -> dict: ...

    def compare(self, a: RunAnswers, b: RunAnswers, settings: ScoreSettings) -> dict:
        """Paired differences b - a of two runs over the same samples (JSON-safe); the default:
        :meth:`PerSample.compare <candlebench.scoring.per_sample.PerSample.compare>`."""
        return self._per_sample("compare").compare(a, b, settings.n_boot, settings.seed)

    def report(self, runs: list[RunMetrics], comparisons: Mapping[str, dict],
               datasets: Sequence[Dataset] = ()) -> list[Section]:
        """The task's report sections; ``datasets``: one per market the runs come from. The default:
        the results table, the tables per group and the paired comparisons of :attr:`per_sample`,
        then :meth:`report_tables`."""
        return per_sample_views.sections(self._per_sample("report"), self.name, runs, comparisons,
                                         self.report_tables(runs, datasets, comparisons))

    def report_tables(self, runs: list[RunMetrics], datasets: Sequence[Dataset] = (),
                      comparisons: Mapping[str, dict] | None = None) -> Section | None:
        """The default report's tables and plots of the task's own, after its results and
        comparisons (a paper's table layout, a chart of its metrics, a plot with an arrow per
        comparison); None: nothing more."""
        return None

    def browse(self, run: RunAnswers) -> "pd.DataFrame":
        """Per row of ``run.parsed``: ``sample_id``, ``group`` (the evaluation group the browser
        filters by: regime, modality, ...), ``label`` (text), ``outcome`` ("right", "wrong" or None
        where the task has no such verdict or nothing parsed) and ``detail`` (a JSON-safe dict or
        None, shown with the answer). The default: :attr:`per_sample`'s group, label and verdict;
        without it, no groups, labels or verdicts; then :meth:`browse_detail`'s columns instead of those."""
        view = per_sample_views.browse(self.per_sample or PerSample(), run.parsed)
        own = self.browse_detail(run)
        return view if own is None else view.assign(**{c: own[c].to_numpy() for c in own.columns})

    def browse_detail(self, run: RunAnswers) -> "pd.DataFrame | None":
        """Per row of ``run.parsed``, the ``label`` and / or ``detail`` the task shows beyond its
        declared columns (E2A: a window's anchor facts, an answer's claims); None: the default's."""
        return None

    def _per_sample(self, method: str) -> PerSample:
        if self.per_sample is None:
            raise NotImplementedError(f"the {self.name} task declares no per_sample scores and no {method} of its own")
        return self.per_sample

    def summary_line(self, metrics: Mapping[str, Any]) -> str:
        """What `candlebench score` prints of a run's metrics: its :attr:`per_sample` measures, then
        the parse failures and missing records."""
        from candlebench.scoring.numbers import fmt

        shown = [] if self.per_sample is None else self.per_sample.shown()
        return ", ".join([*(f"{m.key} {fmt(metrics[m.key], m.digits)}" for m in shown if m.key in metrics),
                          *(f"{k} {metrics[k]}" for k in ("parse_failure_rate", "n_missing_records") if k in metrics)])
