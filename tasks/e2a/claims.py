"""Claims of an E2A-style answer, verified against the window's anchors; and its rationale's polarity.

E2A-Bench never published its claim matcher; this one is ours, measured on the hand-labelled gold
set in ``tests/gold/e2a/`` (its README defines every claim; ``bench/e2a.py`` prints the accuracy).
A claim is one of :data:`CLAIMS` (e.g. ``close_above_ma20``), asserted or negated; its verdict is
``supported`` when what the answer asserts holds in the window, else ``contradicted``. Technical
statements no anchor checks (RSI, MACD, KDJ, MA60/120/250, chart patterns, ...) are
``unverifiable``: counted, never scored.

How a text is read, in order:

1. **Normalise**: NFKC, lower case, Chinese numerals before 日; every moving-average mention becomes
   a token: ``‹m5›`` (MA5, MA 5, MA(5), SMA5, 5-day EMA, 5-day line, 5日均线, 5日线, 五日线, ...),
   lists ``‹m5+10+20›`` ("5-, 10- and 20-day averages", "MA5、MA10和MA20", "5日和10日均线"), and
   ``‹mall›`` for the averages unnamed ("the moving averages", "均线").
2. **Clauses**: sentences split at . ! ? ; 。！？； and line breaks, clauses at commas, colons and
   but / while / whereas / although / 但 / 而 / 虽然 / 尽管. A question (ending in ?) holds no claim.
3. **Frames**, found as one alternation of them all finds them (leftmost first, no overlaps):
   close vs averages (relation before or after the token: "above ‹m20›", "站上‹m5+10›", "‹m20›之上"), average vs average
   ("‹m5› above ‹m20›" is ma5_above_ma20, "‹m5›上穿‹m20›" a golden cross), and the fixed phrases
   of the other anchors. A frame whose clause names MACD, KDJ, RSI, ... is about that indicator
   ("MACD golden cross"): unverifiable, not an anchor claim.
4. **Modality and negation**, both in the clause before the frame: a hedge or condition (could,
   might, would, if, likely to, 有望, 若, 一旦, 或将, 可能, ...) leaves no claim; a negation (not,
   no, no longer, never, has yet to, 未, 没有, 并未, 尚未, 不再, 未能) negates it, but "no doubt",
   "not only", "未来" (future), "无疑", "毫无" do not, and two negations cancel.
5. **A set**: each (claim, negated) counts once per answer, however often it is repeated (free text
   is both the analysis and the rationale).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from candlebench.tasks.e2a.anchors import Anchors
from candlebench.tasks.e2a.parse import stated_action

Verdict = Literal["supported", "contradicted", "unverifiable"]


def _values_all(sign: int) -> Callable[[Anchors], bool]:
    keys = ("ma_position_short", "ma_position_mid", "ma_position")
    return lambda a: all(a.values[k] * sign > 0 for k in keys)


def _label(anchor: str, label: str) -> Callable[[Anchors], bool]:
    return lambda a: a.labels[anchor] == label


def _crossed(key: str) -> Callable[[Anchors], bool]:
    return lambda a: a.values[key] == a.values[key]  # not NaN: such a crossing in the window


_MA_VALUE: Final = {5: "ma_position_short", 10: "ma_position_mid", 20: "ma_position"}

# claim -> (anchor it is checked against, holds)
CLAIMS: Final[dict[str, tuple[str, Callable[[Anchors], bool]]]] = {
    **{f"close_{side}_ma{k}": ("ma_position", (lambda key, s: lambda a: a.values[key] * s > 0)(key, sign))
       for k, key in _MA_VALUE.items() for side, sign in (("above", 1), ("below", -1))},
    "close_above_all_mas": ("ma_position", _values_all(1)),
    "close_below_all_mas": ("ma_position", _values_all(-1)),
    "ma5_above_ma20": ("ma_cross", lambda a: a.values["ma_cross"] > 0),
    "ma5_below_ma20": ("ma_cross", lambda a: a.values["ma_cross"] < 0),
    "golden_cross": ("ma_cross", _crossed("golden_cross_bars")),
    "death_cross": ("ma_cross", _crossed("death_cross_bars")),
    "uptrend": ("trend", _label("trend", "up")),
    "downtrend": ("trend", _label("trend", "down")),
    "sideways": ("trend", _label("trend", "flat")),
    "momentum_up": ("momentum_5d", _label("momentum_5d", "up")),
    "momentum_down": ("momentum_5d", _label("momentum_5d", "down")),
    "near_range_top": ("range_position", _label("range_position", "top")),
    "near_range_bottom": ("range_position", _label("range_position", "bottom")),
    "breakout_up": ("breakout", _label("breakout", "up")),
    "breakout_down": ("breakout", _label("breakout", "down")),
    "volume_surge": ("volume_change", _label("volume_change", "surge")),
    "volume_shrink": ("volume_change", _label("volume_change", "shrink")),
    **{pv: ("price_volume", _label("price_volume", pv))
       for pv in ("rise_on_volume", "fall_on_volume", "rise_on_low_volume", "fall_on_low_volume")},
    "volatility_high": ("volatility", _label("volatility", "high")),
    "volatility_low": ("volatility", _label("volatility", "low")),
    "long_bullish_candle": ("last_candle", _label("last_candle", "long_bullish")),
    "long_bearish_candle": ("last_candle", _label("last_candle", "long_bearish")),
    "doji": ("last_candle", _label("last_candle", "doji")),
}

# The regex engine skips ahead to the characters a pattern can start with only when each of its
# alternatives starts with a character (or it is one character class): a leading \b, look-behind or
# repeat makes it try every position, several times slower on a long answer. Hence "[.]+" written
# "[.][.]*", "(?<![a-z])ma" written "ma(?<![a-z]ma)", and _words.


def _words(*alternatives: str, edge: str = r"\b") -> str:
    r"""``\b(?:a|b|...)\b`` (``edge`` \b), or with no letter of ``edge`` (a class, "[a-z]") on either side,
    each alternative starting with its own first character (a plain one) and the edge before it
    checked just after that character."""
    def one(a: str) -> str:
        if edge == r"\b":
            return rf"{a[0]}(?<=\b{a[0]}){a[1:]}\b"
        return rf"{a[0]}(?<!{edge}{a[0]}){a[1:]}(?!{edge})"
    assert all(a[0].isalnum() for a in alternatives)
    return "|".join(map(one, alternatives))


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
    r"every (?:moving )?average\b|each (?:moving )?average\b|moving[- ]averages|" + _words("mas")
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


# --- 2. clauses ------------------------------------------------------------------------------------

_END: Final = r"[.!?;。！？；\n]"
_SENTENCE_END: Final = re.compile(rf"{_END}{_END}*(?!\d)")
_CLAUSE_CUT: Final = re.compile(
    r",|:|，|：|" + _words("but", "while", "whereas", "although", "though", "however", "despite", "even though")
    + r"|但是?|而且?|虽然|尽管|不过|然而")

# --- 3. frames ------------------------------------------------------------------------------------

_TOK: Final = r"‹m[\d+]+›|‹mall›"
_ABOVE_PRE: Final = (r"(?:above|over|atop|higher than|on top of|reclaim\w*|regain\w*|recaptur\w*|back above|站上|站稳|站在|重回|收复|突破|高于|位于|处于|运行于|运行在|在|守住)")
_BELOW_PRE: Final = (r"(?:below|under|beneath|lower than|los(?:t|es|ing)|跌破|跌穿|击穿|失守|跌落|低于|位于|处于|运行于|运行在|在)")
_ABOVE_POST: Final = r"(?:之上|上方|上面|以上)"
_BELOW_POST: Final = r"(?:之下|下方|下面|以下)"
_NEAR: Final = r"(?:附近|一线|周围)"

# name -> pattern; names "pos_*" and "ma_*" are read by _frame_claims, the rest name a claim.
_FRAMES: Final[dict[str, str]] = {
    "ma_pair_cn": r"(?P<a1>‹m[\d+]+›)\s*(?:已经?|开始|向上|向下|也|仍|继续)?\s*(?P<rel1>上穿|下穿|金叉|死叉|位于|处于|在|高于|低于|运行于)\s*(?P<b1>‹m[\d+]+›)\s*(?P<post1>之上|上方|之下|下方)?",
    "ma_pair_en": r"(?P<a2>‹m[\d+]+›)\s+(?:(?:line|has|had|have|is|are|was|remains?|remained|stays?|stayed|just|now|recently|already|moved|moving|trades?|trading|sits?|still|been|firmly|comfortably|clearly|well|not|yet|dropped|dropping|fell|falling|slipped|slipping|sliding|rose|rising|climbed|climbing|turned|back)\s+){0,4}(?P<rel2>cross(?:ed|es)? (?:back )?(?:above|over|up (?:through|over|above))|cross(?:ed|es)? (?:back )?(?:below|under|down (?:through|below|under))|above|over|below|under|beneath|<|>)\s+(?:the\s+)?(?P<b2>‹m[\d+]+›)",
    "pos_pre": r"(?P<rel3>" + _ABOVE_PRE + "|" + _BELOW_PRE + r")\s*(?:(?:the|its|their|both|all|every|each|of|three|two|key|major|(?:short|long|medium)[- ]term)\s+)*(?P<t3>" + _TOK + r")\s*(?P<post3>" + _ABOVE_POST + "|" + _BELOW_POST + "|" + _NEAR + r")?",
    "pos_post": r"(?P<t4>" + _TOK + r")\s*(?P<post4>" + _ABOVE_POST + "|" + _BELOW_POST + r")",
    "any_cross": r"(?:no|neither|without)\s+(?:a\s+)?(?:golden (?:or|nor) death|death (?:or|nor) golden|ma|moving[- ]average)?\s*cross(?:es|overs?)?\b",
    "golden_cross": r"golden[- ]?cross|golden(?= or death[- ]cross)|金叉|上穿",
    "death_cross": r"death[- ]?cross|死叉|下穿",
    "ma5_above_ma20": r"多头排列|bullish(?:ly)? (?:aligned|alignment|stack)",
    "ma5_below_ma20": r"空头排列|bearish(?:ly)? (?:aligned|alignment|stack)",
    "uptrend": r"\bup-?trend|upward trend|rising trend|trend(?:ing)? (?:is )?(?:up|higher|upward)\b|trend[^.;:]{0,25}:\s*up\b|上升趋势|上涨趋势|上行趋势|趋势向上|多头趋势|上升通道|持续上涨|持续走高|trend(?:ed|ing)?\b[^.;]{0,25}?(?::|\bis\b|\bwas\b|\bhas been\b)\s*(?:clearly |firmly )?(?:up|upward|higher|rising)\b|trended (?:higher|up)",
    "downtrend": r"\bdown-?trend|downward trend|falling trend|declining trend|trend(?:ing)? (?:is )?(?:down|lower|downward)\b|trend[^.;:]{0,25}:\s*down\b|下降趋势|下跌趋势|下行趋势|趋势向下|空头趋势|下降通道|下跌通道|持续下跌|持续走低|trend(?:ed|ing)?\b[^.;]{0,25}?(?::|\bis\b|\bwas\b|\bhas been\b)\s*(?:clearly |firmly )?(?:down|downward|lower|falling)\b|trended (?:lower|down)",
    "sideways": r"sideways|range-?bound|consolidat\w*|trendless|横盘|震荡整理|区间震荡|盘整|trend\b[^.;]{0,25}?(?::|\bis\b|\bwas\b|\bhas been\b)\s*(?:basically |largely |mostly )?(?:flat|sideways)\b",
    "momentum_up": r"(?:strong|positive|upward|bullish|improving|rising|accelerating) (?:short-term |near-term |price )?momentum|momentum (?:is |remains |stays |turned |has turned )?(?:now |clearly |still |turning )?(?:positive|strong|bullish|upward)|gaining momentum|动能增强|上涨动能|多头动能|动能(?:较强|强劲|向上)|momentum\s*:\s*(?:positive|strong|up)",
    "momentum_down": r"(?:weak|negative|downward|bearish|weakening|fading|slowing|declining|waning) (?:short-term |near-term |price )?momentum|momentum (?:is |remains |stays |turned |has turned )?(?:now |clearly |still |turning )?(?:negative|weak|bearish|downward|weakening|fading|waning)|(?:lost|losing) momentum|动能减弱|下跌动能|空头动能|动能(?:较弱|不足|衰减|转弱)|momentum\s*:\s*(?:negative|weak|down)",
    "near_range_top": r"(?:near|at|close to|around|toward|testing) (?:the )?(?:top|upper end|upper part|high end|upper bound|upper boundary) of (?:its|the|this) (?:recent |30-day |trading )?range|(?:near|at|close to|testing) (?:its |the )?(?:recent |30-day |period |window )?highs?\b|接近.{0,4}高点|接近前高|近期高位|区间上沿|区间顶部|高位运行|处于.{0,8}高位|在高位|高位徘徊|最高区域|顶部区域",
    "near_range_bottom": r"(?:near|at|close to|around|toward|testing) (?:the )?(?:bottom|lower end|lower part|low end|lower bound|lower boundary) of (?:its|the|this) (?:recent |30-day |trading )?range|(?:near|at|close to|testing) (?:its |the )?(?:recent |30-day |period |window )?lows?\b|接近.{0,4}低点|接近前低|近期低位|区间下沿|区间底部|低位运行|处于.{0,8}低位|在低位|低位徘徊|最低区域|底部区域",
    "breakout_up": r"(?<!volume )break-?out(?! of the chart)|broke out|breaking out|breaks? out|(?:broke|broken|breaks?|breaking|pushed|surged) (?:above|through) (?:the |its |a )?(?:key |recent |prior |previous )?(?:\d+-day |30-day )?(?:resistance|highs?|range)|new (?:20-day |30-day |recent |short-term )?highs?|向上突破|突破(?:前高|压力|阻力|平台|区间上沿)|创(?:出)?(?:阶段)?新高",
    "breakout_down": r"break-?down(?! of)|broke down|breaking down|breaks? down(?! of)|(?:broke|broken|breaks?|breaking|fell|falls|falling|dropped|slipped) (?:below|through) (?:the |its |a )?(?:key |recent |prior |previous )?(?:\d+-day |30-day )?(?:support|lows?|range)|new (?:20-day |30-day |recent |short-term )?lows?|向下突破|跌破(?:支撑|前低|平台|区间下沿)|破位|创(?:出)?(?:阶段)?新低",
    "rise_on_volume": r"(?:放量(?:上涨|上攻|拉升|大涨|反弹))|(?:ris(?:e|es|ing)|rose|rall(?:y|ies|ied|ying)|gain(?:s|ed|ing)?|advanc(?:e|ed|es|ing)|climb(?:s|ed|ing)?|up) (?:on|with|amid|accompanied by) (?:heavy|high|strong|rising|increasing|expanding|surging|above-average|large) volume|volume (?:has |have |had |is |was |has been |have been |had been )?(?:\w+ly )?(?:surg\w*|spik\w*|jump\w*|expand\w*|increas\w*|rose|ris\w*)[^;]{0,30}?(?:on|as|during|into|with) (?:the )?(?:rally|bounce|advance|rise|breakout|up-?move|(?:price|stock|shares?) (?:rose|rallied|climbed|advanced))|(?:heavy|high|strong|rising) volume on the (?:rally|bounce|advance|rise|way up)|(?:rally|bounce|uptick|rebound|advance|rise|gains?|breakout)\s+(?:is |was |has been )?(?:happening |came |come |coming |occurred |took place )?(?:on|with|amid) (?:a |an )?(?:(?:heavy|high|strong|rising|increasing|expanding|surging|above-average|large) volume|volume (?:surge|spike|expansion))",
    "fall_on_volume": r"(?:放量(?:下跌|下挫|杀跌|大跌|回落))|(?:fall(?:s|ing)?|fell|drop(?:s|ped|ping)?|sell-?off|sold off|declin(?:e|es|ed|ing)|slid|slump(?:ed)?|down) (?:on|with|amid|accompanied by) (?:heavy|high|strong|rising|increasing|expanding|surging|above-average|large) volume|volume (?:has |have |had |is |was |has been |have been |had been )?(?:\w+ly )?(?:surg\w*|spik\w*|jump\w*|expand\w*|increas\w*|rose|ris\w*)[^;]{0,30}?(?:on|as|during|into|with) (?:the )?(?:drop|decline|sell-?off|fall|selling|slide|(?:price|stock|shares?) (?:dropped|fell|declined|slid)|sellers)|(?:heavy|high|strong|rising) volume on the (?:decline|drop|sell-?off|way down|slide)|(?:pullback|decline|dip|drop|slide|sell-?off|fall|breakdown)\s+(?:is |was |has been )?(?:happening |came |come |coming |occurred |took place )?(?:on|with|amid) (?:a |an )?(?:(?:heavy|high|strong|rising|increasing|expanding|surging|above-average|large) volume|volume (?:surge|spike|expansion))",
    "rise_on_low_volume": r"(?:缩量(?:上涨|上攻|反弹|回升))|(?:ris(?:e|es|ing)|rose|rall(?:y|ies|ied|ying)|gain(?:s|ed|ing)?|advanc(?:e|ed|es|ing)|climb(?:s|ed|ing)?|up) (?:on|with|amid) (?:light|low|thin|declining|shrinking|weak|below-average) volume|volume (?:has |have |had |is |was |has been |have been |had been )?(?:\w+ly )?(?:dr(?:ies|ied|ying) up|shrink\w*|fad\w*|declin\w*|contract\w*)[^.,;]{0,12}?(?:on|as|during|into|with) (?:the )?(?:rally|bounce|advance|rise|up-?move)|(?:light|low|thin)[- ]volume (?:rally|bounce|advance|rise)|(?:rally|bounce|uptick|rebound|advance|rise|gains?)\s+(?:is |was |has been )?(?:happening |came |come |coming |occurred |took place )?(?:on|with|amid) (?:a |an )?(?:light|low|thin|shrinking|declining|fading|weak|below-average|subdued) volume",
    "fall_on_low_volume": r"(?:缩量(?:下跌|回调|回落|调整|下行))|(?:fall(?:s|ing)?|fell|drop(?:s|ped|ping)?|declin(?:e|es|ed|ing)|pull(?:ed)?back|slid|down) (?:on|with|amid) (?:light|low|thin|declining|shrinking|weak|below-average) volume|volume (?:has |have |had |is |was |has been |have been |had been )?(?:\w+ly )?(?:dr(?:ies|ied|ying) up|shrink\w*|fad\w*|declin\w*|contract\w*)[^.,;]{0,12}?(?:on|as|during|into|with) (?:the )?(?:decline|drop|pullback|dip|slide|sell-?off)|(?:light|low|thin)[- ]volume (?:pullback|decline|dip|drift|sell-?off|slide)|(?:drift\w*|edg\w*|mov\w*) lower on (?:light|low|thin) volume|(?:pullback|decline|dip|drop|slide|sell-?off|fall)\s+(?:is |was |has been )?(?:happening |came |come |coming |occurred |took place )?(?:on|with|amid) (?:a |an )?(?:light|low|thin|shrinking|declining|fading|weak|below-average|subdued) volume",
    "volume_surge": r"volume:? (?:has |have |had |is |was |were |are |has been |have been |had been )?(?:not |n\'t )?(?:\w+ly )?(?:heavy|high|elevated|strong|above[- ]average|surge|spike|expansion|breakout|increase|jump|pick(?:ed|s)? up|rose|has risen|is rising|expanded|surged|spiked|increased|jumped|is (?:heavy|high|elevated|expanding|increasing|surging))|(?:heavy|rising|surging|expanding|increasing|elevated|high|strong|above-average) (?:trading )?volume|放量|成交量.{0,6}?(?:放大|增加|激增|攀升|上升)|量能.{0,6}?(?:放大|增加)",
    "volume_shrink": r"volume:? (?:has |have |had |is |was |were |are |has been |have been |had been )?(?:not |n\'t )?(?:\w+ly )?(?:light|low|thin|subdued|below[- ]average|shrink\w*|contract\w*|declin\w*|dr(?:ies|ied|ying) up|is drying up|fell|fades|faded|fading|decreas\w*|is (?:light|low|thin|subdued|weak))|(?:light|shrinking|declining|thin|low|subdued|weak|fading|below-average|contracting|decreasing) (?:trading )?volume|缩量|成交量.{0,6}?(?:萎缩|减少|下降|缩小)|量能.{0,6}?(?:萎缩|不足|减少)",
    "volatility_high": r"(?:high|elevated|increased|rising|heavy) volatility|highly volatile|volatility (?:is |remains |has been )?(?:very |quite |relatively |fairly )?(?:high|elevated|rising)|波动率(?:很|较|偏|非常)?高|sharp swings|剧烈波动|波动(?:剧烈|较大|加剧|明显加大|放大)|振幅(?:较大|加大)",
    "volatility_low": r"(?:low|subdued|muted|declining|compressed) volatility|volatility (?:is |remains |has been )?(?:very |quite |relatively |fairly )?(?:low|subdued|muted|compressed)|波动率(?:很|较|偏|非常)?低|波动很小|calm trading|波动(?:较小|收窄|减小|平缓|不大)|振幅(?:较小|收窄)",
    "long_bullish_candle": r"(?:long|big|large|strong|tall) (?:bullish|white|green|up|positive) (?:candle|candlestick|bar)|bullish marubozu|大阳线|长阳线?|中大阳",
    "long_bearish_candle": r"(?:long|big|large|strong|tall) (?:bearish|black|red|down|negative) (?:candle|candlestick|bar)|bearish marubozu|大阴线|长阴线?|中大阴",
    "doji": r"\bdoji|十字星|十字线",
}
# Words one of which a sentence must hold for a frame to match at all: a sentence is scanned for the
# frames it can hold only (:func:`_frames_in`).
_TRIGGERS: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    ("ma_pair_cn", "ma_pair_en", "pos_pre", "pos_post"): ("‹m",),
    ("any_cross", "golden_cross", "death_cross"): ("cross", "叉", "穿"),
    ("ma5_above_ma20", "ma5_below_ma20"): ("排列", "align", "stack"),
    ("uptrend", "downtrend"): ("trend", "趋势"),
    ("sideways",): ("sideways", "range", "consolidat", "trendless", "横盘", "震荡", "盘整"),
    ("momentum_up", "momentum_down"): ("momentum", "动能"),
    ("near_range_top", "near_range_bottom"): ("high", "low", "range", "高", "低", "区间"),
    ("breakout_up", "breakout_down"): ("break", "broke", "new ", "support", "resist", "high", "low", "range", "突破",
                                       "跌破", "破位", "新高", "新低"),
    ("rise_on_volume", "fall_on_volume", "rise_on_low_volume", "fall_on_low_volume", "volume_surge",
     "volume_shrink"): ("volume", "量"),
    ("volatility_high", "volatility_low"): ("volatil", "swings", "calm", "波动", "振幅"),
    ("long_bullish_candle", "long_bearish_candle", "doji"): ("candle", "bar", "marubozu", "阳", "阴", "doji", "十字"),
}
assert sorted(n for names in _TRIGGERS for n in names) == sorted(_FRAMES)
# Words without which a sentence holds no unverifiable statement, and no hedge: the same one scan
# tells where those regexes need to run at all.
_CUES: Final[dict[str, tuple[str, ...]]] = {
    "unverifiable": ("rsi", "macd", "kdj", "stoch", "cci", "obv", "adx", "atr", "vwap", "boll", "布林", "fibonacci", "斐波那契",
                     "head", "头肩", "double", "双顶", "双底", "w底", "m头", "elliott", "艾略特", "ichimoku", "cup", "hammer",
                     "engulf", "shooting", "锤子", "吞没", "射击", "flag", "wedge", "triangle", "三角", "楔形", "‹m"),
    "hedge": ("could", "might", "may", "would", "if", "unless", "whether", "should", "once", "potential", "possib",
              "likely", "expected", "about to", "verge", "poised", "set to", "chance", "risk", "watch", "look for", "wait",
              "until", "will", "going to", "need", "tries", "trying", "attempt", "fail", "有望", "若", "如果", "一旦", "或",
              "可能", "预计", "假如", "倘若", "是否", "将", "即将", "等待", "关注", "需要", "能否", "有待", "可望", "也许", "估计"),
}
# Each family of _TRIGGERS and each kind of _CUES is one bit; a sentence's bits say which it holds.
_HOLDERS: Final = {**_TRIGGERS, **_CUES}
_BIT: Final = {key: 1 << i for i, key in enumerate(_HOLDERS)}
_WORD_BITS: Final = {w: sum(_BIT[key] for key, words in _HOLDERS.items() if w in words)
                     for words in _HOLDERS.values() for w in words}
_FRAME_BITS: Final = sum(_BIT[names] for names in _TRIGGERS)
_UNVERIFIABLE_BIT, _HEDGE_BIT = _BIT["unverifiable"], _BIT["hedge"]


def _trie(words: list[str]) -> str:
    """The alternation of ``words``, longest match first, as a trie ("c(?:ould|ross|andle)|..."): the
    engine tests each next character once, not once per word."""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    branches = []
    for c, tails in heads.items():
        longer = [t for t in tails if t]
        rest = _trie(longer) if longer else ""
        branches.append(re.escape(c) + (f"(?:{rest})?" if longer and "" in tails else rest))
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


# Two scans, words starting with an ASCII character and the others: in each the engine skips the
# characters no word starts with (most of a Chinese text, or of an English one, in the other scan).
_TRIGGER_SCANS: Final = tuple(re.compile(_trie(sorted(w for w in _WORD_BITS if w[0].isascii() == ascii_)))
                              for ascii_ in (True, False))


def _first_chars(pattern: str) -> frozenset[str] | None:
    """The characters a match of ``pattern`` can start with, or None where that is not known (a class
    such as \\w, an empty match, a flag, ...). Read from the parsed pattern, an internal of the ``re``
    module: where it is missing or has changed, None, which costs speed only."""
    try:
        from re import _constants as c, _parser
        parsed = _parser.parse(pattern)
    except (ImportError, AttributeError):
        return None

    def starts(items) -> tuple[set[str], bool]:  # (first characters, can match empty)
        found: set[str] = set()
        for op, av in items:
            if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
                continue  # zero-width: the next item starts the match
            if op is c.LITERAL:
                return found | {chr(av)}, False
            if op is c.IN and all(o in (c.LITERAL, c.RANGE) for o, _ in av):
                return found | {chr(x) for o, a in av for x in ((a,) if o is c.LITERAL else range(a[0], a[1] + 1))}, False
            if op is c.BRANCH:
                alternatives = [starts(alt) for alt in av[1]]
                first, empty = set().union(*(f for f, _ in alternatives)), any(e for _, e in alternatives)
            elif op is c.SUBPATTERN and not av[1] and not av[2]:
                first, empty = starts(av[3])
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
                first, empty = starts(av[2])
                empty = empty or av[0] == 0
            else:
                raise LookupError(op)
            found |= first
            if not empty:
                return found, False
        return found, True

    try:
        first, empty = starts(parsed)
    except (LookupError, AttributeError):
        return None
    return None if empty or parsed.state.flags & re.IGNORECASE else frozenset(first)


_FIRST_CHARS: Final = {name: _first_chars(frame) for name, frame in _FRAMES.items()}


def _family_scan(names: tuple[str, ...]) -> re.Pattern[str]:
    """The frames of one family as one alternation, in :data:`_FRAMES` order, behind a look-ahead for
    the characters they can start with (:func:`_first_chars`): it turns most positions away at once,
    where the engine would enter every frame's alternatives (~30% faster); none where one is unknown."""
    alternation = "|".join(f"(?P<{n}>{_FRAMES[n]})" for n in names)
    if any(_FIRST_CHARS[n] is None for n in names):
        return re.compile(alternation)
    return re.compile(f"(?=[{re.escape(''.join(sorted(set().union(*(_FIRST_CHARS[n] for n in names)))))}])(?:{alternation})")


