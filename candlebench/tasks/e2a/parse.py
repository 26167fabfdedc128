"""Parse an E2A-style answer: ``{"analysis", "rationale", "action", "confidence"}``.

The prompt asks for one JSON object; models answer with code fences, prose around it, "Action:
BUY" lines, Chinese field names and action words, or free text. Rules, in this order (the first
layout that yields an action wins; never raises)::

    | # | Situation                                   | Rule                                                       | tier / reason flag            |
    |---|---------------------------------------------|------------------------------------------------------------|-------------------------------|
    | 1 | None, "", whitespace                        | nothing to parse                                           | none / "empty response"       |
    | 2 | full-width characters, <think> blocks       | NFKC; closed reasoning blocks cut, an unclosed one cuts    | (silent) / "unclosed <think>  |
    |   |                                             | the rest (the budget ran out while reasoning)              | block"                        |
    | 3 | a JSON object anywhere (fences, prose,      | the first object holding an action or rationale key whose  | json                          |
    |   | nested {"answer": {...}})                   | action is not the prompt's echoed "BUY|SELL|HOLD|..."; keys|                               |
    |   |                                             | case-insensitive, Chinese names accepted (分析, 理由,       |                               |
    |   |                                             | 操作/建议/操作建议, 置信度/信心); no rationale: the analysis|                               |
    | 4 | "Field: value" lines ("**Action**: Buy",    | a field starts a line or follows { , . ; 。 and runs to the | fields                        |
    |   | "操作建议：买入", "建议：逢低买入。信心：高") | next field; no rationale field: the whole text             |                               |
    | 5 | free text                                   | the last unambiguous action word not negated, preferring   | free / "action from free text"|
    |   |                                             | one after a cue ("I recommend", "建议", "answer:"); "I'd    | (+ "several actions; took the |
    |   |                                             | stay neutral", "I would go long" count; "buy/sell",        | last [recommended]")          |
    |   |                                             | "buy or sell" name a choice, not an answer                 |                               |
    | 6 | action words (table below)                  | in a field: the first word not negated ("Don't SELL -      | none / "unknown action ..."   |
    |   |                                             | HOLD" is HOLD; "SELL, not BUY" SELL), unless the field     |                               |
    |   |                                             | corrects itself ("SELL - wait, I will say HOLD")           |                               |
    | 7 | confidence                                  | a number in [0, 1]; "80%" or 80 -> 0.8; "7/10", "8 out of  | "no confidence" / "confidence |
    |   |                                             | 10" -> 0.7, 0.8; "0,8" -> 0.8; words (below); a stated one | out of range"                 |
    |   |                                             | in prose ("with 70% confidence", "信心一般") when no field; |                               |
    |   |                                             | missing or outside [0, 100] -> None, flagged               |                               |

Action words (tests/gold/e2a/README.md; a negated one, "not", "don't", "不建议", "no reason to", "before",
is not that action)::

    BUY        buy, strong buy, accumulate, add, overweight, go long, 买入, 买进, 强烈买入, 增持, 加仓, 逢低买入
    SELL       sell, strong sell, reduce, trim, underweight, exit, 卖出, 减持, 减仓, 清仓, 离场
    HOLD       hold, neutral, wait, keep, stand aside, 持有, 观望, 中性, 等待 (观望 is HOLD, as the issue asks;
               the Chinese prompt now glosses UNCERTAIN as 不确定, and "UNCERTAIN（观望）" reads UNCERTAIN: the
               field's first word)
    UNCERTAIN  uncertain, unsure, cannot decide, 不确定, 无法判断

Confidence words: very high 0.9, fairly/moderately high 0.7, high 0.8, medium/moderate 0.5, fairly/
moderately low 0.3, low 0.2, very low 0.1; 很高/极高 0.9, 较高/偏高 0.7, 高 0.8, 中等/一般/中 0.5,
较低/偏低 0.3, 低 0.2, 很低/极低 0.1.

Invariants (tested): ``action is None`` iff ``tier == "none"``; ``none`` always has a reason;
``confidence`` is None or in [0, 1].
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from candlebench.task_api.answer_text import json_objects
from candlebench.task_api.base import REASONING_CUT

Tier = Literal["json", "fields", "free", "none"]
ACTIONS: Final = ("BUY", "SELL", "HOLD", "UNCERTAIN")

# The action words, every one of each row mapping to that action (a field value may use any; free
# text only the unambiguous ones, marked by FREE: "add", "wait" or "exit" are everyday words).
_ACTIONS_BY_WORD: Final = {
    "BUY": ("strong buy", "buy", "accumulate", "adding", "add on dips", "add on weakness", "add on pullbacks", "buy the dip", "逢低加仓",
            "add", "overweight", "outperform", "go long", "long",
            "强烈买入", "逢低买入", "买入", "买进", "增持", "加仓", "建仓", "做多"),
    "SELL": ("strong sell", "sell", "reduce", "reducing", "trim", "trimming", "underweight", "underperform", "exit", "go short", "short",
             "强烈卖出", "卖出", "减持", "减仓", "清仓", "离场", "止损", "做空"),
    "HOLD": ("hold", "holding", "keep the position", "keep holding", "neutral", "wait", "waiting", "keep",
             "stay on the sidelines", "stand aside", "sidelines", "持有", "继续持有", "观望", "中性", "等待", "持股"),
    "UNCERTAIN": ("uncertain", "unsure", "cannot decide", "undecided", "不确定", "无法判断"),
}
_FREE: Final = frozenset({"strong buy", "buy", "accumulate", "strong sell", "sell", "hold", "uncertain", "add on dips",
                          "add on weakness", "add on pullbacks", "buy the dip", "逢低加仓",
                          "强烈买入", "逢低买入", "买入", "买进", "增持", "加仓", "强烈卖出", "卖出", "减持", "减仓",
                          "清仓", "持有", "观望", "不确定"})
_ACTION_WORDS: Final = {w: a for a, words in _ACTIONS_BY_WORD.items() for w in words}


# "hold" as a verb of price ("holds above", "holding over both averages") is no recommendation.
_PRICE_VERB: Final = r"(?!\s+(?:above|below|on|onto|at|over|the|its|support|steady|firm|up|near))"


def _word_pattern(words) -> re.Pattern[str]:
    """The words, longest first, on lower-case text. A word's start is checked by :func:`_actions`,
    not by a look-behind: one before every alternative kept the scan from skipping ahead (~5x)."""
    ordered = sorted(words, key=len, reverse=True)
    return re.compile("|".join(
        rf"{re.escape(w)}(?![a-z])(?!-off)(?!ers)" + (_PRICE_VERB if w in ("hold", "holding") else "")
        if w.isascii() else re.escape(w) for w in ordered))


_ACTION_TOKEN: Final = _word_pattern(_ACTION_WORDS)
# What a rationale says it would do ("so I would sell", "hold rather than add", "建议减仓"): its stance.
_STANCE: Final = frozenset(_FREE | {"add", "adding", "reduce", "reducing", "trim", "trimming", "wait", "waiting",
                                    "stay on the sidelines", "stand aside", "neutral", "holding", "keep the position",
                                    "keep holding", "go long", "exit", "等待", "离场", "中性", "继续持有"})
# "hold" as a verb of price ("holds above", "hold the 20-day line") is no recommendation.
_FREE_TOKEN: Final = _word_pattern(_FREE)
_STANCE_TOKEN: Final = re.compile(_FREE_TOKEN.pattern + "|" + _word_pattern(_STANCE - _FREE).pattern)
_NEGATED_ACTION: Final = re.compile(r"(?:\b(?:don'?t|do not|not|never|avoid|no|rather than|instead of|no (?:\w+ )?reason to|"
                                    r"not (?:the )?time to|too early to|too late to|not enough to|before|until)\s+(?:a\s+|to\s+)?|不建议|不宜|不要|别|不|暂不|无需|不必)\s*$")
# A recommendation cue before a free-text action: "I recommend BUY", "建议买入", "Final answer: SELL".
_CUE: Final = re.compile(r"(?:recommend\w*|action|decision|verdict|answer|suggest\w*|call|rating|建议|操作|结论|决策)\W{0,3}(?:\w+\W+){0,3}$")
_KEYS: Final = {
    "analysis": ("analysis", "technical_analysis", "分析", "技术分析"),
    "rationale": ("rationale", "reason", "reasoning", "理由", "依据"),
    "action": ("action", "recommendation", "decision", "final answer", "final action", "suggested action", "操作",
               "建议", "决策", "操作建议", "投资建议", "建议操作", "最终建议"),
    "confidence": ("confidence", "置信度", "信心", "confidence_score"),
}
_FIELD_OF: Final = {alias: name for name, aliases in _KEYS.items() for alias in aliases}
assert len(_FIELD_OF) == sum(map(len, _KEYS.values())), "an alias names one field"
# A field starts a line, or follows "{", ",", "." or ";" (a one-line or cut-off JSON object, "...
# high. Action: BUY"); its value runs to the next field.
_FIELD: Final = re.compile(
    r"(?:^|(?<=[{,.;。]))[\s>*#-]*[\"']?\**\s*(?P<key>" + "|".join(re.escape(k) for keys in _KEYS.values() for k in keys)
    + r")[\"']?\s*\**\s*[:：=-]\s*(?P<value>)", re.I | re.M)
_THINK: Final = re.compile(r"<\s*think\s*>.*?<\s*/\s*think\s*>", re.I | re.S)
_THINK_OPEN: Final = re.compile(r"<\s*think\s*>", re.I)
_CONF_WORDS: Final = re.compile(
    r"(?P<w09>very high|extremely high|很高|非常高|极高)|(?P<w07>(?:fairly|moderately|relatively|quite|somewhat) high|"
    r"medium[- ]high|较高|偏高|中高|比较高)|(?P<w01>very low|extremely low|很低|非常低|极低)|(?P<w03>(?:fairly|moderately|"
    r"relatively|quite|somewhat) low|medium[- ]low|较低|偏低|中低|比较低)|(?P<w08>(?<![a-z])high(?![a-z])|高)|"
    r"(?P<w05>medium|moderate|average|中等|一般|中)|(?P<w02>(?<![a-z])low(?![a-z])|低)")
_FRACTION: Final = re.compile(r"(\d+(?:\.\d+)?)\s*(?:/|out of)\s*(5|10|100)(?![\d.])")
_NUMBER: Final = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?|\.\d+)\s*(%)?")


@dataclass(frozen=True)
class E2AAnswer:
    analysis: str | None
    rationale: str | None
    action: str | None
    confidence: float | None
    tier: Tier
    reason: str | None


def _actions(text: str, token: re.Pattern[str]) -> list[tuple[int, str]]:
    """(position, action) of each action word of ``text`` (lower case: the word patterns are) that is
    not negated ("don't SELL", "not BUY", "不建议买入")."""
    return [(m.start(), _ACTION_WORDS[m.group(0).lower()]) for m in token.finditer(text)
            if not (m.start() and m.group(0).isascii() and "a" <= text[m.start() - 1] <= "z")  # inside a word
            and not _NEGATED_ACTION.search(text[max(0, m.start() - 16):m.start()])
            and not _PAIRED.search(text[max(0, m.start() - 4):m.start()]) and not _PAIRED_AFTER.match(text, m.end())]


# "buy/sell recommendations", "buy or sell", "买入或卖出": the choice named, none taken.
_PAIRED: Final = re.compile(r"(?:/|\bor\s|或)\s*$")
_PAIRED_AFTER: Final = re.compile(r"\s*(?:/\s*[a-z\u4e00-\u9fff]|or\s+(?:buy|sell|hold)\b|或)")


def stated_action(text: str) -> str | None:
    """The last action a text says it takes, not negated ("so I would reduce", "宜观望"), or None;
    HOLD when it rules out both directions ("no reason to sell and no reason to add")."""
    text = text.lower()
    found = _actions(text, _STANCE_TOKEN)
    if found:
        return found[-1][1]
    ruled_out = {_ACTION_WORDS[m.group(0).lower()] for m in _STANCE_TOKEN.finditer(text)
                 if not (m.start() and m.group(0).isascii() and "a" <= text[m.start() - 1] <= "z")}
    return "HOLD" if {"BUY", "SELL"} <= ruled_out else None


def action_of(value: object) -> str | None:
    """BUY / SELL / HOLD / UNCERTAIN from a field value (its first action word not negated), or
    None; an echo of the prompt's choices ("BUY|SELL|HOLD|UNCERTAIN") is none."""
    if not isinstance(value, str):
        return None
    value = value.lower()
    found = _actions(value, _ACTION_TOKEN)
    if _CHOICES.search(value) and len({a for _, a in found}) > 1:
        return None
    corrected = [a for at, a in found if _CORRECTION.search(value[max(0, at - 30):at])]
    return corrected[-1] if corrected else found[0][1] if found else None


