"""StockGenChaR's metadata IoU (Eq. 1) and its coverage by category (Table 3).

    IoU = log(1 + (|O_c ∩ O_a| / L_c) / (|O_r ∩ O_a| / L_r + ε))

``O_a``: the chart's annotated items, ``O_c`` / ``O_r``: those the candidate / reference name,
``L``: a text's length. The paper leaves the length unit and ε open; ours: ``L`` in words, at
least 1, so each term is mentions per word, and ε = 0.01 (one mention per hundred words: a
reference that names nothing then lets a candidate naming one item per hundred words score
log 2). Natural log. ``iou`` counts every category's items together (the paper: "aggregated
across these three categories"); ``iou_<category>`` only that category's.

A word is a whitespace-separated token holding a letter or digit (a lone dash is none), and each
CJK character (Han, kana) is one word. Chinese is written without spaces, so the whitespace
split would make a whole Chinese caption "1 word" and its density absurd; a character is the
unit every reader of Chinese agrees on, while a segmenter's words depend on its dictionary (and
would be one more dependency). A Chinese word averages about 1.5 characters, so a Chinese text
measures somewhat longer than an English one saying the same; Eq. 1 divides a candidate's
density by its reference's, so this cancels when both are in the same language.

A sample whose chart has no item of the categories asked for has no IoU: ``iou`` returns None
(not 0), so that the sample is left out of the corpus mean the way coverage leaves it out.
Eq. 1's ratio has nothing to measure there: every text, good or bad, would score log(1 + 0).

An item is named when the text holds it in a form a reader would write (text is NFKC-normalised
first, so full-width digits and ％ read as ASCII):

* ``time`` (a date label, YYYY-MM-DD): the ISO date or 2019/03/15, 2019.03.15; "March 15, 2019" /
  "15 March 2019" / "Mar. 15th, 2019"; 15/03/2019 and 03/15/2019 (both readings when day and
  month are both <= 12: the text cannot tell which is meant); the Chinese 2019年3月15日 (or 号).
  A date without its year names nothing, in every language.
* ``price`` (an axis label as drawn, e.g. "52.50", "1.2M"): a standalone number in the text equal
  to it at the label's precision ("52.5" names "52.50", "52.49" does not; "1.2M" is precise to
  0.1M, so 1,204,567 names it and 1,260,000 does not), with or without a
  currency mark or unit ($52.50, 12.5元, 52.50 pesos). Not a price, so never a hit: a number inside
  a date (any form above, also without its year: "March 15", 3月15日), a percentage (4.2%, 4.2
  percent, 百分之4.2), a count of days, weeks, sessions, bars, waves ... (20-day, 5 sessions,
  20日, 60个交易日, "the 5, 10 and 20-day averages"), a moving-average name (MA20, EMA(50),
  50DMA, 20日均线, "20 moving average"), a multiple (1.42 times, 1.5x, 2倍), a wave label
  (wave 3), a clock time, a number glued to letters (Q3, 5th) and a year: a whole 1900-2099 next
  to a year word (in/since/during/through/until/by/early/mid/late/year/FY/Q3 2019, 2019年, the
  2010s, a range of years at most five apart: 2018-2019, 2018/19). A bare 2019 elsewhere stays a number, since a stock can
  trade at 2,000 and its axis then says "2000": "resistance near 2000" is a price.
* ``degree``: the time frame ("daily": daily, day chart, 日线, 日K; weekly, monthly alike) and the
  trend scale (short-term: also near-term, 短期, 短线; intermediate-term: also intermediate,
  medium-term, mid-term, 中期, 中线; long-term: also 长期, 长线), case-insensitive; any other item
  (a dataset's own wave degrees, "(iii)", "Minor") as written, case-sensitive (wave labels are
  cased: i is not I), not inside a longer word or bracket ("(iii)" is not named by "((iii))").
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache
from typing import Iterable, Sequence

import pandas as pd

CATEGORIES = ("degree", "time", "price")

_SCALES = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12, "万": 1e4, "亿": 1e8}
_DASH = "-‐‑‒–—"
# Word edges for Latin words: ``\b`` would see none between a CJK character and a Latin letter.
_L, _R = r"(?<![A-Za-z])", r"(?![A-Za-z])"
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
          r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
# Full dates, each with the groups it is read from.
_YMD = re.compile(r"(?<![\d.])(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?!\d)")
_DMY = re.compile(r"(?<![\d.])(\d{1,2})([-/.])(\d{1,2})\2(\d{4})(?!\d)")
_ZH = re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_MDY = re.compile(rf"{_L}({_MONTH})\.?\s+{_DAY},?\s+(\d{{4}})(?!\d)", re.I)
_DMY_WORDS = re.compile(rf"(?<![\d.]){_DAY}\s+(?:of\s+)?({_MONTH})\.?,?\s+(\d{{4}})(?!\d)", re.I)

_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
# A whole number that is not the head of a decimal or of a thousands group (1,288).
_INT = r"\d+(?!\d|\.\d|,\d{3}(?!\d))"
_INT_LIST = rf"(?<![\d.])(?<!\d,){_INT}(?:\s*(?:,|/|、|&|{_L}and{_R}|{_L}or{_R}|和|及|与)\s*{_INT})*"
_YEAR = r"(?:19|20)\d{2}"
_COUNTED = (r"(?:trading\s+)?(?:days?|weeks?|months?|years?|sessions?|bars?|candles?|candlesticks?|periods?|hours?|"
            r"minutes?|quarters?|swings?|waves?|legs?)" + _R + r"|个交易日|交易日|日|天|周|星期|个月|年|根|次|浪")
# Spans whose numbers are not prices, blanked before prices are read (module docstring), each
# with its flags and a cheap test of whether it can match at all (most texts hold no Chinese date,
# no clock time, ...; scanning for each costs more than all the tests). Month names without a
# year are matched capitalised only, as "at 52 may hold" is no date.
_MONTHS_ANY = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
_SEPARATED = r"\d[-/.]\d{1,2}[-/.]\d"
_NOT_PRICES = [(re.compile(p, f), re.compile(t)) for p, f, t in (
    (_YMD.pattern, 0, _SEPARATED), (_DMY.pattern, 0, _SEPARATED), (_ZH.pattern, 0, "年"),
    (_MDY.pattern, re.I, _MONTHS_ANY), (_DMY_WORDS.pattern, re.I, _MONTHS_ANY),
    (r"(?<![\d.])\d{1,2}/\d{1,2}/\d{2}(?![\d/])", 0, _SEPARATED),  # 15/03/19
    (rf"{_L}{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?![\d.,]*\d)", 0, _MONTHS_ANY),  # March 15
    (rf"(?<![\d.])\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}{_R}", 0, _MONTHS_ANY),  # 15 March
    (rf"{_L}{_MONTH}\.?,?\s+{_YEAR}(?!\d)", re.I, _MONTHS_ANY),  # March 2019
    (r"(?:\d{4}\s*年\s*)?(?<![\d.])\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?", 0, "月"),  # 3月15日, 2019年3月
    (rf"(?:(?<![\d.]){_NUM}\s*(?:[{_DASH}~]|to)\s*)?[+{_DASH}]?(?<![\d.]){_NUM}\s*(?:%|(?:percent|per\s*cent|pct|"
     rf"percentage\s+points?|basis\s+points?|bps?){_R}|个百分点)", re.I, r"%|(?i:per|pct|bp|basis)|百分点"),
    (rf"百分之\s*{_NUM}", 0, "百分之"),
    (rf"{_INT_LIST}\s*[{_DASH}]?\s*(?:{_COUNTED})", re.I,
     r"(?i:day|week|month|year|session|bar|candle|period|hour|minute|quarter|swing|wave|leg)|[日天周月年根次浪]"),
    (rf"{_L}(?:[ESW]?MA|DMA)\s*\(?\s*{_INT_LIST}\s*\)?", re.I, r"(?i:ma)"),
    (rf"{_INT_LIST}\s*[{_DASH}]?\s*(?:(?:[ESW]?MA|DMA|moving\s+averages?){_R}|均线)", re.I, r"(?i:ma|moving)|均线"),
    (rf"(?<![\d.,]){_NUM}\s*(?:(?:times|x){_R}|倍)", re.I, r"\d\s*(?:(?i:times|x)|倍)"),
    (rf"{_L}waves?\s*\(*\s*\d+", re.I, r"(?i:wave)"),
    (r"第\s*\d+", 0, "第"),
    (r"(?<![\d.])\d{1,2}:\d{2}(?!\d)", 0, r"\d:\d"),
    (rf"{_L}(?:in|since|during|through|throughout|until|till|by|early|mid|late|year|fiscal|FY|Q[1-4]|H[12])\s*[{_DASH}]?\s*"
     rf"{_YEAR}(?![\d.,]*\d)", re.I, _YEAR),
    (rf"(?<![\d.,]){_YEAR}\s*(?:年|'?s{_R})", 0, _YEAR),
)]
# Two years in a row are a range of years only when close together ("2018-2019", "2018/19"):
# "1950-2000" on a stock trading near 2,000 is a range of prices.
_YEARS = re.compile(rf"(?<![\d.,])({_YEAR})\s*(?:[{_DASH}/]|to)\s*(\d{{4}}|\d{{2}})(?![\d.,]*\d)")
# A standalone number: not glued to letters or digits on either side (a scale suffix aside).
_PRICE = re.compile(r"(?<![A-Za-z0-9.])(" + _NUM + r")\s*([KMBT](?![A-Za-z0-9])|万|亿)?(?![A-Za-z0-9])")
_CURRENCY_CODE = re.compile(r"(?<![A-Za-z])(RMB|CNY|HKD|USD|PHP|EUR|GBP|JPY)(?=\d)")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_FRAME = r"\s+(?:chart|time\s*frame|timeframe|candles?)" + _R
_SYNONYMS = {
    "daily": (rf"{_L}daily{_R}", rf"(?<![\w-])(?:(?:1|one)[- ]?)?day{_FRAME}", "日线", "日k"),
    "weekly": (rf"{_L}weekly{_R}", rf"(?<![\w-])(?:(?:1|one)[- ]?)?week{_FRAME}", "周线", "周k"),
    "monthly": (rf"{_L}monthly{_R}", rf"(?<![\w-])(?:(?:1|one)[- ]?)?month{_FRAME}", "月线", "月k"),
    "short-term": (rf"{_L}(?:short|near)[- ]term{_R}", "短期", "短线"),
    "intermediate-term": (rf"{_L}intermediate{_R}", rf"{_L}(?:medium|mid)[- ]term{_R}", "中期", "中线"),
    "long-term": (rf"{_L}long[- ]term{_R}", "长期", "长线"),
}


def _normal(text: str | None) -> str:
    # A Chinese comma becomes ", ": NFKC alone would make "12.5，20日均线" read as "12.5,20".
    return unicodedata.normalize("NFKC", (text or "").replace("，", ", "))


def _value(label: str) -> tuple[float, int]:
    """A number label's value and the decimal place it is precise to ("1.2M" -> 1.2e6, -5)."""
    label = label.strip()
    scale = _SCALES.get(label[-1], 1.0) if label else 1.0
    digits = label.rstrip("KMBT万亿").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits) * scale, decimals - round(math.log10(scale))


