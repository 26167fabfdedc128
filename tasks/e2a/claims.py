"""Claims of an E2A-style answer, verified against the window's anchors; and its rationale's polarity.

A sentence (split at . ! ? ; 。！？；and line breaks) holds a claim when one of :data:`RULES`
matches it: a pattern (English or Chinese) naming an anchor fact. Its verdict is ``supported``
when the fact holds in the window, ``contradicted`` when it does not. A negation in the same
sentence before the match ("no golden cross", "has not broken out", "未出现金叉") turns the claim
into its negation. Technical statements no anchor can check (RSI, MACD, head and shoulders,
Fibonacci levels, ...) are ``unverifiable``: counted, never scored. Ours, as E2A-Bench never
published its matcher; every rule is one line of :data:`RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

from tasks.e2a.anchors import Anchors

Verdict = Literal["supported", "contradicted", "unverifiable"]
Check = Callable[[Anchors], bool]

_MA5 = r"(?:5[- ]?(?:day|日)\s*(?:moving average|ma|均线|线)|ma\s?5\b|5日线)"
_MA20 = r"(?:20[- ]?(?:day|日)\s*(?:moving average|ma|均线|线)|ma\s?20\b|20日线)"
_MAS = r"(?:(?:both|all|the short- and long-term|key) moving averages|(?<![\d日])均线(?:系统)?)"
_ABOVE = r"(?:above|over|stands above|holds above|trades above|broke above|站上|站稳|位于|运行于|在)"
_BELOW = r"(?:below|under|beneath|fell below|broke below|falls below|跌破|位于|运行于|在)"


def _label(anchor: str, *labels: str) -> Check:
    return lambda a: a.labels[anchor] in labels


def _value(key: str, sign: int) -> Check:
    return lambda a: a.values[key] * sign > 0


# "MA5 crossed under MA20" is about the two averages, not the close: no position claim.
_CROSSING = re.compile(r"cross|穿", re.I)


@dataclass(frozen=True)
class Rule:
    anchor: str
    claim: str  # what the sentence says, e.g. "close above MA20"
    pattern: re.Pattern[str]
    holds: Check
    unless: re.Pattern[str] | None = None  # a sentence matching this holds no such claim


def _rule(anchor: str, claim: str, pattern: str, holds: Check) -> Rule:
    return Rule(anchor, claim, re.compile(pattern, re.I), holds, _CROSSING if anchor == "ma_position" else None)


RULES: Final[tuple[Rule, ...]] = (
    _rule("ma_cross", "golden cross", r"golden[- ]cross|金叉", _label("ma_cross", "golden")),
    _rule("ma_cross", "death cross", r"death[- ]cross|死叉", _label("ma_cross", "death")),
    _rule("ma_position", "close above MA20", _ABOVE + r"\s*(?:(?:the|its)\s*)?" + _MA20 + r"(?!\s*(?:之下|下方))|" + _MA20 + r"(?:之上|上方)", _value("ma_position", 1)),
    _rule("ma_position", "close below MA20", _BELOW + r"\s*(?:(?:the|its)\s*)?" + _MA20 + r"(?!\s*(?:之上|上方))|" + _MA20 + r"(?:之下|下方)", _value("ma_position", -1)),
    _rule("ma_position", "close above MA5", _ABOVE + r"\s*(?:(?:the|its)\s*)?" + _MA5 + r"(?!\s*(?:之下|下方))|" + _MA5 + r"(?:之上|上方)", _value("ma_position_short", 1)),
    _rule("ma_position", "close below MA5", _BELOW + r"\s*(?:(?:the|its)\s*)?" + _MA5 + r"(?!\s*(?:之上|上方))|" + _MA5 + r"(?:之下|下方)", _value("ma_position_short", -1)),
    _rule("ma_position", "close above both averages", r"above " + _MAS + r"|" + _MAS + r"(?:之上|上方)", _label("ma_position", "above_both")),
    _rule("ma_position", "close below both averages", r"below " + _MAS + r"|" + _MAS + r"(?:之下|下方)", _label("ma_position", "below_both")),
    _rule("trend", "uptrend", r"\bup-?trend|upward trend|rising trend|上升趋势|上涨趋势", _label("trend", "up")),
    _rule("trend", "downtrend", r"\bdown-?trend|downward trend|falling trend|下降趋势|下跌趋势", _label("trend", "down")),
    _rule("trend", "sideways", r"sideways|range-?bound|consolidat|横盘|震荡整理", _label("trend", "flat")),
    _rule("momentum_5d", "positive momentum", r"(?:strong|positive|upward|bullish) (?:short-term )?momentum|动能增强|上涨动能", _label("momentum_5d", "up")),
    _rule("momentum_5d", "negative momentum", r"(?:weak|negative|downward|bearish) (?:short-term )?momentum|动能减弱|下跌动能", _label("momentum_5d", "down")),
    _rule("range_position", "near the range top", r"(?:near|at) (?:the )?(?:top|upper end|high end) of (?:its|the) (?:recent )?range|near (?:its|the) (?:recent )?highs?\b|接近.{0,4}高点|区间上沿", _label("range_position", "top")),
    _rule("range_position", "near the range bottom", r"(?:near|at) (?:the )?(?:bottom|lower end|low end) of (?:its|the) (?:recent )?range|near (?:its|the) (?:recent )?lows?\b|接近.{0,4}低点|区间下沿", _label("range_position", "bottom")),
    _rule("breakout", "upward breakout", r"break-?out|broke out|breaks? (?:out|above (?:the )?resistance)|向上突破|突破(?!失败)", _label("breakout", "up")),
    _rule("breakout", "downward breakdown", r"break-?down|broke down|breaks? (?:down|below (?:the )?support)|跌破支撑|向下破位|破位", _label("breakout", "down")),
    _rule("volume_change", "volume surge", r"volume (?:surge|spike|expansion|breakout|increase|jump)|(?:heavy|rising|surging|expanding) volume|放量|成交量(?:放大|增加|激增)", _label("volume_change", "surge")),
    _rule("volume_change", "volume shrink", r"volume (?:shrink|contraction|decline|dries up|dried up)|(?:light|shrinking|declining|thin) volume|缩量|成交量(?:萎缩|减少)", _label("volume_change", "shrink")),
    _rule("price_volume", "rise on volume", r"放量上涨|放量上攻|(?:ris(?:e|es|ing)|rall(?:y|ies|ied)|gain(?:s|ed)?) on (?:heavy|high|strong|rising) volume", _label("price_volume", "rise_on_volume")),
    _rule("price_volume", "fall on volume", r"放量下跌|(?:fall(?:s|ing)?|drop(?:s|ped)?|sell-?off|declin(?:e|es|ing)) on (?:heavy|high|strong|rising) volume", _label("price_volume", "fall_on_volume")),
    _rule("price_volume", "rise on low volume", r"缩量上涨|(?:ris(?:e|es|ing)|rall(?:y|ies|ied)) on (?:light|low|thin) volume", _label("price_volume", "rise_on_low_volume")),
    _rule("price_volume", "fall on low volume", r"缩量下跌|(?:fall(?:s|ing)?|drop(?:s|ped)?|declin(?:e|es|ing)) on (?:light|low|thin) volume", _label("price_volume", "fall_on_low_volume")),
    _rule("volatility", "high volatility", r"high volatility|highly volatile|sharp swings|剧烈波动|波动(?:较大|加剧)", _label("volatility", "high")),
    _rule("volatility", "low volatility", r"low volatility|calm trading|波动(?:较小|收窄)", _label("volatility", "low")),
    _rule("last_candle", "long bullish candle", r"(?:long|big|large|strong) (?:bullish|white|green|up) (?:candle|bar)|bullish marubozu|大阳线|长阳", _label("last_candle", "long_bullish")),
    _rule("last_candle", "long bearish candle", r"(?:long|big|large|strong) (?:bearish|black|red|down) (?:candle|bar)|bearish marubozu|大阴线|长阴", _label("last_candle", "long_bearish")),
    _rule("last_candle", "doji", r"\bdoji|十字星", _label("last_candle", "doji")),
)

UNVERIFIABLE: Final = re.compile(
    r"\bRSI\b|\bMACD\b|\bKDJ\b|bollinger|fibonacci|head[- ]and[- ]shoulders|double (?:top|bottom)|"
    r"elliott|ichimoku|cup[- ]and[- ]handle|头肩|双顶|双底|布林|斐波那契|艾略特", re.I)
_NEGATION: Final = re.compile(
    r"\b(?:no|not|never|without|neither|nor|lack(?:s|ing)?|absence of|yet to|fails? to|failed to)\b|n't|"
    r"未|没有|并未|尚未|无|不是|不存在", re.I)
_SENTENCE: Final = re.compile(r"[.!?;。！？；\n]+")


@dataclass(frozen=True)
class Claim:
    sentence: str
    anchor: str | None  # None: unverifiable
    claim: str
    negated: bool
    verdict: Verdict


def _clause_before(sentence: str, start: int) -> str:
    """The words before a match, back to the last comma or conjunction: a negation there is about it."""
    before = sentence[:start]
    cut = max((m.end() for m in re.finditer(r"[,，、]|\bbut\b|\band\b|\bwhile\b|但|而", before, re.I)), default=0)
    return before[cut:]


def extract_claims(text: str | None, anchors: Anchors) -> list[Claim]:
    claims: list[Claim] = []
    for sentence in (s.strip() for s in _SENTENCE.split(text or "")):
        if not sentence:
            continue
        found = False
        for rule in RULES:
            if rule.unless is not None and rule.unless.search(sentence):
                continue
            for m in rule.pattern.finditer(sentence):
                negated = _NEGATION.search(_clause_before(sentence, m.start())) is not None
                holds = rule.holds(anchors)
                verdict: Verdict = "supported" if holds != negated else "contradicted"
                claims.append(Claim(sentence, rule.anchor, rule.claim, negated, verdict))
                found = True
                break  # one claim per rule and sentence
        if not found and UNVERIFIABLE.search(sentence):
            claims.append(Claim(sentence, None, UNVERIFIABLE.search(sentence).group(0), False, "unverifiable"))
    return claims


def judge(analysis: str | None, rationale: str | None, anchors: Anchors) -> dict[str, object]:
    """One answer's terms for the metrics: its rationale's polarity and how many of the claims of
    its analysis and rationale are supported, contradicted and unverifiable."""
    claims = extract_claims(f"{analysis or ''}\n{rationale or ''}", anchors)
    verdicts = [c.verdict for c in claims]
    return {"polarity": polarity(rationale), "supported": verdicts.count("supported"),
            "contradicted": verdicts.count("contradicted"), "unverifiable": verdicts.count("unverifiable")}


_BULLISH: Final = re.compile(r"bullish|upside|upward|uptrend|rally|rebound|strength|positive|看涨|看多|上涨|利好|反弹|走强|买入", re.I)
_BEARISH: Final = re.compile(r"bearish|downside|downward|downtrend|decline|weakness|negative|sell-?off|看跌|看空|下跌|利空|走弱|卖出", re.I)


def polarity(text: str | None) -> Literal["bullish", "bearish", "neutral"]:
    """Bullish minus bearish cue words of the rationale; a negated cue ("not bullish") counts for
    the other side."""
    score = 0
    for sentence in _SENTENCE.split(text or ""):
        for pattern, sign in ((_BULLISH, 1), (_BEARISH, -1)):
            for m in pattern.finditer(sentence):
                negated = _NEGATION.search(_clause_before(sentence, m.start())[-20:]) is not None
                score += -sign if negated else sign
    return "bullish" if score > 0 else "bearish" if score < 0 else "neutral"