_CHOICES: Final = re.compile(r"[a-z]\s*[|/]\s*[a-z]")
# Words of the wider stance list ("neutral", "go long", "reduce") are an answer in free text only where
# the model says it takes them: "I'd stay neutral", "I would go long", or alone at a sentence's start.
_SAYS: Final = re.compile(r"(?:\bi(?:'d| would| will|'ll)|\bwe(?:'d| would)|recommend\w*|\bstay|\bremain|\bbe)\s+(?:\w+\s+)?$"
                          r"|(?:^|[.!?\n]\s*)$")
# "SELL - wait, ...; I will say HOLD": the answer corrected in the field itself.
_CORRECTION: Final = re.compile(r"(?:i(?: will|'ll) (?:say|go with|change (?:it )?to)|actually|on second thought|"
                                r"correct(?:ion|ed)?:?|final(?:ly)?:?|改为|修正为|更正为)\s*$")


def confidence_of(value: object) -> tuple[float | None, str | None]:
    if isinstance(value, bool) or value is None:
        return None, "no confidence"
    if isinstance(value, int) and abs(value) > 100:  # float() of a 309-digit integer raises: out of range anyway
        return None, "confidence out of range"
    if isinstance(value, (int, float)):
        number, percent = float(value), False
    else:
        text = re.sub(r"(?<![\d,])(0|1),(\d+)", r"\1.\2", str(value).strip().lower())  # decimal comma: 0,8
        fraction = _FRACTION.search(text)
        if fraction is not None:
            number, whole = float(fraction.group(1)), float(fraction.group(2))
            return (number / whole, None) if number <= whole else (None, "confidence out of range")
        found = _NUMBER.search(text)
        if found is None:
            word = _CONF_WORDS.search(text)
            if word is None:
                return None, "no confidence"
            return int(word.lastgroup[1:]) / 10, None
        number, percent = float(found.group(1)), found.group(2) is not None
    if percent or 1 < number <= 100:
        number /= 100
    if not 0 <= number <= 1:
        return None, "confidence out of range"
    return number, None


