"""What a report's task section opens on: a headline table per task (models x main metrics, their
intervals, the best marked), the paired comparisons, then the paper-layout tables and the plots."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from candlebench.report.model import Headline, RunMetrics, Section, Table, scored_run
from candlebench.report.tables import BEST, fmt_rank, headline_table, ranked, with_answered
from candlebench.report.writer import write_report

pytestmark = pytest.mark.unit


def test_headline_marks_the_best_of_each_column_and_keeps_intervals_and_labels():
    runs = [
        scored_run("base", {"n": 10, "ic_mean": 0.02, "parse_failure_rate": 0.1, "ci": {"ic_mean": [-0.01, 0.05]}}, True),
        RunMetrics("tuned", "tuned", {"n": 10, "ic_mean": 0.05, "parse_failure_rate": 0.1}),
        RunMetrics("none", "none", {"n": 10, "ic_mean": None, "parse_failure_rate": 0.3}),
    ]
    table = headline_table("t", runs, (Headline("ic_mean", "IC"), Headline("parse_failure_rate", "Fail", False)))
    frame = table.frame.set_index("Model")
    assert frame.loc["base (random weights)", "IC"] == "0.020 [-0.010, 0.050]"
    assert frame.loc["tuned", "IC"] == f"0.050 {BEST}"
    assert frame.loc["none", "IC"] == "–"
    # a tie for the best (lower is better here) marks both
    assert list(frame["Fail"]) == [f"0.100 {BEST}", f"0.100 {BEST}", "0.300"]
    assert "Fail lower" in table.note


def test_a_partial_run_is_marked_beside_its_name_in_every_table_and_never_starred():
    """A run missing samples is shown so (answered/total, "partial") in each table with a row per
    run, and the stars rank only the runs over the same samples: those that answered every one."""
    runs = [RunMetrics("full", "full", {"n": 40, "ic_mean": 0.05, "answered": 40, "n_samples": 40}),
            RunMetrics("half", "half", {"n": 20, "ic_mean": 0.30, "answered": 20, "n_samples": 40}),
            RunMetrics("other", "other", {"n": 40, "ic_mean": 0.01, "answered": 40, "n_samples": 40})]
    table = headline_table("t", runs, (Headline("ic_mean", "IC"),))
    assert list(table.frame["IC"]) == [f"0.050 {BEST}", "0.300", "0.010"]
    assert "Partial runs are not starred" in table.note
    other = Table("paper layout", pd.DataFrame({"Model": ["half", "full"], "x": [1, 2]}))
    section = with_answered(Section("s", (table, other)), runs)
    assert [list(t.frame["Answered"]) for t in section.tables] == [["40/40", "20/40 (partial)", "40/40"],
                                                                   ["20/40 (partial)", "40/40"]]
    assert list(section.tables[1].frame.columns) == ["Model", "x", "Answered"]
    assert [fmt_rank(k) for k in ranked(pd.Series([0.05, 0.30, 0.01]), runs=runs)] == ["1", "–", "2"]


def test_headline_reads_a_tasks_nested_block_and_marks_nothing_alone():
    run = RunMetrics("a", "a", {"all": {"n": 7, "ndr": 0.25, "ci": {"ndr": [0.1, 0.4]}}})
    frame = headline_table("t", [run], (Headline("ndr", "NDR", block="all"),)).frame
    assert frame.to_dict("records") == [{"Model": "a", "n": 7, "NDR": "0.250 [0.100, 0.400]"}]


def _e2a_metrics(ndr: float) -> dict:
    block = {"n": 6, "ndr": ndr, "ucr_dir": 0.2, "rci": 0.0, "eci": 0.1, "coverage": 0.5, "parse_failure_rate": 0.0}
    return {"all": block, "modalities": {m: dict(block) for m in ("text", "chart", "both")}}


def _caption_metrics(bleu: float) -> dict:
    keys = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "sa_f1", "iou")
    return {"n": 4, **{k: bleu for k in keys}, "ci": {k: [bleu / 2, bleu * 2] for k in keys}}


@pytest.mark.parametrize("task, metrics, first_paper_table", [
    ("forecast", lambda v: {"n": 9, "ic_mean": v, "rank_ic_mean": v, "accuracy": 0.5, "f1": 0.5}, "Table 4 layout"),
    ("e2a", _e2a_metrics, "E2A-style leaderboard"),
    ("caption", _caption_metrics, "Table 2 layout"),
])
def test_each_task_opens_on_its_headline_then_comparisons_then_the_papers_tables(task, metrics, first_paper_table, tmp_path):
    from candlebench.task_api.registry import get_task

    runs = [RunMetrics("base", "base", metrics(0.1)), RunMetrics("tuned", "tuned", metrics(0.3))]
    sections = get_task(task).report(runs, {"base → tuned": {"n": 9}}, [])
    titles = [t.title for t in sections[0].tables]
    assert "results" in titles[0] and ("paired comparisons" in titles[1].lower() or titles[1].startswith("Oracle")), titles
    assert titles.index(next(t for t in titles if t.startswith(first_paper_table))) > 1
    headline = sections[0].tables[0].frame.set_index("Model")
    assert headline.loc["tuned"].iloc[1].endswith(BEST) and not headline.loc["base"].iloc[1].endswith(BEST)
    for data in sections[0].plots.values():
        assert data.startswith(b"\x89PNG")
    md, _ = write_report(sections, tmp_path, "r", False)
    text = md.read_text()
    assert text.index(titles[0]) < text.index(titles[1]) < text.index(first_paper_table)


def test_the_e2a_and_caption_sections_draw_their_own_charts():
    from candlebench.task_api.registry import get_task

    runs = [RunMetrics("a", "a", _e2a_metrics(0.2))]
    assert {"e2a_frontier", "e2a_modalities"} <= set(get_task("e2a").report(runs, {}, [])[0].plots)
    runs = [RunMetrics("a", "a", _caption_metrics(0.2))]
    assert set(get_task("caption").report(runs, {}, [])[0].plots) == {"caption_metrics"}


def test_plots_with_nothing_labelled_are_drawn_without_a_legend_or_a_warning():
    """Runs with no IC per date and no horizon (a tiny study): the forecast plots are still drawn,
    without matplotlib's "No artists with labels" warning and its empty legend."""
    from candlebench.tasks.forecast.report import plot_horizons, plot_ic_by_date

    runs = [RunMetrics("a", "a", {"n": 3, "ic_mean": 0.1})]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for plot in (plot_ic_by_date, plot_horizons):
            assert plot(runs).startswith(b"\x89PNG")


