"""The reading report section: per model the headline (the balanced chance-corrected score over
question types, charts beside the blank-image control and the text), per type against chance, per
question x time frame x modality, the unanswerable items, the paired comparisons, the questions left
out as ambiguous, and reading next to forecasting for models that ran both."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from candlebench.report.model import Dataset, Headline, RunMetrics, Section, Table
from candlebench.report.tables import headline_table
from candlebench.scoring.clustered import EXACT_MAX, MIN_CLUSTERS
from candlebench.scoring.numbers import fmt, fmt_ci
from candlebench.tasks.reading.forecast_link import TREND
from candlebench.tasks.reading.questions import QUESTIONS, TYPES

# What every interval of a run's metrics resamples (tasks/reading/metrics.py: CHART).
CHARTS = ("Intervals resample whole charts (a stock, cutoff and time frame: its chart, text and blank-image "
          "samples together, whose questions share one image).")
# What the naive baselines are, said under the headline table (a row keeps its run's label: the
# report adds each run's Answered cell by it); the oracle is a reference (ReadingTask.references).
ROLES = {"uniform_random": "chance", "majority": "the in-sample most common answer per question"}
MODALITY_NAMES = {"chart": "Charts", "text": "Text", "blank": "Blank image (no chart)"}
# The headline is what compares across markets and models: chance-corrected scores, short labels
# (the note spells them out) so that it fits a 900 px window. Raw accuracy over all questions depends
# on the mix of question types, and the answered share is the Answered column: both are in the
# per-type table, not here.
HEADLINE = (Headline("score", "Chart score", block="balanced_chart"),
            Headline("accuracy", "Chart bal. acc.", block="balanced_chart"),
            Headline("score", "Blank score", block="balanced_blank",
                     missing="no blank-image control run (task.modalities with blank)"),
            Headline("score", "Text score", block="balanced_text", missing="no text modality"),
            Headline("parse_failure_rate", "Parse fail", False))


def _cell(block: Mapping | None) -> str:
    if not block:
        return "–"
    ci = (block.get("ci") or {}).get("accuracy")
    return fmt_ci(block.get("accuracy"), ci, 3, 2) + f" (n {block['n']})"


def questions_table(runs: list[RunMetrics]) -> Table:
    rows = []
    for r in runs:
        cells = r.metrics.get("cells") or {}
        for q in QUESTIONS:
            if q not in cells:
                continue
            row = {"Model": r.label, "Question": q, "Type": TYPES[q]}
            for frame, by_modality in sorted(cells[q].items()):
                for modality, block in sorted(by_modality.items()):
                    row[f"{frame} {modality}"] = _cell(block)
            row["All"] = _cell((r.metrics.get("questions") or {}).get(q))
            rows.append(row)
    return Table("Chart reading: accuracy per question, time frame and modality", pd.DataFrame(rows),
                 "Accuracy [95% interval] (n questions asked). Unanswered questions count as wrong. " + CHARTS
                 + " The rules: docs/reading.md.")


def _ci(block: Mapping, key: str, digits: int = 2) -> str:
    ci = (block.get("ci") or {}).get(key)
    return fmt_ci(block.get(key), ci, 3, digits)


def types_table(runs: list[RunMetrics]) -> Table:
    rows = []
    for r in runs:
        for modality, types in sorted((r.metrics.get("types") or {}).items()):
            for name, t in types.items():
                rows.append({"Model": r.label, "Modality": MODALITY_NAMES.get(modality, modality), "Type": name,
                             "n": t["n"], "Charts": t["charts"], "Accuracy": _ci(t, "accuracy"),
                             "Chance (uniform)": fmt(t["chance_uniform"], 3),
                             "Chance (majority)": fmt(t["chance_majority"], 3),
                             "Chance-corrected": _ci(t, "corrected_majority"),
                             "Corrected vs uniform": fmt(t["corrected_uniform"], 3)})
    return Table("Chart reading: per question type, against chance", pd.DataFrame(rows),
                 "Chance (uniform): a guess among each question's answers; chance (majority): always the most common "
                 "true answer of the question and time frame (in-sample). Chance-corrected: (accuracy - majority "
                 "chance) / (1 - majority chance): 0 = no better than the best constant answer, 1 = all right; a "
                 "type whose majority chance is near 1 (patterns: mostly none) punishes any other answer hard. A "
                 "price has chance 0. Brackets: 95% intervals. " + CHARTS)


def unanswerable_table(runs: list[RunMetrics]) -> Table | None:
    rows = [{"Model": r.label, "Modality": MODALITY_NAMES.get(m, m), "Unanswerable items": u["n"],
             "Said cannot tell": _ci(u, "said_cannot_tell"), "Answerable items": u["n_answerable"],
             "Said cannot tell wrongly": fmt(u["false_cannot_tell"], 3)}
            for r in runs for m, u in sorted((r.metrics.get("unanswerable") or {}).items())]
    if not rows:
        return None
    return Table("Chart reading: unanswerable items", pd.DataFrame(rows),
                 "Items whose right answer is cannot_tell (a line not drawn; a bar named outside the drawn window): the "
                 "share answered so [95% interval], and of the answerable items of the same questions the share wrongly "
                 "answered so. " + CHARTS)


def comparison_table(comparisons: Mapping[str, dict]) -> Table:
    rows = []
    for pair, c in comparisons.items():
        blocks = [("all", c), *((m, d) for m, d in (c.get("modalities") or {}).items()),
                  *((q, d) for q, d in (c.get("questions") or {}).items())]
        for part, d in blocks:
            if not d.get("n"):
                continue
            ci = d.get("ci")
            rows.append({"a → b": pair, "Questions": part, "n": d["n"], "samples": d.get("n_clusters"),
                         "Accuracy a": fmt(d["accuracy_a"], 3), "Accuracy b": fmt(d["accuracy_b"], 3),
                         "Δ accuracy": fmt_ci(d["diff"], ci, 3),
                         "p": fmt(d.get("p"), 3), "p (Holm)": fmt(d.get("p_holm"), 3)})
    return Table("Chart reading: paired comparisons", pd.DataFrame(rows),
                 "Unit of analysis: the sample, a chart as asked (a chart, its text or its blank image: its questions "
                 "are read off one input); samples: how many hold the row's questions. Δ = b - a on the questions both "
                 "runs were asked, with a 95% interval from a "
                 f"percentile bootstrap of whole samples for both runs. p: the paired sign-flip test over samples (exact up to {EXACT_MAX}, its normal approximation beyond; '–' with "
                 f"fewer than {MIN_CLUSTERS} samples). p (Holm): Holm's adjustment over the pair's questions, and apart "
                 "over its modalities; 'all' is the pair's headline, not adjusted (docs/statistics.md).")


def left_out_table(datasets: Sequence[Dataset]) -> Table | None:
    rows = []
    for d in datasets:
        asked = d.summary.get("asked") or {}
        for key, count in (d.summary.get("left_out") or {}).items():
            question, why = key.split(": ", 1)
            rows.append({"Market": d.market, "Question": question, "Asked": asked.get(question, 0), "Left out": count,
                         "Why": why})
    if not rows:
        return None
    return Table("Chart reading: questions left out", pd.DataFrame(rows),
                 "Per chart (both modalities ask the same): ambiguous or undrawn cases are not asked, never guessed.")


def forecast_table(runs: list[RunMetrics]) -> Table | None:
    rows = []
    for r in runs:
        link = r.metrics.get("forecast")
        if not link:
            continue
        right, wrong = link["read_right"], link["read_wrong"]
        rows.append({"Model": r.label, "Reading (charts, chance-corrected)": fmt((r.metrics.get("balanced_chart") or {}).get("score"), 3),
                     f"Forecast IC (r_{link['horizon']})": fmt(link.get("ic_mean"), 4),
                     "Forecast direction accuracy": fmt(link.get("direction_accuracy"), 3),
                     "Trend read right: n": right["n"], "Read right: direction accuracy": _ci(right, "direction_accuracy"),
                     "Trend read wrong: n": wrong["n"], "Read wrong: direction accuracy": _ci(wrong, "direction_accuracy"),
                     "Gap": _ci(link, "gap", 3), "Gap at equal difficulty": _ci(link, "stratified_gap", 3)})
    if not rows:
        return None
    return Table("Chart reading next to forecasting (models that ran both)", pd.DataFrame(rows),
                 f"Trend read right: every trend question ({', '.join(TREND)}) of the stock's daily and weekly charts "
                 "answered right; the forecast direction accuracy of those stocks and dates against the others, and "
                 "the gap (right - wrong). Hard charts are hard to read and to forecast alike, so the raw gap links "
                 "the two even for a forecaster that never reads: the gap at equal difficulty (Mantel-Haenszel over "
                 "quintiles of the trend questions' pixel margins) is the one to read; about 0 = no link beyond "
                 "difficulty. Brackets: 95% intervals; they resample whole cutoff dates (the forecast task's unit: the "
                 "stocks of one date share its market). Computed when the reading run "
                 "was scored, from the forecast run of the same name.")


def sections(runs: list[RunMetrics], comparisons: Mapping[str, dict], datasets: Sequence[Dataset] = ()) -> list[Section]:
    roles = "; ".join(f"{r.name}: {ROLES[r.name]}" for r in runs if r.name in ROLES)
    tables = [headline_table("Chart reading: accuracy", runs, HEADLINE,
                             "Chart bal. acc.: balanced accuracy on the charts, the mean over question types, each "
                             "type weighing the same. Chart / Blank / Text score: chance-corrected, "
                             "(balanced accuracy - c) / (1 - c), c the types' mean majority chance "
                             "(always the most common answer): 0 = no better than constant answers, 1 = all right; "
                             "95% intervals. " + CHARTS + " The blank-image control beside the charts: "
                             "a model that scores there as on the chart is not reading it." + (f" Naive baselines: {roles}." if roles else "")),
              types_table(runs), questions_table(runs)]
    if comparisons:
        tables.append(comparison_table(comparisons))
    tables += [t for t in (unanswerable_table(runs), forecast_table(runs), left_out_table(datasets)) if t is not None]
    return [Section("Chart reading", tuple(tables))]
