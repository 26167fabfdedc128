"""The report writer: every task's sections side by side, as Markdown (PNG files beside it) and a
self-contained HTML page. Tasks supply the sections (tables, plots, notes); this module only lays
them out, so a new task brings its own tables without touching it.
"""

from __future__ import annotations

import base64
import html
import io
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from candlebench.core.io import atomic_write  # noqa: E402
from candlebench.scoring.numbers import fmt  # noqa: E402,F401 - the tasks' report modules import it from here

RANDOM_WEIGHTS = "(random weights)"


@dataclass(frozen=True)
class RunMetrics:
    name: str
    label: str  # the name as shown, with "(random weights)" where the model is a pipeline check
    metrics: dict
    market: str = ""  # the market(s) of its samples: a pooled report has runs of several
    reference: str = ""  # what it is when it is a reference or ceiling (Task.references), not a result


REFERENCE = "(reference)"


@dataclass(frozen=True)
class Dataset:
    """What a report says about a task's data: its market, the samples summary the samples stage
    wrote and how many files of each chart were rendered."""

    market: str
    summary: Mapping[str, Any]
    charts: Mapping[str, int]


@dataclass(frozen=True)
class Table:
    title: str
    frame: pd.DataFrame
    note: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    tables: tuple[Table, ...]
    plots: dict[str, bytes] = field(default_factory=dict)  # file stem -> PNG bytes
    collapsed: bool = False  # folded in the HTML page (provenance: whole in provenance.json, read on demand)


def scored_run(name: str, metrics: dict, random_weights: bool, market: str = "", reference: str = "") -> RunMetrics:
    label = f"{name} {RANDOM_WEIGHTS}" if random_weights else f"{name} {REFERENCE}" if reference else name
    return RunMetrics(name, label, metrics, market, reference)


def ranked(values: pd.Series, higher_is_better: bool = True, runs: list[RunMetrics] | None = None) -> pd.Series:
    """Ranks with ties sharing their average rank, as the paper's Table 5 prints them (three IC Sig.
    of 0.750 after a 0.813 are all ranked 3); a missing value gets no rank. With ``runs`` (one per
    value), only the runs over the same samples are ranked, those that answered every one: a partial
    run gets no rank (:func:`complete`)."""
    if runs is not None:
        values = values.where(pd.Series([complete(r) for r in runs], index=values.index))
    return values.rank(ascending=not higher_is_better, method="average")


def fmt_rank(rank) -> str:
    """3.0 -> "3", a two-way tie's 2.5 -> "2.5"."""
    return "–" if rank is None or pd.isna(rank) else f"{rank:g}"


def png(fig: plt.Figure) -> bytes:
    fig.tight_layout()
    _fit(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})  # no version stamp: stable bytes
    plt.close(fig)
    return buf.getvalue()


def _fit(fig: plt.Figure) -> None:
    """Titles wider than their axes (a long run name over a small panel, a title pushed past the
    figure's edge by long tick labels) are wrapped, and run names under bars that would overlap
    are turned upright; then the layout is made again."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    changed = False
    for ax in fig.axes:
        title, room = ax.title, ax.get_window_extent(renderer).width
        box = title.get_window_extent(renderer)
        if title.get_text() and (box.width > room * 1.1 or box.x0 < 0 or box.x1 > fig.bbox.x1):
            chars = max(12, int(len(title.get_text()) * min(room, fig.bbox.width * 0.9) / box.width))
            title.set_text(textwrap.fill(title.get_text(), chars))
            changed = True
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        if any(a.overlaps(b) for a, b in zip(boxes, boxes[1:])):
            plt.setp(labels, rotation=90, ha="center")
            changed = True
    if changed:
        fig.tight_layout()


def run_labels(runs: list[RunMetrics], width: int = 22) -> list[str]:
    """Run names as tick labels: wrapped onto lines of ``width`` characters, not rotated across their
    neighbours."""
    return [textwrap.fill(r.label, width) for r in runs]


def reference_line(ax, at: float = 0.0, vertical: bool = False, **style) -> None:
    """A zero or threshold line: drawn, but not data (a plot of nothing else says why it is empty)."""
    style = {"color": "grey", "lw": 0.8, **style}
    (ax.axvline if vertical else ax.axhline)(at, gid="reference", **style)


def say_why(ax, why: str) -> None:
    """A panel with nothing to show says so in its middle, instead of bare axes."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, textwrap.fill(why, 48), transform=ax.transAxes, ha="center", va="center", fontsize=8,
            color="#333")