_FAMILY_SCANS: Final = tuple((_BIT[names], _family_scan(names)) for names in _TRIGGERS)
# The families follow each other in _FRAMES order, so the first family wins a tie as the first frame would.
assert [n for names in _TRIGGERS for n in names] == list(_FRAMES)


def _frames_in(norm: str, start: int, end: int, bits: int) -> list[re.Match[str]]:
    """The frames of one sentence as one alternation of the frames of the families in ``bits`` finds
    them (leftmost first, the earlier frame on a tie, no overlaps), while trying only the frames its
    trigger words call for: the next frame is the earliest of each family's next match, and a family
    whose match it overlaps searches again after it; once one family is left, its matches follow.
    (One alternation of every frame tried them all at every character, ~0.5 ms an answer; one
    compiled per set of families cost more to compile than it saved: the gold set's sentences hold
    227 different sets.)"""
    pending = [(m, scan) for bit, scan in _FAMILY_SCANS if bits & bit for m in [scan.search(norm, start, end)] if m]
    found = []
    while len(pending) > 1:
        m = min(pending, key=lambda p: p[0].start())[0]  # the first of equals: the earlier family
        found.append(m)
        after = m.end()
        pending = [(p, scan) if p.start() >= after else (scan.search(norm, after, end), scan) for p, scan in pending]
        pending = [(p, scan) for p, scan in pending if p]
    if pending:
        m, scan = pending[0]
        found += [m, *scan.finditer(norm, m.end(), end)]
    return found


