"""The E2A-style report's own tables and plots, after the per-sample default's results and
comparisons (report/per_sample.py: the headline over all modalities, the verification study of each
direct pass against its verify pass, the other paired comparisons): the leaderboard in the seed
paper's layout (model x modality) and the judge audit; the coverage-grounding frontier with an
arrow for each comparison (base to fine-tuned, direct to verify) and the per-modality bars."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from candlebench.report.model import RunMetrics, Section, Table
from candlebench.report.plots import figure, legend, nothing_to_draw, run_labels, say_why
from candlebench.scoring.numbers import fmt, fmt_ci

COLUMNS = (("ucr_dir", "UCR_dir"), ("ucr_all", "UCR_all"), ("rci", "RCI"), ("eci", "ECI"), ("coverage", "Coverage"),
           ("ndr", "NDR"), ("joint_pass_rate", "Joint pass"), ("no_claim_share", "No claim"),
           ("parse_failure_rate", "Parse fail"))


def _blocks(r: RunMetrics) -> list[tuple[str, dict]]:
    m = r.metrics
    return [*((name, b) for name, b in (m.get("modalities") or {}).items()), ("all", m.get("all") or {})]


# NDR is marked when most directional answers hold no verifiable claim: their UCR is 0 by the
# paper's convention, so the number says little about grounding.
UNCHECKED = 0.5


def leaderboard(runs: list[RunMetrics]) -> Table:
    rows = []
    for r in runs:
        for modality, b in _blocks(r):
            row = {"Model": r.label, "Modality": modality, "n": b.get("n")}
            for key, title in COLUMNS:
                ci = (b.get("ci") or {}).get(key)
                row[title] = fmt_ci(b.get(key), ci, 3)
            if (b.get("no_claim_share") or 0) > UNCHECKED:
                row["NDR"] += " †"
            row["BUY:SELL"] = fmt(b.get("buy_sell_ratio"), 2)
            rows.append(row)
    return Table("E2A-style leaderboard (model x modality)", pd.DataFrame(rows),
                 "UCR: mean response-level share of contradicted verifiable claims (0 for an answer without one); "
                 "RCI: actions against the rationale; ECI: confident directional answers on weak evidence, among "
                 "those that state a confidence; NDR = coverage x (1-UCR_dir) x (1-RCI) x (1-ECI) (seed paper §3.3). "
                 f"†: over {UNCHECKED:.0%} of the directional answers hold no verifiable claim, so NDR rests on "
                 "answers the judge could not check (see the judge audit). "
                 "Brackets: 95% intervals over stocks. '–': not applicable (no directional answer).")


def judge_audit(runs: list[RunMetrics]) -> Table:
    """How much of each run's answers the claim matcher could check, per modality."""
    rows = []
    for r in runs:
        for modality, b in _blocks(r):
            rows.append({"Model": r.label, "Modality": modality, "n": b.get("n"),
                         "Verifiable claims / answer": fmt(b.get("claims_per_answer"), 2),
                         "Answers without a verifiable claim": fmt(b.get("answers_without_claim"), 3),
                         "Directional without one": fmt(b.get("no_claim_share"), 3),
                         "Unverifiable share of claims": fmt(b.get("unverifiable_share"), 3),
                         "Directional without confidence": fmt(b.get("no_confidence_share"), 3)})
    return Table("E2A-style judge audit (model x modality)", pd.DataFrame(rows),
                 "What the judge could check: verifiable claims per answer; answers (all, and directional) with "
                 "none, whose UCR is 0 by convention; claims no anchor checks (RSI, MACD, MA60, patterns ...), "
                 "never scored; directional answers that state no confidence, left out of ECI. The judge's own "
                 "accuracy on the hand-labelled gold set: bench/e2a.py.")


def _positions(runs: list[RunMetrics]) -> dict[tuple[str, str], tuple[float, float]]:
    """{(run, modality): (coverage, 1 - UCR_dir)} for each run x modality whose directional answers
    hold a verifiable claim (elsewhere UCR_dir is 0 by convention, not a measured grounding)."""
    at = {(r.name, modality): (b.get("coverage"), None if b.get("ucr_dir") is None else 1 - b["ucr_dir"])
          for r in runs for modality, b in _blocks(r) if modality != "all" and (b.get("no_claim_share") or 0) < 1}
    return {k: xy for k, xy in at.items() if None not in xy}


