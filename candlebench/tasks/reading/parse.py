"""Parse a reading answer: one JSON object of question -> answer (tasks/reading/questions.py).

Models wrap the object in prose or code fences, answer some questions only, write single quotes,
trailing commas or full-width punctuation, put "Bullish Engulfing" for ``bullish_engulfing``,
answer in Chinese words, negate ("not above", 不高于), hedge ("6 or 7") or correct themselves
("above at first glance, but actually below"). The judge never gives credit for an answer the
text does not give: what it cannot read as exactly one answer is no answer, with the reason.
Rules, in this order; never raises::

    | #  | Situation                                  | Rule                                                     | tier / reason            |
    |----|--------------------------------------------|----------------------------------------------------------|--------------------------|
    | 1  | None, "", whitespace                       | nothing to parse                                         | none / "empty response"  |
    | 2  | full-width characters, curly quotes,       | NFKC, curly quotes straight; reasoning blocks cut as the | (silent) / "unclosed     |
    |    | <think> blocks, code fences                | forecast parser does (an unclosed one cuts the rest);    | <think> block"           |
    |    |                                            | fences removed                                           |                          |
    | 3  | JSON objects anywhere (also nested under   | per question, the LAST object that states it wins (a     | json                     |
    |    | "answer"/"answers"); nesting too deep or   | draft, then the final answer or a correction of one key);|                          |
    |    | numbers too long to decode are skipped     | a value echoing the format ("above|below", "<number>")   |                          |
    |    |                                            | states nothing                                           |                          |
    | 4  | none decodes: single quotes, trailing      | the same, after repairing those                          | lenient                  |
    |    | commas, unquoted keys, // comments         |                                                          |                          |
    | 5  | "key: value" lines (a question's key, then | per question, the LAST line wins ("Final answers:" after | lines                    |
    |    | ":", "=" or "-"; "ma5-ma20-ma90" is a      | a draft); a value runs to the line's end, the next key,  |                          |
    |    | value, no key)                             | ";" or "}", never only to a comma ("above at first       |                          |
    |    |                                            | glance, but actually below" is one value)                |                          |
    | 6  | a value no rule reads as one answer        | that question unanswered (scored wrong); the key and why | (tier) / "unreadable:    |
    |    |                                            | in the reason (value rules below)                        | cross (hedged), ..."     |
    | 7  | nothing readable                           | answer None                                              | none / "no answer to     |
    |    |                                            |                                                          | any question"            |

Values. A question either has ``questions.CHOICES[q]`` (its canonical answers) or is numeric
(``questions.NUMERIC``: a ``price`` or a ``count``); the rules are the same for every question of a kind,
so a new question parses with no new code::

    | #   | Value                                     | Rule                                                     | why unreadable           |
    |-----|-------------------------------------------|----------------------------------------------------------|--------------------------|
    | V1  | a choice as written ("below", "Below",    | that choice                                              |                          |
    |     | "Bearish Engulfing")                      |                                                          |                          |
    | V2  | a correction inside the value ("above at  | only the part after the last correction marker is read   |                          |
    |     | first glance, but actually below", "C,    | (when it names an answer): actually, in fact,            |                          |
    |     | wait, D", "hammer? no, a doji", 但实际上)  | correction, on second thought, on closer look, I mean,   |                          |
    |     |                                           | wait, "? no", 其实, 实际上, 更正, 修正, 应为, 应该是, 改为,|                          |
    |     |                                           | 仔细看. Not "but" alone: "below MA5 but above MA90" is   |                          |
    |     |                                           | about two lines, a hedge here (V5), never "above"        |                          |
    | V3  | words of an answer (table below), in      | each mention of an answer word is found, longest first;  |                          |
    |     | English or Chinese, anywhere in the value | one answer named (and not negated) is the answer         |                          |
    | V4  | negation: "not above", "isn't a hammer",  | a mention after a negator (not, no, never, n't, without, | "negated"                |
    |     | "no golden cross", 不高于, 未站上, 不在上方,| neither, nor, instead of, rather than; 不, 未, 没(有),   |                          |
    |     | 未出现金叉, 不是, "no golden or death      | 无, 非, 而非, 并未, 并不; a few words may come between:   |                          |
    |     | cross", 没有金叉或死叉, "not in the top    | "not a", "not in the", 不在, 未出现) is denied, and so is |                          |
    |     | third", "not at all above"                | one joined to it by or / nor / and / 或 / 和 / a comma.   |                          |
    |     |                                           | Denying all                                              |                          |
    |     |                                           | choices but one names that one ("not above" is below,    |                          |
    |     |                                           | 不是 is no, "no golden or death cross" is none); else no |                          |
    |     |                                           | answer. Denied too: a mention that what follows denies   |                          |
    |     |                                           | ("a golden cross has not formed", "a death cross was     |                          |
    |     |                                           | avoided", "the pattern does not hold", 金叉尚未出现, 看涨 |                          |
    |     |                                           | 吞没形态不成立), a value ending on a question and          |                          |
    |     |                                           | a bare denial ("above MA5? not really"). Tentative, a    | "hedged"                 |
    |     |                                           | hedge: nearly, almost, like, resembles, not + an adverb  |                          |
    |     |                                           | ("not significantly above"), -like, -ish; 接近, 即将,    |                          |
    |     |                                           | 类似, 像                                                  |                          |
    | V5  | two answers ("above or below", "B or C",  | a hedge or an echoed choice list: no answer              | "hedged"                 |
    |     | "golden|death|none", "B/C")               |                                                          |                          |
    | V6  | "cannot tell", "can't tell", "unclear",   | ``cannot_tell`` where the question's choices hold it     | "cannot tell"            |
    |     | "not sure", 无法判断, 看不出, 不确定        | (questions.CANNOT_TELL), else no answer; beside another  |                          |
    |     |                                           | answer, a hedge                                          |                          |
    | V7  | a name that is no choice ("inverted       | pattern names match exactly, with the synonyms below;    | "not a choice"           |
    |     | hammer", 倒锤头, "shooting star",         | a near name is another pattern, never the choice it      |                          |
    |     | "engulfing" with no direction)            | contains                                                 |                          |
    | V8  | a letter choice (A-E): "B", "(B)", "bar   | a capital letter standing alone; a lower-case one only   |                          |
    |     | B", "选B", "C (2019-11-28)", "D: +2% to   | as the whole value or after bar / option / 选. "A"       |                          |
    |     | +10%"; "a bar near the top", "N/A"        | opening a sentence before a lower-case word other than a |                          |
    |     |                                           | verb or preposition ("A strong bar", not "A is the       |                          |
    |     |                                           | highest") is the article; N/A names no bar A             |                          |
    | V9  | JSON true / false                         | yes / no where those are the choices; false is none where| "not a choice"           |
    |     |                                           | none is one; else no answer. null, lists of two or more, |                          |
    |     |                                           | objects: no answer (a one-item list is its item)         |                          |
    | V10 | a gloss in brackets: "Above (the MA90     | read without the brackets when the rest names one choice |                          |
    |     | line is below the price)", "看跌吞没（阴包  | and no bracket hedges (or, maybe, possibly, ?, 或, 可能)  |                          |
    |     | 阳）"                                      |                                                          |                          |
    | V11 | the question asked back: "Is the last     | a sentence ending in "?" that asks (opens with is, does, |                          |
    |     | close above or below MA5? Below.",        | which, how ...; holds 是否, 还是, 吗, 哪, 几) or names two |                          |
    |     | 成交量是否高于均量？否                      | answers is left out; "A? or B?" stays, a hedge            |                          |
    | N1  | a price: 931, "1,091.00", "约1204元",     | the one number in the value, after dates (2019-11-28,    | "no number" / "not a     |
    |     | "approximately PHP 397", "2.0127e+12"     | 11/28, 11月28日), MA names (MA20), percentages and bar    | price" (<= 0)            |
    |     |                                           | references ("bar 24", 第24根) are set aside; scientific  |                          |
    |     |                                           | notation is read as its value, a scale after it too      |                          |
    |     |                                           | (1.2k, 12.3万, million, 亿); > 0                          |                          |
    | N2  | a count: 6, "6根", "seven", "七根", "4 of | the one whole number counted: a window ("of the last 10  | "no number" / "not a     |
    |     | 10", "of the last 10 bars, 6 closed up",  | bars", "out of 10", "6/10", 十根中, 最近10根) is the size | count" (a fraction, < 0, |
    |     | 十根中有六根                               | of what was counted, never the count; number words in    | > 1,000)                 |
    |     |                                           | English and Chinese; 0 to 1,000                          |                          |
    | N3  | two numbers: "6 or 7", "5-7", "104 to     | a hedge, a range between values or a bound: no answer    | "hedged"                 |
    |     | 106", "six or seven", "6或7根"; a bound:  |                                                          |                          |
    |     | "at least 5", "more than 6", 至少4根, 4根以上|                                                          |                          |
    | N4  | NaN, Infinity, 1e999, 309 digits          | no finite number: no answer (nothing stored is           | "not a finite number"    |
    |     |                                           | non-finite)                                              |                          |

Answer words (case-insensitive; each answer also reads its canonical string, ``_`` as a space; an
answer reads a second answer's words where that one is not a choice of the question: yes reads
above's, no below's)::

    above              above, higher, 上方, 之上, 高于, 超过, 站上, 站在...上  (not "over": "over the last bars")
    below              below, under, beneath, lower, 下方, 之下, 低于, 跌破
    yes / no           yes, true, 是 (not before another Chinese character: 是高于 is read by 高于), 是的 /
                       no, false, 否, 不是; and 不 as the whole value
    golden / death     golden cross, golden, bullish cross(over), crossed (over) above, crossed up, 金叉, 上穿, 向上穿(过|越)
                       / death cross, dead cross, death, bearish cross(over), crossed (over) below/under, crossed
                       down, 死叉, 下穿, 向下穿(过|越)
    none               none, no cross(over|ing), did not / didn't / has not cross(ed), no pattern, no clear /
                       particular / notable / recognizable pattern, nothing, 没有(发生|出现|形成)交叉, 无交叉, 未交叉,
                       无明显形态, 没有明显形态, 无形态; and "no", 无, 没有 as the whole value
    doji               doji (any: dragonfly, gravestone, long-legged, doji star), 十字星, 十字线, 十字
    hammer             hammer, 锤子线, 锤头线, 锤子, 锤头  (NOT inverted hammer, 倒锤头, hanging man: other patterns)
    bullish_engulfing  bullish engulfing, engulfing (bullish), 看涨吞没, 阳包阴, 多头吞没, 看涨吞噬
    bearish_engulfing  bearish engulfing, engulfing (bearish), 看跌吞没, 阴包阳, 空头吞没, 看跌吞噬
    up / down          up, upward(s), higher, rose, risen, rising, increased, bullish, closed up, 上涨, 上升, 走高, 更高,
                       高于, 收涨, 收阳, 阳线 / down, downward(s), lower (not "lower shadow"), fell, fallen, falling,
                       decreased, bearish, closed down, 下跌, 下降, 走低, 更低, 低于, 收跌, 收阴, 阴线. Colour names
                       (green, red) are no answer: the palette (green_up or red_up) is a render setting the judge
                       does not see
    rising / falling   rising, rises, rose, risen, up, upward(s), sloping up, increasing, turning up, 上升, 上行, 向上,
                       上扬, 走高, 抬头 / falling, falls, fell, fallen, down, downward(s), sloping down, declining,
                       decreasing, turning down, 下降, 下行, 向下, 下滑, 走低
    top / middle /     top (third), upper third / part, near the high, 上部, 顶部, 上段, 上(方)三分之一, 最上 /
    bottom             middle, mid, centre, center, 中部, 中间, 中段, 中(间)三分之一 / bottom (third), lower third /
                       part, near the low, 底部, 下部, 下段, 下(方)三分之一, 最下  ("upper half" names none: it
                       holds the top and the middle third)
    ma_order           the three lines top to bottom as in the prompt, case and spaces free: "MA5 > MA20 > MA90",
                       "ma5, ma20, ma90", "MA5 - MA20 - MA90", "MA5 → MA20 → MA90", "MA5 then MA20 then MA90";
                       or bottom to top with "<": "MA90 < MA20 < MA5". Two lines only name no order
    yes / no (frames)  also the same way / direction, agree, 一致, 同向, 同涨, 同跌 / opposite (ways), different
                       directions, disagree, 不一致, 相反, 背离 ("the same" alone is no answer: "about the same as
                       the mean" answers no volume question)
    cannot_tell        cannot / can't tell, cannot determine, unable to tell, unclear, not sure, uncertain, not drawn /
                       shown / visible / displayed, not applicable, N/A, 无法判断, 无法确定, 看不出, 看不清, 不确定,
                       不清楚, 难以判断, 未画出, 没有画出, 未显示, 没有显示, 看不到, 图中没有, 不在图中
    not a choice       (where up / down or rising / falling is asked) flat, sideways, unchanged, 横盘, 走平, 持平;
                       (where a pattern is asked) inverted hammer, 倒锤头/倒锤子/倒锤, hanging man, 吊颈线, 上吊线,
                       shooting star, 射击之星, 流星, spinning top, 纺锤, harami, 孕线, marubozu, 光头光脚, morning /
                       evening (doji) star, 启明星, 黄昏星, abandoned baby, piercing, dark cloud; "engulfing", 吞没,
                       吞噬, 穿头破脚 without a direction

Invariants (tested): ``answer is None`` iff ``tier == "none"``; ``none`` always has a reason; no
answer value is a non-finite number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Final

from candlebench.task_api.answer_text import json_objects, normalise, split_reasoning, strip_fences
from candlebench.task_api.base import REASONING_CUT
from candlebench.tasks.reading.questions import CANNOT_TELL, CHOICES, MA_ORDERS, NUMERIC, QUESTIONS

MAX_COUNT: Final = 1000  # no chart draws more bars: a larger "count" is no count

def _word(pattern: str) -> str:
    return rf"(?<![A-Za-z]){pattern}(?![A-Za-z])" if pattern.isascii() else pattern


def _order_words(order: str) -> tuple[str, str]:
    """An MA order's words: the lines top to bottom as the prompt writes them ("ma5>ma20>ma90") or
    with spaces, commas, arrows or "then" between them; or bottom to top with "<"."""
    lines = [rf"ma\s*{line[2:]}" for line in order.split(">")]
    down = r"(?:\s*(?:>|,|、|→|-+>?|=>|\bthen\b|\babove\b)\s*|\s+)"
    return down.join(lines), r"\s*<\s*".join(reversed(lines))


_OTHER: Final = "\x00other"  # a mention of a name that is no choice (V7)
_UNSURE: Final = "\x00unsure"  # a mention said tentatively: "nearly a golden cross", "doji-like" (V4)

# Answer -> its words (regular expressions; ASCII ones match as whole words).
_WORDS: Final[dict[str, tuple[str, ...]]] = {
    "above": ("above", "higher", "上方", "之上", "高于", "超过", "站上", r"站在\S{0,6}上"),
    "below": ("below", "under", "beneath", "lower", "下方", "之下", "低于", "跌破"),
    # yes / no, and frames_agree's own words for them; none of those answers volume_above_mean's
    # question ("the same" alone is left out: "about the same as the mean").
    "yes": ("yes", "true", r"是(?![\u4e00-\u9fff])", "是的", r"(?:the\s+)?same\s+(?:way|direction)", r"agree[sd]?", "一致",
            "同向", "同涨", "同跌"),
    "no": ("no", "false", "否", "不是", r"opposite(?:\s+(?:ways?|directions?))?", r"different\s+(?:ways?|directions?)",
           r"disagree[sd]?", "不一致", "相反", "背离"),
    "golden": (r"golden(?:\s+cross(?:over)?)?", r"bullish\s+cross(?:over)?", r"cross(?:es|ed)?\s+(?:over\s+)?above",
               r"cross(?:es|ed)?\s+up(?:ward)?", r"upward\s+cross(?:over)?", "金叉", "上穿", r"向上穿[过越]?"),
    "death": (r"death(?:\s+cross(?:over)?)?", r"dead\s+cross", r"bearish\s+cross(?:over)?",
              r"cross(?:es|ed)?\s+(?:over\s+)?(?:below|under)", r"cross(?:es|ed)?\s+down(?:ward)?",
              r"downward\s+cross(?:over)?", "死叉", "下穿", r"向下穿[过越]?"),
    "none": ("none", r"no\s+(?:cross(?:over|ing)?|crossing)",
             r"(?:did\s*n[o']t|has\s*n[o']t|have\s*n[o']t|does\s*n[o']t)\s+cross(?:ed)?",
             r"no\s+(?:(?:clear|particular|notable|recogni[sz]able|obvious|specific|significant)\s+)?(?:candlestick\s+)?pattern",
             "nothing", r"(?:没有|未|无)(?:发生|出现|形成)?(?:任何)?交叉", "未交叉", r"无明显(?:的)?(?:K线)?形态",
             r"没有明显(?:的)?(?:K线)?形态", "无形态", "没有形态"),
    "doji": (r"(?:dragonfly\s+|gravestone\s+|long[\s-]legged\s+)?doji(?:\s+star)?", "十字星", "十字线", "十字"),
    "hammer": ("hammer", "锤子线", "锤头线", "锤子", "锤头"),
    "bullish_engulfing": (r"bull\w*[\s_-]*engulf\w*", r"engulf\w*[\s_(,-]*bull\w*", "看涨吞没", "阳包阴", "多头吞没", "看涨吞噬"),
    "bearish_engulfing": (r"bear\w*[\s_-]*engulf\w*", r"engulf\w*[\s_(,-]*bear\w*", "看跌吞没", "阴包阳", "空头吞没", "看跌吞噬"),
    CANNOT_TELL: (r"can(?:not|'t|\s+not)\s+(?:tell|determine|be\s+determined|say)", r"unable\s+to\s+(?:tell|determine)",
                  "unclear", "not sure", "uncertain", r"not\s+(?:drawn|shown|visible|displayed)", r"not\s+applicable",
                  "N/A", "无法判断", "无法确定", "看不出", "看不清", "不确定", "不清楚", "难以判断", "未画出", "没有画出",
                  "未显示", "没有显示", "看不到", "图中没有", "不在图中"),
    # direction, mark_color: a close against an earlier close, a bar against its open. "lower shadow"
    # describes a candle's shape, not its colour.
    "up": (r"up(?:wards?)?", "higher", "rose", "risen", "rising", r"increas(?:ed|ing)", "bullish", "上涨", "上升", "走高",
           "更高", "高于", "收涨", "收阳", "阳线"),
    "down": (r"down(?:wards?)?", r"lower(?!\s+(?:shadow|wick|tail))", "fell", "fallen", "falling", r"decreas(?:ed|ing)",
             "bearish", "下跌", "下降", "走低", "更低", "低于", "收跌", "收阴", "阴线"),
    # ma_slope
    "rising": ("rising", "rises", "rose", "risen", r"up(?:wards?)?", r"sloping\s+up(?:wards?)?", "increasing",
               r"turn(?:s|ed|ing)?\s+up", "上升", "上行", "向上", "上扬", "走高", "抬头"),
    "falling": ("falling", "falls", "fell", "fallen", r"down(?:wards?)?", r"sloping\s+down(?:wards?)?", "declining",
                "decreasing", r"turn(?:s|ed|ing)?\s+down", "下降", "下行", "向下", "下滑", "走低"),
    # range_position: "upper half" is left unread (it holds the top and the middle third).
    "top": (r"top(?:\s+third)?", r"upper\s+(?:third|part|portion|section)", r"near\s+the\s+highs?", "上部", "顶部",
            "上段", r"上方?三分之一", "最上"),
    "middle": ("middle", "mid", "centre", "center", "中部", "中间", "中段", r"中间?三分之一"),
    "bottom": (r"bottom(?:\s+third)?", r"lower\s+(?:third|part|portion|section)", r"near\s+the\s+lows?", "底部", "下部",
               "下段", r"下方?三分之一", "最下"),
    **{order: _order_words(order) for order in MA_ORDERS},
}
# Names that are no choice, each family with the choices it would be mistaken for (V7): read where
# one of those is asked.
_RIVALS: Final[tuple[tuple[frozenset[str], tuple[str, ...]], ...]] = ((
    frozenset({"up", "down", "rising", "falling"}),
    ("flat", "sideways", "unchanged", "横盘", "走平", "持平")), (
    frozenset({"doji", "hammer", "bullish_engulfing", "bearish_engulfing"}),
    (r"invert(?:ed)?\s+hammer", r"倒(?:转)?锤(?:子|头)?(?:线)?", r"hanging\s+man", "吊颈线", "上吊线", r"shooting\s+star",
             "射击之星", "流星", r"spinning\s+top", "纺锤", r"harami\w*", "孕线", r"marubozu", "光头光脚",
             r"(?:morning|evening)\s+(?:doji\s+)?star", "启明星", "黄昏星", r"abandoned\s+baby",
             r"piercing(?:\s+line|\s+pattern)?", r"dark\s+cloud(?:\s+cover)?",
             r"engulf\w*", "吞没", "吞噬", "穿头破脚")),)
# An answer reads another's words where that one is no choice of the question ("above" answers yes).
_ALSO: Final = {"yes": "above", "no": "below"}
# Words that are an answer only as the whole value ("no" alone; "no hammer" negates hammer).
_ALONE: Final = {"none": ("no", "无", "没有", "无。", "没有。"), "no": ("不",)}
# Markers after which a value says what it means instead (V2).
# Not "but" alone: "below MA5 but above MA90" is about two lines, not a correction.
_CORRECTION: Final = re.compile(r"\b(?:actually|in fact|correction|corrected|on second thought|on closer (?:look|inspection)|"
                                r"i mean|wait)\b|\?\s*(?:no\b|不)|其实|实际上|更正|修正|应为|应该是|改为|仔细看", re.I)
# A gloss in brackets after the answer ("Above (the MA90 line is below the price)") explains it,
# unless it hedges or asks.
_GLOSS: Final = re.compile(r"\([^()]*\)|（[^（）]*）|\[[^\[\]]*\]")
_QUESTION: Final = re.compile(r"[^.?？!！。\n]*(?:[.?？!！。\n]+|$)")  # a value's sentences, each with its end
_INTERROGATIVE: Final = re.compile(r"^\W*(?:is|are|was|were|does|do|did|has|have|which|what|how|whether)\b"
                                   r"|是否|还是|吗|哪|几|多少|什么", re.I)
_HEDGE: Final = re.compile(r"\b(?:or|maybe|possibly|perhaps|probably|might|likely)\b|[?？]|或|可能|也许|大概", re.I)
# A mention right after one of these is negated (V4).
_NEGATED: Final = re.compile(
    r"(?:\b(?:not|no|never|without|neither|nor|instead\s+of|rather\s+than)|n't)"
    r"(?:\s+(?:a|an|the|quite|yet|any|all|in|at|within|trading|closing|closed|close|"
    r"located|positioned|been|form(?:ed|ing|s)?|show(?:n|s|ing)?|see|seen|a\s+clear))*\s*$"
    r"|(?:不|未|没有?|无|非|而非|并非|并未|并不)(?:在|是|会|能|曾|再|出现|形成|有|构成|站)?\s*$", re.I)
# A mention denied by what follows it: "a golden cross has not formed", "a death cross was avoided", 金叉未出现.
_DENIED_AFTER: Final = re.compile(r"\s*(?:(?:cross(?:over)?|pattern|candle)\s+)?(?:(?:has|have|had|did|does|is|was|were)\s*"
                                  r"(?:not|n't)\b|(?:was|is|were|been)?\s*(?:avoided|averted|invalid)\b)"
                                  r"|(?:形态)?(?:(?:没有|未|尚未|并未|未能)(?:出现|形成|发生)|不成立|不存在)", re.I)
# A mention said tentatively, neither stated nor denied: after nearly / almost / like / not + an adverb
# ("not significantly above"), before -like / -ish; 接近, 即将, 类似, 像.
_SOFT_BEFORE: Final = re.compile(r"(?:\b(?:nearly|almost|about\s+to|approaching|like|resembl\w*|similar\s+to)"
                                 r"|(?:\bnot|n't)\s+\w+ly)\s*(?:(?:a|an|the)\s+)?$|(?:接近|即将|差点|快要|几乎|类似|像)\s*$", re.I)
_SOFT_AFTER: Final = re.compile(r"-?(?:like|ish)\b|\s*(?:类似|之类)", re.I)
# The value ends on a question and a bare denial: "above MA5? not really", "above? no".
_QUESTION_DENIED: Final = re.compile(r"[?？]\s*(?:no(?:pe)?|not(?:\s+really)?|不是?|没有)\s*[.!。]?\s*$", re.I)
_COORDINATED: Final = re.compile(r"\s*(?:,|/|、|\bor\b|\bnor\b|\band\b|或|和|与|及|也)\s*(?:(?:a|an|the)\s+)?", re.I)
_NOT_APPLICABLE: Final = re.compile(r"(?<![A-Za-z])N/A(?![A-Za-z])", re.I)
_LETTER: Final = re.compile(r"(?<![A-Za-z0-9])([A-E])(?![A-Za-z0-9])")
_LOWER_LETTER: Final = re.compile(r"(?:(?:bar|option|choice|candle)\s+|选)?\(?([a-e])\)?[.)]?", re.I)  # the whole value
# "A" opening a sentence before a lower-case noun is the article ("A strong bar ..."), not bar A.
_ARTICLE: Final = re.compile(r"(?:^|[.!?]\s+)(A)\s+(?!(?:is|was|has|had|closes|closed|shows|showed|below|above|with|at|on|"
                             r"and|or|from|of|in|vs|seems|looks|appears|clearly|marks|because|since)\b)[a-z]")
_NUMBER: Final = re.compile(r"(?<![0-9.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![0-9])")
# Set aside before a number is read (N1): dates, MA names, percentages, bar references.
# Each alternative that opens on digits opens where a run of them does: tried inside a run, a regex
# scanning the rest of it from every digit took seconds on a 5,000-digit answer.
_RUN: Final = r"(?<![0-9.])"
_NOT_THE_NUMBER: Final = re.compile(
    _RUN + r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?|" + _RUN + r"\d{1,2}\s*月\s*\d{1,2}\s*日"
    r"|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b(?:e?ma|sma)\s*\d+|[-+]?" + _RUN + r"\d+(?:\.\d+)?\s*%"
    r"|\bbars?\s+(?:no\.?\s*)?\d+|第\s*\d+\s*根"
    r"|" + _RUN + r"\d+\s+(?:bars?|candles?)\s+(?:ago|from\s+the\s+(?:right|left|end))",
    re.I)
# A count's window (N2): what it counted among, never the count. "4 of 10", "6 out of ten", "6/10"
# (a number before it); "of the (last) 10 bars", "the last ten"; 十根中, 最近10根.
_TEN: Final = r"(?:\d+|ten)\b"
_UNIT: Final = r"(?:\s+(?:bars|candles|candlesticks|sessions|days|weeks|periods|k-?lines))?"
_WINDOW: Final = re.compile(
    r"(?<=[0-9a-z])\s*(?:out\s+of|of|/)\s*(?:the\s+)?(?:(?:last|past|recent)\s+)?" + _TEN + _UNIT
    + r"|\b(?:out\s+of|of|among|in)\s+(?:the|these)\s+(?:(?:last|past|recent|final|latest)\s+)?" + _TEN + _UNIT
    + r"|\b(?:last|past|recent|final|latest)\s+" + _TEN + _UNIT
    + r"|(?:最近|近|过去|最后)?\s*(?:" + _RUN + r"\d+|十)\s*根\s*(?:K线)?\s*(?:中|里|内|当中|之中|里面)"
    r"|(?:最近|近|过去|最后)\s*(?:\d+|十)\s*根\s*(?:K线)?", re.I)
# A bound, not a value: "at least 5", "more than 6", 至少5根, 5根以上 (N3).
_BOUND: Final = re.compile(r"\b(?:at\s+least|at\s+most|more\s+than|less\s+than|fewer\s+than|up\s+to|over|under)\s+"
                           r"(?:\d|zero|one|two|three|four|five|six|seven|eight|nine|ten)"
                           r"|(?:至少|最多|超过|不到|不少于|不超过|多于|少于)\s*[\d零一二两三四五六七八九十]"
                           r"|[\d零一二两三四五六七八九十]\s*(?:根|个)?\s*(?:以上|以下)", re.I)
# A price's scale written after it: 1.2k, 12.3万 (N1).
_SCALE: Final = re.compile(r"\s?(?:(k|thousand|千)|(万)|(m|million)|(亿))(?![A-Za-z])", re.I)
_SCALES: Final = (1e3, 1e4, 1e6, 1e8)
_COUNT_WORDS: Final = {w: i for i, words in enumerate(
    ("zero|none|零", "one|一", "two|二|两", "three|三", "four|四", "five|五", "six|六", "seven|七", "eight|八",
     "nine|九", "ten|十")) for w in words.split("|")}
_COUNT_WORD: Final = re.compile(r"(?<![A-Za-z])(" + "|".join(sorted(_COUNT_WORDS, key=len, reverse=True)) + r")(?![A-Za-z])",
                                re.I)
_CANNOT: Final = re.compile("|".join(_word(w) for w in _WORDS[CANNOT_TELL]), re.I)
_QUOTES: Final = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})
_ASKED: Final = frozenset(QUESTIONS)
# A key, then its separator; "ma5-ma20-ma90" is an MA order, not a line for ma5.
_LINE: Final = re.compile(r"\b(" + "|".join(QUESTIONS) + r")\b[\"'*`]*\s*(?:[:=]|-(?![->]*\s*ma\s*\d))", re.I)
_VALUE_END: Final = re.compile(r"[\n;}]")


@dataclass(frozen=True)
class ReadingAnswer:
    answers: dict[str, Any] | None  # question -> its normalised answer; None when nothing was readable
    tier: str
    reason: str | None


class Unreadable(ValueError):
    """A value no rule reads as one answer; the message says why (the reason's words)."""


@lru_cache(maxsize=None)
def _mentions(choices: tuple[str, ...]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """One regex of every answer word of ``choices`` (and of the names no choice is), longest first,
    each alternative a group; and the answer of each group."""
    pairs = [(w, _OTHER) for rivals, words in _RIVALS if rivals & set(choices) for w in words]
    for answer in (*choices, CANNOT_TELL):
        words = list(_WORDS.get(answer, ()))
        if answer in _ALSO and _ALSO[answer] not in choices:
            words += _WORDS[_ALSO[answer]]
        if answer in choices and len(answer) > 1:  # a letter is read by _letters (V8): "a" is an article
            words.append(re.escape(answer.replace("_", " ")).replace(r"\ ", r"[\s_-]*"))
        pairs += [(w, answer) for w in words]
    pairs.sort(key=lambda p: -len(p[0]))
    regex = re.compile("|".join(f"({_word(w)})" for w, _ in pairs), re.I)
    return regex, tuple(a for _, a in pairs)


@lru_cache(maxsize=None)
def _canonical(choices: tuple[str, ...]) -> dict[str, str]:
    return {c.lower(): c for c in choices}


def _final_part(text: str, finds: Callable[[str], list]) -> str:
    """V2: the part after the last correction marker, when it names an answer."""
    cuts = [m.end() for m in _CORRECTION.finditer(text)]
    for cut in reversed(cuts):
        if finds(text[cut:]):
            return text[cut:]
    return text


def _choice_mentions(text: str, choices: tuple[str, ...]) -> list[tuple[str, bool]]:
    """(answer, negated) of each answer word in ``text``, in order. A negation reaches over a
    coordination: "no golden or death cross", 没有金叉或死叉 deny both."""
    regex, answers = _mentions(choices)
    found = [(m.start(), m.end(), answers[m.lastindex - 1]) for m in regex.finditer(text)]
    if any(len(c) == 1 for c in choices):  # letter choices (V8)
        found = sorted(found + _letters(text))
    out: list[tuple[str, bool]] = []
    end = 0
    for start, stop, answer in found:
        before = text[max(0, start - 40):start]
        if _SOFT_BEFORE.search(before) or _SOFT_AFTER.match(text, stop):
            answer, negated = _UNSURE, False
        else:
            negated = bool(_NEGATED.search(before) or _DENIED_AFTER.match(text, stop)) or (
                bool(out) and out[-1][1] and _COORDINATED.fullmatch(text[end:start]) is not None)
        out.append((answer, negated))
        end = stop
    return out


def _letters(text: str) -> list[tuple[int, int, str]]:
    alone = _LOWER_LETTER.fullmatch(text.strip())
    if alone:
        return [(0, len(text), alone.group(1).upper())]
    articles = {m.start(1) for m in _ARTICLE.finditer(text)}  # where an article "A" stands
    text = _NOT_APPLICABLE.sub("   ", text)  # "N/A" names no bar A (same length: the articles' places hold)
    return [(m.start(), m.end(), m.group(1)) for m in _LETTER.finditer(text) if m.start() not in articles]


def read_choice(value: Any, choices: tuple[str, ...]) -> str:
    """One choice question's answer (rules V1-V11), or :class:`Unreadable`."""
    if value in choices and isinstance(value, str):  # V1 as the prompt asks: most answers, at a set's speed
        return value
    if isinstance(value, bool):  # V9
        picked = ("yes" if value else "no") if {"yes", "no"} <= set(choices) else "none" if not value else None
        if picked is None or picked not in choices:
            raise Unreadable("not a choice")
        return picked
    text = _text_of(value)
    plain = text.strip().strip("\"'*`.").strip().lower().replace(" ", "_")
    exact = _canonical(choices).get(plain)
    if exact is not None:  # V1
        return exact
    for answer, words in _ALONE.items():
        if answer in choices and plain in words:
            return answer
    if "?" in text or "？" in text:  # the parser's text is NFKC (？ is ?), a value read alone may not be
        text = _unasked(text, choices)
        if _QUESTION_DENIED.search(text):  # what is left asks, and is denied
            raise Unreadable("negated")
    return _decide(_glossed(_final_part(text, lambda t: _choice_mentions(t, choices)), choices), choices)


def _unasked(text: str, choices: tuple[str, ...]) -> str:
    """The value without the question asked back (V11): a sentence ending in "?" that asks (opens
    with is / does / which ..., or holds 是否 / 还是 / 吗 ...) or names two answers is the question
    ("Is the last close above or below MA5? Below."), not its answer."""
    return "".join(part for part in _QUESTION.findall(text) if not (part.rstrip()[-1:] in ("?", "？") and (
        _INTERROGATIVE.search(part) or len({a for a, _ in _choice_mentions(part, choices)}) > 1)))


def _glossed(text: str, choices: tuple[str, ...]) -> list[tuple[str, bool]]:
    """The mentions of ``text``, those inside brackets left out where they explain (V10)."""
    found = _choice_mentions(text, choices)
    glosses = _GLOSS.findall(text)
    if glosses and not any(_HEDGE.search(g) for g in glosses):
        outside = _choice_mentions(_GLOSS.sub(" ", text), choices)
        said = {a for a, negated in outside if not negated}
        if len(said) == 1 and said <= set(choices):
            return outside
    return found


def _decide(found: list[tuple[str, bool]], choices: tuple[str, ...]) -> str:
    """The one answer the mentions name (V3-V7), or why there is none."""
    said = {a for a, negated in found if not negated}
    denied = {a for a, negated in found if negated} - said
    if said & {CANNOT_TELL, _OTHER, _UNSURE} and len(said) > 1 or said == {_UNSURE}:
        raise Unreadable("hedged")
    if CANNOT_TELL in said:
        if CANNOT_TELL in choices:
            return CANNOT_TELL
        raise Unreadable("cannot tell")
    if _OTHER in said:
        raise Unreadable("not a choice")
    said &= set(choices)
    if len(said) == 1:
        return said.pop()
    if said:
        raise Unreadable("hedged")
    left = [c for c in choices if c != CANNOT_TELL and c not in denied]
    if denied and len(left) == 1:  # "not above" of above / below is below; "no golden or death cross" is none
        return left[0]
    raise Unreadable("negated" if denied else "no choice named")


def _text_of(value: Any) -> str:
    """A value as text: a one-item list is its item; null, nothing, several items or an object are no answer."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if value is None or value == [] or value == {}:
        raise Unreadable("no answer")
    if isinstance(value, list):
        raise Unreadable("hedged")
    if isinstance(value, dict):
        raise Unreadable("not a value")
    return str(value)


def _finite(number: float | int) -> float:
    try:
        value = float(number)
    except OverflowError:  # an integer of 309 digits and more
        raise Unreadable("not a finite number") from None
    if not math.isfinite(value):
        raise Unreadable("not a finite number")
    return value


def _numbers(text: str, kind: str) -> list[float]:
    """The distinct numbers a value states (N1-N3), dates, MA names, percentages (and a count's
    window) set aside."""
    if kind == "count":  # first: "6/10" is a count and its window before it is a date
        text = _WINDOW.sub(" ", text)
    text = _NOT_THE_NUMBER.sub(" ", text)
    if _BOUND.search(text):
        raise Unreadable("hedged")
    found = {_finite(m.group(0).replace(",", "")) * _scale(text, m.end(), kind) for m in _NUMBER.finditer(text)}
    if not found and kind == "count":
        found = {float(_COUNT_WORDS[m.group(1).lower()]) for m in _COUNT_WORD.finditer(text)}
    return sorted(found)


def _scale(text: str, end: int, kind: str) -> float:
    """What a price's suffix multiplies it by (1.2k, 12.3万); 1 for a count or no suffix."""
    suffix = _SCALE.match(text, end) if kind == "price" else None
    return 1.0 if suffix is None else _SCALES[suffix.lastindex - 1]


def read_number(value: Any, kind: str) -> float | int:
    """One numeric question's answer: a price (> 0) or a count (a whole number 0..MAX_COUNT)."""
    if isinstance(value, bool):
        raise Unreadable("not a number")
    if isinstance(value, (int, float)):
        number = _finite(value)
    else:
        text = _text_of(value)
        found = _numbers(_final_part(text, lambda t: _numbers(t, kind)), kind)
        if len(found) > 1:
            raise Unreadable("hedged")
        if not found:
            raise Unreadable("cannot tell" if _CANNOT.search(text) else "no number")
        number = found[0]
    if kind == "count":
        if number != int(number) or not 0 <= number <= MAX_COUNT:
            raise Unreadable("not a count")
        return int(number)
    if number <= 0:
        raise Unreadable("not a price")
    return number


def read_value(key: str, value: Any) -> Any:
    """One answer as the judge compares it; :class:`Unreadable` (why) when no rule reads it."""
    if key in NUMERIC:
        return read_number(value, NUMERIC[key])
    if key in CHOICES:
        return read_choice(value, CHOICES[key])
    raise Unreadable("a question of no known kind")  # neither choices nor numeric: said, never a KeyError


def _stated(value: Any) -> bool:
    """A value says something (not the answer format echoed back: "above|below", "<number>")."""
    if not isinstance(value, str) or "<" not in value and "|" not in value:  # nearly every value: no scan
        return True
    value = value.strip()
    return "|" not in value and not (value.startswith("<") and value.endswith(">"))


def _statements(objects: list[dict]) -> dict[str, Any]:
    """Question -> the value the last object stating it gives (an object's ``answer(s)`` member
    when it nests them); an echoed format counts only where nothing else states the question."""
    found: dict[str, Any] = {}
    for obj in objects:
        for wrap in ("answers", "answer"):
            if isinstance(obj.get(wrap), dict):
                obj = obj[wrap]
        for key, value in obj.items():
            key = key if key in _ASKED else str(key).strip().lower()
            if key in _ASKED and (_stated(value) or key not in found):
                found[key] = value
    return found


def _judge(values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    answers, unreadable = {}, []
    for key in QUESTIONS:
        if key in values:
            try:
                answers[key] = read_value(key, values[key])
            except Unreadable as why:
                unreadable.append(f"{key} ({why})")
    return answers, unreadable


def _repaired(text: str) -> str:
    text = re.sub(r"(?<=[\s,{\[\"'0-9])//[^\n]*", "", text)  # // comments
    text = re.sub(r"'([^'\n]*)'", r'"\1"', text)  # single quotes
    text = re.sub(r",\s*([}\]])", r"\1", text)  # trailing commas
    return re.sub(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:", r'\1"\2":', text)  # unquoted keys


def _lines(text: str) -> dict[str, str]:
    """Rule 5: each question's last "key: value" line."""
    found: dict[str, str] = {}
    keys = list(_LINE.finditer(text))
    for m, after in zip(keys, [*(k.start() for k in keys[1:]), len(text)]):
        value = _VALUE_END.split(text[m.end():after])[0].strip().strip("\"'*` ,")
        if value:
            found[m.group(1).lower()] = value
    return found


def parse_answer(text: str | None) -> ReadingAnswer:
    if not isinstance(text, str) or not text.strip():
        return ReadingAnswer(None, "none", "empty response")
    answer, _, unclosed = split_reasoning(normalise(text).translate(_QUOTES))
    flags = [REASONING_CUT] if unclosed else []
    answer = strip_fences(answer)
    values, tier = _statements(json_objects(answer)), "json"
    if not values:
        values, tier = _statements(json_objects(_repaired(answer))), "lenient"
    if not values:
        values, tier = _lines(answer), "lines"
    answers, unreadable = _judge(values)
    if unreadable:
        flags.append("unreadable: " + ", ".join(unreadable))
    if not answers:
        return ReadingAnswer(None, "none", "; ".join([*flags, "no answer to any question"]))
    return ReadingAnswer(answers, tier, "; ".join(flags) or None)
