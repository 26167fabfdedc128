"""Step 1 of reading an answer: one token for every moving-average mention (``‹m5›``, lists
``‹m5+10+20›``, ``‹mall›``), after NFKC, lower case and Chinese numerals before 日."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from candlebench.tasks.e2a.claims.lexicon import words

# --- 1. normalisation --------------------------------------------------------------------------------

_CN_NUMBERS: Final = (("二百五十", "250"), ("一百二十", "120"), ("六十", "60"), ("三十", "30"), ("二十", "20"),
                      ("十", "10"), ("五", "5"))
_CN_NUMBER: Final = re.compile("(" + "|".join(cn for cn, _ in _CN_NUMBERS) + r")(?=\s*日)")
_DAY: Final = r"(?:\s*-?\s*(?:days?|d|period|sessions?)\b|\s*日)"
_MA_NOUN: Final = (r"(?:(?:simple|exponential|weighted)\s+)?(?:moving[- ]averages?|mas?\b|smas?\b|emas?\b|lines?\b|averages?\b)"
                   r"|(?:移动)?(?:平均线|均线)|线|ema|sma|ma")
_LIST_SEP: Final = r"\s*(?:,\s*(?:and|&)?|、|/|\band\b|&|\bor\b|和|与|及|以及|或)\s*(?:the\s+)?"
# "5-, 10- and 20-day moving averages", "5日和10日均线", "20-day SMA", "5日线". The patterns of this
# step start with a character and check what precedes it after it (above).
_PERIOD_LIST: Final = re.compile(
    r"(\d(?<![\d.]\d)\d{0,2})(?:-|" + _DAY + r")?(?:" + _LIST_SEP + r"(\d{1,3})(?:-|" + _DAY + r")?)*?" + _DAY
    + r"\s*(?:" + _MA_NOUN + r")")
# "MA5", "MA 5", "MA(20)", "SMA20", "EMA 5", "MA5均线"
_MA_PREFIXED: Final = re.compile(r"(?:sma(?<![a-z]sma)|ema(?<![a-z]ema)|wma(?<![a-z]wma)|ma(?<![a-z]ma))\s*(?:\(\s*(\d{1,3})\s*\)|(\d{1,3}))(?:\s*(?:均线|线|日均线))?(?![\d%]|\.\d)")
_MA_ALL: Final = re.compile(
    r"every (?:moving )?average\b|each (?:moving )?average\b|moving[- ]averages|" + words("mas")
    + r"|averages\b|all (?:three |two )?lines\b|both (?:three |two )?lines\b|"
    + "|".join(f"{which}均线(?:系统|组)?" for which in ("所有", "各条", "各", "全部", "短期", "中短期", "")))
# "the short MA is above the long MA", "短期均线在长期均线上方": the chart's shortest and longest averages.
_SHORT_LONG: Final = re.compile("|".join(
    rf"{side}(?:er)?(?:-term|\s+term)?\s+(?:moving\s+)?(?:ma|sma|ema|average|line)s?\b(?!\s*\()" for side in ("short", "long"))
    + "|短期均线|长期均线")
# "the short-term average (MA5)": the average named in brackets.
_NAMED_AVERAGE: Final = re.compile(r"(?:average|line|均线)\s*\(\s*(‹m\d+›)\s*\)")
# "the 5-day is above the 20-day": a bare period next to another, in a comparison.
_BARE_DAYS: Final = re.compile(r"(\d(?<=the \d)\d?)-day(?:(?= (?:is|has|was|stays|remains|moved|crossed|line)\b)"
                               r"|\b(?=[\s.,;]*$|[.,;]))")
# A list ends before a verb: in "above MA20 and MA5 remains above MA20" the second MA is a subject.
_TOKEN_LIST: Final = re.compile(r"‹m([\d+]+)›(?:" + _LIST_SEP + r"‹m([\d+]+)›(?!\s*(?:is|are|was|were|remains?|has|have|had|"
                                r"stays?|moved|crossed|sits?|trades?|dropped|fell|rose|turned|line|also|still|now)\b|\s*(?:位于|处于|运行|仍|已|也|上穿|下穿|"
                                r"高于|低于|在|向上|向下|拐头)))+")

_DIGITS: Final = re.compile(r"(?<![\d.])\d{1,3}(?![\d.])")
_TOKEN_PERIODS: Final = re.compile(r"‹m([\d+]+)›")


def _period_token(m: re.Match[str]) -> str:
    return " ‹m" + "+".join(_DIGITS.findall(m.group(0))) + "› "


def _merge_list(m: re.Match[str]) -> str:
    return " ‹m" + "+".join(_TOKEN_PERIODS.findall(m.group(0))) + "› "


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    if "日" in text:
        text = _CN_NUMBER.sub(lambda m: dict(_CN_NUMBERS)[m.group(1)], text)
    if "年线" in text:
        text = text.replace("半年线", "‹m120›").replace("年线", "‹m250›")
    text = _PERIOD_LIST.sub(_period_token, text)
    if "ma" in text:
        text = _MA_PREFIXED.sub(lambda m: f" ‹m{m.group(1) or m.group(2)}› ", text)
    if "short" in text or "long" in text or "期均线" in text:
        text = _SHORT_LONG.sub(lambda m: " ‹m5› " if m.group().startswith(("short", "短期")) else " ‹m20› ", text)
    if "(" in text and "‹" in text:
        text = _NAMED_AVERAGE.sub(r" \1 ", text)
    if "-day" in text:
        text = _BARE_DAYS.sub(lambda m: f" ‹m{m.group(1)}› ", text)
    if text.count("‹") > 1:
        text = _TOKEN_LIST.sub(_merge_list, text)
    return _MA_ALL.sub(" ‹mall› ", text) if "average" in text or "均线" in text or "mas" in text else text