def _json_object(text: str) -> dict | None:
    for found in json_objects(text):
        keys = {_canonical(k): v for k, v in found.items()}
        echoed = isinstance(keys.get("action"), str) and action_of(keys["action"]) is None and "|" in keys["action"]
        if {"action", "rationale"} & set(keys) and not echoed:
            return found
    return None


def _canonical(key: object) -> str | None:
    return _FIELD_OF.get(str(key).strip().lower())


def _fields(text: str) -> dict[str, str]:
    """'Field: value' lines; a field's value runs to the next field."""
    matches = list(_FIELD.finditer(text))
    out: dict[str, str] = {}
    for m, nxt in zip(matches, [*matches[1:], None]):
        name = _canonical(m.group("key"))
        body = text[m.start("value"): nxt.start() if nxt else len(text)].strip().strip("*,;}").strip().strip('"').strip()
        if name and name not in out:
            out[name] = body
    return out


def _answer(fields: dict, tier: Tier, flags: list[str], text: str | None = None) -> E2AAnswer:
    """The answer of these fields; a confidence the fields lack may be stated in ``text``."""
    action = action_of(fields.get("action"))
    if action is None:
        shown = fields.get("action")
        flags = [*flags, "no action found" if shown in (None, "") else f"unknown action {str(shown)[:40]!r}"]
        return E2AAnswer(_text(fields.get("analysis")), _text(fields.get("rationale")), None, None, "none", "; ".join(flags))
    stated = fields.get("confidence") if fields.get("confidence") is not None else _stated_confidence(text or "")
    confidence, why = confidence_of(stated)
    if why:
        flags = [*flags, why]
    return E2AAnswer(_text(fields.get("analysis")), _text(fields.get("rationale")), action, confidence, tier,
                     "; ".join(flags) or None)


