"""Parse an E2A-style answer: ``{"analysis", "rationale", "action", "confidence"}``.

The prompt asks for one JSON object; models answer with code fences, prose around it, "Action:
BUY" lines, Chinese field names and action words, or free text. Rules, in this order (the first
layout that yields an action wins; never raises)::

    | # | Situation                                   | Rule                                                       | tier / reason flag            |
    |---|---------------------------------------------|------------------------------------------------------------|-------------------------------|
    | 1 | None, "", whitespace                        | nothing to parse                                           | none / "empty response"       |
    | 2 | full-width characters, <think> blocks       | NFKC; closed reasoning blocks cut, an unclosed one cuts    | (silent) / "unclosed <think>  |
    |   |                                             | the rest (the budget ran out while reasoning)              | block"                        |
    | 3 | a JSON object anywhere (fences, prose)      | the first object holding an action or rationale key;       | json                          |
    |   |                                             | keys case-insensitive, Chinese names accepted (分析, 理由, |                               |
    |   |                                             | 操作/建议, 置信度/信心)                                   |                               |
    | 4 | "Field: value" lines ("**Action**: Buy",    | one field per line; a field's text runs to the next field  | fields                        |
    |   | "操作：买入", "Confidence - 80%")           |                                                            |                               |
    | 5 | free text                                   | the last action word (BUY / SELL / HOLD / UNCERTAIN, and   | free / "action from free text"|
    |   |                                             | 买入 卖出 持有 观望 不确定); analysis and rationale = text  | (+ "several actions; took the |
    |   |                                             |                                                            | last")                        |
    | 6 | action words                                | case-insensitive; 买入/买进 BUY, 卖出 SELL, 持有 HOLD,     |                               |
    |   |                                             | 观望/不确定 UNCERTAIN; anything else is no action          | none / "unknown action ..."   |
    | 7 | confidence                                  | a number in [0, 1]; "80%" or 80 -> 0.8; words: very high   | "no confidence" / "confidence |
    |   |                                             | 0.9, high/高 0.8, medium/moderate/中 0.5, low/低 0.2, very | out of range"                 |
    |   |                                             | low 0.1; missing or outside [0, 100] -> None, flagged      |                               |

Invariants (tested): ``action is None`` iff ``tier == "none"``; ``none`` always has a reason;
``confidence`` is None or in [0, 1].
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

Tier = Literal["json", "fields", "free", "none"]
ACTIONS: Final = ("BUY", "SELL", "HOLD", "UNCERTAIN")

_ACTION_WORDS: Final = {
    "buy": "BUY", "sell": "SELL", "hold": "HOLD", "uncertain": "UNCERTAIN",
    "买入": "BUY", "买进": "BUY", "卖出": "SELL", "持有": "HOLD", "观望": "UNCERTAIN", "不确定": "UNCERTAIN",
}
_ACTION_TOKEN: Final = re.compile(r"(?<![A-Za-z])(BUY|SELL|HOLD|UNCERTAIN)(?![A-Za-z])|买入|买进|卖出|持有|观望|不确定", re.I)
_KEYS: Final = {
    "analysis": ("analysis", "technical_analysis", "分析", "技术分析"),
    "rationale": ("rationale", "reason", "reasoning", "理由", "依据"),
    "action": ("action", "recommendation", "decision", "操作", "建议", "决策"),
    "confidence": ("confidence", "置信度", "信心", "confidence_score"),
}
# A field starts a line, or follows "{", ",", "." or ";" (a one-line or cut-off JSON object, "...
# high. Action: BUY"); its value runs to the next field.
_FIELD: Final = re.compile(
    r"(?:^|(?<=[{,.;]))[\s>*#-]*[\"']?\**\s*(?P<key>" + "|".join(re.escape(k) for keys in _KEYS.values() for k in keys)
    + r")[\"']?\s*\**\s*[:：=-]\s*(?P<value>)", re.I | re.M)
_THINK: Final = re.compile(r"<\s*think\s*>.*?<\s*/\s*think\s*>", re.I | re.S)
_THINK_OPEN: Final = re.compile(r"<\s*think\s*>", re.I)
_CONF_WORDS: Final = (("very high", 0.9), ("very low", 0.1), ("high", 0.8), ("medium", 0.5), ("moderate", 0.5),
                      ("low", 0.2), ("高", 0.8), ("中", 0.5), ("低", 0.2))
_NUMBER: Final = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?|\.\d+)\s*(%)?")


@dataclass(frozen=True)
class E2AAnswer:
    analysis: str | None
    rationale: str | None
    action: str | None
    confidence: float | None
    tier: Tier
    reason: str | None


def action_of(value: object) -> str | None:
    """BUY / SELL / HOLD / UNCERTAIN from a field value, or None."""
    if not isinstance(value, str):
        return None
    found = _ACTION_TOKEN.search(value)
    return None if found is None else _ACTION_WORDS[found.group(0).lower()]


def confidence_of(value: object) -> tuple[float | None, str | None]:
    if isinstance(value, bool) or value is None:
        return None, "no confidence"
    if isinstance(value, (int, float)):
        number, percent = float(value), False
    else:
        text = str(value).strip().lower()
        found = _NUMBER.search(text)
        if found is None:
            for word, level in _CONF_WORDS:
                if word in text:
                    return level, None
            return None, "no confidence"
        number, percent = float(found.group(1)), found.group(2) is not None
    if percent or 1 < number <= 100:
        number /= 100
    if not 0 <= number <= 1:
        return None, "confidence out of range"
    return number, None


def _json_object(text: str) -> dict | None:
    decoder = json.JSONDecoder(strict=False)  # control characters inside strings: still the object
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            found, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict):
            keys = {_canonical(k) for k in found}
            if {"action", "rationale"} & keys:
                return found
    return None


def _canonical(key: object) -> str | None:
    k = str(key).strip().lower()
    return next((name for name, aliases in _KEYS.items() if k in aliases), None)


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


def _answer(fields: dict, tier: Tier, flags: list[str]) -> E2AAnswer:
    action = action_of(fields.get("action"))
    if action is None:
        shown = fields.get("action")
        flags = [*flags, "no action found" if shown in (None, "") else f"unknown action {str(shown)[:40]!r}"]
        return E2AAnswer(_text(fields.get("analysis")), _text(fields.get("rationale")), None, None, "none", "; ".join(flags))
    confidence, why = confidence_of(fields.get("confidence"))
    if why:
        flags = [*flags, why]
    return E2AAnswer(_text(fields.get("analysis")), _text(fields.get("rationale")), action, confidence, tier,
                     "; ".join(flags) or None)


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def parse_response(text: str | None) -> E2AAnswer:
    if not isinstance(text, str) or not text.strip():
        return E2AAnswer(None, None, None, None, "none", "empty response")
    text = unicodedata.normalize("NFKC", text)
    flags: list[str] = []
    text = _THINK.sub(" ", text)
    opened = _THINK_OPEN.search(text)
    if opened:
        text, flags = text[: opened.start()], ["unclosed <think> block"]
    text = re.sub(r"```[A-Za-z0-9_-]*", " ", text)
    found = _json_object(text)
    if found is not None:
        fields = {}
        for key, value in found.items():
            name = _canonical(key)
            if name and name not in fields:
                fields[name] = value
        return _answer(fields, "json", flags)
    fields = _fields(text)
    if "action" in fields and action_of(fields["action"]):
        return _answer(fields, "fields", flags)
    actions = [_ACTION_WORDS[m.group(0).lower()] for m in _ACTION_TOKEN.finditer(text)]
    if not actions:
        return _answer({}, "none", flags)
    flags.append("action from free text")
    if len(set(actions)) > 1:
        flags.append("several actions; took the last")
    return _answer({"analysis": text.strip(), "rationale": fields.get("rationale", text.strip()),
                    "action": actions[-1], "confidence": fields.get("confidence")}, "free", flags)
