"""The reading task's true answers recomputed from the raw bars of the slice, with this file's own
pandas code written from docs/reading.md's rules (not from questions.py): for a freshly built sample
set, every asked question's stored answer must equal ours. The pixel-ambiguity rules (which questions
are asked) are not recomputed; only the answers of the questions asked are checked, plus the doc's
structural promises (cannot_tell only for an MA not drawn / mark_color's bar E outside the window;
a partial weekly bar never lettered and no volume_above_mean / pattern read off it)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from helpers import SLICE, setup_of
from candlebench.tasks.reading.samples import build_samples

pytestmark = pytest.mark.unit
# More stocks and cutoffs than test_task.py's SPEC (AC, SM, interval 120), for coverage.
SPEC = setup_of("task=reading", "task.samples.interval=40").settings  # every stock of the slice
MAX_BARS = SPEC.render.max_bars
WINDOWS = (5, 20, 90)


@pytest.fixture(scope="module")
def samples(market, cfg):
    return build_samples(market, SPEC, cfg.context.render.spec)


@pytest.fixture(scope="module")
def raw():
    bars = pd.read_csv(SLICE, parse_dates=["date"])
    return {code: g.sort_values("date").reset_index(drop=True) for code, g in bars.groupby("code")}


# --- our own bars -------------------------------------------------------------------------------

def with_mas(bars: pd.DataFrame) -> pd.DataFrame:
    bars = bars.copy()
    for w in WINDOWS:  # over the whole history before the cutoff, NaN until a full window
        bars[f"ma{w}"] = bars["close"].rolling(w, min_periods=w).mean()
    return bars


def our_weekly(daily: pd.DataFrame) -> pd.DataFrame:
    """Standard aggregation per calendar week (Mon-Sun), the bar dated by its last trading day."""
    week = daily["date"].dt.to_period("W-SUN")
    g = daily.groupby(week, sort=True)
    return pd.DataFrame({"date": g["date"].last(), "open": g["open"].first(), "high": g["high"].max(),
                         "low": g["low"].min(), "close": g["close"].last(),
                         "volume": g["volume"].sum()}).reset_index(drop=True)


def our_chart(raw_code: pd.DataFrame, cutoff: pd.Timestamp, frame: str):
    """(drawn bars, bars before them, whether the last bar is a partial week)."""
    hist = raw_code[raw_code["date"] < cutoff].reset_index(drop=True)
    partial = False
    if frame == "weekly":
        partial = hist["date"].iloc[-1].to_period("W-SUN") == cutoff.to_period("W-SUN")
        hist = our_weekly(hist)
    full = with_mas(hist)
    return full.tail(MAX_BARS).reset_index(drop=True), full.iloc[:max(len(full) - MAX_BARS, 0)], partial


# --- the doc's rules ---------------------------------------------------------------------------

def position(b: pd.DataFrame, w: int) -> str:
    ma = b[f"ma{w}"]
    if ma.isna().all():
        return "cannot_tell"  # the MA not drawn at all
    return "above" if b["close"].iloc[-1] > ma.iloc[-1] else "below"


def range_position(b):
    lo, hi = b["low"].min(), b["high"].max()
    x = (b["close"].iloc[-1] - lo) / (hi - lo)
    return "bottom" if x < 1 / 3 else "middle" if x < 2 / 3 else "top"


def change(b):
    r = b["close"].iloc[-1] / b["close"].iloc[0] - 1
    return "A" if r < -0.10 else "B" if r < -0.02 else "C" if r <= 0.02 else "D" if r <= 0.10 else "E"


def crossings(b):
    # A bar where the lines meet exactly (MA5 = MA20) has no sign: the sign carries over it, so
    # + 0 - is one crossing (down), on the bar it turns negative. The doc's "the sign changed between
    # consecutive bars" does not say; questions.py answers "death" on such a chart (PHN 2018-12-19 weekly).
    d = np.sign((b["ma5"] - b["ma20"])).replace(0.0, np.nan).ffill().to_numpy()
    n = len(b)
    found = []
    for i in range(n - 10, n):  # a change between bar i-1 and bar i, on one of the last 10 bars
        if d[i - 1] < 0 < d[i]:
            found.append("golden")
        elif d[i - 1] > 0 > d[i]:
            found.append("death")
    return found


def pattern(b):
    o, h, l, c = (b[k].iloc[-1] for k in ("open", "high", "low", "close"))
    po, pc, ph, pl = (b[k].iloc[-2] for k in ("open", "close", "high", "low"))
    body, rng = abs(c - o), h - l
    doji = body <= 0.1 * rng
    prior_doji = abs(pc - po) <= 0.1 * (ph - pl)
    found = set()
    if doji:
        found.add("doji")
    if not doji and min(o, c) - l >= 2 * body and h - max(o, c) <= 0.1 * rng:
        found.add("hammer")
    if c > o and not prior_doji and pc < po and o <= pc and c >= po:
        found.add("bullish_engulfing")
    if c < o and not prior_doji and pc > po and o >= pc and c <= po:
        found.add("bearish_engulfing")
    return found


def colour(bar) -> str:
    return "up" if bar["close"] > bar["open"] else "down" if bar["close"] < bar["open"] else "flat"


def recompute(q: str, b: pd.DataFrame, marked: dict, letter: str | None, theirs):
    """Our answer to ``q``, or a set of answers allowed where the doc's rule alone does not decide."""
    last = b.iloc[-1]
    if q in ("ma5", "ma20", "ma90"):
        return position(b, int(q[2:]))
    if q == "range_position":
        return range_position(b)
    if q in ("highest", "lowest", "max_volume"):
        col = "volume" if q == "max_volume" else "close"
        vals = {k: marked[k][col] for k in "ABCD"}
        return (max if q != "lowest" else min)(vals, key=vals.get)
    if q == "highest_close":
        return float(b["close"].max())
    if q == "last_close":
        return float(last["close"])
    if q == "change":
        return change(b)
    if q == "direction":
        return "up" if last["close"] > b["close"].iloc[-6] else "down"
    if q == "cross":
        found = crossings(b)
        if len(found) <= 1:
            return found[0] if found else "none"
        return set(found) | {"none"}  # several sign changes: the pixel rule keeps those apart (not recomputed)
    if q == "ma_order":
        vals = {f"ma{w}": last[f"ma{w}"] for w in WINDOWS}
        return ">".join(sorted(vals, key=vals.get, reverse=True))
    if q == "ma_slope":
        return "rising" if last["ma20"] > b["ma20"].iloc[-6] else "falling"
    if q == "up_candles":
        return int((b["close"].tail(10) > b["open"].tail(10)).sum())
    if q == "volume_above_mean":
        return "yes" if last["volume"] > b["volume"].mean() else "no"
    if q == "mark_color":
        return "cannot_tell" if letter == "E" else colour(marked[letter])
    if q == "pattern":
        found = pattern(b)
        return found.pop() if len(found) == 1 else ("none" if not found else found)
    raise KeyError(q)


