"""The captioning report's own tables, after the default results and comparisons
(report/per_sample.py, the task's :attr:`~candlebench.tasks.caption.task.CaptionTask.per_sample`):
StockGenChaR's Table 2 layout (model x metric, 95% intervals over samples) and Table 3 (metadata
coverage by category, the references' own first), and a chart of each metric per model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from candlebench.report.model import RunMetrics, Section, Table
from candlebench.report.plots import figure, nothing_to_draw, run_labels, say_why
from candlebench.scoring.numbers import fmt, fmt_ci
from candlebench.tasks.caption.metrics import TITLES

METRICS = tuple((key, TITLES[key]) for key in ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "sa_f1", "iou"))
CATEGORIES = (("degree", "Degree"), ("time", "Time"), ("price", "Price"))


def _cell(m: dict, key: str) -> str:
    ci = (m.get("ci") or {}).get(key)
    return fmt_ci(m.get(key), ci, 4)


def table2(runs: list[RunMetrics]) -> Table:
    rows = [{"Model": r.label, "n": r.metrics.get("n"), "Valid": r.metrics.get("n_valid"), "Empty": r.metrics.get("n_empty"),
             **{title: _cell(r.metrics, key) for key, title in METRICS},
             "Words": fmt(r.metrics.get("mean_words"), 1)} for r in runs]
    return Table("Table 2 layout: caption metrics (model x metric)", pd.DataFrame(rows),
                 "Unparseable and empty answers count as empty captions, scoring 0 on every similarity metric (the "
                 "paper's all-samples column; metrics.json's `valid` block has the parsed ones alone). Brackets: 95% "
                 "bootstrap intervals over samples of each statistic as reported (corpus BLEU-4 from resampled n-gram "
                 "totals, corpus METEOR from resampled segment statistics, SA F1 from resampled confusion counts). "
                 "CIDEr's document frequencies are the task's whole reference set, the same for every run. "
                 "COS and BERTScore read whole texts (256-word-piece windows, metrics.json's n_windowed) with a local "
                 "all-MiniLM-L6-v2, SA a lexicon (README), not the paper's API models.")


def table3(runs: list[RunMetrics]) -> Table:
    rows = []
    if runs:
        first = runs[0].metrics
        rows.append({"Text": "Reference", **{t: fmt(first.get(f"reference_coverage_{c}"), 4) for c, t in CATEGORIES}})
    rows += [{"Text": r.label, **{t: fmt(r.metrics.get(f"coverage_{c}"), 4) for c, t in CATEGORIES},
              **{f"IoU {t}": fmt(r.metrics.get(f"iou_{c}"), 4) for c, t in CATEGORIES}} for r in runs]
    return Table("Table 3 layout: metadata named, by category", pd.DataFrame(rows),
                 "Coverage: the share of the chart's items of a category that the text names (the paper's Table 3). "
                 "IoU: Eq. 1 on that category's items alone.")


def plot_metrics(runs: list[RunMetrics]) -> bytes:
    """Each metric of Table 2 on its own axis (CIDEr's scale is not the others'), a bar per model
    with its 95% interval."""
    def draw(axes):
        x = np.arange(len(runs))
        for ax, (key, title) in zip(axes.flat, METRICS):
            ax.set_title(title, fontsize=9)
            values = np.array([np.nan if r.metrics.get(key) is None else r.metrics[key] for r in runs], dtype=float)
            if nothing_to_draw(list(values)):
                say_why(ax, f"{title} is 0 for every run." if not np.isnan(values).all() else f"No run has a {title}.")
                continue
            cis = [(r.metrics.get("ci") or {}).get(key) for r in runs]
            err = np.array([[max(v - c[0], 0), max(c[1] - v, 0)] if c and v == v else [0, 0]
                            for v, c in zip(values, cis)]).T
            ax.bar(x, values, yerr=err, capsize=2, color=[f"C{i}" for i in range(len(runs))])
            ax.set_xticks(x, run_labels(runs, 14), fontsize=6)

    return figure(draw, size=(12, 6), panels=(2, len(METRICS) // 2))


def tables(runs: list[RunMetrics]) -> Section:
    return Section("", (table2(runs), table3(runs)), {"caption_metrics": plot_metrics(runs)})