_STATED: Final = re.compile(
    r"confiden\w*\W{0,3}(?:level\W{0,3})?(?:is|of|at|around|about|:)?\s*(?P<a>\d[\d.,]*\s*%?(?:\s*(?:/|out of)\s*\d+)?)"
    r"|confiden\w*\W{0,3}(?:is\s+)?(?P<d>(?:very |fairly |moderately |relatively )?(?:high|medium|moderate|low))\b"
    r"|(?P<b>\d+(?:\.\d+)?\s*%|(?:very |fairly |moderately |relatively )?(?:high|medium|moderate|low))\s+confiden"
    r"|(?:置信度|信心)\W{0,2}(?:为|是|约|大约)?\s*(?P<c>\d[\d.,]*\s*%?(?:\s*/\s*\d+)?|[很非常极较偏中]?[高低]|中等|一般|中)", re.I)


def _stated_confidence(text: str) -> str | None:
    """A confidence stated in free text ("with 70% confidence", "置信度约0.6"), or None."""
    if "onfiden" not in text and "ONFIDEN" not in text and "置信" not in text and "信心" not in text:
        return None
    found = [next(g for g in m.groups() if g) for m in _STATED.finditer(text)]
    return found[-1].rstrip(".,") if found else None


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def parse_response(text: str | None) -> E2AAnswer:
    if not isinstance(text, str) or not text.strip():
        return E2AAnswer(None, None, None, None, "none", "empty response")
    text = unicodedata.normalize("NFKC", text)
    flags: list[str] = []
    if "<" in text:  # the regexes below cost more than this test on every answer
        text = _THINK.sub(" ", text)
        opened = _THINK_OPEN.search(text)
        if opened:
            text, flags = text[: opened.start()], [REASONING_CUT]
    if "```" in text:
        text = re.sub(r"```[A-Za-z0-9_-]*", " ", text)
    found = _json_object(text)
    if found is not None:
        fields = {}
        for key, value in found.items():
            name = _canonical(key)
            if name and name not in fields:
                fields[name] = value
        fields.setdefault("rationale", fields.get("analysis"))
        return _answer(fields, "json", flags, text)
    fields = _fields(text)
    if "action" in fields and action_of(fields["action"]):
        fields.setdefault("rationale", text.strip())  # what the answer says in support of its action
        return _answer(fields, "fields", flags, text)
    low = text.lower()
    found = sorted(_actions(low, _FREE_TOKEN) + [
        (at, a) for at, a in _actions(low, _STANCE_TOKEN)
        if _SAYS.search(low[max(0, at - 24):at]) and not _FREE_TOKEN.match(low, at)])
    if not found:
        return _answer({}, "none", flags)
    flags.append("action from free text")
    cued = [(at, a) for at, a in found if _CUE.search(low[max(0, at - 40):at])]
    if len({a for _, a in found}) > 1:
        flags.append("several actions; took the last recommended" if cued else "several actions; took the last")
    return _answer({"analysis": text.strip(), "rationale": fields.get("rationale", text.strip()),
                    "action": (cued or found)[-1][1], "confidence": fields.get("confidence")}, "free", flags, text)