def same(ours, theirs) -> bool:
    if isinstance(ours, set):
        return theirs in ours
    if isinstance(ours, float):
        return isinstance(theirs, (int, float)) and abs(ours - theirs) <= 1e-9 * max(1.0, abs(ours))
    return ours == theirs


def test_every_asked_answer_recomputed_from_the_raw_bars(samples, raw):
    frame, _ = samples
    charts = frame.drop_duplicates(["code", "cutoff", "frame"])
    counts, exact, bad, seen = Counter(), Counter(), [], Counter()
    direction = {}  # (code, cutoff, frame) -> first-to-last move, for frames_agree

    for row in charts[charts["frame"] != "both"].itertuples():
        key = (row.code, row.cutoff, row.frame)
        b, before, partial = our_chart(raw[row.code], pd.Timestamp(row.cutoff), row.frame)
        seen["partial weeks"] += partial
        direction[key] = "up" if b["close"].iloc[-1] > b["close"].iloc[0] else "down"
        by_date = {d: i for i, d in enumerate(b["date"].dt.strftime("%Y-%m-%d"))}
        marked = {}
        for letter, back, date in json.loads(row.marked):
            if letter == "E":  # before the drawn window, 1-10 bars before its first bar
                earlier = list(before["date"].dt.strftime("%Y-%m-%d"))
                pos = earlier.index(date) - len(earlier) if date in earlier else None
                if pos is None or not -10 <= pos <= -1:
                    bad.append((row.code, row.cutoff, row.frame, "marked E", pos, "1-10 bars before"))
                seen["bar E"] += 1
                continue
            i = by_date.get(date)
            if i is None or len(b) - i != back:
                bad.append((row.code, row.cutoff, row.frame, f"marked {letter}", (i, len(b) - (i or 0)), (date, back)))
                continue
            if partial and i == len(b) - 1:
                bad.append((row.code, row.cutoff, row.frame, f"marked {letter}", "partial week", date))
            marked[letter] = b.iloc[i]
        answers = json.loads(row.questions)
        if partial:
            for q in ("volume_above_mean", "pattern"):
                if q in answers:
                    bad.append((row.code, row.cutoff, row.frame, q, "asked", "not asked of a partial week"))
        for q, theirs in answers.items():
            needs = (set("ABCD") if q in ("highest", "lowest", "max_volume")
                     else {row.mark_color} - {"E"} if q == "mark_color" else set())
            if needs - set(marked):
                missing = sorted(needs - set(marked))
                bad.append((row.sample_id, row.frame, q, f"lettered bars {missing} not found", theirs))
                continue
            ours = recompute(q, b, marked, row.mark_color or None, theirs)
            counts[q] += 1
            exact[q] += not isinstance(ours, set)
            seen[f"{q} cannot_tell"] += theirs == "cannot_tell"
            if not same(ours, theirs):
                bad.append((row.sample_id, row.frame, q, ours, theirs))

    for row in charts[charts["frame"] == "both"].itertuples():
        for q, theirs in json.loads(row.questions).items():
            assert q == "frames_agree", q
            d, w = (direction[(row.code, row.cutoff, f)] for f in ("daily", "weekly"))
            ours = "yes" if d == w else "no"
            counts[q] += 1
            exact[q] += 1
            if ours != theirs:
                bad.append((row.sample_id, "both", q, ours, theirs))

    report = "recomputed per question (exact rule / total): " + ", ".join(
        f"{q} {exact[q]}/{n}" for q, n in sorted(counts.items())) + f"; {dict(+seen)}"
    print(report)
    assert not bad, f"{len(bad)} disagreements (sample, frame, question, ours, theirs):\n" + "\n".join(
        map(str, bad[:60])) + "\n" + report
    assert set(counts) >= {"ma5", "ma20", "ma90", "highest", "lowest", "highest_close", "last_close", "change",
                           "direction", "range_position", "ma_order", "ma_slope", "up_candles", "volume_above_mean",
                           "max_volume", "cross", "frames_agree", "mark_color", "pattern"}, report