def _sentences(norm: str) -> tuple[list[int], list[int], list[str]]:
    """Where each sentence starts and ends (no frame spans two), as ``_SENTENCE_END.split`` cuts them,
    and the punctuation that ends each ("" for the last)."""
    starts, stops, marks = [0], [], []
    for m in _SENTENCE_END.finditer(norm):
        stops.append(m.start())
        marks.append(m.group())
        starts.append(m.end())
    stops.append(len(norm))
    marks.append("")
    return starts, stops, marks


def _holds(norm: str, starts: list[int]) -> dict[int, int]:
    """The bits of the frame families and :data:`_CUES` kinds each sentence holds a word of (sentences
    holding none left out), so the rest runs only where it can apply."""
    held: dict[int, int] = {}
    for scan in _TRIGGER_SCANS:
        for m in scan.finditer(norm):
            i = bisect.bisect_right(starts, m.start()) - 1
            held[i] = held.get(i, 0) | _WORD_BITS[m.group()]
    return held


_OTHER_INDICATOR: Final = re.compile(
    _words("rsi", "macd", "kdj", r"stoch\w*", "cci", "obv", "adx", "dmi", "atr", "vwap", "williams", "boll", "dif", "dea", edge="[a-z]")
    + "|bollinger|布林|ichimoku|随机指标")
