"""The claim matcher's words: the claims and the anchor facts they are checked against, the frames
that state them, the trigger and cue words a sentence must hold for them, and the words of hedges,
negations and clause cuts. Patterns only; :mod:`.scan` runs them, :mod:`.judge` reads what they find."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from candlebench.tasks.e2a.anchors import Anchors

def _values_all(sign: int) -> Callable[[Anchors], bool]:
    keys = ("ma_position_short", "ma_position_mid", "ma_position")
    return lambda a: all(a.values[k] * sign > 0 for k in keys)


def _label(anchor: str, label: str) -> Callable[[Anchors], bool]:
    return lambda a: a.labels[anchor] == label


def _crossed(key: str) -> Callable[[Anchors], bool]:
    return lambda a: a.values[key] == a.values[key]  # not NaN: such a crossing in the window


MA_VALUE: Final = {5: "ma_position_short", 10: "ma_position_mid", 20: "ma_position"}

# claim -> (anchor it is checked against, holds)
CLAIMS: Final[dict[str, tuple[str, Callable[[Anchors], bool]]]] = {
    **{f"close_{side}_ma{k}": ("ma_position", (lambda key, s: lambda a: a.values[key] * s > 0)(key, sign))
       for k, key in MA_VALUE.items() for side, sign in (("above", 1), ("below", -1))},
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
# "[.][.]*", "(?<![a-z])ma" written "ma(?<![a-z]ma)", and words.


def words(*alternatives: str, edge: str = r"\b") -> str:
    r"""``\b(?:a|b|...)\b`` (``edge`` \b), or with no letter of ``edge`` (a class, "[a-z]") on either side,
    each alternative starting with its own first character (a plain one) and the edge before it
    checked just after that character."""
    def one(a: str) -> str:
        if edge == r"\b":
            return rf"{a[0]}(?<=\b{a[0]}){a[1:]}\b"
        return rf"{a[0]}(?<!{edge}{a[0]}){a[1:]}(?!{edge})"
    assert all(a[0].isalnum() for a in alternatives)
    return "|".join(map(one, alternatives))


# --- 2. clauses ------------------------------------------------------------------------------------

_END: Final = r"[.!?;。！？；\n]"
SENTENCE_END: Final = re.compile(rf"{_END}{_END}*(?!\d)")
CLAUSE_CUT: Final = re.compile(
    r",|:|，|：|" + words("but", "while", "whereas", "although", "though", "however", "despite", "even though")
    + r"|但是?|而且?|虽然|尽管|不过|然而")

# --- 3. frames ------------------------------------------------------------------------------------

_TOK: Final = r"‹m[\d+]+›|‹mall›"
ABOVE_PRE: Final = (r"(?:above|over|atop|higher than|on top of|reclaim\w*|regain\w*|recaptur\w*|back above|站上|站稳|站在|重回|收复|突破|高于|位于|处于|运行于|运行在|在|守住)")
BELOW_PRE: Final = (r"(?:below|under|beneath|lower than|los(?:t|es|ing)|跌破|跌穿|击穿|失守|跌落|低于|位于|处于|运行于|运行在|在)")
ABOVE_POST: Final = r"(?:之上|上方|上面|以上)"
BELOW_POST: Final = r"(?:之下|下方|下面|以下)"
NEAR: Final = r"(?:附近|一线|周围)"

# name -> pattern; names "pos_*" and "ma_*" are read by _frame_claims, the rest name a claim.
FRAMES: Final[dict[str, str]] = {
    "ma_pair_cn": r"(?P<a1>‹m[\d+]+›)\s*(?:已经?|开始|向上|向下|也|仍|继续)?\s*(?P<rel1>上穿|下穿|金叉|死叉|位于|处于|在|高于|低于|运行于)\s*(?P<b1>‹m[\d+]+›)\s*(?P<post1>之上|上方|之下|下方)?",
    "ma_pair_en": r"(?P<a2>‹m[\d+]+›)\s+(?:(?:line|has|had|have|is|are|was|remains?|remained|stays?|stayed|just|now|recently|already|moved|moving|trades?|trading|sits?|still|been|firmly|comfortably|clearly|well|not|yet|dropped|dropping|fell|falling|slipped|slipping|sliding|rose|rising|climbed|climbing|turned|back)\s+){0,4}(?P<rel2>cross(?:ed|es)? (?:back )?(?:above|over|up (?:through|over|above))|cross(?:ed|es)? (?:back )?(?:below|under|down (?:through|below|under))|above|over|below|under|beneath|<|>)\s+(?:the\s+)?(?P<b2>‹m[\d+]+›)",
    "pos_pre": r"(?P<rel3>" + ABOVE_PRE + "|" + BELOW_PRE + r")\s*(?:(?:the|its|their|both|all|every|each|of|three|two|key|major|(?:short|long|medium)[- ]term)\s+)*(?P<t3>" + _TOK + r")\s*(?P<post3>" + ABOVE_POST + "|" + BELOW_POST + "|" + NEAR + r")?",
    "pos_post": r"(?P<t4>" + _TOK + r")\s*(?P<post4>" + ABOVE_POST + "|" + BELOW_POST + r")",
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
# frames it can hold only (:func:`frames_in`).
TRIGGERS: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
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
assert sorted(n for names in TRIGGERS for n in names) == sorted(FRAMES)
# Words without which a sentence holds no unverifiable statement, and no hedge: the same one scan
# tells where those regexes need to run at all.
CUES: Final[dict[str, tuple[str, ...]]] = {
    "unverifiable": ("rsi", "macd", "kdj", "stoch", "cci", "obv", "adx", "atr", "vwap", "boll", "布林", "fibonacci", "斐波那契",
                     "head", "头肩", "double", "双顶", "双底", "w底", "m头", "elliott", "艾略特", "ichimoku", "cup", "hammer",
                     "engulf", "shooting", "锤子", "吞没", "射击", "flag", "wedge", "triangle", "三角", "楔形", "‹m"),
    "hedge": ("could", "might", "may", "would", "if", "unless", "whether", "should", "once", "potential", "possib",
              "likely", "expected", "about to", "verge", "poised", "set to", "chance", "risk", "watch", "look for", "wait",
              "until", "will", "going to", "need", "tries", "trying", "attempt", "fail", "有望", "若", "如果", "一旦", "或",
              "可能", "预计", "假如", "倘若", "是否", "将", "即将", "等待", "关注", "需要", "能否", "有待", "可望", "也许", "估计"),
}

OTHER_INDICATOR: Final = re.compile(
    words("rsi", "macd", "kdj", r"stoch\w*", "cci", "obv", "adx", "dmi", "atr", "vwap", "williams", "boll", "dif", "dea", edge="[a-z]")
    + "|bollinger|布林|ichimoku|随机指标")
# Starts with no look-behind, so the scan can skip ahead: a letter before "rsi" etc. is checked apart.
UNVERIFIABLE: Final = re.compile(
    "|".join(rf"{w}(?![a-z])" for w in ("rsi", "macd", "kdj", "stochastic", "cci", "obv", "adx", "atr", "vwap"))
    + r"|bollinger|布林|fibonacci|斐波那契|head[- ]and[- ]shoulders|头肩|"
    r"double (?:top|bottom)|双顶|双底|w底|m头|elliott|艾略特|ichimoku|cup[- ]and[- ]handle|hammer|engulfing|shooting star|"
    r"锤子线|吞没|射击之星|flag pattern|wedge|triangle|三角形|楔形|‹m(?:\d+\+)*(?:30|60|90|100|120|150|200|250)(?:\+\d+)*›")


# --- 4. modality and negation -----------------------------------------------------------------------

HEDGE: Final = re.compile(
    words("could", "might", "may", "would", "if", "unless", "whether", "should it", "once", "potential(?:ly)?", "possible",
           "possibly", "likely to", "expected to", "about to", "on the verge of", "poised to", "set to", "chance of",
           "risk of", "watch for", "look for", "wait for", "waiting for", "until", "will", "going to", "needs? to",
           "tries to", "trying to", r"attempt\w*", "fails? to confirm")
    + r"|有望|若|如果|一旦|或将|可能|预计|假如|倘若|如若|是否|将会|即将|等待|关注|需要|能否|有待|若能|可望|或许|也许|估计|将")
# A modal after the claim's noun, then a verb of coming into being: "a golden cross could form soon".
HEDGE_AFTER: Final = re.compile(
    r"\s*(?:(?:is|are|has|have|may|might|could|would|will|likely|soon|now|also|still|not yet)\s+){0,3}?"
    r"(?:could|might|may|would|will|is likely to|are likely to|is about to|is expected to|looks set to|is set to)\s+"
    r"(?:soon\s+|still\s+|be\s+)?(?:form\w*|appear\w*|develop\w*|emerg\w*|occur\w*|happen\w*|materiali[sz]e|confirm\w*|trigger\w*)"
    r"|\s*.{0,3}?(?:有望|可能|或将|即将|将会?|或)(?:会)?(?:形成|出现|确认|发生|走出)")
NEGATION: Final = re.compile(
    words("no", "not", "never", "without", "neither", "nor", "lacks?", "lacking", "absence of", "yet to", "has yet",
           "have yet", "fails? to", "failed to", "no longer", "none")
    + r"|n't|未能|未|没有|没|并无|无|不再|不是|不存在|并非|尚未|不")
# Words that hold a negation character or word but negate nothing.
NOT_NEGATION: Final = re.compile(
    r"no doubt|not only|nothing but|not just|未来|无疑|毫无疑问|无论|不仅|不只|不断|不少|不错|不过|不久|不远|不足|"
    r"不宜|不建议|不排除|不变|不大|" + words("no (?:sign|signs) of (?:weakness|strength) (?:but|and)"))


COORDINATION: Final = re.compile(words("and", "or", "nor") + "|和|与|并且|以及|且")
