"""Text steps that every answer parser takes first, shared by the tasks whose parsers read a
model's free text the same way (forecast, chart reading, E2A's JSON): Unicode and HTML
normalisation, the split of reasoning blocks (``<think>``, ``<thinking>``, ``<reasoning>``) from
the answer, the removal of Markdown code fences, and the JSON objects an answer holds. One copy, so
a fix to how a reasoning block is read reaches every such task (and raises each one's judge
version)."""

from __future__ import annotations

import html
import json
import re
import unicodedata
from typing import Final

THINK_MARK: Final = re.compile(r"<\s*(?P<slash>/\s*)?(?:think|thinking|reasoning)\s*>", re.I)
_FENCE: Final = re.compile(r"```[A-Za-z0-9_+-]*")
_BRACE: Final = re.compile(r"\{")
_BRACKET: Final = re.compile(r"[{}\[\]]")
# Deeper than any answer nests, and well inside the decoder's recursion limit (1,000 by default).
MAX_DEPTH: Final = 200
_DECODER: Final = json.JSONDecoder(strict=False)  # control characters inside strings: still the object

_DASHES: Final = dict.fromkeys(map(ord, "\u2212\u2010\u2011\u2012\u2013"), "-")
_INVISIBLE: Final = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)


def normalise(text: str) -> str:
    """NFKC, HTML entities decoded, every dash a hyphen-minus, zero-width characters dropped."""
    text = unicodedata.normalize("NFKC", html.unescape(text))
    return text.translate(_DASHES).translate(_INVISIBLE)


def split_reasoning(text: str) -> tuple[str, str, bool]:
    """Return (answer, reasoning, unclosed): one linear pass over the think markers.

    An opener starts a block (openers inside a block are ignored), a closer ends it; a closer
    outside any block means everything before it was reasoning whose opener sat in the prompt.
    """
    answer: list[str] = []
    reasoning: list[str] = []
    in_block, start = False, 0
    for m in THINK_MARK.finditer(text):
        closing = m.group("slash") is not None
        if not in_block and not closing:
            answer.append(text[start : m.start()])
            in_block, start = True, m.end()
        elif in_block and closing:
            reasoning.append(text[start : m.start()])
            in_block, start = False, m.end()
        elif closing:  # stray closer: the answer so far was reasoning
            reasoning.extend([*answer, text[start : m.start()]])
            answer, start = [], m.end()
    (reasoning if in_block else answer).append(text[start:])
    return " ".join(answer), "\n".join(reasoning), in_block


def strip_fences(text: str) -> str:
    return _FENCE.sub(" ", text).strip()


def _too_deep(text: str) -> set[int]:
    """The "{" whose brackets nest deeper than :data:`MAX_DEPTH` (strings not told apart: brackets
    in strings only count more), in one pass. The decoder reaches its recursion limit on each of them
    (a 40 kB answer of 3,000 nested objects cost seconds, every "{" decoded a thousand levels down);
    no answer nests that deep."""
    deep: set[int] = set()
    stack: list[list[int]] = []  # [where it opens, how deep it nests below]
    for m in _BRACKET.finditer(text):
        if m.group() in "{[":
            stack.append([m.start(), 0])
            continue
        if not stack:
            continue
        where, below = stack.pop()
        if stack:
            stack[-1][1] = max(stack[-1][1], below + 1)
        if below >= MAX_DEPTH:
            deep.add(where)
    for i, (where, below) in enumerate(stack):  # never closed: as deep as what opens after it, at least
        if max(below, len(stack) - 1 - i) >= MAX_DEPTH:
            deep.add(where)
    return deep


def json_objects(text: str) -> list[dict]:
    """Every JSON object that starts at a "{" of ``text`` (nested ones too), in order. What does not
    decode is skipped: besides malformed JSON, a nesting deeper than :data:`MAX_DEPTH` (the decoder
    would raise RecursionError) and an integer of over 4,300 digits (ValueError) are an answer's text
    too, and a parser never raises. NaN, Infinity and 1e999 decode to non-finite floats: a parser
    checks them."""
    found = []
    braces = [m.start() for m in _BRACE.finditer(text)]
    deep = _too_deep(text) if len(braces) > MAX_DEPTH else set()
    for start in braces:
        if start in deep:
            continue
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            continue
        if isinstance(value, dict):
            found.append(value)
    return found