# Starts with no look-behind, so the scan can skip ahead: a letter before "rsi" etc. is checked apart.
UNVERIFIABLE: Final = re.compile(
    "|".join(rf"{w}(?![a-z])" for w in ("rsi", "macd", "kdj", "stochastic", "cci", "obv", "adx", "atr", "vwap"))
    + r"|bollinger|布林|fibonacci|斐波那契|head[- ]and[- ]shoulders|头肩|"
    r"double (?:top|bottom)|双顶|双底|w底|m头|elliott|艾略特|ichimoku|cup[- ]and[- ]handle|hammer|engulfing|shooting star|"
    r"锤子线|吞没|射击之星|flag pattern|wedge|triangle|三角形|楔形|‹m(?:\d+\+)*(?:30|60|90|100|120|150|200|250)(?:\+\d+)*›")

# --- 4. modality and negation -----------------------------------------------------------------------

_HEDGE: Final = re.compile(
    _words("could", "might", "may", "would", "if", "unless", "whether", "should it", "once", "potential(?:ly)?", "possible",
           "possibly", "likely to", "expected to", "about to", "on the verge of", "poised to", "set to", "chance of",
           "risk of", "watch for", "look for", "wait for", "waiting for", "until", "will", "going to", "needs? to",
           "tries to", "trying to", r"attempt\w*", "fails? to confirm")
    + r"|有望|若|如果|一旦|或将|可能|预计|假如|倘若|如若|是否|将会|即将|等待|关注|需要|能否|有待|若能|可望|或许|也许|估计|将")
