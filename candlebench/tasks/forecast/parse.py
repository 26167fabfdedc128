"""Parse the forecast score out of a model response (Hu et al. 2026, Appendix B).

The forecast prompt asks for one number in [-0.5, 1.0], the expected 30-day return, "rounded to
three decimal places and enclosed within a <score> tag, without any additional text". The paper
parses answers in three regex tiers -- the ``<score>`` tag, then a confidence interval (first
value), then a scan of the whole response for floats inside the valid range -- and keeps what it
cannot parse for error analysis. :func:`parse_score` implements those tiers; the table below fixes
every choice the paper leaves open. It never raises and never changes its input: the caller keeps
the raw response next to the :class:`ParsedScore` (that is the "preserved in original form" part).

Rules, applied in this order (``lo``/``hi`` default to -0.5/1.0; the first tier that yields a
value wins; ``reason`` joins all flags with "; ")::

    | #  | Situation                                    | Rule                                                      | tier / reason flag                       |
    |----|----------------------------------------------|-----------------------------------------------------------|------------------------------------------|
    | 1  | None, "", only whitespace (also non-str)     | nothing to parse                                          | none / "empty response"                  |
    | 2  | HTML entities, full-width / compatibility    | html.unescape then NFKC ("０.１２" -> "0.12", "＜score＞" | (silent)                                 |
    |    | characters, U+2212 minus, hyphen/en dashes,  | -> "<score>", "：" -> ":"); U+2212, U+2010-U+2013 -> "-"; |                                          |
    |    | zero-width spaces                            | U+200B-U+200D, U+2060, U+FEFF removed. Em dash is kept.   |                                          |
    | 3  | <think>/<thinking>/<reasoning> blocks        | closed blocks are cut out; a stray closing tag (template  | (silent)                                 |
    |    |                                              | put the opener in the prompt: Qwen3, DeepSeek-R1, QwQ)    |                                          |
    |    |                                              | cuts everything before it; an opener never closed cuts    | "unclosed <think> block"                 |
    |    |                                              | everything after it (reasoning truncated by max_tokens).  |                                          |
    |    |                                              | Only the remaining answer text goes through tiers 1-3.    |                                          |
    | 4  | Code fences                                  | ``` markers (with any language tag) are deleted           | (silent)                                 |
    | 5  | Tag syntax                                   | case-insensitive, blanks allowed: <score>, <Score >,      | tag                                      |
    |    |                                              | < score >, </ SCORE>. Leading '+', ".5", "-.2" accepted.  |                                          |
    | 6  | Tag never closed (truncation): "<score>0.1"  | body runs to the next <score> opener or end of text       | tag / "unclosed score tag"               |
    | 7  | Several tags with a number                   | the LAST one (final answer after drafts / format echoes)  | tag / "multiple score tags (n); took     |
    |    |                                              |                                                           | the last"                                |
    | 8  | Tags present but none holds a number         | NO fall-through to tiers 2-3: the answer slot was used    | none / "score tag without a number"      |
    |    | (<score>N/A</score>, <score></score>,        | for a non-answer, and scanning would pick up prices or MA |                                          |
    |    | echoed "<score>numeric value</score>")       | values from the reasoning. Kept for error analysis.       |                                          |
    | 9  | Tag body: value                              | the FIRST number in the body (integers allowed: "0", "1") | tag                                      |
    | 10 | Tag body is not just the number              | still the first number; markdown * ` and quotes around    | tag / "extra text in score tag"          |
    |    |                                              | the number alone do not count as extra text               |                                          |
    | 11 | Tag body is an interval ("[0.05, 0.15]",     | first number of the interval (paper), or the centre of    | interval                                 |
    |    | "0.05 to 0.15", "-0.05--0.02", "0.1 ± 0.05") | "x ± d"                                                   |                                          |
    | 12 | Percent in the tag: "<score>12%</score>"     | divided by 100 -> 0.12 (the prompt asks for a fraction;   | tag / "percent converted"                |
    |    |                                              | "12%" can only mean a 12% return)                         |                                          |
    | 13 | Comma decimal: "<score>0,125</score>"        | only when the whole body is one "d,ddd" number (a single  | tag / "comma decimal separator"          |
    |    |                                              | digit before the comma: read as thousands it would be far |                                          |
    |    |                                              | out of range anyway); anywhere else a comma separates     |                                          |
    |    |                                              | numbers, and "1,250.5" is never read as 1                 |                                          |
    | 14 | Value outside [lo, hi] from tier 1 or 2      | value kept, in_range=False. Scoring clips every flagged   | tag|interval / "out of range [lo, hi]"   |
    |    | ("<score>1.5</score>", "<score>12</score>")  | out-of-range value to [lo, hi] and reports how many it    |                                          |
    |    |                                              | clipped; an integer is never re-read as a percentage      |                                          |
    | 15 | No tag; an interval in the free text:        | the LAST interval whose two ends both lie in [lo, hi],    | interval                                 |
    |    | "[0.05, 0.15]", "(0.05, 0.15)", "0.05 to     | are in order (a <= b) and at least one has a decimal      |                                          |
    |    | 0.15", "0.05 ~ 0.15", "0.05-0.15", "0.05至   | point (so prices "from 12.5 to 13.2", dates "2024-01-15", |                                          |
    |    | 0.15", "between 0.05 and 0.15", "0.1 ± 0.05" | reversed "from 0.48 to 0.42" price moves never count).    |                                          |
    |    |                                              | Value = the first number of the interval expression: a    |                                          |
    |    |                                              | point estimate written right before it ("0.08 (0.02,      |                                          |
    |    |                                              | 0.12)", "0.08 (95% CI: 0.02-0.12)") or the centre of ±,   |                                          |
    |    |                                              | else the lower end. Percentages are not interval ends.    |                                          |
    | 15a| A point estimate labelled as the answer      | the labelled point wins ("Score: 0.42, confidence        | scan / "labelled point estimate before   |
    |    | (rule 17's labels) before that interval      | interval [0.30, 0.55]" is 0.42, not 0.30): the interval   | an interval"                             |
    |    |                                              | is its uncertainty, not the answer                        |                                          |
    | 16 | No tag, no interval: scan                    | candidates = decimals WITH a '.' inside [lo, hi]; not     | scan                                     |
    |    |                                              | integers, dates, percentages ("5%", "0.5 %"), currency    |                                          |
    |    |                                              | ("$0.12"), parts of words ("MA20", "Qwen2.5", "1.5x").    |                                          |
    |    |                                              | Values outside [lo, hi] are ignored (paper).              |                                          |
    | 17 | Scan finds several different candidates      | the last one labelled as the answer (score / answer /     | scan / "several candidates; took the     |
    |    |                                              | prediction / forecast / expected return / 得分 / 分数 /   | last labelled" or "several candidates;   |
    |    |                                              | 评分, e.g. {"score": 0.12, "confidence": 0.8}), else the  | took the last"                           |
    |    |                                              | last one: the prompt asks for the answer alone, so a      |                                          |
    |    |                                              | model that adds prose reasons first and concludes last.   |                                          |
    | 18 | JSON / "Score: 0.12" / prose with one number | handled by the scan (rules 16-17); no extra tier          | scan                                     |
    | 19 | Nothing found in the answer text, but the    | the last numeric <score> tag inside the reasoning is the  | tag / "score tag found only inside       |
    |    | reasoning holds a numeric <score> tag        | answer (the model put its answer inside <think>)          | reasoning block"                         |
    | 20 | Nothing found at all                         | value None                                                | none / "no score found" (+ "looks like a |
    |    |                                              |                                                           | refusal" when it reads like one; "empty  |
    |    |                                              |                                                           | answer after reasoning block" when only  |
    |    |                                              |                                                           | reasoning was produced)                  |
    | 21 | Negative zero ("-0.000")                     | returned as 0.0                                           | (silent)                                 |
    | 22 | Huge digit strings ("<score>9999...</score>",| float() gives inf, which no score means and no metric     | none / "not a finite number"             |
    |    | 309 digits and more)                         | can hold: no answer                                       |                                          |

The answer exactly as the prompt asks for it — ASCII, one ``<score>NUM</score>`` with nothing but
whitespace around it and inside the tag, NUM a plain decimal — is read directly: rules 1-22 give
it tier "tag", its value and no flag but rule 14's, and skipping the normalisation and the scans
parses such an answer about 6x faster (100k: 0.41 s against 2.6 s), which matters as ``score``
judges every stored answer again (most answers of an instruction-following model are that). A
property test checks it against the rules on every such form.

Invariants (property-tested): ``value is None`` iff ``tier == "none"``; ``in_range`` is
``value is not None and lo <= value <= hi``; ``tier == "none"`` always has a reason; tiers "scan"
and free-text "interval" only ever return in-range values.

Not supported, on purpose: exponent notation ("1e-2"), comma decimals outside a lone tag body,
spelled-out numbers, percentages outside a tag.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final, Literal

from candlebench.task_api.answer_text import THINK_MARK, normalise, split_reasoning, strip_fences
from candlebench.task_api.base import REASONING_CUT

__all__ = ["TIERS", "ParsedScore", "Tier", "parse_by_rules", "parse_score"]

Tier = Literal["tag", "interval", "scan", "none"]
TIERS: Final[tuple[Tier, ...]] = ("tag", "interval", "scan", "none")


# The flag of rule 3's unclosed reasoning block (the metrics count it).

# The answer range the prompt states: one place for the parser, the metrics and the baselines.
SCORE_MIN, SCORE_MAX = -0.5, 1.0


@dataclass(frozen=True)
class ParsedScore:
    """One parsed response.

    ``value`` is None when nothing could be parsed; ``reason`` is None for a clean parse and
    otherwise says why it failed or what was flagged; ``in_range`` is False when ``value`` is None.
    """

    value: float | None
    tier: Tier
    reason: str | None
    in_range: bool


# --------------------------------------------------------------------------------------------
# Regular expressions
# --------------------------------------------------------------------------------------------

# Number bodies. Signs attach only when the sign is not itself glued to a digit on its left
# (the left boundary below), so "0.05-0.15" reads as 0.05 and 0.15, and "-0.05--0.02" as
# -0.05 and -0.02.
_SIGNED: Final = r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)"
_DECIMAL: Final = r"[+-]?(?:\d+\.\d+|\.\d+)"
# Not part of a word, identifier or longer number on either side ("MA20", "Qwen2.5", "15.01.2024",
# "1.5x"); ASCII classes so that Chinese text glued to a number ("为0.08") does not hide it.
_LEFT: Final = r"(?<![A-Za-z0-9_.])"
_RIGHT: Final = r"(?![A-Za-z0-9_]|\.\d|,\d{3}(?!\d))"
_NO_PCT: Final = r"(?!\s*%)"
_NO_CURRENCY: Final = r"(?<![$€£¥])"

_TAG_NUMBER: Final = re.compile(_LEFT + r"(?P<num>" + _SIGNED + r")" + _RIGHT + r"(?P<pct>\s*%)?")
_BARE_BODY: Final = re.compile(r"[\s*`\"']*" + _SIGNED + r"(?:\s*%)?[\s*`\"'.]*")
_COMMA_DECIMAL_BODY: Final = re.compile(r"[\s*`\"']*(?P<num>[+-]?\d,\d+)(?P<pct>\s*%)?[\s*`\"'.]*")
_SCAN_NUMBER: Final = re.compile(_LEFT + _NO_CURRENCY + r"(?P<num>" + _DECIMAL + r")" + _RIGHT + _NO_PCT)

_TAG: Final = re.compile(
    r"<\s*score\s*>(?P<body>.*?)(?:(?P<close><\s*/\s*score\s*>)|(?=<\s*score\s*>)|\Z)",
    re.IGNORECASE | re.DOTALL,
)

# The answer as the prompt asks for it (see the module's note); anything else goes through the rules.
_AS_ASKED: Final = re.compile(r"\s*<score>\s*([+-]?(?:\d+\.\d+|\d+|\.\d+))\s*</score>\s*")


def _interval_patterns(end: str) -> tuple[re.Pattern[str], ...]:
    """Interval shapes with groups ``a`` and ``b``; ``end`` constrains what may follow a number."""
    a = _LEFT + r"(?P<a>" + _SIGNED + r")" + _RIGHT + end
    b = r"(?P<b>" + _SIGNED + r")" + _RIGHT + end
    return (
        re.compile(r"\bbetween\s+" + a + r"\s+and\s+" + b, re.I),
        re.compile(r"[\[(]\s*" + a + r"\s*[,;]\s*" + b + r"\s*[\])]"),
        re.compile(a + r"\s*(?P<pm>±|\+/-|\+-)\s*" + b),
        re.compile(a + r"(?:\s*(?:-|~|\.\.\.?|…|至|到)\s*|\s+to\s+)" + b, re.I),
    )


_TEXT_INTERVALS: Final = _interval_patterns(_NO_PCT)
_BODY_INTERVALS: Final = _interval_patterns(r"(?:\s*%)?")

# A point estimate written just before an interval: "0.08 (0.02, 0.12)", "0.08 [95% CI: 0.02-0.12]".
_POINT_BEFORE: Final = re.compile(
    _LEFT + r"(?P<p>" + _DECIMAL + r")" + _RIGHT + _NO_PCT
    + r"\s*(?:[(\[]\s*(?:\d{1,2}(?:\.\d+)?\s*%\s*)?"
    r"(?:ci|confidence\s+interval|interval|range)?\s*[:=]?\s*)?\Z",
    re.I,
)
# A label right before a scanned number: '"score": 0.12', "Score is about 0.12", "得分：0.15".
_LABEL_BEFORE: Final = re.compile(
    r"(?:score|answer|prediction|forecast|expected(?:\s+30-day)?\s+return|得分|分数|评分)"
    r"(?:[\s\"'*:=~≈]|is|of|about|approximately|around|roughly|为|是|约)*\Z",
    re.I,
)
_REFUSAL: Final = re.compile(
    r"\b(?:cannot|can't|can not|unable|not able|not possible|won't|sorry|as an ai|"
    r"not (?:provide|give) financial advice|impossible to predict)\b|无法|不能",
    re.I,
)


# --------------------------------------------------------------------------------------------
# Small pure helpers
# --------------------------------------------------------------------------------------------


def _to_float(token: str) -> float:
    return float(token) + 0.0  # + 0.0 turns -0.0 into 0.0


def _has_point(token: str) -> bool:
    return "." in token


def _in_range(value: float, lo: float, hi: float) -> bool:
    return lo <= value <= hi


def _is_interval(body: str) -> bool:
    return any(p.search(body) for p in _BODY_INTERVALS)


def _parse_body(body: str) -> tuple[float, list[str], bool] | None:
    """First number of a tag body -> (value, flags, is_interval), or None without a number."""
    comma = _COMMA_DECIMAL_BODY.fullmatch(body)
    if comma:
        value = _to_float(comma.group("num").replace(",", "."))
        flags = ["comma decimal separator"]
        if comma.group("pct"):
            value, flags = value / 100, [*flags, "percent converted"]
        return value, flags, False
    first = _TAG_NUMBER.search(body)
    if first is None:
        return None
    value = _to_float(first.group("num"))
    flags: list[str] = []
    if first.group("pct"):
        value /= 100
        flags.append("percent converted")
    interval = _is_interval(body)
    if not interval and not _BARE_BODY.fullmatch(body):
        flags.append("extra text in score tag")
    return value, flags, interval


def _numeric_tags(text: str) -> tuple[int, list[tuple[float, list[str], bool]]]:
    """Count of tags, and the parsed (value, flags, is_interval) of those holding a number."""
    count, parsed = 0, []
    for m in _TAG.finditer(text):
        count += 1
        body = _parse_body(m.group("body"))
        if body is not None:
            value, flags, interval = body
            if m.group("close") is None:
                flags = ["unclosed score tag", *flags]
            parsed.append((value, flags, interval))
    return count, parsed


def _text_interval(text: str, lo: float, hi: float) -> tuple[int, float] | None:
    """(start, first value) of the last acceptable free-text interval (rule 15), or None."""
    best: tuple[int, float] | None = None
    for pattern in _TEXT_INTERVALS:
        for m in pattern.finditer(text):
            a_tok, b_tok = m.group("a"), m.group("b")
            a, b = _to_float(a_tok), _to_float(b_tok)
            if not (_has_point(a_tok) or _has_point(b_tok)):
                continue
            if "pm" in m.groupdict() and m.group("pm"):
                ok, value = _in_range(a, lo, hi) and b >= 0, a
            else:
                ok, value = _in_range(a, lo, hi) and _in_range(b, lo, hi) and a <= b, a
                point = _POINT_BEFORE.search(text, max(0, m.start() - 80), m.start())
                if ok and point and _in_range(_to_float(point.group("p")), lo, hi):
                    value = _to_float(point.group("p"))
            if ok and (best is None or m.start() >= best[0]):
                best = (m.start(), value)
    return best


def _labelled_point_before(text: str, end: int, lo: float, hi: float) -> float | None:
    """The last in-range decimal labelled as the answer that starts before ``end`` (rule 15a)."""
    found = None
    for m in _SCAN_NUMBER.finditer(text, 0, end):
        value = _to_float(m.group("num"))
        if _in_range(value, lo, hi) and _LABEL_BEFORE.search(text, max(0, m.start() - 60), m.start()):
            found = value
    return found


def _scan(text: str, lo: float, hi: float) -> tuple[float, str | None] | None:
    """Last in-range decimal, preferring labelled ones (rules 16-17), or None."""
    found: list[tuple[float, bool]] = []
    for m in _SCAN_NUMBER.finditer(text):
        value = _to_float(m.group("num"))
        if _in_range(value, lo, hi):
            labelled = _LABEL_BEFORE.search(text, max(0, m.start() - 60), m.start()) is not None
            found.append((value, labelled))
    if not found:
        return None
    if len({v for v, _ in found}) == 1:
        return found[-1][0], None
    labelled = [v for v, is_labelled in found if is_labelled]
    if labelled:
        return labelled[-1], "several candidates; took the last labelled"
    return found[-1][0], "several candidates; took the last"


def _result(value: float | None, tier: Tier, flags: list[str], lo: float, hi: float) -> ParsedScore:
    if value is not None and not math.isfinite(value):  # rule 22: stored, inf would break every mean and report
        return ParsedScore(None, "none", "; ".join([*flags, "not a finite number"]), False)
    in_range = value is not None and _in_range(value, lo, hi)
    if value is not None and not in_range:
        flags = [*flags, f"out of range [{lo}, {hi}]"]
    return ParsedScore(value, tier, "; ".join(flags) or None, in_range)


def _parse_answer(text: str, lo: float, hi: float) -> ParsedScore:
    """Tiers 1-3 on answer text (reasoning already removed)."""
    count, tags = _numeric_tags(text)
    if tags:
        value, flags, interval = tags[-1]
        if len(tags) > 1:
            flags = [f"multiple score tags ({len(tags)}); took the last", *flags]
        return _result(value, "interval" if interval else "tag", flags, lo, hi)
    if count:
        return _result(None, "none", ["score tag without a number"], lo, hi)
    interval = _text_interval(text, lo, hi)
    if interval is not None:
        point = _labelled_point_before(text, interval[0], lo, hi)
        if point is not None and point != interval[1]:  # equal: rule 15's point written right before it
            return _result(point, "scan", ["labelled point estimate before an interval"], lo, hi)
        return _result(interval[1], "interval", [], lo, hi)
    scanned = _scan(text, lo, hi)
    if scanned is not None:
        return _result(scanned[0], "scan", [scanned[1]] if scanned[1] else [], lo, hi)
    flags = ["no score found"]
    if _REFUSAL.search(text):
        flags.append("looks like a refusal")
    return _result(None, "none", flags, lo, hi)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def parse_score(text: str | None, lo: float = SCORE_MIN, hi: float = SCORE_MAX) -> ParsedScore:
    """Parse a forecast response into a :class:`ParsedScore` following the module's rule table.

    Never raises for ``str`` or ``None`` input; any other type is reported as tier "none".
    """
    if isinstance(text, str) and text.isascii():
        as_asked = _AS_ASKED.fullmatch(text)
        if as_asked is not None:
            return _result(_to_float(as_asked.group(1)), "tag", [], lo, hi)
    return parse_by_rules(text, lo, hi)


def parse_by_rules(text: str | None, lo: float = SCORE_MIN, hi: float = SCORE_MAX) -> ParsedScore:
    """:func:`parse_score` by the rule table alone, for every text (the reference of its fast path)."""
    if text is None:
        return _result(None, "none", ["empty response"], lo, hi)
    if not isinstance(text, str):
        return _result(None, "none", [f"non-text response ({type(text).__name__})"], lo, hi)
    if not text.strip():
        return _result(None, "none", ["empty response"], lo, hi)

    normalised = normalise(text)
    answer, reasoning, unclosed = split_reasoning(normalised)
    answer = strip_fences(answer)
    pre = [REASONING_CUT] if unclosed else []

    if answer:
        parsed = _parse_answer(answer, lo, hi)
        if parsed.tier != "none" or parsed.reason == "score tag without a number":
            flags = [*pre, parsed.reason] if parsed.reason else pre
            return ParsedScore(parsed.value, parsed.tier, "; ".join(flags) or None, parsed.in_range)
    else:
        parsed = None

    _, reasoning_tags = _numeric_tags(reasoning)
    if reasoning_tags:
        value, flags, interval = reasoning_tags[-1]
        flags = [*pre, "score tag found only inside reasoning block", *flags]
        return _result(value, "interval" if interval else "tag", flags, lo, hi)
    if parsed is None:
        empty = "empty answer after reasoning block" if THINK_MARK.search(normalised) else "empty response"
        return _result(None, "none", [*pre, empty], lo, hi)
    return _result(None, "none", [*pre, parsed.reason or "no score found"], lo, hi)