def test_references_sit_last_unstarred_and_every_dash_says_why():
    """The caption describer scores 1.0 everywhere by construction: a ceiling, shown apart and never
    the best; a forecast IC that no date could give ("–") is explained under the table."""
    from candlebench.report.per_sample import headline
    from candlebench.task_api.registry import get_task
    from candlebench.tasks.forecast import report as forecast_report

    caption = get_task("caption")
    describer = caption.references["describer"]
    runs = [scored_run("describer", _caption_metrics(1.0), False, reference=describer),
            scored_run("template", _caption_metrics(0.1), False), scored_run("tiny", _caption_metrics(0.2), True)]
    table = headline_table("Captioning results", runs, headline(caption.per_sample))  # the tables alone: no plot drawn
    assert list(table.frame["Model"]) == ["template", "tiny (random weights)", "describer (reference)"]
    assert table.frame.iloc[1]["BLEU-4"].endswith(BEST) and BEST not in "".join(table.frame.iloc[2].astype(str))
    assert f"describer: {describer}" in table.note
    forecast = [scored_run(n, {"n": 2, "ic_mean": None, "rank_ic_mean": None, "icir": None, "accuracy": a, "f1": 0.5,
                               "n_dates": 0}, False) for n, a in (("a", 0.5), ("b", 0.6))]
    headline = headline_table("Forecast results", forecast, forecast_report.HEADLINE)
    assert "'–' under IC, Rank IC: no cutoff date had 3 stocks or more" in headline.note
    assert "'–' under Accuracy" not in headline.note
    assert "no cutoff date had 3 stocks or more" in forecast_report.table5(forecast).note


def _min_width(frame: pd.DataFrame, style: str) -> float:
    """The narrowest a report.html table can be laid out, in CSS px, by the report's own stylesheet
    (cell padding, the run column's min-width, whether an interval may fold at its comma), with
    DejaVu Sans (what Debian's chromium draws system-ui with) measuring each piece that cannot break:
    a value with its star, each part of an interval, each word of a header (bold)."""
    import re

    from matplotlib import font_manager
    from PIL import ImageFont

    from candlebench.report.writer import _INTERVAL

    fonts = {weight: font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans", weight=weight))
             for weight in ("normal", "bold")}

    def px(text: str, size: int, weight: str = "normal") -> float:
        return ImageFont.truetype(fonts[weight], size).getlength(text)

    pad = 2 * float(re.search(r"td,th\{padding:\d+px (\d+)px", style).group(1))
    first = 13 * float(re.search(r"td:first-child,th:first-child\{[^}]*min-width:([\d.]+)em", style).group(1))
    folds = "white-space:normal" in re.search(r"td small\{([^}]*)\}", style).group(1)
    cells = frame.astype(object).where(frame.notna(), "–").astype(str)
    total = 1.0  # the run column's right border
    for i, column in enumerate(cells.columns):
        head = max(max(px(word, 13, "bold") for word in str(column).split()), 3 * 13)  # th: min-width 3em
        body = 0.0
        for value in cells[column]:
            found = _INTERVAL.match(value)
            pieces = [(value, 13)] if not found else [(found.group(1) + found.group(3), 13)] + [
                (part, 11) for part in (found.group(2).split(" ") if folds else [found.group(2)])]
            body = max(body, *(px(text, size) for text, size in pieces))
        total += (first if i == 0 else max(head, body)) + pad
    return total


@pytest.mark.parametrize("task", ["forecast", "e2a", "caption", "reading"])
def test_every_tasks_headline_fits_a_900_px_window(task):
    """A 5-stock US study's caption headline was wider than its box at 900 px. Every headline, with
    an interval under each metric, signed values and a CIDEr-sized one, long run names and the
    Answered column, fits 900 px less the page's padding, scrollbar and box border (850 px)."""
    from importlib import import_module

    from candlebench.report.per_sample import headline
    from candlebench.report.writer import STYLE
    from candlebench.task_api.registry import get_task

    declared = get_task(task).per_sample
    metrics = headline(declared) if declared is not None else import_module(f"candlebench.tasks.{task}.report").HEADLINE
    runs = []
    for j, name in enumerate(["tiny_qwen2_5_vl-transformers", "qwen2_5_vl_7b-vllm", "pyfi_qwenvl_7b_cot-transformers",
                              "momentum"]):
        m: dict = {"answered": 40, "n_samples": 40}
        for h in metrics:
            block = m.setdefault(h.block, {}) if h.block else m
            block[h.key], interval = (10.0, [9.5, 10.5]) if j == 3 else (-0.4321, [-0.5678, -0.3012])
            block.setdefault("ci", {})[h.key] = interval
            block["n"] = 1234
        runs.append(scored_run(name, m, j == 0))
    frame = with_answered(Section("s", (headline_table("t", runs, metrics),)), runs).tables[0].frame
    assert _min_width(frame, STYLE) <= 850