# A modal after the claim's noun, then a verb of coming into being: "a golden cross could form soon".
_HEDGE_AFTER: Final = re.compile(
    r"\s*(?:(?:is|are|has|have|may|might|could|would|will|likely|soon|now|also|still|not yet)\s+){0,3}?"
    r"(?:could|might|may|would|will|is likely to|are likely to|is about to|is expected to|looks set to|is set to)\s+"
    r"(?:soon\s+|still\s+|be\s+)?(?:form\w*|appear\w*|develop\w*|emerg\w*|occur\w*|happen\w*|materiali[sz]e|confirm\w*|trigger\w*)"
    r"|\s*.{0,3}?(?:有望|可能|或将|即将|将会?|或)(?:会)?(?:形成|出现|确认|发生|走出)")
_NEGATION: Final = re.compile(
    _words("no", "not", "never", "without", "neither", "nor", "lacks?", "lacking", "absence of", "yet to", "has yet",
           "have yet", "fails? to", "failed to", "no longer", "none")
    + r"|n't|未能|未|没有|没|并无|无|不再|不是|不存在|并非|尚未|不")
# Words that hold a negation character or word but negate nothing.
_NOT_NEGATION: Final = re.compile(
    r"no doubt|not only|nothing but|not just|未来|无疑|毫无疑问|无论|不仅|不只|不断|不少|不错|不过|不久|不远|不足|"
    r"不宜|不建议|不排除|不变|不大|" + _words("no (?:sign|signs) of (?:weakness|strength) (?:but|and)"))


