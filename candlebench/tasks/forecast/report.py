"""The forecast task's report section: the headline (models x IC, Rank IC, ICIR, accuracy, F1) and
the paired comparisons first, then the paper's Table 1 / 2 / 4 / 5 layouts with ranks, group
accuracies and the plots a reader looks at. (The paper's Table 3 compares its dataset with other
published datasets, nothing a run measures; Table 2's note says so.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from candlebench.report.model import Dataset, Headline, RunMetrics, Section, Table
from candlebench.report.plots import figure, legend, nothing_to_draw, on_cell, reference_line, run_labels, say_why
from candlebench.report.tables import fmt_rank, headline_table, ranked
from candlebench.scoring.clustered import EXACT_MAX, MIN_CLUSTERS
from candlebench.scoring.numbers import fmt
from candlebench.tasks.forecast.metrics import MIN_STOCKS_PER_DATE


# Why a date-level metric is missing: said under each table that shows one as "–".
NO_DATE = (f"no cutoff date had {MIN_STOCKS_PER_DATE} stocks or more with a prediction and a realised return and "
           "predictions that differ across them, which a date's IC needs (one or two stocks a date, or a constant "
           "predictor such as the constant baseline; metrics.json's n_dates_skipped counts the dates left out)")
HEADLINE = (Headline("ic_mean", "IC", digits=4, missing=NO_DATE), Headline("rank_ic_mean", "Rank IC", digits=4, missing=NO_DATE),
            Headline("icir", "ICIR", missing="it needs an IC on two dates or more"),
            Headline("accuracy", "Accuracy", missing="no scored sample"), Headline("f1", "F1", missing="no predicted or true up"),
            Headline("parse_failure_rate", "No answer", False))


def table4(runs: list[RunMetrics]) -> Table:
    """Confusion-matrix metrics (the paper's Table 4) with ranks; shares in %, as the paper prints."""
    rows = pd.DataFrame(
        [
            {
                "Model": r.label,
                **{k.upper(): r.metrics.get(k) for k in ("tp", "tn", "fp", "fn")},
                **{k: r.metrics.get(k) for k in ("accuracy", "precision", "recall", "specificity", "f1")},
                "fp_share": r.metrics.get("fp_share"),
                "fn_share": r.metrics.get("fn_share"),
                "bias": r.metrics.get("bias"),
                "parse fail": r.metrics.get("parse_failure_rate"),
            }
            for r in runs
        ]
    )
    out = rows[["Model"]].copy()
    out["Market"] = [r.market or "–" for r in runs]
    out[["TP", "TN", "FP", "FN"]] = rows[["TP", "TN", "FP", "FN"]]
    out["Total"] = [r.metrics.get("n") for r in runs]
    for key, title, better in (
        ("accuracy", "Acc %", True), ("precision", "Prec %", True), ("recall", "Recall %", True),
        ("specificity", "Spec %", True), ("f1", "F1", True), ("fp_share", "FP rate %", False),
        ("fn_share", "FN rate %", False),
    ):
        values = pd.to_numeric(rows[key], errors="coerce")
        ranks = ranked(values, better, runs)
        scale = 1 if key == "f1" else 100
        out[title] = [f"{fmt(v * scale, 2 if scale == 100 else 4)} ({fmt_rank(k)})" for v, k in zip(values, ranks)]
    out["Bias"] = [f"{fmt(r.metrics.get('bias'), 3)} {r.metrics.get('bias_grade') or ''}".strip() for r in runs]
    out["No answer %"] = [fmt(None if v is None else v * 100, 1) for v in rows["parse fail"]]
    out["No answer: why"] = [no_answer_text(r.metrics) for r in runs]
    out["Reasoning cut"] = [r.metrics.get("n_reasoning_cut", 0) for r in runs]
    return Table(
        "Table 4 layout: direction at 0 (rank in parentheses)",
        out,
        "Ranks are among the runs that answered every sample (a partial run has none). "
        "FP rate / FN rate are shares of all scored samples, as in the paper (not FP/(FP+TN)). "
        "No answer: unparseable output, failed generation, or a sample a baseline could not predict "
        "(e.g. too few realised training samples); such samples are left out of every other column, "
        "and 'why' counts them by reason, most frequent first. Reasoning cut: answers whose "
        "<think> block the token budget cut (raise model.max_new_tokens).",
    )


# Reasons shown per run in the headline table; the parse-failure section lists every one.
SHOWN_REASONS = 3


def no_answer_text(metrics: Mapping) -> str:
    """The cell, e.g. ``24 of 90: <reason> (20); <reason> (4)``; "none"; "–" for metrics written
    before the reasons were counted (a rescore adds them)."""
    reasons = metrics.get("no_answer_reasons")
    if reasons is None:
        return "–"
    if not reasons:
        return "none"
    items = list(reasons.items())
    shown = "; ".join(f"{why} ({n})" for why, n in items[:SHOWN_REASONS])
    rest = sum(n for _, n in items[SHOWN_REASONS:])
    more = f"; {len(items) - SHOWN_REASONS} other reasons ({rest})" if rest else ""
    return f"{sum(reasons.values())} of {metrics.get('n_rows', '?')}: {shown}{more}"


def table5(runs: list[RunMetrics]) -> Table:
    """IC and Rank IC metrics (the paper's Table 5) with ranks."""
    out = pd.DataFrame({"Model": [r.label for r in runs]})
    for key, title in (
        ("ic_mean", "IC Mean"), ("ic_median", "IC Med."), ("icir", "ICIR"), ("ic_sig_ratio", "IC Sig."),
        ("rank_ic_mean", "RankIC Mean"), ("rank_ic_median", "RankIC Med."), ("rank_icir", "RankICIR"),
        ("rank_ic_sig_ratio", "RankIC Sig."),
    ):
        values = pd.to_numeric(pd.Series([r.metrics.get(key) for r in runs]), errors="coerce")
        ranks = ranked(values, runs=runs)
        digits = 3 if key.endswith("sig_ratio") else 5
        out[title] = [f"{fmt(v, digits)} ({fmt_rank(k)})" for v, k in zip(values, ranks)]
    ci = [r.metrics.get("ci") or {} for r in runs]
    out["IC 95% CI"] = [
        f"[{fmt(c['ic_mean'][0])}, {fmt(c['ic_mean'][1])}]" if c.get("ic_mean") else "–" for c in ci
    ]
    out["Dates"] = [r.metrics.get("n_dates") for r in runs]
    dash = f" '–': {NO_DATE}." if any(not r.metrics.get("n_dates") for r in runs) else ""
    return Table("Table 5 layout: per-date IC and Rank IC (rank in parentheses)", out,
                 "ICIR = mean / std (ddof 1) of the per-date series; Sig. = share of dates with p < 0.05. "
                 "IC 95% CI: a percentile bootstrap of whole cutoff dates. "
                 "Ranks are among the runs that answered every sample (a partial run has none)." + dash)


def groups_table(runs: list[RunMetrics]) -> Table:
    rows = []
    for r in runs:
        m = r.metrics
        regime = m.get("by_regime") or {}
        row = {"Model": r.label}
        for name in ("bull", "bear", "sideways"):
            g = regime.get(name) or {}
            row[f"Acc {name}"] = f"{fmt(g.get('accuracy'), 3)} (n={g.get('n', 0)})"
        for name in ("continuous_rise", "continuous_fall"):
            g = m.get(name) or {}
            row[name.replace("_", " ")] = f"{fmt(g.get('accuracy'), 3)} (n={g.get('n', 0)})"
        for horizon, h in sorted((m.get("by_horizon") or {}).items(), key=lambda kv: int(kv[0][2:])):
            row[f"IC {horizon}"] = fmt(h.get("ic_mean"))
            row[f"ICIR {horizon}"] = fmt(h.get("icir"), 3)
        for split in ("before_release", "after_release"):
            s = m.get(split)
            row[split.replace("_", " ")] = "–" if not s else f"IC {fmt(s.get('ic_mean'))}, acc {fmt(s.get('accuracy'), 3)}"
        rows.append(row)
    return Table("Regimes, extreme stocks, horizons and the release-date split", pd.DataFrame(rows),
                 "Accuracy per group with its samples (n); '–' with n=0: no sample in the group. IC / ICIR per horizon "
                 f"'–': {NO_DATE}. Release split '–': the run has no release date (model.release_date).")


def table1(datasets: Sequence[Dataset]) -> Table:
    """The paper's Table 1: the regime of every trading day of each market."""
    rows = []
    for d in datasets:
        days = d.summary.get("regime_days") or {}
        total = sum(days.values())
        row = {"Market": d.market}
        for name in ("bull", "bear", "sideways"):
            row[f"{name.title()} days"] = days.get(name, 0)
            row[f"{name.title()} %"] = fmt(100 * days.get(name, 0) / total if total else None, 1)
        row["Total days"] = total
        rows.append(row)
    return Table("Table 1 layout: market regime of each trading day", pd.DataFrame(rows),
                 "Bull: more than task.samples.regime_threshold of the stocks trading that day closed up; bear: "
                 "more than that share closed down; every trading day after the market's first.")


def table2(datasets: Sequence[Dataset]) -> Table:
    """The paper's Table 2: stocks, cutoffs, chart files and raw OHLCV rows per market, and in total."""
    rows = []
    for d in datasets:
        s = d.summary
        rows.append({"Market": d.market, "Stocks": s.get("stocks"), "Cutoffs": s.get("cutoffs"),
                     "Samples": s.get("samples"), **{f"{k.title()} charts": v for k, v in sorted(d.charts.items())},
                     "Raw OHLCV rows": (s.get("data") or {}).get("rows")})
    frame = pd.DataFrame(rows)
    if len(frame) > 1:
        total = {c: frame[c].sum() if c != "Market" else "Total" for c in frame.columns}
        frame = pd.concat([frame, pd.DataFrame([total])], ignore_index=True)
    empty = sum(int(d.summary.get("cutoffs_without_samples") or 0) for d in datasets)
    return Table("Table 2 layout: dataset statistics", frame,
                 "Cutoffs: the dates with at least one sample, as the header counts them"
                 + (f" ({empty} more on the task.samples.interval grid lost every stock: too few bars or no realised "
                    "label yet; samples_summary.json's dropped_samples says why)" if empty else "")
                 + ". Raw OHLCV rows: the bars loaded after validation (defective stocks and filler rows out). "
                 "The paper's Table 3 compares its dataset with other published ones: a survey, nothing a run measures.")


# How every forecast comparison is tested, said under both comparison tables.
CLUSTERED = (f"p: the paired sign-flip test over dates (exact up to {EXACT_MAX} dates, its normal approximation beyond; "
             f"'–' with fewer than {MIN_CLUSTERS} dates); 95% CI: a percentile bootstrap of whole dates "
             "(docs/statistics.md).")


def _p(block: Mapping | None, key: str = "p") -> str:
    """A test's p, or "–" where it has none (fewer clusters than a test needs; an undefined difference)."""
    return fmt((block or {}).get(key), 3)


def _interval(ci: Sequence[float] | None, digits: int = 4) -> str:
    return "–" if not ci else f"[{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"


def comparison_table(comparisons: dict[str, dict]) -> Table:
    rows = []
    for pair, c in comparisons.items():
        ic, direction = c.get("ic") or {}, c.get("direction") or {}
        rows.append(
            {
                "a → b": pair,
                "n": c.get("n"),
                "dates": c.get("n_dates"),
                "ΔIC": fmt(ic.get("mean_diff")),
                "ΔIC 95% CI": _interval(ic.get("ci")),
                "ΔIC p": _p(ic),
                "ΔAcc": fmt(c.get("accuracy_diff")),
                "ΔAcc 95% CI": _interval(direction.get("ci")),
                "ΔAcc p": _p(direction),
                "Δbias": fmt(c.get("bias_change"), 3),
                "Δ up:down": fmt(c.get("pred_up_down_ratio_change"), 3),
                "ΔIC before / after b's release": _split(c),
            }
        )
    return Table("Paired comparisons (b − a, same samples)", pd.DataFrame(rows),
                 f"Unit of analysis: the cutoff date (a date's stocks share the market's move). {CLUSTERED} "
                 "ΔIC: the mean per-date IC difference over the dates where both ICs are defined; ΔAcc: direction "
                 "accuracy at 0. Each pair's two tests are its headline, not adjusted. Δbias and Δ up:down are "
                 "untested descriptions. Before / after b's release (when b is the later release): the same "
                 "comparison on the cutoffs before that date and from it on, with its ΔIC p (the §4.4 peeping test: "
                 "a b that had seen the pre-release outcomes gains clearly more before its release than after).")


def groups_comparison_table(comparisons: dict[str, dict]) -> Table:
    """Each pair per realised horizon (ΔIC) and per market regime (Δaccuracy): two families of
    tests, each Holm-adjusted."""
    rows = []
    for pair, c in comparisons.items():
        for family, measure, blocks in (("horizon", "ΔIC", c.get("by_horizon") or {}),
                                        ("regime", "ΔAcc", c.get("by_regime") or {})):
            for group, d in blocks.items():
                diff = d.get("mean_diff", d.get("diff"))
                rows.append({"a → b": pair, "Family": family, "Group": group, "Measure": measure,
                             "dates": d.get("n_clusters"), "Δ": fmt(diff), "95% CI": _interval(d.get("ci")),
                             "p": _p(d), "p (Holm)": _p(d, "p_holm")})
    return Table("Paired comparisons per horizon and per regime (b − a)", pd.DataFrame(rows),
                 "Horizon: ΔIC of the same predictions against each realised return r_<h>; regime: Δaccuracy on the "
                 "dates of each market regime (its dates are its clusters, often too few for a test). "
                 f"{CLUSTERED} p (Holm): Holm's adjustment within each pair's family (its horizons; its regimes).")


def _split(c: dict) -> str:
    if not c.get("split_date"):
        return "–"
    sides = []
    for side in ("before_split", "after_split"):
        ic = (c.get(side) or {}).get("ic") or {}
        sides.append(f"{fmt(ic.get('mean_diff'))} (p {_p(ic)}, n={(c.get(side) or {}).get('n', 0)})")
    return f"{c['split_date']}: " + " / ".join(sides)


# --- plots -----------------------------------------------------------------------------------

NO_IC = (f"No IC on any date: a date's IC needs at least {MIN_STOCKS_PER_DATE} stocks with a prediction "
         "and a realised return, and predictions that differ across them; no date of these runs has both.")


def plot_ic_by_date(runs: list[RunMetrics]) -> bytes:
    def draw(ax):
        drawn = False
        for r in runs:
            series = pd.DataFrame(r.metrics.get("ic_by_date") or [])
            if not series.empty:
                ax.plot(pd.to_datetime(series["cutoff"]), series["ic"], marker="o", ms=3, label=r.label)
                drawn = True
        ax.set(title="IC per cutoff date", ylabel="Pearson IC")
        if not drawn:
            return say_why(ax, NO_IC)
        reference_line(ax)
        ax.tick_params(axis="x", labelsize=7)
        legend(ax)

    return figure(draw)


def plot_ic_bars(runs: list[RunMetrics], kind: str = "ic") -> bytes:
    """Mean (with its bootstrap CI) and median of the per-date series: IC (Fig. 6), Rank IC (Fig. 7)."""
    title = {"ic": "IC", "rank_ic": "Rank IC"}[kind]

    def draw(ax):
        ax.set(title=f"{title}: mean and median")
        means = [r.metrics.get(f"{kind}_mean") for r in runs]
        if nothing_to_draw(means):
            return say_why(ax, NO_IC if all(m is None for m in means) else f"{title} is 0 for every run.")
        x = np.arange(len(runs))
        cis = [(r.metrics.get("ci") or {}).get(f"{kind}_mean") for r in runs]
        err = np.array([[max(m - c[0], 0), max(c[1] - m, 0)] if c and m is not None else [0, 0]
                        for m, c in zip(means, cis)]).T
        ax.bar(x - 0.2, [np.nan if m is None else m for m in means], 0.4, yerr=err, capsize=3, label="mean (95% CI)")
        ax.bar(x + 0.2, [np.nan if (v := r.metrics.get(f"{kind}_median")) is None else v for r in runs], 0.4, label="median")
        reference_line(ax)
        ax.set_xticks(x, [label + ("" if m is not None else f"\n(no {title})") for label, m in zip(run_labels(runs), means)],
                      fontsize=7)
        legend(ax)

    return figure(draw)


def plot_confusions(runs: list[RunMetrics]) -> bytes:
    def draw(axes) -> None:
        for ax, r, label in zip(axes[0], runs, run_labels(runs)):
            m = r.metrics
            grid = np.array([[m.get("tn") or 0, m.get("fp") or 0], [m.get("fn") or 0, m.get("tp") or 0]])
            image = ax.imshow(grid, cmap="Blues", vmin=0, vmax=max(int(grid.max()), 1))
            for (i, j), v in np.ndenumerate(grid):
                ax.text(j, i, str(v), ha="center", va="center", fontsize=9, color=on_cell(image.to_rgba(v)))
            ax.set_xticks([0, 1], ["pred ≤0", "pred >0"], fontsize=7)
            ax.set_yticks([0, 1], ["true ≤0", "true >0"], fontsize=7)
            ax.set_title(label, fontsize=8)

    return figure(draw, size=(max(2.6 * len(runs), 4), 2.9), panels=len(runs), squeeze=False)


GRADE_COLORS = {
    "well-calibrated": "tab:green", "slightly biased": "tab:olive",
    "moderately biased": "tab:orange", "strongly biased": "tab:red",
}


def plot_bias(runs: list[RunMetrics]) -> bytes:
    def draw(ax):
        values = [r.metrics.get("bias") or 0.0 for r in runs]
        ax.set(title="Directional bias (colour = grade; dotted: 0.05 / 0.15 / 0.40)", xlabel="bias")
        if nothing_to_draw(values):
            return say_why(ax, "Bias is 0 for every run: each predicted up as often as the returns rose.")
        colors = [GRADE_COLORS.get(r.metrics.get("bias_grade"), "grey") for r in runs]
        ax.barh(run_labels(runs, 30), values, color=colors)
        for bound in (0.05, 0.15, 0.40):
            for sign in (-1, 1):
                reference_line(ax, sign * bound, vertical=True, lw=0.5, ls=":")
        reference_line(ax, vertical=True, color="black")
        ax.tick_params(axis="y", labelsize=7)

    return figure(draw, size=(8, 1.4 + 0.45 * len(runs)))


def _accuracy_heatmap(runs: list[RunMetrics], groups: dict[str, Callable[[dict], dict | None]], title: str) -> bytes:
    def accuracy(found: dict | None) -> float:
        value = (found or {}).get("accuracy")
        return np.nan if value is None else value  # an accuracy of 0 is a value, not "no sample"

    grid = np.array([[accuracy(pick(r.metrics)) for pick in groups.values()] for r in runs], dtype=float)

    def draw(ax):
        ax.set(title=title)
        if np.isnan(grid).all():
            return say_why(ax, "No run has a scored sample in any of these groups.")
        image = ax.imshow(grid, cmap="RdYlGn", vmin=0.3, vmax=0.7, aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            ax.text(j, i, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if np.isnan(v) else on_cell(image.to_rgba(v)))
        ax.set_xticks(range(len(groups)), list(groups))
        ax.set_yticks(range(len(runs)), run_labels(runs, 30), fontsize=7)

    return figure(draw, size=(7, 1.4 + 0.45 * len(runs)))


def plot_regimes(runs: list[RunMetrics]) -> bytes:
    groups = {n: (lambda m, n=n: (m.get("by_regime") or {}).get(n)) for n in ("bull", "bear", "sideways")}
    return _accuracy_heatmap(runs, groups, "Accuracy by market regime of the cutoff day ('–': no sample)")


def plot_continuous(runs: list[RunMetrics]) -> bytes:
    """Fig. 9: accuracy on the continuous-rise and continuous-fall stocks."""
    groups = {n.replace("_", " "): (lambda m, n=n: m.get(n)) for n in ("continuous_rise", "continuous_fall")}
    return _accuracy_heatmap(runs, groups, "Accuracy on continuous-rise / -fall stocks ('–': no such stock)")


def plot_horizons(runs: list[RunMetrics]) -> bytes:
    horizons = sorted({h for r in runs for h in (r.metrics.get("by_horizon") or {})}, key=lambda h: int(h[2:]))

    def ic(r: RunMetrics, h: str):
        return ((r.metrics.get("by_horizon") or {}).get(h) or {}).get("ic_mean")

    def draw(ax):
        ax.set(title="Mean IC against each realised horizon")
        values = [ic(r, h) for r in runs for h in horizons]
        if nothing_to_draw(values):
            return say_why(ax, NO_IC if all(v is None for v in values) else "Mean IC is 0 at every horizon.")
        x = np.arange(len(runs))
        width = 0.8 / max(len(horizons), 1)
        for i, h in enumerate(horizons):
            ax.bar(x + (i - (len(horizons) - 1) / 2) * width, [np.nan if ic(r, h) is None else ic(r, h) for r in runs],
                   width, label=f"{h[2:]}-day")
        reference_line(ax)
        none = [all(ic(r, h) is None for h in horizons) for r in runs]
        ax.set_xticks(x, [label + ("\n(no IC)" if n else "") for label, n in zip(run_labels(runs), none)], fontsize=7)
        legend(ax)

    return figure(draw)


PLOTS: dict[str, Callable[[list[RunMetrics]], bytes]] = {
    "ic_by_date": plot_ic_by_date,
    "ic_mean_median": plot_ic_bars,
    "rank_ic_mean_median": lambda runs: plot_ic_bars(runs, "rank_ic"),
    "confusion": plot_confusions,
    "bias": plot_bias,
    "regimes": plot_regimes,
    "continuous": plot_continuous,
    "horizons": plot_horizons,
}


def sections(runs: list[RunMetrics], comparisons: Mapping[str, dict], datasets: Sequence[Dataset] = ()) -> list[Section]:
    if len({r.market for r in runs}) > 1:  # a pooled report: one model appears once per market
        runs = [replace(r, label=f"{r.label} · {r.market}") for r in runs]
    tables = [headline_table("Forecast results", runs, HEADLINE,
                             "IC / Rank IC: mean of the per-date series; intervals resample cutoff dates. Accuracy: "
                             "direction at 0. No answer: share of samples without a parsed prediction (Table 4 says why).")]
    if comparisons:
        tables += [comparison_table(dict(comparisons)), groups_comparison_table(dict(comparisons))]
    tables += ([table1(datasets), table2(datasets)] if datasets else []) + [table4(runs), table5(runs), groups_table(runs)]
    plots = {name: make(runs) for name, make in PLOTS.items()}
    return [Section("Forecast (Hu et al. 2026)", tuple(tables), plots)]
