"""StockGenChaR's metadata IoU (Eq. 1) and its coverage by category (Table 3).

    IoU = log(1 + (|O_c ∩ O_a| / L_c) / (|O_r ∩ O_a| / L_r + ε))

``O_a``: the chart's annotated items, ``O_c`` / ``O_r``: those the candidate / reference name,
``L``: a text's length. The paper leaves the length unit and ε open; ours: ``L`` in words (of
the whitespace split, at least 1), so each term is mentions per word, and ε = 0.01 (one mention
per hundred words: a reference that names nothing then lets a candidate naming one item per
hundred words score log 2). Natural log. ``iou`` counts every category's items together (the
paper: "aggregated across these three categories"); ``iou_<category>`` only that category's.

An item is named when the text holds it in a form a reader would write:

* ``time`` (a date label, YYYY-MM-DD): the ISO date, or "March 15, 2019" / "15 March 2019" /
  "Mar 15, 2019" forms;
* ``price`` (an axis label as drawn, e.g. "52.50", "1.2M"): a number in the text equal to it at
  the label's precision ("52.5" names "52.50"; "52.49" does not);
* ``degree`` (the time frame, "daily"): the word, or its synonym ("day"/"weekly"/"week").
"""

from __future__ import annotations

import math
import re
from typing import Iterable, Sequence

import pandas as pd

CATEGORIES = ("degree", "time", "price")

_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?:[KMBT]\b)?")
_SCALES = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_MONTH_DATE = re.compile(r"\b(?:\d{1,2}\s+[A-Z][a-z]{2,8}\.?,?\s+\d{4}|[A-Z][a-z]{2,8}\.?\s+\d{1,2},?\s+\d{4})\b")
_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_FRAMES = {"daily": ("daily", "day"), "weekly": ("weekly", "week"), "monthly": ("monthly", "month")}


def _value(label: str) -> tuple[float, int]:
    """A number label's value and its decimals ("1.2M" -> 1.2e6, 1)."""
    scale = _SCALES.get(label[-1], 1.0)
    digits = label.rstrip("KMBT").replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits) * scale, decimals + (round(math.log10(scale)) if scale > 1 else 0)


def _dates(text: str) -> set[str]:
    found = set(_ISO.findall(text))
    for m in _MONTH_DATE.findall(text):
        try:
            found.add(f"{pd.Timestamp(m.replace(',', '').replace('.', '')):%Y-%m-%d}")
        except ValueError:
            continue
    return found


def mentions(text: str | None, items: Iterable[str], category: str) -> set[str]:
    """The items of ``category`` that ``text`` names."""
    text = text or ""
    items = list(items)
    if category == "time":
        return set(items) & _dates(text)
    if category == "price":
        numbers = [_value(m) for m in _NUMBER.findall(text)]
        named = set()
        for item in items:
            value, decimals = _value(item)
            if any(round(n, decimals) == round(value, decimals) for n, _ in numbers):
                named.add(item)
        return named
    if category == "degree":
        words = set(re.findall(r"[a-z]+", text.lower()))
        return {i for i in items if words & set(_FRAMES.get(i.lower(), (i.lower(),)))}
    raise ValueError(f"unknown metadata category {category!r}; known: {CATEGORIES}")


def _length(text: str | None) -> int:
    return max(1, len((text or "").split()))


def iou(candidate: str | None, reference: str, metadata: dict[str, Sequence[str]], categories: Sequence[str] = CATEGORIES,
        epsilon: float = 0.01) -> float:
    """Eq. 1 over the items of ``categories``; 0 when the chart has none of them."""
    named_c = sum(len(mentions(candidate, metadata.get(c, []), c)) for c in categories)
    named_r = sum(len(mentions(reference, metadata.get(c, []), c)) for c in categories)
    return math.log(1 + (named_c / _length(candidate)) / (named_r / _length(reference) + epsilon))