_COORDINATION: Final = re.compile(_words("and", "or", "nor") + "|和|与|并且|以及|且")


def _scope(norm: str, start: int, at: int) -> int:
    """Where a negation of the frame at ``at`` can start: after the last "and" / "or" of its clause
    ("no breakout and no breakdown" negates each once), and the frame's own words count too
    ("volume is not heavy", "MA5 is not yet above MA20")."""
    for m in _COORDINATION.finditer(norm, start, at):  # the last one decides: matches do not overlap
        start = m.start() if m.group() == "nor" else m.end()  # "nor" itself negates
    return start


def _negations(before: str) -> int:
    if not _NEGATION.search(before):
        return 0
    return len(_NEGATION.findall(_NOT_NEGATION.sub(" ", before)))


@dataclass(frozen=True)
class Claim:
    sentence: str
    anchor: str | None  # None: unverifiable
    claim: str
    negated: bool
    verdict: Verdict


def _pair(a: str, b: str) -> tuple[int, int] | None:
    first, second = a[2:-1].split("+"), b[2:-1].split("+")
    if first == ["5"] and second == ["20"]:
        return 1, 1
    if first == ["20"] and second == ["5"]:
        return 1, -1
    return None


def _position(token: str, sign: int) -> list[str]:
    """The claims 'close above/below ‹token›' and the unverifiable averages it names."""
    side = "above" if sign > 0 else "below"
    if token == "‹mall›":
        return [f"close_{side}_all_mas"]
    return [f"close_{side}_ma{k}" if int(k) in _MA_VALUE else f"?MA{k}" for k in token[2:-1].split("+")]


_IS_NEAR, _IS_ABOVE_POST = re.compile(_NEAR), re.compile(_ABOVE_POST)
_IS_ABOVE, _IS_BELOW = re.compile(_ABOVE_PRE), re.compile(_BELOW_PRE)
_DIGITS: Final = re.compile(r"(?<![\d.])\d{1,3}(?![\d.])")
_TOKEN_PERIODS: Final = re.compile(r"‹m([\d+]+)›")


