"""The report writer: every task's sections side by side, as Markdown (PNG files beside it) and a
self-contained HTML page. Tasks supply the sections (tables, plots, notes: :mod:`.model`); this
module only lays them out, so a new task brings its own tables without touching it.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pandas as pd

from candlebench.core.io import atomic_write
from candlebench.report.model import RANDOM_WEIGHTS, Section


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
    sample browser's block, report/browser/) at its end and ``study`` (what each task asked)
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