def _year_range(m: re.Match[str]) -> bool:
    first, second = int(m.group(1)), m.group(2)
    last = int(second) if len(second) == 4 else first // 100 * 100 + int(second)
    return 0 < last - first <= 5


def _iso(year: str | int, month: str | int, day: str | int) -> str | None:
    try:
        return f"{pd.Timestamp(int(year), int(month), int(day)):%Y-%m-%d}"
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def _dates(text: str) -> frozenset[str]:
    found = {_iso(m[0], m[2], m[3]) for m in _YMD.findall(text)}
    for day, _, month, year in _DMY.findall(text):
        found |= {_iso(year, month, day), _iso(year, day, month)}
    found |= {_iso(*m) for m in _ZH.findall(text)}
    for month, day, year in _MDY.findall(text):
        found.add(_iso(year, _MONTHS[month[:3].lower()], day))
    for day, month, year in _DMY_WORDS.findall(text):
        found.add(_iso(year, _MONTHS[month[:3].lower()], day))
    return frozenset(found - {None})


def price_numbers(text: str | None) -> tuple[float, ...]:
    """The values of the standalone numbers of ``text`` that can be prices (module docstring)."""
    return _price_numbers(_normal(text))


# One scorer asks for a text's numbers once per category set and once for coverage.
@lru_cache(maxsize=4096)
def _price_numbers(text: str) -> tuple[float, ...]:
    text = _CURRENCY_CODE.sub(r"\1 ", text)
    text = _YEARS.sub(lambda m: "#" * len(m.group(0)) if _year_range(m) else m.group(0), text)
    for pattern, may_match in _NOT_PRICES:
        if may_match.search(text):
            text = pattern.sub(lambda m: "#" * len(m.group(0)), text)
    return tuple(float(number.replace(",", "")) * _SCALES.get(scale, 1.0) for number, scale in _PRICE.findall(text))