def _frame_claims(m: re.Match[str]) -> list[str]:
    """The claim names one frame match makes ("?X": an unverifiable statement about X)."""
    name = m.lastgroup
    if name in ("ma_pair_cn", "ma_pair_en"):
        i = "1" if name == "ma_pair_cn" else "2"
        rel = m.group(f"rel{i}")
        pair = _pair(m.group(f"a{i}"), m.group(f"b{i}"))
        if pair is None:
            return ["?MA pair"]
        post = m.group("post1") if i == "1" else None
        up = rel in ("上穿", "金叉", "高于", "above", "over", ">") or post in ("之上", "上方") or (
            "cross" in rel and rel.rsplit(" ", 1)[-1] in ("above", "over", "through") and " down " not in rel)
        down = rel in ("下穿", "死叉", "低于", "below", "under", "beneath", "<") or post in ("之下", "下方") or (
            "cross" in rel and (rel.endswith(("below", "under")) or " down " in rel))
        if up == down:
            return []
        up = up if pair[1] > 0 else not up
        if "穿" in rel or "叉" in rel or "cross" in rel:
            return ["golden_cross" if up else "death_cross"]
        return ["ma5_above_ma20" if up else "ma5_below_ma20"]
    if name in ("pos_pre", "pos_post"):
        i = "3" if name == "pos_pre" else "4"
        post = m.group(f"post{i}")
        rel = m.group("rel3") if i == "3" else ""
        if post and _IS_NEAR.fullmatch(post):
            return []
        if post:
            sign = 1 if _IS_ABOVE_POST.fullmatch(post) else -1
        elif _IS_ABOVE.fullmatch(rel) and not _IS_BELOW.fullmatch(rel):
            sign = 1
        elif _IS_BELOW.fullmatch(rel) and not _IS_ABOVE.fullmatch(rel):
            sign = -1
        else:
            return []  # "位于‹m20›" with no side
        return _position(m.group(f"t{i}"), sign)
    if name == "any_cross":
        return ["golden_cross", "death_cross"]
    return [name]


_CROSS_OF: Final = re.compile(r"(?:cross(?:over)?|叉)\s*(?:of|:|\(|,)?\s*$")
# Frames that name what another indicator does ("MACD golden cross", "RSI momentum").
_INDICATOR_WORDS: Final = frozenset({"golden_cross", "death_cross", "ma_pair_cn", "momentum_up", "momentum_down",
                                     "breakout_up", "breakout_down"})


def fact_of(claim: str, anchors: Anchors) -> str:
    """The anchor fact a claim was checked against, in words."""
    v = anchors.values
    if claim.startswith("close_") and claim.endswith("_mas"):
        return ", ".join(f"close vs MA{k} {v[key]:+.2%}" for k, key in _MA_VALUE.items())
    if claim.startswith("close_"):
        k = int(claim.rsplit("ma", 1)[1])
        return f"close vs MA{k} {v[_MA_VALUE[k]]:+.2%}"
    if claim.startswith("ma5_"):
        return f"MA5 {'above' if v['ma_cross'] > 0 else 'below' if v['ma_cross'] < 0 else 'equal to'} MA20"
    if claim in ("golden_cross", "death_cross"):
        ago = v[f"{claim}_bars"]
        return f"{claim.replace('_', ' ')}: " + ("none in the window" if ago != ago else f"{int(ago)} bars ago")
    anchor = CLAIMS[claim][0]
    return f"{anchor}: {anchors.labels[anchor]}"


def _statements(norm: str, starts: list[int], stops: list[int], marks: list[str]) -> dict[tuple[str, bool], int]:
    """Each (claim, negated) of a normalised text once, in order of first mention, with the index of
    the sentence it was read from; "?X" is an unverifiable statement about X (never negated)."""
    held = _holds(norm, starts)
    # Clause cuts of the whole text in one scan: none holds a sentence end, so they are those of each
    # sentence, and a frame's clause runs from the cut before it to the one after (within its sentence).
    cuts = [m.end() for m in _CLAUSE_CUT.finditer(norm)]
    found: dict[tuple[str, bool], int] = {}
    for i in sorted(held):
        bits = held[i] & _FRAME_BITS
        if not bits:
            continue
        start, end, hedged, question = starts[i], stops[i], held[i] & _HEDGE_BIT, "?" in marks[i]
        for m in _frames_in(norm, start, end, bits):
            at, frame = m.start(), m.lastgroup
            k = bisect.bisect_right(cuts, at)
            s = max(start, cuts[k - 1]) if k else start
            last = k == len(cuts) or cuts[k] > end  # the sentence's last clause
            e = end if last else cuts[k]
            if last and question:
                continue  # the question itself claims nothing ("股价已跌破20日线，是否会继续下跌？": the first clause does)
            if hedged and (_HEDGE.search(norm, s, at) or _HEDGE_AFTER.match(norm, m.end(), e)):
                continue
            negated = _negations(norm[_scope(norm, s, at):m.end()]) % 2 == 1
            for name in _frame_claims(m):
                key = (name, negated and name[0] != "?")
                if key in found:
                    continue  # said before (free text is both the analysis and the rationale)
                if (name in ("ma5_above_ma20", "ma5_below_ma20") and frame.startswith("ma_pair")
                        and _CROSS_OF.search(norm, max(s, at - 16), at)):
                    continue  # "a golden cross of MA5 over MA20": the cross's description, not a second claim
                if frame in _INDICATOR_WORDS and _OTHER_INDICATOR.search(norm, s, e):
                    continue  # "MACD golden cross": the indicator itself is counted unverifiable below
                found[key] = i
    for i in sorted(i for i, bits in held.items() if bits & _UNVERIFIABLE_BIT):
        for m in UNVERIFIABLE.finditer(norm, starts[i], stops[i]):
            if m.group(0)[0].isascii() and m.start() and "a" <= norm[m.start() - 1] <= "z":
                continue  # inside a word ("parsing", "flatr...")
            found.setdefault(("?" + m.group(0).strip("‹›"), False), i)
    return found


def _verdict(claim: str, negated: bool, anchors: Anchors) -> Verdict:
    if claim.startswith("?"):
        return "unverifiable"
    return "supported" if CLAIMS[claim][1](anchors) != negated else "contradicted"


def extract_claims(text: str | None, anchors: Anchors) -> list[Claim]:
    """Every claim of ``text`` once (a set of (claim, negated)), in order of first mention, each
    with the sentence it was read from as written."""
    norm = normalise(text or "")
    starts, stops, marks = _sentences(norm)
    found = _statements(norm, starts, stops, marks)
    if not found:
        return []
    said = _SENTENCE_END.split(unicodedata.normalize("NFKC", text or ""))
    if len(said) != len(starts):  # the sentences as written, where normalising kept their count
        said = [norm[s:e] for s, e in zip(starts, stops)]
    return [Claim(said[i].strip(), None, name[1:], False, "unverifiable") if name.startswith("?")
            else Claim(said[i].strip(), CLAIMS[name][0], name, negated, _verdict(name, negated, anchors))
            for (name, negated), i in found.items()]