def frontier(runs: list[RunMetrics], comparisons: Mapping[str, dict]) -> tuple[dict, list]:
    """The plot's layout: {(coverage, 1 - UCR_dir): [labels]} (one point per run x modality with
    both defined; runs that meet share a point and its label) and the arrows
    [(start, end)] of each comparison a → b, modality by modality."""
    at = _positions(runs)
    points: dict[tuple[float, float], list[str]] = {}
    for (name, modality), xy in at.items():
        points.setdefault(xy, []).append(f"{name} · {modality}")
    arrows = []
    for pair in comparisons:
        a, b = pair.split(": ", 1)[-1].split(" → ")
        for modality in sorted({m for (n, m) in at if n == a}):
            if (b, modality) in at and at[(a, modality)] != at[(b, modality)]:
                arrows.append((at[(a, modality)], at[(b, modality)]))
    return points, arrows


MARKERS = {"text": "s", "chart": "^", "both": "o"}


def plot_frontier(runs: list[RunMetrics], comparisons: Mapping[str, dict]) -> bytes:
    """Colour = run, marker = modality, named in the legend beside the axes (labels at the points
    piled up where runs meet, as they do at grounding 1.0)."""
    at, (_, arrows) = _positions(runs), frontier(runs, comparisons)
    names = {r.name: label for r, label in zip(runs, run_labels(runs, 34))}

    def draw(ax):
        ax.set(title="Coverage–grounding frontier (runs with verifiable claims)")
        if not at:
            return say_why(ax, "No run has a verifiable claim in its directional answers: grounding (1 − UCR_dir) "
                               "is measured on none (the judge audit below says what it could check).")
        colour = {n: f"C{i % 10}" for i, n in enumerate(dict.fromkeys(n for n, _ in at))}
        for (name, modality), (x, y) in at.items():
            ax.scatter(x, y, s=30, color=colour[name], marker=MARKERS.get(modality, "D"), alpha=0.8)
        for start, end in arrows:
            ax.annotate("", end, start, arrowprops={"arrowstyle": "->", "color": "grey"})
        handles = [Line2D([], [], ls="", marker="o", color=c, label=names[n]) for n, c in colour.items()]
        handles += [Line2D([], [], ls="", marker=m, color="grey", label=k)
                    for k, m in MARKERS.items() if any(mod == k for _, mod in at)]
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
        ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="coverage (BUY/SELL share)", ylabel="grounding (1 − UCR_dir)")

    return figure(draw, size=(8, 5))


BARS = (("ndr", "NDR"), ("ucr_dir", "UCR_dir"), ("coverage", "Coverage"))


def plot_modalities(runs: list[RunMetrics]) -> bytes:
    """NDR, UCR_dir and coverage per model, one bar per modality (the seed paper's Figure 3 view:
    does a model act on the chart as it does on the numbers?)."""
    modalities = sorted({m for r in runs for m in (r.metrics.get("modalities") or {})})

    def draw(axes):
        x = np.arange(len(runs))
        width = 0.8 / max(len(modalities), 1)
        for ax, (key, title) in zip(axes, BARS):
            ax.set_title(title)
            table = {m: [((r.metrics.get("modalities") or {}).get(m) or {}).get(key) for r in runs] for m in modalities}
            if nothing_to_draw([v for values in table.values() for v in values]):
                defined = any(v is not None for values in table.values() for v in values)
                say_why(ax, f"{title} is 0 for every run and modality." if defined else f"No run has a {title}.")
                continue
            for i, (modality, values) in enumerate(table.items()):
                ax.bar(x + (i - (len(modalities) - 1) / 2) * width, [np.nan if v is None else v for v in values],
                       width, label=modality)
            ax.set_xticks(x, run_labels(runs, 16), fontsize=6)
            ax.set(ylim=(0, 1))
            legend(ax)

    return figure(draw, size=(12, 4.5), panels=len(BARS))


def tables(runs: list[RunMetrics], comparisons: Mapping[str, dict]) -> Section:
    plots = {"e2a_frontier": plot_frontier(runs, comparisons), "e2a_modalities": plot_modalities(runs)}
    return Section("E2A-style evidence to action", (leaderboard(runs), judge_audit(runs)), plots)
