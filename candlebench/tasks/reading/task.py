"""The chart-reading task on the Task interface: can the model read the chart it forecasts from?

A sample is a stock, a cutoff of the forecast task's grid, a time frame (daily, weekly) and a
modality (the chart, or the same bars as OHLCV text); its questions and their true answers are
computed from the bars the chart draws (:mod:`candlebench.tasks.reading.questions`). Samples
:mod:`candlebench.tasks.reading.samples`; parser :mod:`candlebench.tasks.reading.parse`; metrics :mod:`candlebench.tasks.reading.metrics`;
paired comparison :mod:`candlebench.tasks.reading.compare`; baselines :mod:`candlebench.tasks.reading.baselines`; reading
next to forecasting :mod:`candlebench.tasks.reading.forecast_link`; the report section :mod:`candlebench.tasks.reading.report`.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any, Callable, Mapping

import pandas as pd

from candlebench.core.layout import StudyLayout
from candlebench.core.results import Parsed, RunAnswers
from candlebench.market.market import Market
from candlebench.rendering.inputs import text_column
from candlebench.scoring.numbers import fmt, pct
from candlebench.task_api.base import (BuiltSamples, Column, FirstPassAnswer, Inputs, RequestSpec, ScoreSettings, Task,
                                    TaskContext)
from candlebench.tasks.reading.baselines import BASELINES
from candlebench.tasks.reading.parse import parse_answer
from candlebench.rendering.inputs import BLANK_INPUT
from candlebench.tasks.reading.questions import CHOICES, MARKS, NUMERIC, QUESTIONS, RECENT, TYPES
from candlebench.market.bars import FREQS
from candlebench.tasks.reading.samples import PAIR, build_samples
from candlebench.tasks.reading.settings import ReadingSettings

# The answer format the prompt shows, per question, in the order asked: a choice list, or the kind
# of number (questions.NUMERIC).
_NUMBER_FORMAT = {"price": "<number>", "count": f"<0-{RECENT}>"}
FORMAT = {**{q: '"' + "|".join(c) + '"' for q, c in CHOICES.items()},
          **{q: _NUMBER_FORMAT[kind] for q, kind in NUMERIC.items()}}
assert set(FORMAT) == set(QUESTIONS) == set(TYPES)


def frame_block(text: str, frame: str) -> str:
    """The block of one time frame out of a sample's OHLCV text (rendering/text.py: one block per
    frame, each headed "<code> <frame> bars before ...", blocks split by a blank line)."""
    blocks = text.split("\n\n")
    for block in blocks:
        if block.split(" ", 2)[1:2] == [frame]:
            return block
    raise ValueError(f"the OHLCV text has no {frame} block (its headers: {[b.partition(chr(10))[0] for b in blocks]})")


class ReadingTask(Task[ReadingSettings]):
    name = "reading"
    settings_type = ReadingSettings
    columns = (Column("n_answered", "Int64"),)
    baselines = MappingProxyType(BASELINES)
    # Raise with every change of a verdict or metric (tests/tasks/test_judge_versions.py and
    # tests/tasks/reading/test_gold.py pin them). 2: the parser reads every value by the questions' choices and
    # numeric kinds (cannot_tell, the new questions) and gives no credit the text does not give
    # (negation, hedges, the final answer, exact pattern names); prices are judged for every price
    # question; chance-corrected metrics and chart-clustered intervals.
    judge_version = 2
    # The lettered bar mark_color asks about (the prompt) and the trend questions' pixel margins
    # (forecast_link): samples built before issue #50's questions lack them.
    sample_columns = ("mark_color", "margins")
    scored_after = ("forecast",)  # its metrics hold the model's forecast next to its reading (forecast_link)
    references = MappingProxyType({"oracle": "the true answers from the drawn bars: the ceiling check (accuracy 1 "
                                             "when the judge and the data agree)"})

    def build_samples(self, market: Market, s: ReadingSettings, ctx: TaskContext) -> BuiltSamples:
        frame, summary = build_samples(market, s, ctx.render.spec)
        return BuiltSamples(frame, summary)

    def inputs(self, s: ReadingSettings) -> Inputs:
        # The blank image of a chart's size (the image-free control) is drawn as a chart of its own.
        blank = (BLANK_INPUT,) if "blank" in s.modalities else ()
        return Inputs(charts=(*(str(f) for f in s.frames), *blank), text="text" in s.modalities)

    def _words(self, s: ReadingSettings) -> dict[str, Any]:
        return {k: getattr(s, k)[s.language] for k in ("inputs", "pair_inputs", "frame_names", "questions", "mark")}

    def prompt_identity(self, s: ReadingSettings, ctx: TaskContext) -> str:
        return s.prompt + "\n" + json.dumps(self._words(s), ensure_ascii=False, sort_keys=True)

    def request(self, s: ReadingSettings, ctx: TaskContext, sample: Mapping[str, Any], texts: Mapping[str, str],
                first_pass: FirstPassAnswer | None = None) -> RequestSpec:
        words = self._words(s)
        frame, modality = str(sample["frame"]), str(sample["modality"])
        up, down = ctx.render.colors
        mas = ", ".join(f"MA{w} {c}" for w, c in zip(s.render.ma_windows, s.render.ma_colors))
        pair = frame == PAIR
        if modality == "text":
            ohlcv = texts[text_column()] if pair else frame_block(texts[text_column()], frame)
        else:
            ohlcv = ""
        # The blank control is asked as the chart is, word for word: only the image differs.
        shown = "chart" if modality == "blank" else modality
        template = (words["pair_inputs"] if pair else words["inputs"])[shown]
        inputs = template.format(frame="" if pair else words["frame_names"][frame], up=up, down=down, mas=mas, ohlcv=ohlcv)
        named = {letter: words["mark"].format(letter=letter, back=back, date=date)
                 for letter, back, date in json.loads(sample["marked"])}
        # {marks}: the lettered bars A-D; {mark}: the bar mark_color asks about (E lies outside the chart).
        marks = "; ".join(named[letter] for letter in MARKS if letter in named)
        mark = named.get(sample["mark_color"], "")
        asked = [q for q in QUESTIONS if q in json.loads(sample["questions"])]
        questions = "\n".join(f"{i}. " + words["questions"][q].format(marks=marks, up=up, mark=mark)
                              for i, q in enumerate(asked, 1))
        answer = "{" + ", ".join(f'"{q}": {FORMAT[q]}' for q in asked) + "}"
        prompt = s.prompt.format(inputs=inputs, questions=questions, format=answer)
        frames = tuple(FREQS) if pair else (frame,)
        charts = {"chart": frames, "blank": (BLANK_INPUT,) * len(frames), "text": ()}[modality]
        return RequestSpec(prompt, charts, (text_column(),) if modality == "text" else ())

    def parser(self, s: ReadingSettings) -> Callable[[str | None], Parsed]:
        def parse(text: str | None) -> Parsed:
            a = parse_answer(text)
            return Parsed(a.answers, a.tier, a.reason, {"n_answered": len(a.answers or {})})

        return parse

    def score(self, run: RunAnswers, s: ReadingSettings, ctx: TaskContext, settings: ScoreSettings) -> dict:
        from candlebench.tasks.reading.forecast_link import forecast_link
        from candlebench.tasks.reading.metrics import per_sample, reading_metrics

        out = reading_metrics(run.parsed, n_boot=settings.n_boot, seed=settings.seed)
        if run.info.get("kind") == "model":
            link = forecast_link(run.parsed, StudyLayout(ctx.study_dir).task("forecast").run(run.name), settings.n_boot,
                                 settings.seed)
            if link is not None:
                out["forecast"] = link
        out["per_sample"] = per_sample(run.parsed)
        return out

    def compare(self, a: RunAnswers, b: RunAnswers, settings: ScoreSettings) -> dict:
        from candlebench.tasks.reading.compare import compare_runs

        return compare_runs(a.parsed, b.parsed, n_boot=settings.n_boot, seed=settings.seed)

    def report(self, runs, comparisons, datasets=()):
        from candlebench.tasks.reading.report import sections

        return sections(runs, comparisons, datasets)

    def browse(self, run: RunAnswers) -> pd.DataFrame:
        """Group: time frame and modality; label: the true answers; right only when every question
        asked is; detail: each question's truth, answer and verdict."""
        from candlebench.tasks.reading.metrics import verdicts

        by_sample = dict(tuple(verdicts(run.parsed).groupby("sample_id")))
        rows = []
        for row in run.parsed.to_dict("records"):
            truths = json.loads(row["questions"])
            answer = json.loads(row["answer"]) if isinstance(row.get("answer"), str) else None
            mine = by_sample.get(row["sample_id"], pd.DataFrame({"question": [], "right": []}))
            rows.append({
                "sample_id": row["sample_id"], "group": f"{row['frame']} {row['modality']}",
                "label": "; ".join(f"{q}: {t}" for q, t in truths.items()),
                "outcome": None if answer is None else "right" if mine["right"].all() else "wrong",
                "detail": {"questions": [{"question": q, "truth": truths[q], "answer": (answer or {}).get(q),
                                          "right": bool(ok)} for q, ok in zip(mine["question"], mine["right"])]},
            })
        return pd.DataFrame(rows, columns=["sample_id", "group", "label", "outcome", "detail"])

    def summary_line(self, m: Mapping[str, Any]) -> str:
        blocks = ", ".join(f"{k} {fmt(m[k]['accuracy'], 3)}" for k in ("chart", "text", "blank") if k in m)
        scores = ", ".join(f"{k} {fmt(m[f'balanced_{k}']['score'], 3)}" for k in ("chart", "text", "blank")
                           if f"balanced_{k}" in m)
        return (f"accuracy {fmt(m['all']['accuracy'], 3)} ({blocks}), chance-corrected {scores}, "
                f"questions answered {pct(m['all']['answered'])}, "
                f"no answer {pct(m['parse_failure_rate'])}, missing records {m['n_missing_records']}")


TASK = ReadingTask()
