"""The charts of the reading judge's gold set: real charts of the committed PSE slice (a stock, a
cutoff, a time frame), their questions' true answers by the task's own rules, and a fact sheet in
plain words for whoever labels answers by hand.

    .venv/bin/python tests/gold/reading/reading_facts.py > tests/gold/reading/facts.md

The bars are the chart's (candlebench.market.bars.chart_bars on the history strictly before the
cutoff, the forecast design: 50 bars, MA5 / MA20 / MA90), as the reading task builds its samples.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from candlebench.market.bars import chart_bars, history_before  # noqa: E402
from candlebench.market.market import load_market  # noqa: E402
from candlebench.rendering.chart import ChartSpec  # noqa: E402
from candlebench.tasks.reading.questions import MA_WINDOWS, MARKS, OUTSIDE_BACK, QuestionSet, pair_set, question_set  # noqa: E402

SLICE = ROOT / "tests" / "data" / "pse_slice.csv"
# (code, cutoff, frame): picked so that every answer of every question occurs or nearly.
CHARTS = (("AC", "2019-06-26", "daily"), ("ALI", "2019-03-04", "daily"), ("SM", "2020-01-02", "daily"),
          ("TEL", "2019-11-12", "daily"), ("BPI", "2020-01-02", "weekly"), ("JFC", "2020-01-02", "daily"),
          ("AC", "2019-12-20", "weekly"), ("SM", "2019-09-02", "daily"), ("MER", "2018-08-13", "daily"),
          ("GLO", "2019-03-12", "daily"), ("GLO", "2017-12-22", "daily"), ("GLO", "2019-09-18", "weekly"),
          # Under the textbook's rules (and the pixel rule) the charts above hold no hammer or engulfing
          # bar, nor an MA line that is not drawn: a hammer, a bearish engulfing, and an early weekly
          # chart with no MA90 (and mark_color's bar outside the chart).
          ("ALI", "2018-11-06", "daily"), ("TEL", "2019-10-31", "daily"), ("AC", "2018-08-08", "weekly"),
          # The question asked of the daily and the weekly chart together (frames_agree): the two moved the same way, and not.
          ("AC", "2019-12-20", "both"), ("GLO", "2017-12-22", "both"))


@lru_cache(maxsize=1)
def _market():
    return load_market([SLICE], name="PSE")


@lru_cache(maxsize=None)
def chart(code: str, cutoff: str, frame: str) -> tuple[pd.DataFrame, QuestionSet]:
    """The chart's bars and its questions; frame "both" is the sample showing the daily and the weekly
    chart together (its bars: the daily chart's)."""
    if frame == "both":
        (bars, daily), (_, weekly) = chart(code, cutoff, "daily"), chart(code, cutoff, "weekly")
        return bars, pair_set(daily, weekly)
    longer = chart_bars(history_before(_market().stock(code), pd.Timestamp(cutoff)), frame, MA_WINDOWS, 50 + OUTSIDE_BACK)
    bars = longer.tail(50).reset_index(drop=True)
    return bars, question_set(bars, ChartSpec(marks=len(MARKS)), code, pd.Timestamp(cutoff), frame, longer.head(len(longer) - 50))


def sheet() -> str:
    lines = ["# Facts of the reading gold set's charts", "",
             "Made by reading_facts.py from the committed slice: the true answer of every question asked, and the questions",
             "left out (not asked) with why. Label answers from these, never from the judge's output.", ""]
    for code, cutoff, frame in CHARTS:
        bars, found = chart(code, cutoff, frame)
        lines += [f"## {code} {frame} before {cutoff} ({len(bars)} bars, last close {bars['close'].iloc[-1]:g})", ""]
        lines += [f"- marked: " + "; ".join(f"{l} = bar {back} from the right ({d})" for l, back, d in found.marked)] * bool(found.marked)
        lines += [f"- {q}: {a!r}" for q, a in found.answers.items()]
        lines += [f"- {q}: not asked ({why})" for q, why in found.left_out.items()] + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(sheet())