def nothing_to_draw(values) -> bool:
    """Every value missing or 0: bars of no height, a panel that would look empty."""
    return all(v is None or (isinstance(v, float) and np.isnan(v)) or v == 0 for v in values)


def _luminance(rgba) -> float:
    channel = np.asarray(rgba[:3], dtype=float)
    linear = np.where(channel <= 0.03928, channel / 12.92, ((channel + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def on_cell(rgba) -> str:
    """Black or white, whichever reads better on a cell of colour ``rgba`` (WCAG's contrast: one of
    the two always reaches 4.5 : 1)."""
    light = _luminance(rgba)
    return "black" if (light + 0.05) / 0.05 >= 1.05 / (light + 0.05) else "white"


def legend(ax) -> None:
    """The legend of what is labelled on ``ax``, beside the axes: inside them, wherever matplotlib
    finds room, it covered lines of the IC-per-date plot and a CI whisker of the mean-and-median
    bars. None where nothing is labelled (a study whose runs have no IC per date or no horizon),
    where matplotlib's would only warn "No artists with labels"."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)


def figure(draw: Callable[[Any], None], size=(8, 4), panels: int | tuple[int, int] = 1) -> bytes:
    """A plot of ``draw(ax)``, or of ``draw(axes)`` for a row (``panels`` = n) or grid (rows, columns)."""
    rows, columns = panels if isinstance(panels, tuple) else (1, panels)
    fig, ax = plt.subplots(rows, columns, figsize=size, dpi=100)
    draw(ax)
    return png(fig)


@dataclass(frozen=True)
class Headline:
    """One of a task's main metrics as its headline table shows it: its key in metrics.json (in the
    nested ``block`` where the task keeps its overall figures, e.g. E2A's "all"), its 95% interval
    under ``ci`` beside it when the run has one, and which way is better."""

    key: str
    title: str
    higher_is_better: bool = True
    digits: int = 3
    block: str | None = None
    missing: str = ""  # why a run can lack it, said under the table where one does ("–")


BEST = "★"


def _block(r: RunMetrics, h: Headline) -> Mapping[str, Any]:
    return (r.metrics.get(h.block) or {}) if h.block else r.metrics


def complete(r: RunMetrics) -> bool:
    """Whether the run answered every sample (scores from before answered counts were kept: taken as complete)."""
    answered, total = r.metrics.get("answered"), r.metrics.get("n_samples")
    return answered is None or total is None or answered >= total


def answered_cell(r: RunMetrics) -> str:
    answered, total = r.metrics.get("answered"), r.metrics.get("n_samples")
    if answered is None or total is None:
        return "–"
    return f"{answered}/{total}" + ("" if answered >= total else " (partial)")


ANSWERED = "Answered"


def with_answered(section: Section, runs: list[RunMetrics]) -> Section:
    """Every table of ``section`` with a row per run (a "Model" column) shows each run's
    answered/total beside it, a run missing samples marked "(partial)": its numbers are over fewer
    samples than its neighbours'."""
    # A pooled report labels a run with its market too (forecast: "name · market").
    cells = {**{f"{r.label} · {r.market}": answered_cell(r) for r in runs}, **{r.label: answered_cell(r) for r in runs}}
    tables = []
    for table in section.tables:
        frame = table.frame
        if "Model" in frame and ANSWERED not in frame:  # last: the task's own columns keep their places
            frame = frame.assign(**{ANSWERED: [cells.get(m, "–") for m in frame["Model"]]})
        tables.append(Table(table.title, frame, table.note))
    return Section(section.title, tuple(tables), section.plots, section.collapsed)


def headline_table(title: str, runs: list[RunMetrics], metrics: tuple[Headline, ...], note: str = "") -> Table:
    """Models x the task's main metrics, each "value [low, high]", the best of each column marked
    with a star (every run that ties it; only where two runs or more have the metric). Stars rank
    the runs over the same samples, those that answered every one: a partial run (marked so in its
    Answered cell) is never starred, its numbers rest on other samples. Runs keep their labels, so a
    random-weight pipeline check says so in its own row. References (ceilings) come last and are
    never starred; each "–" is explained under the table."""
    def value(r: RunMetrics, h: Headline) -> tuple[float | None, list | None]:
        block = _block(r, h)
        v = block.get(h.key)
        return (None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)), (block.get("ci") or {}).get(h.key)

    runs = [r for r in runs if not r.reference] + [r for r in runs if r.reference]
    rows = [{"Model": r.label, "n": _block(r, metrics[0]).get("n")} for r in runs]
    dashes: dict[str, list[str]] = {}  # why -> the columns it empties
    for h in metrics:
        cells = [value(r, h) for r in runs]
        defined = [v for (v, _), r in zip(cells, runs) if v is not None and not r.reference and complete(r)]
        best = (max if h.higher_is_better else min)(defined) if len(defined) > 1 else None
        for row, r, (v, ci) in zip(rows, runs, cells):
            row[h.title] = (fmt(v, h.digits) + (f" [{fmt(ci[0], h.digits)}, {fmt(ci[1], h.digits)}]" if ci else "")
                            + (f" {BEST}" if v is not None and v == best and not r.reference else ""))
        if h.missing and any(v is None for v, _ in cells):
            dashes.setdefault(h.missing, []).append(h.title)
    better = ", ".join(f"{h.title} {'higher' if h.higher_is_better else 'lower'}" for h in metrics)
    references = [f"{r.name}: {r.reference}" for r in runs if r.reference]
    partial = "Partial runs are not starred: they answered fewer samples." if not all(map(complete, runs)) else ""
    return Table(title, pd.DataFrame(rows), " ".join(filter(None, [
        f"{BEST}: best in its column ({better} is better), among the models and naive baselines that answered "
        "every sample.", partial,
        "Brackets: 95% bootstrap intervals.", note, *(f"'–' under {', '.join(t)}: {why}." for why, t in dashes.items()),
        f"Last, marked {REFERENCE}: ceilings, not results, never starred ({'; '.join(references)})." if references else ""])))


def _markdown_table(frame: pd.DataFrame) -> str:
    # One row per line: a raw text's newlines and pipes would split it.
    cells = frame.astype(object).where(frame.notna(), "–").astype(str).map(
        lambda v: v.replace("\n", " ").replace("|", "\\|"))
    head = "| " + " | ".join(cells.columns) + " |"
    rule = "|" + "|".join("---" for _ in cells.columns) + "|"
    body = ["| " + " | ".join(row) + " |" for row in cells.to_numpy()]
    return "\n".join([head, rule, *body])


# A number, a number with its interval, a percentage, or the "not applicable" dash: right-aligned.
_NUMERIC = re.compile(r"[-+−]?(?:\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?|nan|inf)(?: \[[^\]]*\])?(?: †)?(?: ★)?|–|None", re.I)
# One small stylesheet: the page never scrolls sideways (a wide table scrolls inside its box, its
# header row and its first column, the run, stay in view), numbers right-aligned and text
# left-aligned, an interval folded under its value (and at its comma where the column is narrow:
# six metrics with intervals fit a 900 px window so), plots as wide as the column.
STYLE = (
    "body{font-family:system-ui,-apple-system,sans-serif;max-width:1400px;margin:0 auto;padding:0 16px;line-height:1.4;"
    "color:#222}h2{border-bottom:2px solid #ddd;padding-bottom:2px;margin-top:32px}nav ul{columns:2;padding-left:20px}"
    "p{overflow-wrap:anywhere}"
    ".box{overflow:auto;max-width:100%;max-height:70vh;margin:6px 0 4px;border:1px solid #eee}"
    "table{border-collapse:separate;border-spacing:0;font-size:13px}th{position:sticky;top:0;background:#f4f5f7;"
    "text-align:left;font-weight:600;z-index:1;white-space:normal;min-width:3em}"
    "td,th{padding:3px 8px;border-bottom:1px solid #e4e4e4;white-space:nowrap;text-align:left;vertical-align:top}"
    "td:first-child,th:first-child{position:sticky;left:0;background:#fff;white-space:normal;min-width:9em;"
    "max-width:16em;overflow-wrap:anywhere;border-right:1px solid #e4e4e4}th:first-child{z-index:2;background:#f4f5f7}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}td small{display:block;color:#666;font-size:11px;white-space:normal}"
    "p.note{font-size:13px;color:#555;margin-top:2px}"
    "img{max-width:100%;height:auto}details>summary{cursor:pointer}details>summary h2{display:inline}"
)
# A value and its bracketed interval ("0.800 [0.650, 0.950] ★"): the interval goes under the value.
_INTERVAL = re.compile(r"^(.*?) (\[[^\]]*\])(.*)$")


def _cell(value: str) -> str:
    found = _INTERVAL.match(value)
    if not found:
        return html.escape(value)
    number, interval, rest = found.groups()
    return f"{html.escape(number + rest)}<small>{html.escape(interval)}</small>"


def _slug(title: str) -> str:
    return "s-" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _html_table(frame: pd.DataFrame) -> str:
    """The table in a scrolling box; a column whose every cell is a number is right-aligned."""
    cells = frame.astype(object).where(frame.notna(), "–").astype(str)
    numeric = [bool(len(cells)) and all(_NUMERIC.fullmatch(v) for v in cells[c]) for c in cells.columns]
    head = "".join(f"<th{' class=n' if n else ''}>{html.escape(str(c))}</th>" for c, n in zip(cells.columns, numeric))
    body = "".join("<tr>" + "".join(f"<td{' class=n' if n else ''}>{_cell(v)}</td>" for v, n in zip(row, numeric))
                   + "</tr>" for row in cells.to_numpy())
    return f"<div class=box><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def write_report(sections: list[Section], out: Path, title: str, random_weights: bool,
                 browser: str = "", study: str = "") -> tuple[Path, Path]:
    """Write report.md (+ plots/*.png) and a self-contained report.html, with ``browser`` (the
    sample browser's block, scoring/browser/) at its end and ``study`` (what each task asked)
    under the title; returns both paths.

    Each file is written whole under a temporary name and renamed, so a reader (or ``status``)
    never sees half a report.
    """
    (out / "plots").mkdir(parents=True, exist_ok=True)
    for section in sections:
        for name, data in section.plots.items():
            atomic_write(out / "plots" / f"{name}.png", lambda p, data=data: p.write_bytes(data))

    warning = ""
    if random_weights:
        warning = f"Runs marked *{RANDOM_WEIGHTS}* are pipeline checks with untrained models: their numbers mean nothing."
    md = [f"# {title}", ""] + ([study, ""] if study else []) + ([warning, ""] if warning else [])
    parts = [f"<h1>{html.escape(title)}</h1>"] + ([f"<p class=study>{html.escape(study)}</p>"] if study else [])
    contents = [(section.title, _slug(section.title)) for section in sections]
    if browser:
        md += ["Every answer, with the images, prompt, raw text and parse of each sample: the sample browser "
               "at the end of report.html.", ""]
        contents.append(("Every sample: the sample browser", "samples"))
    if warning:
        # The Markdown's *emphasis*, as HTML (not as literal asterisks).
        shown = html.escape(warning).replace(f"*{RANDOM_WEIGHTS}*", f"<em>{RANDOM_WEIGHTS}</em>")
        parts.append(f"<p><strong>{shown}</strong></p>")
    md += ["Contents:", "", *(f"- [{t}](#{a})" for t, a in contents), ""]
    parts.append("<nav><strong>Contents</strong><ul>" + "".join(
        f"<li><a href='#{a}'>{html.escape(t)}</a></li>" for t, a in contents) + "</ul></nav>")
    for section in sections:
        md += [f"<a id='{_slug(section.title)}'></a>", "", f"## {section.title}", ""]
        heading = f"<h2 id='{_slug(section.title)}'>{html.escape(section.title)}</h2>"
        body = []
        for t in section.tables:
            md += [f"### {t.title}", "", _markdown_table(t.frame), "", t.note, ""]
            body += [f"<h3>{html.escape(t.title)}</h3>", _html_table(t.frame)]
            if t.note:
                body.append(f"<p class=note>{html.escape(t.note)}</p>")
        if section.plots:
            md += ["### Plots", ""] + [f"![{n}](plots/{n}.png)" for n in section.plots] + [""]
            body.append("<h3>Plots</h3>")
            for name, data in section.plots.items():
                body.append(f'<img alt="{name}" src="data:image/png;base64,{base64.b64encode(data).decode()}">')
        if section.collapsed:
            parts.append(f"<details><summary>{heading}</summary>{''.join(body)}</details>")
        else:
            parts += [heading, *body]
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>{''.join(parts)}{browser}</body></html>\n"
    )
    md_path = atomic_write(out / "report.md", lambda p: p.write_text("\n".join(md) + "\n", encoding="utf-8"))
    html_path = atomic_write(out / "report.html", lambda p: p.write_text(page, encoding="utf-8"))
    return md_path, html_path