@lru_cache(maxsize=256)
def _degree_patterns(item: str) -> tuple[re.Pattern[str], ...]:
    known = _SYNONYMS.get(item.lower())
    if known:
        return tuple(re.compile(p, re.I) for p in known)
    return (re.compile(rf"(?<![\w(]){re.escape(item)}(?![\w)])"),)


def mentions(text: str | None, items: Iterable[str], category: str) -> set[str]:
    """The items of ``category`` that ``text`` names."""
    items = [str(i) for i in items]
    if category == "time":
        return set(items) & _dates(_normal(text))
    if category == "price":
        numbers = _price_numbers(_normal(text))
        named = set()
        for item in items:
            value, decimals = _value(item)
            if any(round(n, decimals) == round(value, decimals) for n in numbers):
                named.add(item)
        return named
    if category == "degree":
        text = _normal(text)
        return {i for i in items if any(p.search(text) for p in _degree_patterns(i))}
    raise ValueError(f"unknown metadata category {category!r}; known: {CATEGORIES}")


def length(text: str | None) -> int:
    """Eq. 1's L: words, each CJK character one (module docstring); at least 1."""
    text = _normal(text)
    cjk = len(_CJK.findall(text))
    words = sum(1 for token in _CJK.sub(" ", text).split() if re.search(r"[^\W_]", token))
    return max(1, cjk + words)


def iou(candidate: str | None, reference: str, metadata: dict[str, Sequence[str]], categories: Sequence[str] = CATEGORIES,
        epsilon: float = 0.01) -> float | None:
    """Eq. 1 over the items of ``categories``; None when the chart has none of them (module docstring)."""
    if not any(metadata.get(c) for c in categories):
        return None
    named_c = sum(len(mentions(candidate, metadata.get(c, []), c)) for c in categories)
    named_r = sum(len(mentions(reference, metadata.get(c, []), c)) for c in categories)
    return math.log(1 + (named_c / length(candidate)) / (named_r / length(reference) + epsilon))