def judge(analysis: str | None, rationale: str | None, anchors: Anchors) -> dict[str, object]:
    """One answer's terms for the metrics: its rationale's polarity and how many of the claims of
    its analysis and rationale are supported, contradicted and unverifiable."""
    norm = normalise(f"{analysis or ''}\n{rationale or ''}")
    verdicts = [_verdict(name, negated, anchors) for name, negated in _statements(norm, *_sentences(norm))]
    return {"polarity": polarity(rationale), "supported": verdicts.count("supported"),
            "contradicted": verdicts.count("contradicted"), "unverifiable": verdicts.count("unverifiable")}


# --- polarity ----------------------------------------------------------------------------------------

_BULLISH: Final = re.compile(
    r"bullish|upside|upward|uptrend|rally|rebound|bounce|strength|positive|recover\w*|go(?:ing)? higher|move higher|"
    r"rise further|continuation higher|higher|golden cross|break-?outs?|accumulation|advance|follow through|legs|"
    r"constructive|strong|"
    r"看涨|看多|上涨|利好|反弹|走强|买入|增持|加仓|上行|向上|回升|偏多|多头|上攻|走高|乐观|强势|金叉|突破|向好|升势|见底|齐升")
_BEARISH: Final = re.compile(
    r"bearish|downside|downward|downtrend|decline|weakness|weak|negative|sell-?off|correction|pullback|go(?:ing)? lower|"
    r"move lower|fall further|drop further|lower|deteriorat\w*|death cross|breakdown|exhaust\w*|distribution|"
    r"看跌|看空|下跌|利空|走弱|卖出|减持|减仓|回调|下行|向下|回落|偏空|空头|下探|走低|悲观|弱势|风险较大|承压|死叉|破位|转弱|压制|见顶")
# A view said outright: decisive even beside a HOLD ("短期不宜看多，建议观望" is bearish).
# "bullish" / "bearish" as a predicate or a stance noun ("is bearish", "bearish bias"), not a
# description ("a bearish candle", "a mild bullish tilt").
_AS_VIEW: Final = r"(?=\s*(?:[.,;:!)]|$|\s+(?:bias|outlook|view|stance|overall|case|on|here|now|for|in the)\b))"
_VIEW: Final = re.compile(
    r"(?P<up>bullish" + _AS_VIEW + r"|points? higher|buyers (?:are |remain |clearly )*(?:in control|control)|buying opportunity|long bias|stay long|"
    r"odds (?:higher|up)|看多|看涨|偏多|买点|买入机会|多头格局|重拾升势)"
    r"|(?P<down>bearish" + _AS_VIEW + r"|points? lower|sellers (?:are |remain |clearly )*(?:in control|control)|short bias|odds lower|path of least resistance "
    r"(?:remains |is )?lower|看空|看跌|偏空|卖点)")
_CONCESSIVE: Final = re.compile(r"\b(?:despite|although|though|even though|while|whereas|notwithstanding|in spite of)\b|尽管|虽然|虽|即使|即便")
_TURN: Final = re.compile(r"\b(?:but|however|yet|nevertheless|still|so|therefore|thus|hence|overall|in summary|on balance)\b|但是?|然而|不过|因此|所以|综上|总体|整体|总的来看|故")


_STANCE_POLARITY: Final = {"BUY": "bullish", "SELL": "bearish", "HOLD": "neutral", "UNCERTAIN": "neutral"}


def _views(clauses: list[tuple[str, float]]) -> float:
    score = 0.0
    for clause, weight in clauses:
        for m in _VIEW.finditer(clause):
            before = clause[max(0, m.start() - 16):m.start()]
            negated = _negations(before) % 2 == 1 or _DISCOURAGED.search(before)
            score += weight * (1 if (m.lastgroup == "up") != bool(negated) else -1)
    return score


_DISCOURAGED: Final = re.compile(r"不宜|不建议|避免|avoid|don't|do not")


def _weighted_clauses(norm: str) -> list[tuple[str, float]]:
    """The clauses that carry the text's stance, with their weight: a concessive clause ("despite the
    rally", "虽然反弹") none, one after so / therefore / but / 因此 / 但 double."""
    out = []
    for sentence in _SENTENCE_END.split(norm):
        spans = [0, *(m.start() for m in _CLAUSE_CUT.finditer(sentence)), len(sentence)]
        for s, e in zip(spans, spans[1:]):
            clause = sentence[s:e]
            if _CONCESSIVE.match(clause.lstrip(" ,，:：")) or _CONCESSIVE.search(clause[:6]):
                continue
            out.append((clause, 2.0 if _TURN.search(clause[:12]) else 1.0))
    return out


def polarity(text: str | None) -> Literal["bullish", "bearish", "neutral"]:
    """The rationale's stance. A view said outright ("bearish", "不宜看多", "a buying opportunity")
    decides beside a HOLD; an action the text says it takes is its stance ("…, so I would sell" is
    bearish, "hold rather than add" neutral; the last one not negated); otherwise bullish minus
    bearish cue words. A negated cue ("not bullish", "不宜看多") counts for the other side; a cue
    in a concessive clause ("despite the rally", "虽然反弹") for nothing; one in a conclusion (after
    so / therefore / but / 因此 / 但) double."""
    norm = unicodedata.normalize("NFKC", text or "").lower()
    stance = stated_action(norm)
    if stance in ("BUY", "SELL"):
        return _STANCE_POLARITY[stance]  # type: ignore[return-value]
    clauses = _weighted_clauses(norm)
    view = _views(clauses)
    if view or stance is not None:
        return "bullish" if view > 0 else "bearish" if view < 0 else "neutral"
    score = 0.0
    for clause, weight in clauses:
        for pattern, sign in ((_BULLISH, 1), (_BEARISH, -1)):
            for m in pattern.finditer(clause):
                before = clause[max(0, m.start() - 16):m.start()]
                negated = _negations(before) % 2 == 1 or _DISCOURAGED.search(before) or _LACKING.search(clause, m.end(), m.end() + 8)
                score += weight * (-sign if negated else sign)
    return "bullish" if score > 0 else "bearish" if score < 0 else "neutral"


# A cue undone by what follows it: "反弹缺乏持续性", "上涨难以持续", "rally lacks conviction".
_LACKING: Final = re.compile(r"\s*(?:缺乏|难以|乏力|无力|lacks?|is fading|fails)")
