"""The stance of an answer's rationale: bullish, bearish or neutral, from the action it states, a view
said outright, or its cue words (negated, conceded and concluded ones weighed apart)."""

from __future__ import annotations

import re
import unicodedata
from typing import Final, Literal

from candlebench.tasks.e2a.claims.lexicon import CLAUSE_CUT, SENTENCE_END
from candlebench.tasks.e2a.claims.scan import negations
from candlebench.tasks.e2a.parse import stated_action

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
            negated = negations(before) % 2 == 1 or _DISCOURAGED.search(before)
            score += weight * (1 if (m.lastgroup == "up") != bool(negated) else -1)
    return score


_DISCOURAGED: Final = re.compile(r"不宜|不建议|避免|avoid|don't|do not")


def _weighted_clauses(norm: str) -> list[tuple[str, float]]:
    """The clauses that carry the text's stance, with their weight: a concessive clause ("despite the
    rally", "虽然反弹") none, one after so / therefore / but / 因此 / 但 double."""
    out = []
    for sentence in SENTENCE_END.split(norm):
        spans = [0, *(m.start() for m in CLAUSE_CUT.finditer(sentence)), len(sentence)]
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
                negated = negations(before) % 2 == 1 or _DISCOURAGED.search(before) or _LACKING.search(clause, m.end(), m.end() + 8)
                score += weight * (-sign if negated else sign)
    return "bullish" if score > 0 else "bearish" if score < 0 else "neutral"


# A cue undone by what follows it: "反弹缺乏持续性", "上涨难以持续", "rally lacks conviction".
_LACKING: Final = re.compile(r"\s*(?:缺乏|难以|乏力|无力|lacks?|is fading|fails)")
