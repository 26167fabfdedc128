"""What an answer claims and whether it holds: the claims each frame match makes, once per answer,
with hedged and questioned ones left out and negations counted, checked against the window's anchors."""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from candlebench.tasks.e2a.anchors import Anchors
from candlebench.tasks.e2a.claims.lexicon import (ABOVE_POST, ABOVE_PRE, BELOW_PRE, CLAIMS, CLAUSE_CUT, HEDGE, HEDGE_AFTER,
                                                  MA_VALUE, NEAR, OTHER_INDICATOR, SENTENCE_END, UNVERIFIABLE)
from candlebench.tasks.e2a.claims.normalise import normalise
from candlebench.tasks.e2a.claims.polarity import polarity
from candlebench.tasks.e2a.claims.scan import (FRAME_BITS, HEDGE_BIT, UNVERIFIABLE_BIT, frames_in, holds, negations, scope,
                                               sentences)

Verdict = Literal["supported", "contradicted", "unverifiable"]


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
    return [f"close_{side}_ma{k}" if int(k) in MA_VALUE else f"?MA{k}" for k in token[2:-1].split("+")]


_IS_NEAR, _IS_ABOVE_POST = re.compile(NEAR), re.compile(ABOVE_POST)
_IS_ABOVE, _IS_BELOW = re.compile(ABOVE_PRE), re.compile(BELOW_PRE)
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
        return ", ".join(f"close vs MA{k} {v[key]:+.2%}" for k, key in MA_VALUE.items())
    if claim.startswith("close_"):
        k = int(claim.rsplit("ma", 1)[1])
        return f"close vs MA{k} {v[MA_VALUE[k]]:+.2%}"
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
    held = holds(norm, starts)
    # Clause cuts of the whole text in one scan: none holds a sentence end, so they are those of each
    # sentence, and a frame's clause runs from the cut before it to the one after (within its sentence).
    cuts = [m.end() for m in CLAUSE_CUT.finditer(norm)]
    found: dict[tuple[str, bool], int] = {}
    for i in sorted(held):
        bits = held[i] & FRAME_BITS
        if not bits:
            continue
        start, end, hedged, question = starts[i], stops[i], held[i] & HEDGE_BIT, "?" in marks[i]
        for m in frames_in(norm, start, end, bits):
            at, frame = m.start(), m.lastgroup
            k = bisect.bisect_right(cuts, at)
            s = max(start, cuts[k - 1]) if k else start
            last = k == len(cuts) or cuts[k] > end  # the sentence's last clause
            e = end if last else cuts[k]
            if last and question:
                continue  # the question itself claims nothing ("股价已跌破20日线，是否会继续下跌？": the first clause does)
            if hedged and (HEDGE.search(norm, s, at) or HEDGE_AFTER.match(norm, m.end(), e)):
                continue
            negated = negations(norm[scope(norm, s, at):m.end()]) % 2 == 1
            for name in _frame_claims(m):
                key = (name, negated and name[0] != "?")
                if key in found:
                    continue  # said before (free text is both the analysis and the rationale)
                if (name in ("ma5_above_ma20", "ma5_below_ma20") and frame.startswith("ma_pair")
                        and _CROSS_OF.search(norm, max(s, at - 16), at)):
                    continue  # "a golden cross of MA5 over MA20": the cross's description, not a second claim
                if frame in _INDICATOR_WORDS and OTHER_INDICATOR.search(norm, s, e):
                    continue  # "MACD golden cross": the indicator itself is counted unverifiable below
                found[key] = i
    for i in sorted(i for i, bits in held.items() if bits & UNVERIFIABLE_BIT):
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
    starts, stops, marks = sentences(norm)
    found = _statements(norm, starts, stops, marks)
    if not found:
        return []
    said = SENTENCE_END.split(unicodedata.normalize("NFKC", text or ""))
    if len(said) != len(starts):  # the sentences as written, where normalising kept their count
        said = [norm[s:e] for s, e in zip(starts, stops)]
    return [Claim(said[i].strip(), None, name[1:], False, "unverifiable") if name.startswith("?")
            else Claim(said[i].strip(), CLAIMS[name][0], name, negated, _verdict(name, negated, anchors))
            for (name, negated), i in found.items()]


def judge(analysis: str | None, rationale: str | None, anchors: Anchors) -> dict[str, object]:
    """One answer's terms for the metrics: its rationale's polarity and how many of the claims of
    its analysis and rationale are supported, contradicted and unverifiable."""
    norm = normalise(f"{analysis or ''}\n{rationale or ''}")
    verdicts = [_verdict(name, negated, anchors) for name, negated in _statements(norm, *sentences(norm))]
    return {"polarity": polarity(rationale), "supported": verdicts.count("supported"),
            "contradicted": verdicts.count("contradicted"), "unverifiable": verdicts.count("unverifiable")}
