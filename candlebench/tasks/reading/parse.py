"""Parse a reading answer: one JSON object of question -> answer (tasks/reading/questions.py).

Models wrap the object in prose or code fences, answer some questions only, write single quotes,
trailing commas or full-width punctuation, put "Bullish Engulfing" for ``bullish_engulfing`` or
answer in Chinese words. Rules, in this order; never raises::

    | # | Situation                                   | Rule                                                      | tier / reason           |
    |---|---------------------------------------------|-----------------------------------------------------------|-------------------------|
    | 1 | None, "", whitespace                        | nothing to parse                                          | none / "empty response" |
    | 2 | full-width characters, curly quotes,        | NFKC, curly quotes straight; reasoning blocks cut as the  | (silent) / "unclosed    |
    |   | <think> blocks, code fences                 | forecast parser does (an unclosed one cuts the rest);     | <think> block"          |
    |   |                                             | fences removed                                            |                         |
    | 3 | JSON objects anywhere (also nested under    | each object's readable answers; the object with the most  | json                    |
    |   | "answer"/"answers")                         | wins, the last on a tie (a format echo comes first)       |                         |
    | 4 | none decodes: single quotes, trailing       | the same, after repairing those                           | lenient                 |
    |   | commas, unquoted keys                       |                                                           |                         |
    | 5 | "key: value" lines (a question's key, then  | each key's first value                                    | lines                   |
    |   | ":", "=" or "-")                            |                                                           |                         |
    | 6 | a value no rule reads ("above|below" echoed,| that question unanswered (scored wrong); the keys named  | (tier) / "unreadable:   |
    |   | "maybe", an out-of-range count)             | in the reason                                             | cross, ..."             |
    | 7 | nothing readable                            | answer None                                               | none / "no answer to    |
    |   |                                             |                                                           | any question"           |

Values (case-insensitive; a value naming two answers, as an echoed choice list does, is unreadable)::

    ma5/ma20/ma90      above: above, over, higher, 上方, 之上, 高于, 站上;  below: below, under, lower, 下方, 之下, 低于, 跌破
    highest, lowest,   one letter A-D ("B", "(B)", "B.", "bar B", "选B"); change: A-E
    max_volume, change
    highest_close      a positive number ("12.5", 12.5, "1,234.5", "about 12.5")
    cross              golden: golden, bullish, crossed above, up, 金叉, 上穿, 向上;  death: death, bearish, crossed
                       below, down, 死叉, 下穿, 向下;  none: none, no, false, no cross, 无, 没有, 否
    up_candles         an integer 0-10 (7, "7", 7.0, "7 candles", "7根", "seven", "七根")
    volume_above_mean  yes: yes, true, above, 是, 高于;  no: no, false, below, 否, 低于
    pattern            doji (十字); hammer (锤); bullish_engulfing / bearish_engulfing ("engulfing" with bull / 看涨 /
                       阳 or bear / 看跌 / 阴; 吞没); none (no pattern, 无)

Invariants (tested): ``answer is None`` iff ``tier == "none"``; ``none`` always has a reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from candlebench.task_api.base import REASONING_CUT
from candlebench.task_api.answer_text import normalise, split_reasoning, strip_fences
from candlebench.tasks.reading.questions import CHOICES, NUMERIC, QUESTIONS, RECENT

_WORDS: Final[dict[str, dict[str, str]]] = {
    "position": {"above": r"above|over|higher|上方|之上|高于|站上", "below": r"below|under|lower|下方|之下|低于|跌破"},
    "cross": {"golden": r"golden|bullish|crossed above|cross(?:es|ed)? up|\bup\b|upward|金叉|上穿|向上",
              "death": r"death|dead|bearish|crossed below|cross(?:es|ed)? down|\bdown\b|downward|死叉|下穿|向下",
              "none": r"\bnone\b|^no\b|false|no cross|did not|didn't|无|没有|否"},
    "yes_no": {"yes": r"\byes\b|true|above|是|高于", "no": r"\bno\b|false|below|否|低于"},
    "pattern": {"doji": r"doji|十字", "hammer": r"hammer|锤",
                "bullish_engulfing": r"bull\w*[\s_-]*engulf|engulf\w*[\s_(-]*bull|看涨吞没|阳包阴|bullish_engulfing",
                "bearish_engulfing": r"bear\w*[\s_-]*engulf|engulf\w*[\s_(-]*bear|看跌吞没|阴包阳|bearish_engulfing",
                "none": r"\bnone\b|no pattern|无|没有"},
}
_KIND: Final = {"ma5": "position", "ma20": "position", "ma90": "position", "cross": "cross",
                "volume_above_mean": "yes_no", "pattern": "pattern"}
_PATTERNS: Final = {kind: {answer: re.compile(words, re.I) for answer, words in table.items()}
                    for kind, table in _WORDS.items()}
_LETTER: Final = re.compile(r"(?<![A-Za-z])([A-Ea-e])(?![A-Za-z])")
_NUMBER: Final = re.compile(r"(?<![\d.])\d+(?:,\d{3})*(?:\.\d+)?")
# Counts written as words ("two", "两根"): up_candles is 0-10.
_COUNT_WORDS: Final = {w: i for i, words in enumerate(
    ("zero|none|零", "one|一", "two|二|两", "three|三", "four|四", "five|五", "six|六", "seven|七", "eight|八", "nine|九",
     "ten|十")) for w in words.split("|")}
_COUNT_WORD: Final = re.compile(r"(?<![a-z])(" + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True)) + r")(?![a-z])", re.I)
_QUOTES: Final = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})
_DECODER: Final = json.JSONDecoder(strict=False)
_LINE: Final = re.compile(r"\b(" + "|".join(QUESTIONS) + r")\b[\"'*`]*\s*[:=-]", re.I)
# A line's value ends at the next key, a line's end, ";" or "}", or a comma that does not group thousands (1,234.5).
_VALUE_END: Final = re.compile(r"[\n;}]|,(?!\d{3})")


@dataclass(frozen=True)
class ReadingAnswer:
    answers: dict[str, Any] | None  # question -> its normalised answer; None when nothing was readable
    tier: str
    reason: str | None


def _choice(key: str, value: Any) -> str | None:
    if isinstance(value, bool):
        value = ("yes" if value else "no") if key == "volume_above_mean" else ("none" if not value else None)
        return value
    text = str(value).strip()
    if text.lower() in CHOICES[key]:
        return text.lower()
    if key in _KIND:
        found = {answer for answer, pattern in _PATTERNS[_KIND[key]].items() if pattern.search(text)}
        if key == "pattern" and found & {"bullish_engulfing", "bearish_engulfing"}:
            found -= {"none"}
        return found.pop() if len(found) == 1 else None
    letters = {m.group(1).upper() for m in _LETTER.finditer(text)}
    return letters.pop() if len(letters) == 1 and next(iter(letters)) in CHOICES[key] else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    found = _NUMBER.search(str(value))
    return None if found is None else float(found.group(0).replace(",", ""))


def read_value(key: str, value: Any) -> Any:
    """One answer as the judge compares it, or None when no rule reads it."""
    if NUMERIC.get(key) == "price":
        number = _number(value)
        return number if number is not None and number > 0 else None
    if NUMERIC.get(key) == "count":
        number = _number(value)
        word = _COUNT_WORD.search(value) if number is None and isinstance(value, str) else None
        number = _COUNT_WORDS[word.group(1).lower()] if word else number
        return int(number) if number is not None and number == int(number) and 0 <= number <= RECENT else None
    return _choice(key, value)


def _read(found: dict) -> tuple[dict[str, Any], list[str]]:
    """The readable answers of an object (its ``answer(s)`` member's when it nests them), and the keys unreadable."""
    for wrap in ("answers", "answer"):
        if isinstance(found.get(wrap), dict):
            found = found[wrap]
    keys = {str(k).strip().lower(): v for k, v in found.items()}
    answers, unreadable = {}, []
    for key in QUESTIONS:
        if key in keys:
            value = read_value(key, keys[key])
            (unreadable.append(key) if value is None else answers.__setitem__(key, value))
    return answers, unreadable


def _objects(text: str) -> list[dict]:
    found = []
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _repaired(text: str) -> str:
    text = re.sub(r"'([^'\n]*)'", r'"\1"', text)  # single quotes
    text = re.sub(r",\s*([}\]])", r"\1", text)  # trailing commas
    return re.sub(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:", r'\1"\2":', text)  # unquoted keys


def _best(objects: list[dict]) -> tuple[dict[str, Any], list[str]] | None:
    read = [_read(o) for o in objects]
    read = [r for r in read if r[0] or r[1]]
    return max(reversed(read), key=lambda r: len(r[0])) if read else None


def parse_answer(text: str | None) -> ReadingAnswer:
    if not isinstance(text, str) or not text.strip():
        return ReadingAnswer(None, "none", "empty response")
    answer, _, unclosed = split_reasoning(normalise(text).translate(_QUOTES))
    flags = [REASONING_CUT] if unclosed else []
    answer = strip_fences(answer)
    found, tier = _best(_objects(answer)), "json"
    if found is None:
        found, tier = _best(_objects(_repaired(answer))), "lenient"
    if found is None:
        lines: dict[str, str] = {}
        keys = list(_LINE.finditer(answer))
        for m, after in zip(keys, [*(k.start() for k in keys[1:]), len(answer)]):
            value = _VALUE_END.split(answer[m.end():after])[0]
            lines.setdefault(m.group(1).lower(), value.strip().strip("\"'*` "))
        found, tier = _read(lines), "lines"
    answers, unreadable = found
    if unreadable:
        flags.append("unreadable: " + ", ".join(unreadable))
    if not answers:
        return ReadingAnswer(None, "none", "; ".join([*flags, "no answer to any question"]))
    return ReadingAnswer(answers, tier, "; ".join(flags) or None)
